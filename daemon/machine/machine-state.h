/*
 * The machine's own state, beside its vCPUs' (vcpu-state.h) and its
 * devices' (each device's save/load ops): the VM clock and the guest's
 * TSC, the in-kernel PIC (both chips), IOAPIC and PIT.  Each is one
 * state section (devices/dev-state.h), declared once in
 * machine-state.c with fields named as the kernel names them:
 *
 *   "clock"   KVM_GET_CLOCK's kvmclock, flags, host CLOCK_REALTIME and
 *             host TSC, KVM_GET_TSC_KHZ's frequency, and each vCPU's
 *             TSC offset (KVM_VCPU_TSC_OFFSET) where KVM exposes it
 *   "pic"     KVM_GET_IRQCHIP's two PIC chips, "master.*", "slave.*"
 *   "ioapic"  KVM_GET_IRQCHIP's IOAPIC
 *   "pit"     KVM_GET_PIT2's three channels and flags
 *
 * A section is hostile input: a load refuses what no such chip can
 * hold (a PIC priority beyond its 8 pins or a vector base not a
 * multiple of 8, ELCR bits its mask does not allow, IOAPIC IRR bits
 * beyond its 24 pins, a redirection entry with a reserved delivery
 * mode or a remote IRR on an edge-triggered pin, an IOAPIC elsewhere
 * than the board puts it, a PIT mode beyond 5 or a count beyond
 * 65536), naming the field.
 *
 * The restore order, all on a paused machine:
 *
 *   1. machine_state_restore_clock: the TSC frequency first (refused,
 *      with the reason, where the host cannot give the guest the one it
 *      had), then the VM clock, moved on by the host's CLOCK_REALTIME
 *      time that passed since the capture (KVM_CLOCK_REALTIME, or where
 *      KVM does not give it, CLOCK_REALTIME read beside KVM_GET_CLOCK
 *      and added by vmmd; never backwards);
 *   2. machine_state_restore_chips: PIC, IOAPIC, PIT;
 *   3. the devices (their load ops), which re-assert their interrupt
 *      lines after the chips hold their saved state, so a line a device
 *      holds high is not lost to the chips' restore;
 *   4. the vCPUs (vcpu_state_restore);
 *   5. machine_state_restore_tsc: each vCPU's TSC offset.
 *
 * Step 4 writes MSR_IA32_TSC, which sets the guest's TSC to its value
 * at capture: the guest's TSC would stand still for the time between
 * capture and restore while its kvmclock moved on.  Step 5 undoes that
 * rewind the way KVM's documentation of KVM_VCPU_TSC_OFFSET describes
 * for migration: each offset is chosen so that kvmclock's zero falls
 * on the same guest TSC value as it did at capture.  Where KVM has no
 * such attribute, step 5 does nothing and the rewind stays.
 */
#ifndef VMMD_MACHINE_STATE_H
#define VMMD_MACHINE_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

#include "dev-state.h"

#define MACHINE_STATE_VCPUS_MAX	288
#define MACHINE_STATE_IOAPIC_PINS	24

struct machine_clock_state {
	uint64_t clock;		/* kvmclock, ns */
	uint32_t flags;		/* KVM_CLOCK_* as KVM_GET_CLOCK gave them */
	/* host CLOCK_REALTIME, ns: KVM's (KVM_CLOCK_REALTIME in flags)
	 * or, without it, vmmd's own reading at the capture */
	uint64_t realtime;
	uint64_t host_tsc;	/* host TSC (KVM_CLOCK_HOST_TSC) */
	uint32_t tsc_khz;	/* the guest's TSC frequency, 0: unknown */
	/* Per vCPU, KVM_VCPU_TSC_OFFSET; ntsc_offset 0 where KVM has none. */
	uint32_t ntsc_offset;
	uint64_t tsc_offset[MACHINE_STATE_VCPUS_MAX];
};

struct machine_pic_state {
	struct kvm_pic_state master;
	struct kvm_pic_state slave;
};

struct machine_ioapic_state {
	uint64_t base_address;
	uint32_t ioregsel;
	uint32_t id;
	uint32_t irr;
	uint64_t redir[MACHINE_STATE_IOAPIC_PINS];
};

struct machine_pit_state {
	struct kvm_pit_channel_state channel[3];
	uint32_t flags;
};

struct machine_state {
	struct machine_clock_state clock;
	struct machine_pic_state pic;
	struct machine_ioapic_state ioapic;
	struct machine_pit_state pit;
};

extern const struct dev_state_table machine_clock_table;	/* "clock" */
extern const struct dev_state_table machine_pic_table;		/* "pic" */
extern const struct dev_state_table machine_ioapic_table;	/* "ioapic" */
extern const struct dev_state_table machine_pit_table;		/* "pit" */

/*
 * Read the VM's state (vm_fd, its vCPUs' fds, nvcpus of them, at most
 * MACHINE_STATE_VCPUS_MAX) into st: 0, or -errno with err saying which
 * part failed.
 */
int	machine_state_capture(int vm_fd, const int *vcpu_fds,
	    unsigned int nvcpus, struct machine_state *st, char *err,
	    size_t errlen);

/* Step 1 above: 0, or -errno (-EOPNOTSUPP: no TSC control) with err. */
/*
 * kvmclock clock, captured at host CLOCK_REALTIME then (ns, 0: unknown),
 * moved on to now: clock plus now - then, or clock unchanged where the
 * host's clock went back or then is unknown (the guest's clock never
 * goes back), or where the sum would pass INT64_MAX.
 */
uint64_t machine_state_clock_moved_on(uint64_t clock, uint64_t then,
	    uint64_t now);
int	machine_state_restore_clock(int vm_fd, const int *vcpu_fds,
	    unsigned int nvcpus, const struct machine_clock_state *st,
	    char *err, size_t errlen);

/* Step 2 above. */
int	machine_state_restore_chips(int vm_fd, const struct machine_state *st,
	    char *err, size_t errlen);

/*
 * Step 5 above, with the kvmclock and host TSC KVM_GET_CLOCK gives
 * now: each vCPU's offset such that the guest's TSC is where it would
 * be had it run through the kvmclock time step 1 moved on.
 */
int	machine_state_restore_tsc(int vm_fd, const int *vcpu_fds,
	    unsigned int nvcpus, const struct machine_clock_state *st,
	    char *err, size_t errlen);

/*
 * The offset step 5 gives a vCPU whose offset at capture was ofs_src,
 * with kvmclock guest_src and host TSC tsc_src at capture and
 * guest_dst, tsc_dst now, for a guest TSC of khz kHz (KVM's
 * Documentation/virt/kvm/devices/vcpu.rst): exposed for tests.
 */
uint64_t machine_state_tsc_offset(uint64_t ofs_src, uint64_t guest_src,
	    uint64_t tsc_src, uint64_t guest_dst, uint64_t tsc_dst,
	    uint32_t khz);

#endif
