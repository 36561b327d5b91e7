/*
 * The machine's own state (machine-state.h): the sections' tables and
 * their checks, and the KVM ioctls that read and write them
 * (Documentation/virt/kvm/api.rst, devices/vcpu.rst).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "kvm.h"
#include "machine-state.h"
#include "pc-layout.h"

#define MS_AT(stype, nm, ty, m, ...)					\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(stype, m), __VA_ARGS__ }

#define MACHINE_CLOCK_FLAGS						\
	(KVM_CLOCK_TSC_STABLE | KVM_CLOCK_REALTIME | KVM_CLOCK_HOST_TSC)

/* "clock" */

#define MC(nm, ty, m, ...)						\
	MS_AT(struct machine_clock_state, nm, ty, m, __VA_ARGS__)

static const struct dev_state_field machine_clock_fields[] = {
	MC("clock", DEV_STATE_U64, clock),
	MC("flags", DEV_STATE_U32, flags, .max = MACHINE_CLOCK_FLAGS),
	MC("realtime", DEV_STATE_U64, realtime),
	MC("host_tsc", DEV_STATE_U64, host_tsc),
	MC("tsc_khz", DEV_STATE_U32, tsc_khz),
	MC("tsc_offset", DEV_STATE_ARRAY_U64, tsc_offset,
	    .flags = DEV_STATE_VARLEN,
	    .count_offset = offsetof(struct machine_clock_state, ntsc_offset)),
};

static int
machine_clock_check(const void *state, struct dev_state_error *err)
{
	const struct machine_clock_state *st = state;

	if (st->flags & ~MACHINE_CLOCK_FLAGS)
		return dev_state_fail(err, -EINVAL, "clock: flags %#x",
		    st->flags);
	if (st->ntsc_offset != 0 && st->tsc_khz == 0)
		return dev_state_fail(err, -EINVAL,
		    "clock: tsc_offset without tsc_khz");
	return 0;
}

const struct dev_state_table machine_clock_table = {
	DEV_STATE_TABLE("clock", 1, struct machine_clock_state,
	    machine_clock_fields),
	.check = machine_clock_check,
};

/* "pic" */

#define MP(chip, m, ...)						\
	MS_AT(struct machine_pic_state, #chip "." #m, DEV_STATE_U8,	\
	    chip.m, __VA_ARGS__)
#define MP_FLAG(chip, m)	MP(chip, m, .max = 1)

#define MP_CHIP(chip)							\
	MP(chip, last_irr), MP(chip, irr), MP(chip, imr), MP(chip, isr),	\
	MP(chip, priority_add, .max = 7), MP(chip, irq_base),		\
	MP_FLAG(chip, read_reg_select), MP_FLAG(chip, poll),		\
	MP_FLAG(chip, special_mask), MP(chip, init_state, .max = 3),	\
	MP_FLAG(chip, auto_eoi), MP_FLAG(chip, rotate_on_auto_eoi),	\
	MP_FLAG(chip, special_fully_nested_mode), MP_FLAG(chip, init4),	\
	MP(chip, elcr), MP(chip, elcr_mask)

static const struct dev_state_field machine_pic_fields[] = {
	MP_CHIP(master),
	MP_CHIP(slave),
};

static int
machine_pic_check_chip(const struct kvm_pic_state *c, const char *name,
    struct dev_state_error *err)
{
	/* ICW2 gives the vector base's upper 5 bits; KVM keeps only those. */
	if (c->irq_base & 7)
		return dev_state_fail(err, -EINVAL,
		    "pic: %s.irq_base %#x is not a multiple of 8", name,
		    c->irq_base);
	if (c->elcr & ~c->elcr_mask)
		return dev_state_fail(err, -EINVAL,
		    "pic: %s.elcr %#x beyond its mask %#x", name, c->elcr,
		    c->elcr_mask);
	return 0;
}

static int
machine_pic_check(const void *state, struct dev_state_error *err)
{
	const struct machine_pic_state *st = state;
	int rc;

	if ((rc = machine_pic_check_chip(&st->master, "master", err)) < 0)
		return rc;
	return machine_pic_check_chip(&st->slave, "slave", err);
}

