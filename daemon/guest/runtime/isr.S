/*
 * Interrupt and exception entry: one 16-byte stub per vector and an IDT
 * that points at them.  The stubs start the image (the linker script
 * checks that they are at ISR_BASE), so every gate is a constant and the
 * whole IDT is built by the assembler: no instruction is spent on it at
 * boot.
 *
 * Each stub pushes a zero error code where the CPU does not push one,
 * then the vector, and joins isr_common, which saves the caller-saved
 * registers (the C code preserves the rest) and calls trap_dispatch().
 */

#define ISR_BASE	0x100000
#define SEL_CODE64	0x08
#define GATE_INTR	0x8e00		/* present, DPL 0, interrupt gate */

	.section .data.idt, "aw"
	.balign 16
	.globl idt
idt:
	.set vec, 0
	.rept 256
	.word (ISR_BASE + vec * 16) & 0xffff
	.word SEL_CODE64
	.word GATE_INTR
	.word (ISR_BASE + vec * 16) >> 16
	.long 0, 0
	.set vec, vec + 1
	.endr
	.globl idt_end
idt_end:

	.section .text.isr, "ax"
	.code64
	.globl isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	.org isr_stubs + vec * 16, 0xcc
	/* The CPU pushes an error code for 8, 10-14, 17, 21, 29 and 30. */
	.if vec == 8 || (vec >= 10 && vec <= 14) || vec == 17 || \
	    vec == 21 || vec == 29 || vec == 30
	.else
	pushq $0
	.endif
	pushq $vec
	jmp isr_common
	.set vec, vec + 1
	.endr
	.org isr_stubs + 256 * 16, 0xcc

isr_common:
	pushq %rax
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	movq %rsp, %rdi
	cld
	call trap_dispatch
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rax
	addq $16, %rsp
	iretq
