/*
 * The PC platform as vmmd builds it: where RAM is, where the firmware
 * areas and the PCI hole are, the interrupt controllers and how ISA
 * interrupts are routed, and where the legacy chips sit.  The loaders
 * describe this layout to the guest (e820, MP table); the worker builds
 * it (memory slots, GSI routing, the board table).  One header, so that
 * what is described and what is built cannot drift apart.
 */
#ifndef VMMD_PC_LAYOUT_H
#define VMMD_PC_LAYOUT_H

/* Guest physical memory map. */
#define PC_LOW_MEM_END		0x9fc00ULL	/* base memory, then the EBDA */
#define PC_EBDA_START		0x9fc00ULL	/* MP table lives here */
#define PC_BIOS_START		0xf0000ULL	/* reserved, like a PC's BIOS */
#define PC_HIGH_MEM_START	0x100000ULL	/* 1 MiB: kernels load here */
#define PC_PCI_HOLE_START	0xc0000000ULL	/* RAM stops at 3 GiB ... */
#define PC_HIGH_RAM_START	0x100000000ULL	/* ... and resumes at 4 GiB */

/*
 * The display's linear framebuffer, in its own memory slot in the PCI
 * hole: x8r8g8b8, stride = width * 4, up to 64 MiB.  PVH guests find it
 * here (a reserved range of their memory map says how large it is);
 * bzImage guests are told through screen_info.
 */
#define PC_FRAMEBUFFER_ADDR	0xd0000000ULL
#define PC_FRAMEBUFFER_MAX	0x4000000ULL

/*
 * PCI: one root bus (bus 0), reached through configuration mechanism #1.
 * 32-bit memory BARs are placed in the MMIO window, below the
 * framebuffer; I/O BARs in the I/O window.  A device in slot S raises
 * its INTx pin P (0 = INTA) on IOAPIC pin PC_PCI_INTX_GSI(S, P): the
 * usual swizzle over four level-triggered, active-low pins.  ACPI's _PRT
 * and the MP table describe exactly this.
 */
#define PC_PCI_CONFIG_ADDR_PORT	0xcf8
#define PC_PCI_CONFIG_DATA_PORT	0xcfc
#define PC_PCI_MMIO_START	0xc0000000ULL
#define PC_PCI_MMIO_END		0xd0000000ULL	/* exclusive */
#define PC_PCI_IO_START		0xc000U
#define PC_PCI_IO_END		0x10000U	/* exclusive */
#define PC_PCI_SLOTS		32
#define PC_PCI_INTX_GSI_BASE	16
#define PC_PCI_INTX_GSI(slot, pin) \
	(PC_PCI_INTX_GSI_BASE + (((slot) + (pin)) & 3))
/*
 * The same pins reach the PIIX3's PCI interrupt links (PIRQA-D) as on
 * an i440FX board: slot S pin P on link (S - 1 + P) & 3, so slot 1's
 * INTA# on PIRQA.  SeaBIOS assumes exactly this wiring when it writes
 * each function's interrupt line, and so does the $PIR table it makes.
 * Both are functions of (S + P) & 3, so each INTx GSI has its link:
 * GSI 16 + k is PIRQ (k + 3) & 3.
 */
#define PC_PCI_GSI_PIRQ(gsi)	(((gsi) - PC_PCI_INTX_GSI_BASE + 3) & 3)

/*
 * ACPI: the tables live in the BIOS area (reserved in the e820 map), the
 * RSDP where a scan of 0xe0000-0xfffff finds it.  Fixed hardware: the
 * PM1a event block (status, enable: the power button) and control block
 * (SLP_TYP/SLP_EN: \_S5 powers off), and the 24-bit PM timer at
 * PMBA + 8 as on a PIIX4; the SCI is ISA IRQ 9.
 */
#define PC_ACPI_TABLES_START	0xe0000ULL
#define PC_ACPI_TABLES_END	0xf0000ULL	/* exclusive */
#define PC_ACPI_PM1A_EVT_PORT	0x600		/* 4 bytes */
#define PC_ACPI_PM1A_CNT_PORT	0x604		/* 2 bytes, right after */
#define PC_ACPI_PM_TMR_PORT	0x608		/* 4 bytes */
#define PC_ACPI_SCI_IRQ		9
/*
 * The GPE0 block (status, then enable, 2 bytes each) right after the PM
 * timer, at PMBA + 0xc as a PIIX4's GPSTS and GPEN; GPE 0 is the VM
 * generation ID's change (the DSDT's \_GPE._E00).
 */
#define PC_ACPI_GPE0_PORT	0x60c		/* 4 bytes */
#define PC_ACPI_GPE_VMGENID	0
/*
 * The VM generation ID's 16 bytes (vmgenid.h), kernel-loaded guests
 * only: the last page of the reserved BIOS area, which no table uses.
 */
#define PC_VMGENID_ADDR		0xff000ULL
/* SLP_TYP for S5 (soft off): the DSDT's \_S5 and the PM1 control block. */
#define PC_ACPI_SLP_TYP_S5	5

/* Pages KVM needs for itself on Intel hosts, in the PCI hole. */
#define PC_KVM_IDMAP_ADDR	0xfffbc000ULL
#define PC_KVM_TSS_ADDR		0xfffbd000ULL	/* three pages */
/*
 * The same pages for a guest that boots firmware, whose flash may
 * reach down to 16 MiB below 4 GiB (OVMF's 4 MiB image covers the
 * pages above): where QEMU puts them, just below that, and reserved in
 * the memory map the firmware is given (fw_cfg etc/e820).
 */
#define PC_FW_KVM_IDMAP_ADDR	0xfeffc000ULL
#define PC_FW_KVM_TSS_ADDR	0xfeffd000ULL	/* three pages */
#define PC_FW_KVM_PAGES_LEN	0x4000ULL	/* both, to 0xff000000 */

/* Interrupt controllers. */
#define PC_IOAPIC_ADDR		0xfec00000U
#define PC_LAPIC_ADDR		0xfee00000U
#define PC_IOAPIC_PINS		24
/*
 * Interrupt routing: ISA IRQ n drives PIC input n and IOAPIC pin n,
 * except IRQ 0 (the PIT), wired to IOAPIC pin 2 as on PCs; IRQ 2 is the
 * PICs' cascade.  The MP table says so and the GSI routing does so.
 */
#define PC_IRQ0_IOAPIC_PIN	2
#define PC_IRQ_CASCADE		2

/* Legacy chips: I/O ports and ISA IRQs. */
#define PC_I8042_DATA_PORT	0x60
#define PC_I8042_CMD_PORT	0x64
#define PC_I8042_KBD_IRQ	1
#define PC_I8042_AUX_IRQ	12
#define PC_RTC_PORT		0x70
#define PC_RTC_IRQ		8
#define PC_POST_PORT		0x80
#define PC_COM1_PORT		0x3f8
#define PC_COM1_IRQ		4
/* QEMU's firmware configuration interface (fw-cfg.h), firmware VMs only. */
#define PC_FW_CFG_PORT		0x510
/*
 * The PIIX's system control port A (port92.h), firmware VMs only, as is
 * its reset control register in the PCI host bridge's ports (0xcf9).
 */
#define PC_PORT92_PORT		0x92

#endif
