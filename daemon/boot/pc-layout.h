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

/* Pages KVM needs for itself on Intel hosts, in the PCI hole. */
#define PC_KVM_IDMAP_ADDR	0xfffbc000ULL
#define PC_KVM_TSS_ADDR		0xfffbd000ULL	/* three pages */

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

#endif
