/*
 * The last page of a test ROM (make-rom.py): what a PC's firmware would
 * be, for a test guest that needs a firmware VM's board (the PIIX3) but
 * none of a firmware's work.  The vCPU resets to f000:fff0 (CS base
 * 0xffff0000: this page's end, in the flash at the top of 4 GiB); we go
 * to flat 32-bit protected mode, copy the guest's image from the start
 * of the flash to 1 MiB where it is linked, and jump to its PVH entry
 * with EBX = 0 (no start info: the runtime says so and goes on).
 *
 * Linked at 0xfffff000 (rom-stub.ld); make-rom.py writes the guest's
 * entry into rom_entry and how many dwords to copy into rom_dwords.
 */
#define ROM_PAGE	0xfffff000
#define CS_BASE		0xffff0000	/* the reset CS's base */
#define GUEST_BASE	0x100000

	.section .text, "ax"
	.code16
	.globl rom_start
rom_start:
	cli
	cld
	lgdtl %cs:(rom_gdtr - CS_BASE)
	movl %cr0, %eax
	orl $1, %eax
	movl %eax, %cr0
	ljmpl $0x08, $rom_pm32

	.code32
rom_pm32:
	movl $0x10, %eax
	movl %eax, %ds
	movl %eax, %es
	movl %eax, %ss
	movl %eax, %fs
	movl %eax, %gs
	movl rom_base, %esi
	movl $GUEST_BASE, %edi
	movl rom_dwords, %ecx
	rep movsl
	xorl %ebx, %ebx
	jmp *rom_entry

	.balign 8
rom_gdt:
	.quad 0
	.quad 0x00cf9b000000ffff	/* 0x08: flat 32-bit code */
	.quad 0x00cf93000000ffff	/* 0x10: flat data */
rom_gdt_end:
	.word 0
rom_gdtr:
	.word rom_gdt_end - rom_gdt - 1
	.long rom_gdt

	/* Filled by make-rom.py. */
	.org 0xfe0
	.globl rom_base, rom_dwords, rom_entry
rom_base:
	.long 0		/* where the guest's image starts in the flash */
rom_dwords:
	.long 0
rom_entry:
	.long 0

	/* The reset vector: f000:fff0. */
	.org 0xff0
	.code16
	jmp rom_start
	.org 0x1000
