/*
 * ACPI PM1 registers (devices/acpi-pm.c): the power button's status and
 * enable bits, write-1-to-clear, the SCI as a level, SLP_EN with \_S5's
 * type powering off and with any other type doing nothing, and accesses
 * of every width and alignment, none of which sets a bit that does not
 * exist; the PM timer: 3.579545 MHz of VM time, 24 bits wide, wrapping,
 * read-only, whole at any width, no overflow however long the VM ran;
 * the GPE0 block: an event sets its status bit, the SCI follows status
 * and enable, write 1 to clear, and both survive a save and load.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acpi-pm.h"
#include "dev-state.h"
#include "fake-host.h"
#include "tap.h"
#include "unit-util.h"

#define STS	0
#define EN	2
#define CNT	4
#define PWRBTN	0x0100
#define WAK	0x8000
#define SCI_EN	0x0001
#define SLP_EN	0x2000
#define S5	5

static uint32_t
rd(struct acpi_pm *pm, uint64_t off, unsigned int size)
{
	uint8_t b[4] = { 0 };

	acpi_pm_device_ops.read(pm, off, b, size);
	return get32(b);
}

static void
wr(struct acpi_pm *pm, uint64_t off, unsigned int size, uint32_t v)
{
	uint8_t b[4];

	put32(b, v);
	acpi_pm_device_ops.write(pm, off, b, size);
}

static void
test_power_button(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct acpi_pm *pm = acpi_pm_new(&fh.host, S5);

	if (pm == NULL)
		tap_bail("out of memory");
	tap_ok(rd(pm, STS, 2) == 0 && rd(pm, EN, 2) == 0,
	    "power-on: no status, nothing enabled");
	TAP_EQ(rd(pm, CNT, 2), SCI_EN, "power-on: SCI_EN reads 1");

	/* Pressed before the guest listens: latched, no SCI. */
	TAP_EQ(acpi_pm_power_button(pm), false,
	    "press with PWRBTN_EN clear: nobody listens");
	tap_ok(rd(pm, STS, 2) == PWRBTN && !fh.irq[0] && fh.irq_calls == 0,
	    "PWRBTN_STS set, SCI low");
	wr(pm, STS, 2, PWRBTN);
	TAP_EQ(rd(pm, STS, 2), 0, "write 1 clears PWRBTN_STS");

	wr(pm, EN, 2, PWRBTN);
	TAP_EQ(rd(pm, EN, 2), PWRBTN, "PWRBTN_EN set");
	tap_ok(!fh.irq[0] && fh.irq_calls == 0, "enable alone: SCI low");
	TAP_EQ(acpi_pm_power_button(pm), true,
	    "press with PWRBTN_EN set: the guest listens");
	tap_ok(fh.irq[0] && fh.rises[0] == 1, "SCI raised, once");
	acpi_pm_power_button(pm);
	TAP_EQ(fh.rises[0], 1, "a second press while pending: still one "
	    "level, no new edge");
	wr(pm, STS, 2, 0);
	tap_ok(fh.irq[0] && rd(pm, STS, 2) == PWRBTN,
	    "write 0 clears nothing");
	wr(pm, STS, 2, PWRBTN);
	tap_ok(!fh.irq[0] && rd(pm, STS, 2) == 0,
	    "write 1 to clear: SCI lowered");

	/* Disabling while pending lowers the line; enabling raises it. */
	acpi_pm_power_button(pm);
	wr(pm, EN, 2, 0);
	tap_ok(!fh.irq[0] && rd(pm, STS, 2) == PWRBTN,
	    "PWRBTN_EN cleared while pending: SCI low, status kept");
	wr(pm, EN, 2, PWRBTN);
	tap_ok(fh.irq[0], "enabled again: SCI high");
	/* One 32-bit write at 0: clears the status, keeps the enable. */
	wr(pm, STS, 4, (uint32_t)PWRBTN << 16 | PWRBTN);
	tap_ok(!fh.irq[0] && rd(pm, STS, 4) == (uint32_t)PWRBTN << 16,
	    "32-bit access covers status and enable");
	/* Byte access to the status's high byte. */
	acpi_pm_power_button(pm);
	wr(pm, STS + 1, 1, PWRBTN >> 8);
	tap_ok(!fh.irq[0] && rd(pm, STS, 2) == 0,
	    "byte write to PM1_STS's high byte clears PWRBTN_STS");
	TAP_EQ(fh.irq_bad, 0, "the line only moved when its level changed");
	acpi_pm_free(pm);
}

