/*
 * See acpi-pm.h.  ACPI 6.4: 4.8.3.1 (PM1 event registers), 4.8.3.2 (PM1
 * control registers), 4.8.2.2.1 (the fixed power button), 7.4.2 (entering
 * a sleep state through SLP_TYP and SLP_EN), 4.8.3.3 (the power
 * management timer), 4.8.4.1 (the GPE0 block).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acpi-pm.h"
#include "dev-state.h"

/* Register offsets in the device's range, each 16 bits. */
#define PM1_STS			0
#define PM1_EN			2
#define PM1_CNT			4
#define PM1_NREGS		3

/* PM1_STS and PM1_EN bits. */
#define PM1_GBL			(1U << 5)
#define PM1_PWRBTN		(1U << 8)
#define PM1_RTC			(1U << 10)
#define PM1_WAK_STS		(1U << 15)
/* Status bits the device can set; write 1 to clear. */
#define PM1_STS_BITS		(PM1_PWRBTN | PM1_WAK_STS)
/*
 * Enable bits that exist; the others read 0 whatever is written.  The
 * global lock's and the RTC alarm's are kept (an OS enables them and
 * checks that they stick) although their status bits never rise: there
 * is no firmware to release the lock and no alarm wakes a sleeping guest.
 */
#define PM1_EN_BITS		(PM1_GBL | PM1_PWRBTN | PM1_RTC)

/* PM1_CNT bits. */
#define PM1_SCI_EN		(1U << 0)
#define PM1_SLP_TYP_SHIFT	10
#define PM1_SLP_TYP_MASK	(7U << PM1_SLP_TYP_SHIFT)
#define PM1_SLP_EN		(1U << 13)	/* write-only */

struct acpi_pm {
	const struct device_host *host;
	unsigned int s5_slp_typ;
	uint16_t sts;
	uint16_t en;
	uint16_t slp_typ;	/* the last SLP_TYP written */
	uint16_t gpe_sts;	/* GPE0_STS */
	uint16_t gpe_en;	/* GPE0_EN */
	bool sci;		/* the level the line has */
	/* Diagnostics. */
	uint64_t presses;
	uint64_t sleeps_ignored;	/* SLP_EN with a state other than S5 */
	uint64_t timer_reads;
	uint64_t gpes;			/* general-purpose events raised */
};

static void
acpi_pm_update_sci(struct acpi_pm *pm)
{
	bool level = (pm->sts & pm->en) != 0 ||
	    (pm->gpe_sts & pm->gpe_en) != 0;

	if (level != pm->sci) {
		pm->sci = level;
		device_irq_set(pm->host, 0, level);
	}
}

static uint16_t
acpi_pm_reg(const struct acpi_pm *pm, unsigned int reg)
{
	switch (reg) {
	case 0:
		return pm->sts;
	case 1:
		return pm->en;
	default:
		/* Always in ACPI mode: SCI_EN reads 1 (there is no SMI_CMD). */
		return (uint16_t)(PM1_SCI_EN | pm->slp_typ << PM1_SLP_TYP_SHIFT);
	}
}

/*
 * PM_TMR now: VM nanoseconds times 3.579545 MHz, in two parts so that
 * no product overflows 64 bits however long the VM has run.
 */
static uint32_t
acpi_pm_timer(const struct acpi_pm *pm)
{
	int64_t ns = device_vm_clock(pm->host);
	uint64_t t, s, rem;

	if (ns < 0)
		ns = 0;
	t = (uint64_t)ns;
	s = t / 1000000000u;
	rem = t % 1000000000u;
	return (uint32_t)((s * ACPI_PM_TMR_HZ +
	    rem * ACPI_PM_TMR_HZ / 1000000000u) & ACPI_PM_TMR_MASK);
}

static void
acpi_pm_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct acpi_pm *pm = dev;
	uint8_t *out = data;
	uint32_t tmr = 0;
	uint64_t at;
	unsigned int i;

	/* One clock read per access: the bytes of a wide read agree. */
	if (offset + size > ACPI_PM_TMR_OFFSET &&
	    offset < ACPI_PM_TMR_OFFSET + ACPI_PM_TMR_LEN) {
		tmr = acpi_pm_timer(pm);
		pm->timer_reads++;
	}
	for (i = 0; i < size; i++) {
		at = offset + i;
		if (at < ACPI_PM_LEN)
			out[i] = (uint8_t)(acpi_pm_reg(pm,
			    (unsigned int)at / 2) >> (8 * (at & 1)));
		else if (at >= ACPI_PM_TMR_OFFSET &&
		    at < ACPI_PM_TMR_OFFSET + ACPI_PM_TMR_LEN)
			out[i] = (uint8_t)(tmr >>
			    (8 * (at - ACPI_PM_TMR_OFFSET)));
		else if (at >= ACPI_PM_GPE0_OFFSET &&
		    at < ACPI_PM_GPE0_OFFSET + ACPI_PM_GPE0_LEN)
			out[i] = (uint8_t)((at < ACPI_PM_GPE0_OFFSET + 2 ?
			    pm->gpe_sts : pm->gpe_en) >> (8 * (at & 1)));
		else
			out[i] = 0xff;
	}
}

