/*
 * The x86 firmware tables the loaders write for the guest, the MP table
 * (boot-mptable.c) and ACPI's (boot-acpi.c, with the DSDT of
 * boot-dsdt.c), and what those files share.  A leaf: it includes only
 * the PC's layout, so that the table writers need nothing of the
 * loaders (boot.c calls them; they call nothing back).
 */
#ifndef VMMD_BOOT_TABLES_H
#define VMMD_BOOT_TABLES_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "pc-layout.h"

#define BOOT_MPTABLE_ALT_ADDR	PC_BIOS_START
#define BOOT_ACPI_RSDP_ADDR	PC_ACPI_TABLES_START

#define BOOT_MAX_CPUS		254	/* IOAPIC ID = ncpus must fit in 8 bits */

/* The byte that makes the sum of a structure's bytes zero (the MP
 * table's and ACPI's checksums). */
static inline uint8_t
boot_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	while (len-- > 0)
		sum += *p++;
	return (uint8_t)-sum;
}

/*
 * MPS INTI flags (MP specification 4.3.4), which the MADT's interrupt
 * source overrides use too: polarity in bits 0-1, trigger in bits 2-3;
 * 0 is the bus's default (ISA: edge, active high).
 */
#define BOOT_MPS_ACTIVE_HIGH	0x1
#define BOOT_MPS_ACTIVE_LOW	0x3
#define BOOT_MPS_LEVEL		0xc

/*
 * Write an MP floating pointer and configuration table (version 1.4:
 * one processor entry per vCPU with APIC ID = index, the ISA and PCI
 * buses, the IOAPIC at 0xfec00000, the 16 ISA interrupts and every PCI
 * slot's INTx pins routed to it).  Returns bytes written or -errno.
 *
 * The floating pointer goes at addr (16-byte aligned), where operating
 * systems scan for it; the configuration table, too large for the 1 KiB
 * they scan, at BOOT_MPTABLE_ALT_ADDR (0xf0000, reserved BIOS area).
 * mem maps guest physical 0 to mem_size.
 */
int boot_mptable_write(uint8_t *mem, uint64_t mem_size, uint64_t addr,
    unsigned int ncpus);

/*
 * What the DSDT says that depends on the VM: the PCI root bridge's
 * 32-bit memory window [mmio32_min, mmio32_max], and a 64-bit one of
 * mmio64_len bytes from mmio64_min when mmio64_len is not 0.
 */
struct boot_dsdt_config {
	uint32_t	mmio32_min;
	uint32_t	mmio32_max;
	uint64_t	mmio64_min;
	uint64_t	mmio64_len;
	/* The VM generation ID's address (a VGEN device); 0: none. */
	uint64_t	vmgenid_addr;
};

/*
 * Where a firmware left the PCI memory BARs: the lowest base and the
 * highest last byte of those below 4 GiB (any32: there are some) and of
 * those above (any64).  BARs at 0 are not placed and do not count.
 */
struct boot_pci_span {
	bool		any32, any64;
	uint64_t	lo32, hi32;
	uint64_t	lo64, hi64;
};

/* A firmware VM's 64-bit window when no BAR says otherwise. */
#define BOOT_MMIO64_ALIGN	0x40000000ULL	/* 1 GiB */
#define BOOT_MMIO64_LEN		0x800000000ULL	/* 32 GiB */

/*
 * A firmware VM's windows into d, from where the firmware placed the
 * BARs, as QEMU's pc does: the 32-bit one from the end of low RAM
 * (low_ram bytes) to below the IOAPIC, the hole both firmwares place
 * 32-bit BARs in, reaching further up over any BAR above that; the
 * 64-bit one from high RAM's end (high_ram bytes from 4 GiB) aligned to
 * 1 GiB, for BOOT_MMIO64_LEN, widened to whole GiB around every BAR
 * above 4 GiB wherever the firmware put it (SeaBIOS may put them high
 * in the CPU's physical address space, OVMF after RAM).  A BAR the
 * guest left in RAM below 4 GiB does not pull the 32-bit window down.
 */
void	boot_dsdt_fw_windows(struct boot_dsdt_config *d, uint64_t low_ram,
	    uint64_t high_ram, const struct boot_pci_span *span);

/*
 * What the ACPI tables describe beyond pc-layout.h: the vCPUs, the PM
 * I/O base (the PM1a event block; the control block at +4, the PM timer
 * at +8) and the DSDT's windows.
 */
struct boot_acpi_config {
	unsigned int	ncpus;
	uint16_t	pm_base;
	struct boot_dsdt_config dsdt;
};

/* Where the tables went, as offsets from the start of their area. */
struct boot_acpi_layout {
	size_t		facs, root, fadt, madt, dsdt, end;
};

#define BOOT_ACPI_RSDP_V1_LEN	20	/* an RSDP of revision 0 */

/* The configuration of a kernel-loaded VM's tables for ncpus vCPUs. */
void	boot_acpi_config_direct(struct boot_acpi_config *cfg,
	    unsigned int ncpus);

/*
 * Write the ACPI tables for ncpus vCPUs from PC_ACPI_TABLES_START, the
 * RSDP (revision 2, pointing to the XSDT) at BOOT_ACPI_RSDP_ADDR: FADT
 * (fixed hardware: the PM1a blocks, the SCI), FACS, MADT (one local APIC
 * per vCPU with APIC ID = index, the IOAPIC, IRQ 0 on pin 2, the SCI
 * level-triggered) and the DSDT (the PCI root bridge with its _PRT, the
 * ISA chips, \_S5), as boot_acpi_config_direct() configures them.  mem
 * maps guest physical 0 to mem_size.  Returns bytes written from
 * PC_ACPI_TABLES_START or -errno.
 */
int boot_acpi_write(uint8_t *mem, uint64_t mem_size, unsigned int ncpus);

/*
 * The same tables as a firmware's table loader takes them
 * (boot-loader.c): tables (cap bytes, zeroed first) holds the FACS at
 * offset 0, an RSDT, the FADT (the FACS through FIRMWARE_CTRL), the
 * MADT and the DSDT, every pointer an offset into tables for the
 * firmware to add the blob's address to; rsdp (BOOT_ACPI_RSDP_V1_LEN
 * bytes) a revision 0 RSDP holding the RSDT's offset.  Checksums are
 * right as written, before the pointers are patched.  Returns the end
 * of the last table or -errno (-EINVAL: a bad CPU count; -ENOSPC).
 */
int boot_acpi_blob(uint8_t *tables, size_t cap, uint8_t *rsdp,
    const struct boot_acpi_config *cfg, struct boot_acpi_layout *o);

/* boot-dsdt.c.
 * Encode the DSDT's AML (without the table header) into buf; returns
 * its length or -ENOSPC.
 */
int	boot_dsdt_build(uint8_t *buf, size_t cap,
	    const struct boot_dsdt_config *cfg);

#endif
