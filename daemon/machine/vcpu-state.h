/*
 * A vCPU's architectural state as KVM holds it: its registers, special
 * registers, FPU and extended state (XSAVE), XCRs, the MSRs KVM can
 * save, its local APIC, pending events, debug registers and MP state.
 * Captured from and restored to a vCPU's file descriptor while it is
 * out of KVM_RUN (a paused machine), and written to and read from one
 * state section (devices/dev-state.h) named "vcpu", declared once in
 * vcpu-state.c with fields sized as the kernel's structures are.
 *
 * The section is as hostile as any other input: a load validates what
 * a table can (types, sizes, counts, bounds), and KVM refuses, on
 * restore, what only it can judge (a reserved bit in CR4, an MSR it
 * will not set); restore stops at the first refusal and says which.
 */
#ifndef VMMD_VCPU_STATE_H
#define VMMD_VCPU_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

#include "dev-state.h"

/* Room for KVM_CAP_XSAVE2's size today (AMX: 11 KiB) and beyond. */
#define VCPU_STATE_XSAVE_MAX	(64 * 1024)
#define VCPU_STATE_MSRS_MAX	512

struct vcpu_state {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_vcpu_events events;
	struct kvm_debugregs debugregs;
	struct kvm_mp_state mp;
	struct kvm_lapic_state lapic;
	/* XCRs, as index and value (struct kvm_xcr pads between them). */
	uint32_t nxcr_index;
	uint32_t nxcr_value;
	uint32_t xcr_index[KVM_MAX_XCRS];
	uint64_t xcr_value[KVM_MAX_XCRS];
	/* The MSRs, the same way: nmsr_index == nmsr_value. */
	uint32_t nmsr_index;
	uint32_t nmsr_value;
	uint32_t msr_index[VCPU_STATE_MSRS_MAX];
	uint64_t msr_value[VCPU_STATE_MSRS_MAX];
	/* struct kvm_xsave: xsave_words of 4 bytes (KVM_CAP_XSAVE2's size). */
	uint32_t xsave_words;
	uint32_t xsave[VCPU_STATE_XSAVE_MAX / 4];
};

/* The section "vcpu" (version 1). */
extern const struct dev_state_table vcpu_state_table;

/*
 * Read vCPU vcpu_fd's state into st (about 70 KiB: allocate it).
 * kvm_fd and vm_fd say which MSRs KVM saves and how large its XSAVE
 * area is.  0, or -errno with err saying which part failed.
 */
int	vcpu_state_capture(int kvm_fd, int vm_fd, int vcpu_fd,
	    struct vcpu_state *st, char *err, size_t errlen);

/*
 * Write st back into the vCPU, in the order KVM needs (special
 * registers before the APIC, whose base they hold; MP state and events
 * last).  0, or -errno with err saying which part KVM refused.
 */
int	vcpu_state_restore(int vm_fd, int vcpu_fd, const struct vcpu_state *st,
	    char *err, size_t errlen);

#endif
