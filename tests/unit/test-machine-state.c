/*
 * The machine's state sections (daemon/machine/machine-state.c),
 * without KVM: the four tables are sound, a state with every part
 * filled in comes back the same, each check refuses what no PIC,
 * IOAPIC, PIT or clock can hold and names the field, and the TSC
 * offset that undoes MSR_IA32_TSC's rewind moves the guest's TSC on by
 * exactly the kvmclock time that passed; kvmclock moved on by the host
 * time since the capture, never back.  The KVM side is the kvm
 * suite's (kvm-test-vcpu-state, VMMD_TEST_VCPU_STATE=machine).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pc-layout.h"
#include "tap.h"
#include "machine-state.h"

static void
filled(struct machine_state *st)
{
	memset(st, 0, sizeof(*st));
	st->clock.clock = 123456789012ULL;
	st->clock.flags = KVM_CLOCK_TSC_STABLE | KVM_CLOCK_REALTIME |
	    KVM_CLOCK_HOST_TSC;
	st->clock.realtime = 1796000000000000000ULL;
	st->clock.host_tsc = 0x123456789abcULL;
	st->clock.tsc_khz = 2995200;
	st->clock.ntsc_offset = 2;
	st->clock.tsc_offset[0] = (uint64_t)-0x1234567;
	st->clock.tsc_offset[1] = (uint64_t)-0x1234568;
	st->pic.master = (struct kvm_pic_state){ .irr = 0x01, .imr = 0xb8,
	    .isr = 0x01, .priority_add = 1, .irq_base = 0x20, .init4 = 1,
	    .elcr = 0x00, .elcr_mask = 0xf8 };
	st->pic.slave = (struct kvm_pic_state){ .imr = 0xff, .irq_base = 0x28,
	    .init4 = 1, .elcr = 0x0c, .elcr_mask = 0xde, .auto_eoi = 1 };
	st->ioapic.base_address = PC_IOAPIC_ADDR;
	st->ioapic.ioregsel = 0x3e;
	st->ioapic.id = 0;
	st->ioapic.irr = 1u << 23;
	for (unsigned int i = 0; i < MACHINE_STATE_IOAPIC_PINS; i++)
		st->ioapic.redir[i] = 0x10000 | (0x30 + i);
	st->ioapic.redir[9] = 0x0100000000000000ULL | 0xc000 | 0x49;
	st->pit.channel[0] = (struct kvm_pit_channel_state){ .count = 0x10000,
	    .read_state = 3, .write_state = 3, .rw_mode = 3, .mode = 2,
	    .gate = 1 };
	st->pit.channel[1].mode = 0xff;
	st->pit.channel[1].count = 0x10000;
	st->pit.channel[2] = (struct kvm_pit_channel_state){ .count = 1193,
	    .latched_count = 77, .count_latched = 3, .status_latched = 1,
	    .status = 0x36, .mode = 3, .bcd = 1 };
	st->pit.flags = KVM_PIT_FLAGS_HPET_LEGACY;
}

/* Save part of a filled state changed by change(), load it back: rc. */
static int
load_changed(const struct dev_state_table *t, size_t off,
    void (*change)(struct machine_state *), struct dev_state_error *e)
{
	struct machine_state st, back;
	struct dev_state_buf b = { 0 };
	int rc;

	filled(&st);
	change(&st);
	memset(&back, 0, sizeof(back));
	if (dev_state_save(t, (char *)&st + off, &b) != 0)
		tap_bail("save %s", t->name);
	e->msg[0] = '\0';
	rc = dev_state_load(t, (char *)&back + off, b.data, b.len, e);
	dev_state_buf_free(&b);
	return rc;
}

static void nothing(struct machine_state *st) { (void)st; }
static void pic_base(struct machine_state *st) { st->pic.slave.irq_base = 0x2c; }
static void pic_prio(struct machine_state *st) { st->pic.master.priority_add = 8; }
static void pic_elcr(struct machine_state *st) { st->pic.master.elcr = 0x04; }
static void pic_init(struct machine_state *st) { st->pic.slave.init_state = 4; }
static void io_base(struct machine_state *st) { st->ioapic.base_address = 0xfee00000; }
static void io_irr(struct machine_state *st) { st->ioapic.irr = 1u << 24; }
static void io_id(struct machine_state *st) { st->ioapic.id = 16; }
static void io_sel(struct machine_state *st) { st->ioapic.ioregsel = 0x100; }
static void io_mode(struct machine_state *st) { st->ioapic.redir[5] |= 3u << 8; }
static void io_rirr(struct machine_state *st) { st->ioapic.redir[7] |= 1u << 14; }
static void pit_mode(struct machine_state *st) { st->pit.channel[2].mode = 6; }
static void pit_count(struct machine_state *st) { st->pit.channel[0].count = 0x10001; }
static void pit_rw(struct machine_state *st) { st->pit.channel[1].read_state = 5; }
static void pit_flags(struct machine_state *st) { st->pit.flags = 4; }
static void clk_flags(struct machine_state *st) { st->clock.flags |= 1; }
static void clk_khz(struct machine_state *st) { st->clock.tsc_khz = 0; }

#define OFF(m)	offsetof(struct machine_state, m)

