/*
 * Exceptions and interrupts.  The IDT itself is built by the assembler
 * (isr.S) with every vector present; registering a handler only stores a
 * function pointer.  Exceptions are reported and stop the CPU; an
 * interrupt without a handler is reported and acknowledged.
 */
#include "rt.h"

struct __attribute__((packed)) idt_ptr {
	uint16_t limit;
	uint64_t base;
};

extern char idt[], idt_end[];

/* In .data rather than .bss: clearing it would cost 256 instructions. */
static trap_handler_fn trap_handlers[256]
    __attribute__((section(".data.handlers")));
/* Acknowledges an interrupt nobody handles: the interrupt controller's. */
static void (*trap_ack)(void) __attribute__((section(".data.handlers")));

static const char *const exc_names[32] = {
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
	"#DF", "CSO", "#TS", "#NP", "#SS", "#GP", "#PF", "#15",
	"#MF", "#AC", "#MC", "#XM", "#VE", "#CP", "#22", "#23",
	"#24", "#25", "#26", "#27", "#HV", "#VC", "#SX", "#31",
};

void
trap_load(void)
{
	struct idt_ptr p = { idt_end - idt - 1, (uint64_t)(uintptr_t)idt };

	__asm__ volatile("lidt %0" : : "m"(p));
}

void
trap_init(void)
{
	trap_load();
}

void
trap_set_handler(uint8_t vector, trap_handler_fn fn)
{
	trap_handlers[vector] = fn;
}

void
trap_set_ack(void (*ack)(void))
{
	trap_ack = ack;
}

static RT_NORETURN void
trap_exception(struct trap_frame *f)
{
	uint64_t cr2;

	__asm__ volatile("mov %%cr2, %0" : "=r"(cr2));
	cons_break_lock();
	printf("EXCEPTION: vector %lu (%s) rip=0x%lx error=0x%lx cr2=0x%lx "
	    "rsp=0x%lx\n", f->vector, exc_names[f->vector], f->rip,
	    f->error, cr2, f->rsp);
	printf("FAIL: unexpected exception %s at rip=0x%lx\n",
	    exc_names[f->vector], f->rip);
	halt_forever();
}

void trap_dispatch(struct trap_frame *f);

void
trap_dispatch(struct trap_frame *f)
{
	trap_handler_fn fn;

	if (f->vector < 32)
		trap_exception(f);
	if (f->vector == VEC_SPURIOUS)
		return;		/* no EOI for a spurious interrupt */
	fn = trap_handlers[f->vector];
	if (fn == NULL) {
		printf("trap: unexpected interrupt vector %lu\n", f->vector);
		if (trap_ack != NULL)
			trap_ack();
		return;
	}
	fn(f);
}

/*
 * With an empty IDT, any exception cannot be delivered: #GP, then #DF,
 * then a triple fault, which resets (or shuts down) the machine.  The
 * exception is a #UD from UD2, not INT3: KVM's instruction emulator
 * only emulates software interrupts in real mode.
 */
void
trap_triple_fault(void)
{
	struct idt_ptr p = { 0, 0 };

	__asm__ volatile("lidt %0; ud2" : : "m"(p));
	halt_forever();
}
