/*
 * The 8259A pair.  Whatever a firmware left behind (vectors 0x08-0x0f
 * collide with exceptions), the runtime remaps both chips to
 * VEC_IRQ_BASE and masks every line; irq.c unmasks what a guest uses.
 */
#include "rt.h"

#define PIC1_CMD	0x20
#define PIC1_DATA	0x21
#define PIC2_CMD	0xa0
#define PIC2_DATA	0xa1

#define ICW1_INIT_ICW4	0x11	/* edge triggered, cascade, ICW4 follows */
#define ICW4_8086	0x01
#define OCW2_EOI	0x20

static uint16_t pic_masks = 0xffff;

static void
pic_write_masks(void)
{
	outb(PIC1_DATA, (uint8_t)pic_masks);
	outb(PIC2_DATA, (uint8_t)(pic_masks >> 8));
}

void
pic_init(void)
{
	outb(PIC1_CMD, ICW1_INIT_ICW4);
	outb(PIC2_CMD, ICW1_INIT_ICW4);
	outb(PIC1_DATA, VEC_IRQ_BASE);
	outb(PIC2_DATA, VEC_IRQ_BASE + 8);
	outb(PIC1_DATA, 1 << 2);	/* slave on IR2 */
	outb(PIC2_DATA, 2);		/* slave identity */
	outb(PIC1_DATA, ICW4_8086);
	outb(PIC2_DATA, ICW4_8086);
	pic_masks = 0xffff;
	pic_write_masks();
}

void
pic_unmask(unsigned irq)
{
	pic_masks &= ~(1u << irq);
	if (irq >= 8)
		pic_masks &= ~(1u << 2);	/* the cascade */
	pic_write_masks();
}

void
pic_mask(unsigned irq)
{
	pic_masks |= 1u << irq;
	pic_write_masks();
}

void
pic_eoi(unsigned irq)
{
	if (irq >= 8)
		outb(PIC2_CMD, OCW2_EOI);
	outb(PIC1_CMD, OCW2_EOI);
}