const struct dev_state_table machine_pic_table = {
	DEV_STATE_TABLE("pic", 1, struct machine_pic_state,
	    machine_pic_fields),
	.check = machine_pic_check,
};

/* "ioapic" */

#define MI(nm, ty, m, ...)						\
	MS_AT(struct machine_ioapic_state, nm, ty, m, __VA_ARGS__)

static const struct dev_state_field machine_ioapic_fields[] = {
	MI("base_address", DEV_STATE_U64, base_address),
	MI("ioregsel", DEV_STATE_U32, ioregsel, .max = 0xff),
	MI("id", DEV_STATE_U32, id, .max = 0xf),
	MI("irr", DEV_STATE_U32, irr,
	    .max = (1u << MACHINE_STATE_IOAPIC_PINS) - 1),
	MI("redirtbl", DEV_STATE_ARRAY_U64, redir),
};

/* A redirection entry's bits (82093AA, 3.2.4). */
#define IOAPIC_REDIR_MODE(e)		(((e) >> 8) & 7)
#define IOAPIC_REDIR_REMOTE_IRR		(1ull << 14)
#define IOAPIC_REDIR_LEVEL		(1ull << 15)

static int
machine_ioapic_check(const void *state, struct dev_state_error *err)
{
	const struct machine_ioapic_state *st = state;
	unsigned int pin, mode;

	if (st->base_address != PC_IOAPIC_ADDR)
		return dev_state_fail(err, -EINVAL,
		    "ioapic: base_address %#llx where the board has %#x",
		    (unsigned long long)st->base_address, PC_IOAPIC_ADDR);
	for (pin = 0; pin < MACHINE_STATE_IOAPIC_PINS; pin++) {
		mode = IOAPIC_REDIR_MODE(st->redir[pin]);
		if (mode == 3 || mode == 6)
			return dev_state_fail(err, -EINVAL,
			    "ioapic: redirtbl[%u] has the reserved delivery "
			    "mode %u", pin, mode);
		if ((st->redir[pin] & IOAPIC_REDIR_REMOTE_IRR) &&
		    !(st->redir[pin] & IOAPIC_REDIR_LEVEL))
			return dev_state_fail(err, -EINVAL,
			    "ioapic: redirtbl[%u] has a remote IRR on an "
			    "edge-triggered pin", pin);
	}
	return 0;
}

const struct dev_state_table machine_ioapic_table = {
	DEV_STATE_TABLE("ioapic", 1, struct machine_ioapic_state,
	    machine_ioapic_fields),
	.check = machine_ioapic_check,
};

/* "pit" */

#define MT(ch, nm, ty, m, ...)						\
	MS_AT(struct machine_pit_state, "channel" #ch "." nm, ty,	\
	    channel[ch].m, __VA_ARGS__)
#define MT_U8(ch, m, ...)	MT(ch, #m, DEV_STATE_U8, m, __VA_ARGS__)

/*
 * KVM's i8254 (arch/x86/kvm/i8254.c): a count of 0 is kept as 65536;
 * the RW_STATE_* read and write states run 1 to 4, 0 before the first
 * access; a mode is 0 to 5 (6 and 7 alias 2 and 3), 0xff on a channel
 * never programmed, the check's.  count_load_time, the host's clock at
 * the last load, is not kept: KVM_SET_PIT2 reloads each count now.
 */
#define MT_CHANNEL(ch)							\
	MT(ch, "count", DEV_STATE_U32, count, .max = 0x10000),		\
	MT(ch, "latched_count", DEV_STATE_U16, latched_count),		\
	MT_U8(ch, count_latched, .max = 3),				\
	MT_U8(ch, status_latched, .max = 1),				\
	MT_U8(ch, status),						\
	MT_U8(ch, read_state, .max = 4),				\
	MT_U8(ch, write_state, .max = 4),				\
	MT_U8(ch, write_latch),						\
	MT_U8(ch, rw_mode, .max = 3),					\
	MT_U8(ch, mode),						\
	MT_U8(ch, bcd, .max = 1),					\
	MT_U8(ch, gate, .max = 1)

