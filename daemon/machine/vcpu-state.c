/*
 * A vCPU's state (vcpu-state.h): its section's table, and the KVM
 * ioctls that read and write it (Documentation/virt/kvm/api.rst).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kvm.h"
#include "vcpu-state.h"

#define VS(nm, ty, m, ...)						\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct vcpu_state, m),	\
	    __VA_ARGS__ }
#define VS_U64(m)	VS(#m, DEV_STATE_U64, m)
#define VS_FLAG(nm, m)	VS(nm, DEV_STATE_U8, m, .max = 1)

#define VS_SEG(sg)							\
	VS(#sg ".base", DEV_STATE_U64, sregs.sg.base),			\
	VS(#sg ".limit", DEV_STATE_U32, sregs.sg.limit),			\
	VS(#sg ".selector", DEV_STATE_U16, sregs.sg.selector),		\
	VS(#sg ".type", DEV_STATE_U8, sregs.sg.type, .max = 15),		\
	VS_FLAG(#sg ".present", sregs.sg.present),			\
	VS(#sg ".dpl", DEV_STATE_U8, sregs.sg.dpl, .max = 3),		\
	VS_FLAG(#sg ".db", sregs.sg.db),					\
	VS_FLAG(#sg ".s", sregs.sg.s),					\
	VS_FLAG(#sg ".l", sregs.sg.l),					\
	VS_FLAG(#sg ".g", sregs.sg.g),					\
	VS_FLAG(#sg ".avl", sregs.sg.avl),				\
	VS_FLAG(#sg ".unusable", sregs.sg.unusable)

#define VS_DT(t)							\
	VS(#t ".base", DEV_STATE_U64, sregs.t.base),			\
	VS(#t ".limit", DEV_STATE_U16, sregs.t.limit)

#define VS_VARLEN(nm, ty, m, n)						\
	VS(nm, ty, m, .flags = DEV_STATE_VARLEN,			\
	    .count_offset = offsetof(struct vcpu_state, n))

#define VCPU_EVENT_FLAGS						\
	(KVM_VCPUEVENT_VALID_NMI_PENDING | KVM_VCPUEVENT_VALID_SIPI_VECTOR | \
	 KVM_VCPUEVENT_VALID_SHADOW | KVM_VCPUEVENT_VALID_SMM |		\
	 KVM_VCPUEVENT_VALID_PAYLOAD | KVM_VCPUEVENT_VALID_TRIPLE_FAULT)

/*
 * Each member of the kernel's structures a field of its own, named as
 * the kernel names it, except the local APIC's register page (bytes,
 * as KVM_GET_LAPIC gives them) and the XCRs and MSRs, whose index and
 * value are arrays of their own.
 */