static const struct {
	const struct dev_state_table *t;
	size_t off;
	void (*change)(struct machine_state *);
	const char *what, *field;
} refused[] = {
	{ &machine_pic_table, OFF(pic), pic_base,
	    "a slave vector base 0x2c", "slave.irq_base" },
	{ &machine_pic_table, OFF(pic), pic_prio,
	    "a master priority 8", "master.priority_add" },
	{ &machine_pic_table, OFF(pic), pic_elcr,
	    "ELCR bit 2 outside the master's mask", "master.elcr" },
	{ &machine_pic_table, OFF(pic), pic_init,
	    "init_state 4", "slave.init_state" },
	{ &machine_ioapic_table, OFF(ioapic), io_base,
	    "the IOAPIC at the LAPIC's address", "base_address" },
	{ &machine_ioapic_table, OFF(ioapic), io_irr,
	    "IRR pin 24", "irr" },
	{ &machine_ioapic_table, OFF(ioapic), io_id,
	    "IOAPIC id 16", "id" },
	{ &machine_ioapic_table, OFF(ioapic), io_sel,
	    "IOREGSEL 0x100", "ioregsel" },
	{ &machine_ioapic_table, OFF(ioapic), io_mode,
	    "delivery mode 3", "redirtbl[5]" },
	{ &machine_ioapic_table, OFF(ioapic), io_rirr,
	    "remote IRR on an edge pin", "redirtbl[7]" },
	{ &machine_pit_table, OFF(pit), pit_mode,
	    "PIT mode 6", "channel2.mode" },
	{ &machine_pit_table, OFF(pit), pit_count,
	    "a PIT count of 65537", "channel0.count" },
	{ &machine_pit_table, OFF(pit), pit_rw,
	    "read state 5", "channel1.read_state" },
	{ &machine_pit_table, OFF(pit), pit_flags,
	    "unknown PIT flags", "flags" },
	{ &machine_clock_table, OFF(clock), clk_flags,
	    "unknown clock flags", "flags" },
	{ &machine_clock_table, OFF(clock), clk_khz,
	    "TSC offsets without a frequency", "tsc_offset" },
};

int
main(void)
{
	const struct dev_state_table *tables[] = { &machine_clock_table,
	    &machine_pic_table, &machine_ioapic_table, &machine_pit_table };
	const size_t offs[] = { OFF(clock), OFF(pic), OFF(ioapic), OFF(pit) };
	struct machine_state st, back;
	struct dev_state_buf b1 = { 0 }, b2 = { 0 };
	struct dev_state_error e = { "" };
	uint64_t ofs, g_src, g_dst;
	size_t i;
	int rc;

	filled(&st);
	memset(&back, 0, sizeof(back));
	for (i = 0; i < 4; i++) {
		tap_ok(dev_state_table_check(tables[i], &e) == 0,
		    "the %s table is sound %s", tables[i]->name, e.msg);
		rc = dev_state_save(tables[i], (char *)&st + offs[i], &b1);
		tap_ok(rc == 0, "%s: saved", tables[i]->name);
	}
	for (i = 0; i < 4; i++) {
		size_t at = 0;
		long n;

		/* Each section from the one buffer, in turn. */
		for (size_t j = 0; j < i; j++)
			at += dev_state_section_len(b1.data + at, b1.len - at);
		n = dev_state_section_len(b1.data + at, b1.len - at);
		rc = n < 0 ? (int)n : dev_state_load(tables[i],
		    (char *)&back + offs[i], b1.data + at, n, &e);
		tap_ok(rc == 0, "%s: loaded %s", tables[i]->name, e.msg);
	}
	tap_ok(memcmp(&back, &st, sizeof(st)) == 0,
	    "clock, TSC offsets, both PICs, IOAPIC and PIT come back");
	for (i = 0; i < 4; i++)
		dev_state_save(tables[i], (char *)&back + offs[i], &b2);
	tap_ok(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0,
	    "saved again: the same %zu bytes", b1.len);

	tap_ok(load_changed(&machine_pic_table, OFF(pic), nothing, &e) == 0,
	    "unchanged: taken %s", e.msg);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		rc = load_changed(refused[i].t, refused[i].off,
		    refused[i].change, &e);
		tap_ok(rc == -EINVAL && strstr(e.msg, refused[i].field) !=
		    NULL, "%s refused, naming %s: %d %s", refused[i].what,
		    refused[i].field, rc, e.msg);
	}

	/*
	 * The guest's TSC at capture, tsc_src + ofs_src, moved on by 2.5 s
	 * of kvmclock at 2 GHz, from a host TSC now 10^12 ticks further.
	 */
	g_src = 1000000000ULL;
	g_dst = g_src + 2500000000ULL;
	ofs = machine_state_tsc_offset(-5000ULL, g_src, 7000000ULL, g_dst,
	    7000000ULL + 1000000000000ULL, 2000000);
	tap_ok(7000000ULL + 1000000000000ULL + ofs ==
	    7000000ULL - 5000ULL + 5000000000ULL,
	    "the TSC offset moves the guest's TSC on by the 2.5 s passed");
	ofs = machine_state_tsc_offset(100, g_dst, 500, g_src, 400, 1000);
	tap_ok(400 + ofs == 600 - 2500000ULL,
	    "and back by a kvmclock that went back");
	dev_state_buf_free(&b1);
	dev_state_buf_free(&b2);
	/* kvmclock where KVM gives no CLOCK_REALTIME: vmmd moves it on. */
	TAP_EQ(machine_state_clock_moved_on(5000, 1000000, 3001000), 2006000,
	    "kvmclock moved on by the host time since the capture");
	TAP_EQ(machine_state_clock_moved_on(5000, 3001000, 1000000), 5000,
	    "a host clock behind the capture's: not back, not on");
	TAP_EQ(machine_state_clock_moved_on(5000, 0, 3001000), 5000,
	    "no capture time: unchanged");
	TAP_EQ(machine_state_clock_moved_on(INT64_MAX - 10, 1, 100),
	    (uint64_t)INT64_MAX - 10, "past INT64_MAX: unchanged");
	return tap_done();
}
