/*
 * The ACPI PM1 block, the PM timer and the GPE0 block (fuzz-device.h):
 * PM1 status, enable and control, the timer read at any VM time, GPE0
 * status and enable, and from the host the power button pressed or a
 * general-purpose event raised, any one, even none that exists.
 */
#include "acpi-pm.h"
#include "fuzz-device.h"

/* \_S5's SLP_TYP, as the PC board gives it (pc-layout.h). */
#define FUZZ_S5_SLP_TYP	5

static void *
fuzz_acpi_pm_create(struct fake_host *fh)
{
	return acpi_pm_new(&fh->host, FUZZ_S5_SLP_TYP);
}

static void
fuzz_acpi_pm_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	if (sel & 1)
		acpi_pm_gpe(dev, sel >> 1);
	else
		acpi_pm_power_button(dev);
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &acpi_pm_device_ops,
	.ranges = { { 0, ACPI_PM_LEN },
	    { ACPI_PM_TMR_OFFSET, ACPI_PM_TMR_LEN + ACPI_PM_GPE0_LEN } },
	.nranges = 2,
	.create = fuzz_acpi_pm_create,
	.input = fuzz_acpi_pm_input,
};