static const struct dev_state_field vcpu_state_fields[] = {
	VS_U64(regs.rax), VS_U64(regs.rbx), VS_U64(regs.rcx),
	VS_U64(regs.rdx), VS_U64(regs.rsi), VS_U64(regs.rdi),
	VS_U64(regs.rsp), VS_U64(regs.rbp), VS_U64(regs.r8),
	VS_U64(regs.r9), VS_U64(regs.r10), VS_U64(regs.r11),
	VS_U64(regs.r12), VS_U64(regs.r13), VS_U64(regs.r14),
	VS_U64(regs.r15), VS_U64(regs.rip), VS_U64(regs.rflags),

	VS_SEG(cs), VS_SEG(ds), VS_SEG(es), VS_SEG(fs), VS_SEG(gs),
	VS_SEG(ss), VS_SEG(tr), VS_SEG(ldt),
	VS_DT(gdt), VS_DT(idt),
	VS_U64(sregs.cr0), VS_U64(sregs.cr2), VS_U64(sregs.cr3),
	VS_U64(sregs.cr4), VS_U64(sregs.cr8), VS_U64(sregs.efer),
	VS_U64(sregs.apic_base),
	VS("sregs.interrupt_bitmap", DEV_STATE_ARRAY_U64,
	    sregs.interrupt_bitmap),

	VS_FLAG("events.exception.injected", events.exception.injected),
	VS("events.exception.nr", DEV_STATE_U8, events.exception.nr,
	    .max = 31),
	VS_FLAG("events.exception.has_error_code",
	    events.exception.has_error_code),
	VS_FLAG("events.exception.pending", events.exception.pending),
	VS("events.exception.error_code", DEV_STATE_U32,
	    events.exception.error_code),
	VS_FLAG("events.interrupt.injected", events.interrupt.injected),
	VS("events.interrupt.nr", DEV_STATE_U8, events.interrupt.nr),
	VS_FLAG("events.interrupt.soft", events.interrupt.soft),
	VS("events.interrupt.shadow", DEV_STATE_U8, events.interrupt.shadow,
	    .max = KVM_X86_SHADOW_INT_MOV_SS | KVM_X86_SHADOW_INT_STI),
	VS_FLAG("events.nmi.injected", events.nmi.injected),
	VS_FLAG("events.nmi.pending", events.nmi.pending),
	VS_FLAG("events.nmi.masked", events.nmi.masked),
	VS("events.sipi_vector", DEV_STATE_U32, events.sipi_vector,
	    .max = 255),
	VS("events.flags", DEV_STATE_U32, events.flags,
	    .max = VCPU_EVENT_FLAGS),
	VS_FLAG("events.smi.smm", events.smi.smm),
	VS_FLAG("events.smi.pending", events.smi.pending),
	VS_FLAG("events.smi.smm_inside_nmi", events.smi.smm_inside_nmi),
	VS_FLAG("events.smi.latched_init", events.smi.latched_init),
	VS_FLAG("events.triple_fault.pending", events.triple_fault.pending),
	VS_FLAG("events.exception_has_payload",
	    events.exception_has_payload),
	VS_U64(events.exception_payload),

	VS("debugregs.db", DEV_STATE_ARRAY_U64, debugregs.db),
	VS_U64(debugregs.dr6), VS_U64(debugregs.dr7),
	VS_U64(debugregs.flags),

	VS("mp_state", DEV_STATE_U32, mp.mp_state,
	    .max = KVM_MP_STATE_SUSPENDED),
	VS("lapic.regs", DEV_STATE_BYTES, lapic.regs),

	VS_VARLEN("xcrs.index", DEV_STATE_ARRAY_U32, xcr_index, nxcr_index),
	VS_VARLEN("xcrs.value", DEV_STATE_ARRAY_U64, xcr_value, nxcr_value),
	VS_VARLEN("msrs.index", DEV_STATE_ARRAY_U32, msr_index, nmsr_index),
	VS_VARLEN("msrs.value", DEV_STATE_ARRAY_U64, msr_value, nmsr_value),
	VS_VARLEN("xsave", DEV_STATE_ARRAY_U32, xsave, xsave_words),
};

static int
vcpu_state_check(const void *state, struct dev_state_error *err)
{
	const struct vcpu_state *st = state;

	if (st->nxcr_index != st->nxcr_value ||
	    st->nmsr_index != st->nmsr_value)
		return dev_state_fail(err, -EINVAL,
		    "vcpu: %u XCR and %u MSR indices for %u and %u values",
		    st->nxcr_index, st->nmsr_index, st->nxcr_value,
		    st->nmsr_value);
	if (st->xsave_words != 0 &&
	    st->xsave_words < sizeof(struct kvm_xsave) / 4)
		return dev_state_fail(err, -EINVAL,
		    "vcpu: an XSAVE area of %u bytes", st->xsave_words * 4);
	if (st->events.flags & ~VCPU_EVENT_FLAGS)
		return dev_state_fail(err, -EINVAL, "vcpu: event flags %#x",
		    st->events.flags);
	return 0;
}

const struct dev_state_table vcpu_state_table = {
	DEV_STATE_TABLE("vcpu", 1, struct vcpu_state, vcpu_state_fields),
	.check = vcpu_state_check,
};

/* The bytes of KVM's XSAVE area, 0 without XSAVE. */
static int
vcpu_state_xsave_size(int vm_fd)
{
	int n;

	n = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2);
	if (n > 0)
		return n;
	if (ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE) > 0)
		return sizeof(struct kvm_xsave);
	return 0;
}

/*
 * The MSRs KVM lists (KVM_GET_MSR_INDEX_LIST) and reads on this vCPU:
 * KVM_GET_MSRS stops at the first it cannot read and says how many it
 * did, so that one is dropped and the rest read again.
 */
