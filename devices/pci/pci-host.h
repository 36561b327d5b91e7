/*
 * The PCI host bridge and root bus 0, reached through configuration
 * mechanism #1 (PCI Local Bus Specification 3.0, 3.2.2.3.2): the guest
 * writes an address (enable, bus, device, function, register) to the
 * dword port CONFIG_ADDRESS and moves data through CONFIG_DATA.
 *
 * The host bridge is function 0 of slot 0 and answers itself; the
 * other slots belong to the machine, which reaches each function's
 * config space under that function's own lock (pci_host_ops).  Every
 * function of bus 0 but 00:00.0 is the machine's to answer (the PC puts
 * none beside the bridge in slot 0); other buses, and functions the
 * machine does not have, read all ones, as an empty slot does.
 *
 * Registered on the port bus at CONFIG_ADDRESS for 8 bytes: offsets
 * 0-3 are the address register, 4-7 the data window.  Made with
 * pci_host_new_rcr(), byte accesses at offset 1 (port 0xcf9) reach the
 * PIIX's reset control register there, as on a PC: bits 1 (SRST) and 3
 * (FULL_RST) read back as written, and a write that sets bit 2 (RCPU)
 * while it was clear resets the machine (hard or soft alike: a reset
 * rebuilds it); RCPU reads back too, until that reset.  Without it,
 * those accesses read ones and are ignored, as they always were.
 *
 * With pci_host_new_rcr() too (the bridge firmware VMs get), the 440FX's
 * PAM registers (0x59-0x5f) and SMRAM register (0x72) keep what firmware
 * writes to their defined bits, for firmware that reads them back.  They
 * change nothing: see pci-host.c.
 */
#ifndef VMMD_PCI_HOST_H
#define VMMD_PCI_HOST_H

#include <stdint.h>

#include "device.h"

struct pci_host_ops {
	/*
	 * Config space of slot (0..31), function fn (0..7): -ENODEV when
	 * there is no such function.  Slot 0 reaches it only for functions
	 * 1-7.  Called under the host bridge's lock.
	 */
	int (*read)(void *ctx, unsigned int slot, unsigned int fn,
	    unsigned int offset, void *data, unsigned int size);
	int (*write)(void *ctx, unsigned int slot, unsigned int fn,
	    unsigned int offset, const void *data, unsigned int size);
	void *ctx;
};

struct pci_host;

/* NULL on ENOMEM; ops is copied. */
struct pci_host *pci_host_new(const struct device_host *host,
    const struct pci_host_ops *ops);
/* The same, with the reset control register at port 0xcf9. */
struct pci_host *pci_host_new_rcr(const struct device_host *host,
    const struct pci_host_ops *ops);
void pci_host_free(struct pci_host *ph);

extern const struct device_ops pci_host_device_ops;

#endif
