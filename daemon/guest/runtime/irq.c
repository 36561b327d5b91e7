/*
 * ISA interrupts, routed through the IOAPIC (default) or the 8259 (with
 * "irq=pic" on the command line).  ISA IRQ n uses vector VEC_IRQ_BASE + n
 * and IOAPIC pin n; the handler is called with the interrupt
 * acknowledged afterwards.
 */
#include "rt.h"

static enum irq_mode irq_mode;
static void (*irq_fns[16])(void);

void
irq_set_mode(enum irq_mode mode)
{
	irq_mode = mode;
	if (mode == IRQ_MODE_PIC)
		lapic_set_lint0_extint();
}

const char *
irq_mode_name(void)
{
	return irq_mode == IRQ_MODE_PIC ? "pic" : "ioapic";
}

static void
irq_dispatch(struct trap_frame *f)
{
	unsigned irq = f->vector - VEC_IRQ_BASE;

	irq_fns[irq]();
	if (irq_mode == IRQ_MODE_PIC)
		pic_eoi(irq);
	else
		lapic_eoi();
}

void
irq_enable(unsigned irq, void (*fn)(void))
{
	irq_fns[irq] = fn;
	trap_set_handler(VEC_IRQ_BASE + irq, irq_dispatch);
	if (irq_mode == IRQ_MODE_PIC)
		pic_unmask(irq);
	else
		ioapic_route(irq, VEC_IRQ_BASE + irq, lapic_id());
}

void
irq_disable(unsigned irq)
{
	if (irq_mode == IRQ_MODE_PIC)
		pic_mask(irq);
	else
		ioapic_mask(irq);
}
