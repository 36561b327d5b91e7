/*
 * ACPI fixed-feature hardware (ACPI 6.4, 4.8): the PM1a event block
 * (PM1_STS, PM1_EN: the power button) and control block (PM1_CNT: SCI_EN,
 * SLP_TYP, SLP_EN), as one range of six bytes, events first; and the
 * power management timer (4.8.3.3, PM_TMR): 24 bits counting at
 * 3.579545 MHz, read-only, at offset ACPI_PM_TMR_OFFSET of the device
 * (PMBA + 8, as on a PIIX4), a range of its own on the bus.  The SCI is
 * the device's interrupt line 0, level-triggered: high while a status
 * bit and its enable bit are both set.
 *
 * The timer is the VM clock scaled, computed on each read: no host
 * timer, no wake-up, stopped while the VM is paused.  Its overflow
 * status (TMR_STS) never rises and TMR_EN does not stick: raising them
 * every 4.7 s would take a timer, and OSes read the counter without.
 * 24 bits, not 32, as a PIIX4's: the FADT leaves TMR_VAL_EXT clear.
 *
 * The GPE0 block (4.8.4.1): GPE0_STS and GPE0_EN, 16 bits each, at
 * offset ACPI_PM_GPE0_OFFSET, right after the timer and in its range
 * (PMBA + 0xc, as a PIIX4's GPSTS and GPEN).  A general-purpose event
 * the machine raises (acpi_pm_gpe) sets its status bit; the SCI is
 * also high while a GPE status bit and its enable bit are both set.
 */
#ifndef VMMD_ACPI_PM_H
#define VMMD_ACPI_PM_H

#include <stdbool.h>

#include "device.h"

#define ACPI_PM_LEN		6	/* PM1a_EVT (4) then PM1a_CNT (2) */
#define ACPI_PM_TMR_OFFSET	8	/* PM_TMR, in the device's offsets */
#define ACPI_PM_TMR_LEN		4
#define ACPI_PM_TMR_HZ		3579545
#define ACPI_PM_TMR_MASK	0xffffffU	/* 24 bits */
#define ACPI_PM_GPE0_OFFSET	12	/* GPE0_STS (2), then GPE0_EN (2) */
#define ACPI_PM_GPE0_LEN	4
#define ACPI_PM_GPES		16	/* GPE 0 to 15 */

struct acpi_pm;

/*
 * NULL on ENOMEM.  s5_slp_typ: the SLP_TYP value the DSDT's \_S5 gives;
 * SLP_EN with it asks the host to power off.
 */
struct acpi_pm *acpi_pm_new(const struct device_host *host,
    unsigned int s5_slp_typ);
void acpi_pm_free(struct acpi_pm *pm);

/*
 * The power button is pressed (and released): PWRBTN_STS is set and the
 * SCI raised if the guest enabled it.  Returns whether the guest has
 * PWRBTN_EN set, i.e. whether anyone listens.  Under the device's lock.
 */
bool acpi_pm_power_button(struct acpi_pm *pm);

/*
 * General-purpose event gpe (< ACPI_PM_GPES) happened: its GPE0_STS bit
 * is set and the SCI raised if the guest enabled it.  Returns whether
 * the guest has its enable bit set.  Under the device's lock.
 */
bool acpi_pm_gpe(struct acpi_pm *pm, unsigned int gpe);

extern const struct device_ops acpi_pm_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table acpi_pm_state_table;

#endif