#define MACHINE_PIT_FLAGS						\
	(KVM_PIT_FLAGS_HPET_LEGACY | KVM_PIT_FLAGS_SPEAKER_DATA_ON)

static const struct dev_state_field machine_pit_fields[] = {
	MT_CHANNEL(0), MT_CHANNEL(1), MT_CHANNEL(2),
	MS_AT(struct machine_pit_state, "flags", DEV_STATE_U32, flags,
	    .max = MACHINE_PIT_FLAGS),
};

static int
machine_pit_check(const void *state, struct dev_state_error *err)
{
	const struct machine_pit_state *st = state;
	unsigned int ch;

	for (ch = 0; ch < 3; ch++)
		if (st->channel[ch].mode > 5 && st->channel[ch].mode != 0xff)
			return dev_state_fail(err, -EINVAL,
			    "pit: channel%u.mode %u", ch,
			    st->channel[ch].mode);
	return 0;
}

const struct dev_state_table machine_pit_table = {
	DEV_STATE_TABLE("pit", 1, struct machine_pit_state,
	    machine_pit_fields),
	.check = machine_pit_check,
};

/* KVM */

static struct kvm_device_attr
machine_state_tsc_attr(uint64_t *value)
{
	return (struct kvm_device_attr){ .group = KVM_VCPU_TSC_CTRL,
	    .attr = KVM_VCPU_TSC_OFFSET, .addr = (uintptr_t)value };
}

/* Whether KVM lets the VMM read and write a vCPU's TSC offset. */
static int
machine_state_has_tsc_offset(int vcpu_fd)
{
	struct kvm_device_attr a = machine_state_tsc_attr(NULL);

	return ioctl(vcpu_fd, KVM_HAS_DEVICE_ATTR, &a) == 0;
}

/* The host's CLOCK_REALTIME in ns; 0 if it is before 1970. */
static uint64_t
machine_state_realtime_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || ts.tv_sec < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
machine_state_clock_moved_on(uint64_t clock, uint64_t then, uint64_t now)
{
	uint64_t passed;

	if (then == 0 || now <= then)
		return clock;
	passed = now - then;
	if (passed > (uint64_t)INT64_MAX - clock || clock > INT64_MAX)
		return clock;
	return clock + passed;
}

static int
machine_state_capture_clock(int vm_fd, const int *vcpu_fds,
    unsigned int nvcpus, struct machine_clock_state *st, char *err,
    size_t errlen)
{
	struct kvm_clock_data clock = { 0 };
	struct kvm_device_attr a;
	unsigned int i;
	int rc;

	rc = kvm_ioctl_err(vm_fd, KVM_GET_CLOCK, &clock,
	    "KVM_GET_CLOCK", err, errlen);
	if (rc < 0)
		return rc;
	st->clock = clock.clock;
	st->flags = clock.flags & MACHINE_CLOCK_FLAGS;
	st->realtime = clock.flags & KVM_CLOCK_REALTIME ? clock.realtime :
	    machine_state_realtime_ns();
	st->host_tsc = clock.flags & KVM_CLOCK_HOST_TSC ? clock.host_tsc : 0;
	if (nvcpus == 0)
		return 0;
	rc = ioctl(vcpu_fds[0], KVM_GET_TSC_KHZ, 0);
	st->tsc_khz = rc > 0 ? (uint32_t)rc : 0;
	/* The offsets only mean something against a host TSC. */
	if (st->tsc_khz == 0 || !(st->flags & KVM_CLOCK_HOST_TSC) ||
	    !machine_state_has_tsc_offset(vcpu_fds[0]))
		return 0;
	for (i = 0; i < nvcpus; i++) {
		a = machine_state_tsc_attr(&st->tsc_offset[i]);
		rc = kvm_ioctl_err(vcpu_fds[i], KVM_GET_DEVICE_ATTR, &a,
		    "KVM_VCPU_TSC_OFFSET", err, errlen);
		if (rc < 0)
			return rc;
	}
	st->ntsc_offset = nvcpus;
	return 0;
}

