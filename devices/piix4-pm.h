/*
 * The PIIX4's power-management function (Intel 82371AB, function 3;
 * 8086:7113, class 0680), at 00:01.3 on firmware VMs: SeaBIOS and OVMF
 * find the ACPI PM block through it, program its base and enable it.
 *
 * Config space only, as far as the guest's accesses go:
 *  - PMBA (0x40, dword): the PM I/O base, bits 15:6; bit 0 reads 1
 *    (an I/O space indicator), the rest 0;
 *  - PMREGMISC (0x80): bit 0 enables PM I/O at PMBA;
 *  - SMBBA (0x90) reads 0: there is no SMBus controller behind it;
 *  - DEVACTB (0x58, dword) has APMC_EN (bit 25) set and read-only: there
 *    is no SMM, and that bit is how firmware tells that SMM needs no
 *    setting up (SeaBIOS would otherwise raise an SMI and wait for it).
 *
 * The PM block itself is the ACPI PM device (acpi-pm.h): the machine
 * moves that device's ports to where piix4_pm_io() says, after each
 * config space write, and reports where they went (or that they could
 * not go there) through piix4_pm_placed(), for the diagnostics.  Plain
 * state, under the device's lock.
 */
#ifndef VMMD_PIIX4_PM_H
#define VMMD_PIIX4_PM_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "pci-config.h"

#define PIIX4_PM_PMBA		0x40
#define  PIIX4_PM_PMBA_MASK	0xffc0U		/* bits 15:6 */
#define PIIX4_PM_PMREGMISC	0x80
#define  PIIX4_PM_PMIOSE	0x01		/* PM I/O space enable */
#define PIIX4_PM_DEVACTB	0x58
#define PIIX4_PM_SMBBA		0x90

struct piix4_pm;

/* NULL on ENOMEM. */
struct piix4_pm *piix4_pm_new(const struct device_host *host);
void piix4_pm_free(struct piix4_pm *pm);

/*
 * Where the guest asks for the PM block: true and *base when PM I/O is
 * enabled, false when it is not.
 */
bool piix4_pm_io(const struct piix4_pm *pm, uint16_t *base);
/*
 * The machine's answer: the block is now at base (on) or nowhere; failed
 * when the place the guest asked for could not be had (counted).
 */
void piix4_pm_placed(struct piix4_pm *pm, bool on, uint16_t base,
    bool failed);

extern const struct device_ops piix4_pm_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table piix4_pm_state_table;

#endif
