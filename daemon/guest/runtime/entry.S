/*
 * PVH entry: the loader starts us in 32-bit protected mode with paging
 * off and EBX pointing at struct hvm_start_info.  We switch straight to
 * long mode with page tables that are built at link time, so the path to
 * C is a handful of instructions (CPL0 code may be emulated one
 * instruction at a time).
 *
 * Application processors come in through the real-mode trampoline at the
 * end of this file, which smp.c copies below 1 MiB.
 */

#define XEN_ELFNOTE_PHYS32_ENTRY	18

#define SEL_CODE64	0x08
#define SEL_DATA	0x10
#define SEL_CODE32	0x18

#define CR0_PE		0x00000001
#define CR0_NW_CD	0x60000000
#define CR0_PG		0x80000000
#define CR4_PAE		0x00000020
#define MSR_EFER	0xc0000080
#define EFER_LME	0x00000100

#define PTE_P		0x001
#define PTE_RW		0x002
#define PTE_PS		0x080

#define AP_STACK_SHIFT	13		/* 8 KiB per application processor */
#define BOOT_STACK_SIZE	16384
#define SMP_STACKS_SIZE	(64 << AP_STACK_SHIFT)	/* SMP_MAX_CPUS in rt.h */

/*
 * The PVH note.  Its descriptor is the 32-bit entry address.  Some loaders
 * read that field as a 64-bit value on 64-bit images, so it is followed by
 * an empty note whose first word (a zero name size) keeps the upper half 0.
 */
	.section .note.pvh, "a", @note
	.balign 4
	.long 4				/* n_namesz: "Xen\0" */
	.long 4				/* n_descsz */
	.long XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.long pvh_entry
	.long 0, 0, 0			/* empty note */

/* --- boot-time data (in the image, so nothing to clear or compute) --- */

	.section .data.boot, "aw"
	.balign 16
gdt:
	.quad 0
	.quad 0x00af9b000000ffff	/* 0x08: 64-bit code, accessed */
	.quad 0x00cf93000000ffff	/* 0x10: flat data, accessed */
	.quad 0x00cf9b000000ffff	/* 0x18: 32-bit code, accessed */
gdt_end:

	.balign 8
	.word 0				/* align the base field */
	.globl gdtr
gdtr:
	.word gdt_end - gdt - 1
	.long gdt

	.balign 8
	.globl rt_entry_tsc
rt_entry_tsc:
	.quad 0
	.globl rt_start_info_pa
rt_start_info_pa:
	.long 0
	.globl smp_next_slot
smp_next_slot:
	.long 0

/* Identity map of the first 4 GiB with 2 MiB pages. */
	.section .data.pagetables, "aw"
	.balign 4096
	.globl pml4
pml4:
	.quad pdpt + PTE_P + PTE_RW
	.fill 511, 8, 0
pdpt:
	.quad pd + 0x0000 + PTE_P + PTE_RW
	.quad pd + 0x1000 + PTE_P + PTE_RW
	.quad pd + 0x2000 + PTE_P + PTE_RW
	.quad pd + 0x3000 + PTE_P + PTE_RW
	.fill 508, 8, 0
pd:
	.set pa, 0
	.rept 2048
	.quad pa + PTE_P + PTE_RW + PTE_PS
	.set pa, pa + 0x200000
	.endr

/* Stacks are not part of .bss: nobody needs them zeroed. */
	.section .bss.noinit, "aw", @nobits
	.balign 4096
boot_stack:
	.skip BOOT_STACK_SIZE
boot_stack_top:
	.globl smp_ap_stacks
smp_ap_stacks:
	.skip SMP_STACKS_SIZE

/* --- 32-bit entry ----------------------------------------------------- */

	.section .text.entry, "ax"
	.code32
	.globl pvh_entry
pvh_entry:
	rdtsc
	movl %eax, rt_entry_tsc
	movl %edx, rt_entry_tsc + 4
	movl %ebx, rt_start_info_pa
	xorl %edi, %edi			/* EDI = 0: bootstrap processor */
enter_long_mode:
	lgdt gdtr
	movl $CR4_PAE, %eax
	movl %eax, %cr4
	movl $pml4, %eax
	movl %eax, %cr3
	movl $MSR_EFER, %ecx
	rdmsr
	orl $EFER_LME, %eax
	wrmsr
	movl %cr0, %eax
	andl $~CR0_NW_CD, %eax
	orl $(CR0_PG | CR0_PE), %eax
	movl %eax, %cr0
	ljmp $SEL_CODE64, $entry64

/* An AP arrives here from the trampoline, with real-mode data segments. */
ap_entry32:
	movl $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	movl $1, %edi
	jmp enter_long_mode

/* --- 64-bit entry ----------------------------------------------------- */

	.code64
entry64:
	movl $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	cld
	testl %edi, %edi
	jnz ap_entry64

	movl $boot_stack_top, %esp
	/*
	 * The loader zeroes .bss too (ELF says so), but clear it here in
	 * case it is not fresh after a reset.  It is kept small: large
	 * buffers live in .bss.noinit and every iteration of REP STOSQ
	 * costs as much as an instruction when CPL0 is emulated.
	 */
	movl $__bss_start, %edi
	movl $__bss_end, %ecx
	subl %edi, %ecx
	shrl $3, %ecx
	xorl %eax, %eax
	rep stosq
	call rt_start
	jmp halt_forever

ap_entry64:
	/* Each AP takes the next stack slot. */
	movl $1, %eax
	lock xaddl %eax, smp_next_slot
	incl %eax
	shll $AP_STACK_SHIFT, %eax
	leaq smp_ap_stacks(%rax), %rsp
	call smp_ap_main
	jmp halt_forever

	.text
	.globl halt_forever
halt_forever:
	cli
1:	hlt
	jmp 1b

/*
 * Real-mode trampoline, copied to a page below 1 MiB; a STARTUP IPI starts
 * the AP at its first byte with CS = page >> 4 and IP = 0.  Real mode is
 * the slowest to emulate: load the GDT, set PE and leave.
 */
	.section .rodata.trampoline, "a"
	.code16
	.globl smp_trampoline, smp_trampoline_end
smp_trampoline:
	cli
	lgdtl %cs:(tramp_gdtr - smp_trampoline)
	movl %cr0, %eax
	orl $CR0_PE, %eax
	movl %eax, %cr0
	ljmpl $SEL_CODE32, $ap_entry32
	.balign 4
tramp_gdtr:
	.word gdt_end - gdt - 1
	.long gdt
smp_trampoline_end:
	.code64