int
machine_state_capture(int vm_fd, const int *vcpu_fds, unsigned int nvcpus,
    struct machine_state *st, char *err, size_t errlen)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	unsigned int i;
	int rc;

	memset(st, 0, sizeof(*st));
	if (nvcpus > MACHINE_STATE_VCPUS_MAX) {
		snprintf(err, errlen, "%u vCPUs", nvcpus);
		return -E2BIG;
	}
	rc = machine_state_capture_clock(vm_fd, vcpu_fds, nvcpus, &st->clock,
	    err, errlen);
	if (rc < 0)
		return rc;

	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_PIC_MASTER;
	if ((rc = kvm_ioctl_err(vm_fd, KVM_GET_IRQCHIP, &chip,
	    "KVM_GET_IRQCHIP (PIC master)", err, errlen)) < 0)
		return rc;
	st->pic.master = chip.chip.pic;
	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_PIC_SLAVE;
	if ((rc = kvm_ioctl_err(vm_fd, KVM_GET_IRQCHIP, &chip,
	    "KVM_GET_IRQCHIP (PIC slave)", err, errlen)) < 0)
		return rc;
	st->pic.slave = chip.chip.pic;
	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_IOAPIC;
	if ((rc = kvm_ioctl_err(vm_fd, KVM_GET_IRQCHIP, &chip,
	    "KVM_GET_IRQCHIP (IOAPIC)", err, errlen)) < 0)
		return rc;
	st->ioapic.base_address = chip.chip.ioapic.base_address;
	st->ioapic.ioregsel = chip.chip.ioapic.ioregsel;
	st->ioapic.id = chip.chip.ioapic.id;
	st->ioapic.irr = chip.chip.ioapic.irr;
	for (i = 0; i < MACHINE_STATE_IOAPIC_PINS; i++)
		st->ioapic.redir[i] = chip.chip.ioapic.redirtbl[i].bits;

	memset(&pit, 0, sizeof(pit));
	if ((rc = kvm_ioctl_err(vm_fd, KVM_GET_PIT2, &pit,
	    "KVM_GET_PIT2", err, errlen)) < 0)
		return rc;
	for (i = 0; i < 3; i++) {
		st->pit.channel[i] = pit.channels[i];
		st->pit.channel[i].count_load_time = 0;
	}
	st->pit.flags = pit.flags & MACHINE_PIT_FLAGS;
	return 0;
}

int
machine_state_restore_clock(int vm_fd, const int *vcpu_fds,
    unsigned int nvcpus, const struct machine_clock_state *st, char *err,
    size_t errlen)
{
	struct kvm_clock_data clock = { 0 };
	unsigned int i;
	int khz, rc;

	if (st->tsc_khz != 0 && nvcpus > 0) {
		khz = ioctl(vcpu_fds[0], KVM_GET_TSC_KHZ, 0);
		if (khz != (int)st->tsc_khz &&
		    ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_CONTROL) <= 0) {
			snprintf(err, errlen, "the guest's TSC ran at %u kHz, "
			    "this host's runs at %d kHz and KVM cannot set "
			    "it (no KVM_CAP_TSC_CONTROL)", st->tsc_khz, khz);
			return -EOPNOTSUPP;
		}
		for (i = 0; khz != (int)st->tsc_khz && i < nvcpus; i++) {
			rc = kvm_ioctl_err(vcpu_fds[i], KVM_SET_TSC_KHZ,
			    (void *)(uintptr_t)st->tsc_khz, "KVM_SET_TSC_KHZ",
			    err, errlen);
			if (rc < 0)
				return rc;
		}
	}
	/*
	 * With KVM_CLOCK_REALTIME, KVM adds the host's CLOCK_REALTIME time
	 * since the capture: the guest's clock moves on by what passed.
	 * A KVM that did not give it (its clock not on the TSC) had
	 * CLOCK_REALTIME read beside it at the capture: the same addition
	 * here, never backwards.
	 */
	clock.clock = st->clock;
	clock.realtime = st->realtime;
	clock.flags = st->flags & KVM_CLOCK_REALTIME;
	if (!(st->flags & KVM_CLOCK_REALTIME)) {
		clock.clock = machine_state_clock_moved_on(st->clock,
		    st->realtime, machine_state_realtime_ns());
		clock.realtime = 0;
	}
	rc = kvm_ioctl_err(vm_fd, KVM_SET_CLOCK, &clock,
	    "KVM_SET_CLOCK", err, errlen);
	return rc < 0 ? rc : 0;
}

