/*
 * The ACPI PM1 block and the PM timer (fuzz-device.h): PM1 status,
 * enable and control, the timer read at any VM time, and the power
 * button pressed from the host (any input).
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
	acpi_pm_power_button(dev);
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &acpi_pm_device_ops,
	.ranges = { { 0, ACPI_PM_LEN },
	    { ACPI_PM_TMR_OFFSET, ACPI_PM_TMR_LEN } },
	.nranges = 2,
	.create = fuzz_acpi_pm_create,
	.input = fuzz_acpi_pm_input,
};
