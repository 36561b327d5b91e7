/*
 * The PIIX3's PCI-to-ISA bridge (Intel 82371SB, function 0; 8086:7000,
 * class 0601), at 00:01.0 on firmware VMs: both SeaBIOS and OVMF look
 * for it there on an i440FX board and program its PIRQ route registers
 * (0x60-0x63: bit 7 set disables the route, bits 3:0 name the ISA IRQ).
 *
 * Config space only: no BARs, no ports.  The registers firmware touches
 * (below) keep what is written to their defined bits and start at the
 * datasheet's reset values.  The route registers are passed on to the
 * host (device_pirq_route) whenever the guest writes one and when a
 * saved state is loaded: the host steers each link's INTx pins to the
 * ISA IRQ named there (the machine's pirq.h), on top of the IOAPIC pin
 * every slot's INTx reaches anyway (pc-layout.h).  The PIC's ELCR,
 * which makes IRQs 10 and 11 level-triggered for them, is KVM's (ports
 * 0x4d0-0x4d1).
 */
#ifndef VMMD_PIIX3_ISA_H
#define VMMD_PIIX3_ISA_H

#include "device.h"
#include "pci-config.h"

#define PIIX3_ISA_PIRQRC	0x60	/* PIRQA-D route control, 4 bytes */
#define  PIIX3_ISA_PIRQ_OFF	0x80	/* the route is disabled */

struct piix3_isa;

/* NULL on ENOMEM. */
struct piix3_isa *piix3_isa_new(const struct device_host *host);
void piix3_isa_free(struct piix3_isa *isa);

extern const struct device_ops piix3_isa_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table piix3_isa_state_table;

#endif
