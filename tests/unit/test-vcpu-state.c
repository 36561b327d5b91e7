/*
 * The vCPU state section (daemon/machine/vcpu-state.c), without KVM:
 * its table is sound, a state with every part filled in comes back
 * the same, and what only the check can see is refused (XCR or MSR
 * indices without as many values, an XSAVE area shorter than KVM's
 * smallest, unknown event flags).  The KVM side is the kvm suite's
 * (kvm-test-vcpu-state).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "unit-util.h"
#include "vcpu-state.h"

static struct vcpu_state *
filled(void)
{
	struct vcpu_state *st = calloc(1, sizeof(*st));
	uint8_t *lapic;

	if (st == NULL)
		tap_bail("out of memory");
	st->regs.rax = 0x1122334455667788ULL;
	st->regs.rip = 0xffffffff81000000ULL;
	st->regs.rflags = 0x246;
	st->sregs.cs.selector = 0x10;
	st->sregs.cs.l = 1;
	st->sregs.cs.present = 1;
	st->sregs.cs.type = 11;
	st->sregs.gdt.base = 0x1000;
	st->sregs.gdt.limit = 0x7f;
	st->sregs.cr0 = 0x80050033;
	st->sregs.efer = 0xd01;
	st->sregs.interrupt_bitmap[3] = 1ULL << 63;
	st->events.flags = KVM_VCPUEVENT_VALID_SHADOW;
	st->events.interrupt.shadow = KVM_X86_SHADOW_INT_STI;
	st->debugregs.dr7 = 0x400;
	st->mp.mp_state = KVM_MP_STATE_HALTED;
	lapic = (uint8_t *)st->lapic.regs;
	for (size_t i = 0; i < sizeof(st->lapic.regs); i++)
		lapic[i] = (uint8_t)(i * 7);
	st->nxcr_index = st->nxcr_value = 1;
	st->xcr_value[0] = 7;
	st->nmsr_index = st->nmsr_value = 3;
	st->msr_index[0] = 0x10;
	st->msr_value[0] = 123456789;
	st->msr_index[1] = 0xc0000080;
	st->msr_value[1] = 0xd01;
	st->msr_index[2] = 0x6e0;
	st->msr_value[2] = ~0ULL;
	st->xsave_words = 1024;
	for (uint32_t i = 0; i < st->xsave_words; i++)
		st->xsave[i] = i * 2654435761u;
	return st;
}

static int
load_changed(void (*change)(struct vcpu_state *),
    struct dev_state_error *e)
{
	struct vcpu_state *st = filled(), *back = calloc(1, sizeof(*back));
	struct dev_state_buf b = { 0 };
	int rc;

	change(st);
	if (back == NULL || dev_state_save(&vcpu_state_table, st, &b) != 0)
		tap_bail("save");
	e->msg[0] = '\0';
	rc = dev_state_load(&vcpu_state_table, back, b.data, b.len, e);
	dev_state_buf_free(&b);
	free(st);
	free(back);
	return rc;
}

static void
msr_values_short(struct vcpu_state *st)
{
	st->nmsr_value = 2;
}

static void
xcr_values_long(struct vcpu_state *st)
{
	st->nxcr_value = 2;
}

static void
xsave_short(struct vcpu_state *st)
{
	st->xsave_words = 100;
}

static void
events_flags_unknown(struct vcpu_state *st)
{
	st->events.flags = 0x100;
}

static void
nothing(struct vcpu_state *st)
{
}

int
main(void)
{
	struct vcpu_state *st = filled(), *back = calloc(1, sizeof(*back));
	struct dev_state_buf b1 = { 0 }, b2 = { 0 };
	struct dev_state_error e = { "" };
	int rc;

	if (back == NULL)
		tap_bail("out of memory");
	tap_ok(dev_state_table_check(&vcpu_state_table, &e) == 0,
	    "the vcpu table is sound %s", e.msg);
	tap_ok(dev_state_save(&vcpu_state_table, st, &b1) == 0, "save");
	rc = dev_state_load(&vcpu_state_table, back, b1.data, b1.len, &e);
	tap_ok(rc == 0, "load: %d %s", rc, e.msg);
	tap_ok(memcmp(&back->regs, &st->regs, sizeof(st->regs)) == 0 &&
	    memcmp(&back->sregs, &st->sregs, sizeof(st->sregs)) == 0 &&
	    memcmp(&back->lapic, &st->lapic, sizeof(st->lapic)) == 0 &&
	    back->mp.mp_state == st->mp.mp_state &&
	    back->debugregs.dr7 == st->debugregs.dr7 &&
	    back->events.flags == st->events.flags &&
	    back->events.interrupt.shadow == st->events.interrupt.shadow &&
	    back->nmsr_index == 3 && back->nmsr_value == 3 &&
	    back->msr_index[2] == 0x6e0 && back->msr_value[2] == ~0ULL &&
	    back->nxcr_index == 1 && back->xcr_value[0] == 7 &&
	    back->xsave_words == 1024 &&
	    memcmp(back->xsave, st->xsave, 4096) == 0,
	    "registers, segments, APIC page, events, MSRs, XCRs and XSAVE "
	    "come back");
	tap_ok(dev_state_save(&vcpu_state_table, back, &b2) == 0 &&
	    b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0,
	    "saved again: the same %zu bytes", b1.len);
	tap_ok(b1.len < 4096 + 8192, "only the MSRs and XSAVE words in use "
	    "are written (%zu bytes)", b1.len);

	tap_ok(load_changed(nothing, &e) == 0, "unchanged: taken %s", e.msg);
	tap_ok(load_changed(msr_values_short, &e) == -EINVAL,
	    "3 MSR indices, 2 values: %s", e.msg);
	tap_ok(load_changed(xcr_values_long, &e) == -EINVAL,
	    "1 XCR index, 2 values: %s", e.msg);
	tap_ok(load_changed(xsave_short, &e) == -EINVAL,
	    "a 400-byte XSAVE area: %s", e.msg);
	tap_ok(load_changed(events_flags_unknown, &e) == -EINVAL,
	    "unknown event flags: %s", e.msg);
	dev_state_buf_free(&b1);
	dev_state_buf_free(&b2);
	free(st);
	free(back);
	return tap_done();
}