static int
vcpu_state_get_msrs(int kvm_fd, int vcpu_fd, struct vcpu_state *st,
    char *err, size_t errlen)
{
	struct kvm_msr_list *list;
	struct kvm_msrs *msrs;
	uint32_t n, i;
	int rc;

	list = calloc(1, sizeof(*list) + VCPU_STATE_MSRS_MAX *
	    sizeof(list->indices[0]));
	msrs = calloc(1, sizeof(*msrs) + VCPU_STATE_MSRS_MAX *
	    sizeof(msrs->entries[0]));
	if (list == NULL || msrs == NULL) {
		rc = -ENOMEM;
		snprintf(err, errlen, "MSRs: out of memory");
		goto out;
	}
	list->nmsrs = VCPU_STATE_MSRS_MAX;
	rc = kvm_ioctl_err(kvm_fd, KVM_GET_MSR_INDEX_LIST, list,
	    "KVM_GET_MSR_INDEX_LIST", err, errlen);
	if (rc < 0)
		goto out;
	n = list->nmsrs;
	for (i = 0; i < n; i++)
		msrs->entries[i].index = list->indices[i];
	/* Read, dropping each MSR KVM will not read. */
	for (;;) {
		msrs->nmsrs = n;
		rc = kvm_ioctl_err(vcpu_fd, KVM_GET_MSRS, msrs,
		    "KVM_GET_MSRS", err, errlen);
		if (rc < 0)
			goto out;
		if ((uint32_t)rc >= n)
			break;
		memmove(&msrs->entries[rc], &msrs->entries[rc + 1],
		    (n - rc - 1) * sizeof(msrs->entries[0]));
		n--;
	}
	for (i = 0; i < n; i++) {
		st->msr_index[i] = msrs->entries[i].index;
		st->msr_value[i] = msrs->entries[i].data;
	}
	st->nmsr_index = st->nmsr_value = n;
	rc = 0;
out:
	free(list);
	free(msrs);
	return rc;
}

int
vcpu_state_capture(int kvm_fd, int vm_fd, int vcpu_fd, struct vcpu_state *st,
    char *err, size_t errlen)
{
	struct kvm_xcrs xcrs;
	int rc, size;
	uint32_t i;

	memset(st, 0, sizeof(*st));
	if ((rc = kvm_ioctl_err(vcpu_fd, KVM_GET_REGS, &st->regs,
	    "KVM_GET_REGS", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_GET_SREGS, &st->sregs,
	    "KVM_GET_SREGS", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_GET_VCPU_EVENTS, &st->events,
	    "KVM_GET_VCPU_EVENTS", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_GET_DEBUGREGS, &st->debugregs,
	    "KVM_GET_DEBUGREGS", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_GET_MP_STATE, &st->mp,
	    "KVM_GET_MP_STATE", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_GET_LAPIC, &st->lapic,
	    "KVM_GET_LAPIC", err, errlen)) < 0)
		return rc;

	size = vcpu_state_xsave_size(vm_fd);
	if (size > VCPU_STATE_XSAVE_MAX || size % 4 != 0) {
		snprintf(err, errlen, "an XSAVE area of %d bytes", size);
		return -E2BIG;
	}
	if (size > 0) {
		rc = kvm_ioctl_err(vcpu_fd, size > (int)sizeof(struct
		    kvm_xsave) ? KVM_GET_XSAVE2 : KVM_GET_XSAVE, st->xsave,
		    "KVM_GET_XSAVE", err, errlen);
		if (rc < 0)
			return rc;
		st->xsave_words = size / 4;
	}

	if (ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XCRS) > 0) {
		rc = kvm_ioctl_err(vcpu_fd, KVM_GET_XCRS, &xcrs,
		    "KVM_GET_XCRS", err, errlen);
		if (rc < 0)
			return rc;
		if (xcrs.nr_xcrs > KVM_MAX_XCRS)
			xcrs.nr_xcrs = KVM_MAX_XCRS;
		for (i = 0; i < xcrs.nr_xcrs; i++) {
			st->xcr_index[i] = xcrs.xcrs[i].xcr;
			st->xcr_value[i] = xcrs.xcrs[i].value;
		}
		st->nxcr_index = st->nxcr_value = xcrs.nr_xcrs;
	}
	return vcpu_state_get_msrs(kvm_fd, vcpu_fd, st, err, errlen);
}

static int
vcpu_state_set_msrs(int vcpu_fd, const struct vcpu_state *st, char *err,
    size_t errlen)
{
	struct kvm_msrs *msrs;
	uint32_t i, n = st->nmsr_index;
	int rc;

	if (n == 0)
		return 0;
	msrs = calloc(1, sizeof(*msrs) + n * sizeof(msrs->entries[0]));
	if (msrs == NULL) {
		snprintf(err, errlen, "MSRs: out of memory");
		return -ENOMEM;
	}
	msrs->nmsrs = n;
	for (i = 0; i < n; i++) {
		msrs->entries[i].index = st->msr_index[i];
		msrs->entries[i].data = st->msr_value[i];
	}
	rc = kvm_ioctl_err(vcpu_fd, KVM_SET_MSRS, msrs, "KVM_SET_MSRS",
	    err, errlen);
	if (rc >= 0 && (uint32_t)rc < n) {
		snprintf(err, errlen, "KVM_SET_MSRS: MSR %#x refused",
		    st->msr_index[rc]);
		rc = -EINVAL;
	}
	free(msrs);
	return rc < 0 ? rc : 0;
}