static void
test_bad_writes(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct acpi_pm *pm = acpi_pm_new(&fh.host, S5);

	if (pm == NULL)
		tap_bail("out of memory");
	wr(pm, EN, 2, 0xffff);
	TAP_EQ(rd(pm, EN, 2), PWRBTN | 0x0420,
	    "PM1_EN: PWRBTN_EN, GBL_EN, RTC_EN exist; other bits stay 0");
	wr(pm, STS, 2, 0xffff);
	TAP_EQ(rd(pm, STS, 2), 0, "PM1_STS: writes set nothing");
	wr(pm, CNT, 2, 0);
	TAP_EQ(rd(pm, CNT, 2) & SCI_EN, SCI_EN,
	    "SCI_EN cannot be cleared (always ACPI mode)");
	wr(pm, CNT, 2, 0xffff & ~SLP_EN & ~(7U << 10));
	TAP_EQ(rd(pm, CNT, 2), SCI_EN, "reserved PM1_CNT bits stay 0");
	TAP_EQ(fh.poweroffs, 0, "no power-off from any of it");
	TAP_EQ(rd(pm, 6, 2), 0xffff, "beyond the block: floats high");
	wr(pm, 5, 4, 0xffffffff);
	TAP_EQ(fh.poweroffs, 0, "a write running off the end: clipped");
	tap_ok(!fh.irq[0] && fh.irq_bad == 0, "SCI never raised");
	wr(pm, EN, 2, 0x0420);
	acpi_pm_power_button(pm);
	tap_ok(!fh.irq[0], "GBL_EN and RTC_EN alone: a press raises no SCI");
	acpi_pm_free(pm);
}

#define TMR	8
#define TMR_HZ	3579545ULL

static void
test_timer(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct acpi_pm *pm = acpi_pm_new(&fh.host, S5);
	uint32_t v;

	if (pm == NULL)
		tap_bail("out of memory");
	fh.vm_now = 0;
	TAP_EQ(rd(pm, TMR, 4), 0, "timer: 0 at VM time 0");
	fh.vm_now = 1000000000;
	TAP_EQ(rd(pm, TMR, 4), TMR_HZ, "timer: 3579545 after one second");
	fh.vm_now = 1000;
	TAP_EQ(rd(pm, TMR, 4), 3, "timer: 3 ticks in a microsecond");
	/* 2^24 ticks take 4.687 s: it wraps there, 24 bits only. */
	fh.vm_now = 4000000000;
	TAP_EQ(rd(pm, TMR, 4), 4 * TMR_HZ, "timer: 4 s, below 2^24");
	fh.vm_now = 5000000000;
	TAP_EQ(rd(pm, TMR, 4), (5 * TMR_HZ) & 0xffffff,
	    "timer: 5 s wrapped at 24 bits");
	/* A year of VM time: no 64-bit overflow on the way. */
	fh.vm_now = 365LL * 86400 * 1000000000 + 500000000;
	v = (uint32_t)((365ULL * 86400 * TMR_HZ + TMR_HZ / 2) & 0xffffff);
	TAP_EQ(rd(pm, TMR, 4), v, "timer: right after a year");
	/* Narrow reads see the same count. */
	tap_ok(rd(pm, TMR, 1) == (v & 0xff) &&
	    rd(pm, TMR + 1, 1) == ((v >> 8) & 0xff) &&
	    rd(pm, TMR + 2, 2) == v >> 16 && rd(pm, TMR + 3, 1) == 0,
	    "timer: byte and word reads, top byte 0");
	wr(pm, TMR, 4, 0x12345678);
	TAP_EQ(rd(pm, TMR, 4), v, "timer: read-only");
	/* Nothing armed: computed on read. */
	TAP_EQ(fake_host_timers_armed(&fh), 0, "timer: no host timer");
	tap_ok(rd(pm, 6, 2) == 0xffff, "the gap before the timer reads ones");
	TAP_EQ(rd(pm, STS, 2), 0, "no TMR_STS");
	wr(pm, EN, 2, 0x0001);
	TAP_EQ(rd(pm, EN, 2), 0, "TMR_EN does not stick");
	acpi_pm_free(pm);
}