int
machine_state_restore_chips(int vm_fd, const struct machine_state *st,
    char *err, size_t errlen)
{
	struct kvm_irqchip chip;
	struct kvm_pit_state2 pit;
	unsigned int i;
	int rc;

	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_PIC_MASTER;
	chip.chip.pic = st->pic.master;
	if ((rc = kvm_ioctl_err(vm_fd, KVM_SET_IRQCHIP, &chip,
	    "KVM_SET_IRQCHIP (PIC master)", err, errlen)) < 0)
		return rc;
	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_PIC_SLAVE;
	chip.chip.pic = st->pic.slave;
	if ((rc = kvm_ioctl_err(vm_fd, KVM_SET_IRQCHIP, &chip,
	    "KVM_SET_IRQCHIP (PIC slave)", err, errlen)) < 0)
		return rc;
	memset(&chip, 0, sizeof(chip));
	chip.chip_id = KVM_IRQCHIP_IOAPIC;
	chip.chip.ioapic.base_address = st->ioapic.base_address;
	chip.chip.ioapic.ioregsel = st->ioapic.ioregsel;
	chip.chip.ioapic.id = st->ioapic.id;
	chip.chip.ioapic.irr = st->ioapic.irr;
	for (i = 0; i < MACHINE_STATE_IOAPIC_PINS; i++)
		chip.chip.ioapic.redirtbl[i].bits = st->ioapic.redir[i];
	if ((rc = kvm_ioctl_err(vm_fd, KVM_SET_IRQCHIP, &chip,
	    "KVM_SET_IRQCHIP (IOAPIC)", err, errlen)) < 0)
		return rc;

	memset(&pit, 0, sizeof(pit));
	for (i = 0; i < 3; i++)
		pit.channels[i] = st->pit.channel[i];
	pit.flags = st->pit.flags;
	rc = kvm_ioctl_err(vm_fd, KVM_SET_PIT2, &pit, "KVM_SET_PIT2",
	    err, errlen);
	return rc < 0 ? rc : 0;
}

uint64_t
machine_state_tsc_offset(uint64_t ofs_src, uint64_t guest_src,
    uint64_t tsc_src, uint64_t guest_dst, uint64_t tsc_dst, uint32_t khz)
{
	/* 128 bits: nanoseconds times kHz overflows 64 after 213 days. */
	__int128 moved = (__int128)((int64_t)(guest_dst - guest_src)) * khz /
	    1000000;

	return ofs_src + (uint64_t)moved + (tsc_src - tsc_dst);
}

int
machine_state_restore_tsc(int vm_fd, const int *vcpu_fds,
    unsigned int nvcpus, const struct machine_clock_state *st, char *err,
    size_t errlen)
{
	struct kvm_clock_data now = { 0 };
	struct kvm_device_attr a;
	uint64_t ofs;
	unsigned int i;
	int rc;

	if (st->ntsc_offset == 0 || nvcpus == 0 ||
	    !machine_state_has_tsc_offset(vcpu_fds[0]))
		return 0;
	if (st->ntsc_offset != nvcpus) {
		snprintf(err, errlen, "TSC offsets for %u vCPUs, the machine "
		    "has %u", st->ntsc_offset, nvcpus);
		return -EINVAL;
	}
	rc = kvm_ioctl_err(vm_fd, KVM_GET_CLOCK, &now, "KVM_GET_CLOCK",
	    err, errlen);
	if (rc < 0)
		return rc;
	if (!(now.flags & KVM_CLOCK_HOST_TSC))
		return 0;
	for (i = 0; i < nvcpus; i++) {
		ofs = machine_state_tsc_offset(st->tsc_offset[i], st->clock,
		    st->host_tsc, now.clock, now.host_tsc, st->tsc_khz);
		a = machine_state_tsc_attr(&ofs);
		rc = kvm_ioctl_err(vcpu_fds[i], KVM_SET_DEVICE_ATTR, &a,
		    "KVM_VCPU_TSC_OFFSET", err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}