/*
 * A write of value to the bytes of a register that mask selects (an
 * access may cover part of a register, or several).
 */
static void
acpi_pm_write_reg(struct acpi_pm *pm, unsigned int reg, uint16_t value,
    uint16_t mask)
{
	unsigned int typ;

	value &= mask;
	switch (reg) {
	case 0:
		pm->sts &= (uint16_t)~(value & PM1_STS_BITS);
		break;
	case 1:
		pm->en = (uint16_t)((pm->en & ~mask) | (value & PM1_EN_BITS));
		break;
	default:
		/*
		 * SCI_EN cannot be cleared (there is no legacy mode to go
		 * back to); BM_RLD and GBL_RLS have nothing behind them.
		 */
		if ((mask & PM1_SLP_TYP_MASK) != 0)
			pm->slp_typ = (uint16_t)((value & PM1_SLP_TYP_MASK) >>
			    PM1_SLP_TYP_SHIFT);
		if ((value & PM1_SLP_EN) == 0)
			break;
		typ = pm->slp_typ;
		if (typ == pm->s5_slp_typ)
			device_system_request(pm->host,
			    DEVICE_REQUEST_POWEROFF);
		else
			pm->sleeps_ignored++;
		break;
	}
}

/* Byte at (0, 1: GPE0_STS; 2, 3: GPE0_EN) written: write 1 to clear. */
static void
acpi_pm_write_gpe(struct acpi_pm *pm, unsigned int at, uint8_t v)
{
	unsigned int shift = 8 * (at & 1);

	if (at < 2)
		pm->gpe_sts &= (uint16_t)~(v << shift);
	else
		pm->gpe_en = (uint16_t)((pm->gpe_en & ~(0xff << shift)) |
		    v << shift);
}

static void
acpi_pm_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
	struct acpi_pm *pm = dev;
	const uint8_t *in = data;
	uint16_t value[PM1_NREGS] = { 0 }, mask[PM1_NREGS] = { 0 };
	unsigned int i, reg, shift;
	uint64_t at;

	for (i = 0; i < size; i++) {
		at = offset + i;
		if (at >= ACPI_PM_GPE0_OFFSET &&
		    at < ACPI_PM_GPE0_OFFSET + ACPI_PM_GPE0_LEN) {
			acpi_pm_write_gpe(pm, (unsigned int)(at -
			    ACPI_PM_GPE0_OFFSET), in[i]);
			continue;
		}
		if (at >= ACPI_PM_LEN)
			continue;
		reg = (unsigned int)at / 2;
		shift = 8 * (unsigned int)(at & 1);
		value[reg] |= (uint16_t)(in[i] << shift);
		mask[reg] |= (uint16_t)(0xff << shift);
	}
	for (reg = 0; reg < PM1_NREGS; reg++)
		if (mask[reg] != 0)
			acpi_pm_write_reg(pm, reg, value[reg], mask[reg]);
	acpi_pm_update_sci(pm);
}

bool
acpi_pm_power_button(struct acpi_pm *pm)
{
	pm->presses++;
	pm->sts |= PM1_PWRBTN;
	acpi_pm_update_sci(pm);
	return (pm->en & PM1_PWRBTN) != 0;
}
bool
acpi_pm_gpe(struct acpi_pm *pm, unsigned int gpe)
{
	if (gpe >= ACPI_PM_GPES)
		return false;
	pm->gpes++;
	pm->gpe_sts |= (uint16_t)(1U << gpe);
	acpi_pm_update_sci(pm);
	return (pm->gpe_en & 1U << gpe) != 0;
}