static void
test_sleep(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct acpi_pm *pm = acpi_pm_new(&fh.host, S5);
	unsigned int typ;

	if (pm == NULL)
		tap_bail("out of memory");
	for (typ = 0; typ < 8; typ++)
		if (typ != S5)
			wr(pm, CNT, 2, typ << 10 | SLP_EN);
	TAP_EQ(fh.poweroffs, 0, "SLP_EN with any type but \\_S5's: nothing");
	wr(pm, CNT, 2, S5 << 10);
	TAP_EQ(fh.poweroffs, 0, "SLP_TYP = S5 without SLP_EN: nothing");
	TAP_EQ(rd(pm, CNT, 2), SCI_EN | S5 << 10,
	    "SLP_TYP reads back, SLP_EN reads 0");
	wr(pm, CNT, 2, S5 << 10 | SLP_EN);
	TAP_EQ(fh.poweroffs, 1, "SLP_TYP = S5 with SLP_EN: power off");
	/* Linux writes SLP_TYP first, then SLP_EN with a byte write. */
	wr(pm, CNT, 2, 0);
	wr(pm, CNT, 2, S5 << 10);
	wr(pm, CNT + 1, 1, (S5 << 10 | SLP_EN) >> 8);
	TAP_EQ(fh.poweroffs, 2, "the same through the high byte alone");
	wr(pm, CNT, 2, 0);
	wr(pm, CNT, 1, 0xff);
	TAP_EQ(fh.poweroffs, 2, "low byte writes reach neither SLP_TYP nor "
	    "SLP_EN");
	acpi_pm_free(pm);
}

#define GPE_STS	12
#define GPE_EN	14

static void
test_gpe(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct acpi_pm *pm = acpi_pm_new(&fh.host, S5), *pm2;
	struct dev_state_buf buf = { 0 };
	struct dev_state_error err;

	if (pm == NULL)
		tap_bail("out of memory");
	TAP_EQ(rd(pm, GPE_STS, 4), 0, "GPE0: no status, nothing enabled");
	TAP_EQ(acpi_pm_gpe(pm, 0), false, "GPE 0 with GPE0_EN clear: "
	    "nobody listens");
	tap_ok(rd(pm, GPE_STS, 2) == 1 && !fh.irq[0],
	    "GPE 0: its status bit latched, no SCI");
	wr(pm, GPE_EN, 2, 1);
	tap_ok(fh.irq[0], "GPE0_EN bit 0 set: the SCI rises");
	TAP_EQ(rd(pm, GPE_EN, 2), 1, "GPE0_EN reads back");
	wr(pm, GPE_STS, 2, 0);
	tap_ok(rd(pm, GPE_STS, 2) == 1 && fh.irq[0], "writing 0 clears "
	    "nothing");
	wr(pm, GPE_STS, 1, 1);
	tap_ok(rd(pm, GPE_STS, 2) == 0 && !fh.irq[0],
	    "write 1 to clear: the SCI falls");
	TAP_EQ(acpi_pm_gpe(pm, 0), true, "GPE 0 again: the guest listens");
	TAP_EQ(acpi_pm_gpe(pm, 16), false, "GPE 16: no such event");
	tap_ok(rd(pm, GPE_STS, 2) == 1 && fh.irq[0], "only GPE 0 is set");
	TAP_EQ(rd(pm, 0x10, 2), 0xffff, "beyond the GPE0 block: floats high");

	tap_ok(acpi_pm_device_ops.save(pm, &buf) == 0, "saved");
	fake_host_init(&fh);
	pm2 = acpi_pm_new(&fh.host, S5);
	tap_ok(pm2 != NULL && acpi_pm_device_ops.load(pm2, buf.data,
	    buf.len, &err) == 0, "loaded into a fresh one");
	tap_ok(rd(pm2, GPE_STS, 2) == 1 && rd(pm2, GPE_EN, 2) == 1 &&
	    fh.irq[0], "GPE0 status and enable come back, the SCI with them");
	dev_state_buf_free(&buf);
	acpi_pm_free(pm2);
	acpi_pm_free(pm);
}

int
main(void)
{
	test_power_button();
	test_bad_writes();
	test_sleep();
	test_timer();
	test_gpe();
	return tap_done();
}