/* IA32_TSC_DEADLINE (SDM vol. 4, table 2-2). */
#define VCPU_MSR_TSC_DEADLINE	0x6e0

/*
 * The TSC deadline again, once the local APIC is restored: KVM takes a
 * write of IA32_TSC_DEADLINE only while the APIC timer is in
 * TSC-deadline mode, and drops it otherwise; with the MSRs set before
 * KVM_SET_LAPIC (a fresh vCPU's timer is masked, one-shot) the deadline
 * is lost, and a guest that waits for it (an idle CPU's next tick, a
 * sleeping task's timer) waits for ever.  QEMU sets it after the APIC
 * for the same reason.
 */
static int
vcpu_state_set_deadline(int vcpu_fd, const struct vcpu_state *st, char *err,
    size_t errlen)
{
	struct {
		struct kvm_msrs h;
		struct kvm_msr_entry e;
	} one;
	uint32_t i;
	int rc;

	for (i = 0; i < st->nmsr_index; i++)
		if (st->msr_index[i] == VCPU_MSR_TSC_DEADLINE)
			break;
	if (i == st->nmsr_index)
		return 0;
	memset(&one, 0, sizeof(one));
	one.h.nmsrs = 1;
	one.e.index = VCPU_MSR_TSC_DEADLINE;
	one.e.data = st->msr_value[i];
	rc = kvm_ioctl_err(vcpu_fd, KVM_SET_MSRS, &one, "KVM_SET_MSRS",
	    err, errlen);
	if (rc == 0) {
		snprintf(err, errlen, "KVM_SET_MSRS: MSR %#x refused",
		    VCPU_MSR_TSC_DEADLINE);
		rc = -EINVAL;
	}
	return rc < 0 ? rc : 0;
}

int
vcpu_state_restore(int vm_fd, int vcpu_fd, const struct vcpu_state *st,
    char *err, size_t errlen)
{
	struct kvm_vcpu_events events = st->events;
	struct kvm_xcrs xcrs;
	int rc, size;
	uint32_t i;

	if ((rc = kvm_ioctl_err(vcpu_fd, KVM_SET_SREGS,
	    (void *)&st->sregs, "KVM_SET_SREGS", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_SET_REGS, (void *)&st->regs,
	    "KVM_SET_REGS", err, errlen)) < 0)
		return rc;

	if (st->xsave_words != 0) {
		size = vcpu_state_xsave_size(vm_fd);
		if ((uint32_t)size != st->xsave_words * 4 &&
		    st->xsave_words * 4 != sizeof(struct kvm_xsave)) {
			snprintf(err, errlen, "an XSAVE area of %u bytes where "
			    "KVM has %d", st->xsave_words * 4, size);
			return -EINVAL;
		}
		rc = kvm_ioctl_err(vcpu_fd, KVM_SET_XSAVE,
		    (void *)st->xsave, "KVM_SET_XSAVE", err, errlen);
		if (rc < 0)
			return rc;
	}
	if (st->nxcr_index != 0) {
		memset(&xcrs, 0, sizeof(xcrs));
		xcrs.nr_xcrs = st->nxcr_index;
		for (i = 0; i < st->nxcr_index; i++) {
			xcrs.xcrs[i].xcr = st->xcr_index[i];
			xcrs.xcrs[i].value = st->xcr_value[i];
		}
		rc = kvm_ioctl_err(vcpu_fd, KVM_SET_XCRS, &xcrs,
		    "KVM_SET_XCRS", err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = vcpu_state_set_msrs(vcpu_fd, st, err, errlen);
	if (rc < 0)
		return rc;
	/* What KVM_GET_VCPU_EVENTS leaves unflagged is part of it too. */
	events.flags |= KVM_VCPUEVENT_VALID_NMI_PENDING |
	    KVM_VCPUEVENT_VALID_SIPI_VECTOR;
	if ((rc = kvm_ioctl_err(vcpu_fd, KVM_SET_LAPIC, (void *)&st->lapic,
	    "KVM_SET_LAPIC", err, errlen)) < 0 ||
	    (rc = vcpu_state_set_deadline(vcpu_fd, st, err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_SET_MP_STATE, (void *)&st->mp,
	    "KVM_SET_MP_STATE", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_SET_VCPU_EVENTS, &events,
	    "KVM_SET_VCPU_EVENTS", err, errlen)) < 0 ||
	    (rc = kvm_ioctl_err(vcpu_fd, KVM_SET_DEBUGREGS,
	    (void *)&st->debugregs, "KVM_SET_DEBUGREGS", err, errlen)) < 0)
		return rc;
	return 0;
}