static const struct figure acpi_pm_figure_rows[] = {
	{ "power_button_presses", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Power button presses", FIGURE_AT(struct acpi_pm, presses) },
	{ "sleeps_ignored", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "SLP_EN writes with a sleep state other than S5",
	    FIGURE_AT(struct acpi_pm, sleeps_ignored) },
	{ "timer_reads", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Reads of the ACPI PM timer",
	    FIGURE_AT(struct acpi_pm, timer_reads) },
	{ "gpes", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "General-purpose events raised",
	    FIGURE_AT(struct acpi_pm, gpes) },
};

static const struct figure_table acpi_pm_figures =
    FIGURE_TABLE(acpi_pm_figure_rows);


static void
acpi_pm_diag(void *dev, struct device_diag *d)
{
	struct acpi_pm *pm = dev;

	device_diag_put(d, "pm1_sts", pm->sts, DEVICE_DIAG_HEX);
	device_diag_put(d, "pm1_en", pm->en, DEVICE_DIAG_HEX);
	device_diag_put(d, "pm1_cnt", acpi_pm_reg(pm, 2), DEVICE_DIAG_HEX);
	device_diag_put(d, "gpe0_sts", pm->gpe_sts, DEVICE_DIAG_HEX);
	device_diag_put(d, "gpe0_en", pm->gpe_en, DEVICE_DIAG_HEX);
	device_diag_put(d, "sci", pm->sci, DEVICE_DIAG_BOOL);
	device_diag_figures(d, &acpi_pm_figures, pm);
}

struct acpi_pm *
acpi_pm_new(const struct device_host *host, unsigned int s5_slp_typ)
{
	struct acpi_pm *pm = calloc(1, sizeof(*pm));

	if (pm == NULL)
		return NULL;
	pm->host = host;
	pm->s5_slp_typ = s5_slp_typ;
	return pm;
}

void
acpi_pm_free(struct acpi_pm *pm)
{
	free(pm);
}

/*
 * PM1 status, enable and the SLP_TYP last written, GPE0 status and
 * enable (version 2; none before); the timer is not
 * kept (it is computed from the VM clock, which the machine's state
 * carries), nor the SCI's level (it follows from status and enable).
 */
static const struct dev_state_field acpi_pm_state_fields[] = {
	{ "pm1_sts", DEV_STATE_U16, DEV_STATE_AT(struct acpi_pm, sts),
	    .max = PM1_STS_BITS },
	{ "pm1_en", DEV_STATE_U16, DEV_STATE_AT(struct acpi_pm, en),
	    .max = PM1_EN_BITS },
	{ "slp_typ", DEV_STATE_U16, DEV_STATE_AT(struct acpi_pm, slp_typ),
	    .max = PM1_SLP_TYP_MASK >> PM1_SLP_TYP_SHIFT },
	{ "power_button_presses", DEV_STATE_U64,
	    DEV_STATE_AT(struct acpi_pm, presses) },
	{ "sleeps_ignored", DEV_STATE_U64,
	    DEV_STATE_AT(struct acpi_pm, sleeps_ignored) },
	{ "timer_reads", DEV_STATE_U64,
	    DEV_STATE_AT(struct acpi_pm, timer_reads) },
	{ "gpe0_sts", DEV_STATE_U16, DEV_STATE_AT(struct acpi_pm, gpe_sts),
	    .since = 2 },
	{ "gpe0_en", DEV_STATE_U16, DEV_STATE_AT(struct acpi_pm, gpe_en),
	    .since = 2 },
	{ "gpes", DEV_STATE_U64, DEV_STATE_AT(struct acpi_pm, gpes),
	    .since = 2 },
};

/* Bits no register has: what max cannot say about a bit mask. */
static int
acpi_pm_state_check(const void *state, struct dev_state_error *err)
{
	const struct acpi_pm *pm = state;

	if ((pm->sts & ~PM1_STS_BITS) != 0)
		return dev_state_fail(err, -EINVAL, "pm1_sts 0x%x has "
		    "bits that do not exist", pm->sts);
	if ((pm->en & ~PM1_EN_BITS) != 0)
		return dev_state_fail(err, -EINVAL, "pm1_en 0x%x has "
		    "bits that do not exist", pm->en);
	return 0;
}

const struct dev_state_table acpi_pm_state_table = {
	DEV_STATE_TABLE("acpi-pm", 2, struct acpi_pm, acpi_pm_state_fields),
	.check = acpi_pm_state_check,
};

static int
acpi_pm_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&acpi_pm_state_table, dev, out);
}

/* A load raises or lowers the SCI to what the loaded registers say. */
static int
acpi_pm_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct acpi_pm *pm = dev;
	int rc;

	rc = dev_state_load(&acpi_pm_state_table, pm, buf, len, err);
	if (rc < 0)
		return rc;
	acpi_pm_update_sci(pm);
	return 0;
}

static void
acpi_pm_ops_free(void *dev)
{
	acpi_pm_free(dev);
}

const struct device_ops acpi_pm_device_ops = {
	.name = "acpi-pm",
	.read = acpi_pm_read,
	.write = acpi_pm_write,
	.diag = acpi_pm_diag,
	.save = acpi_pm_save,
	.load = acpi_pm_load,
	.free = acpi_pm_ops_free,
};
