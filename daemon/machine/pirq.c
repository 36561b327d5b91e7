/* See pirq.h.  Intel 82371SB (PIIX3) datasheet, 2.2.9 (PIRQRC[A:D]). */
#include "pirq.h"
#include "piix3-isa.h"

void
pirq_init(struct pirq *p)
{
	unsigned int i;

	for (i = 0; i < PIRQ_LINKS; i++) {
		p->irq[i] = -1;
		p->up[i] = false;
	}
}

int
pirq_decode(uint8_t reg)
{
	unsigned int irq = reg & 0x0f;

	if (reg & PIIX3_ISA_PIRQ_OFF)
		return -1;
	if (irq < 3 || irq == 8 || irq == 13)
		return -1;
	return (int)irq;
}

void
pirq_set_route(struct pirq *p, unsigned int link, uint8_t reg)
{
	if (link < PIRQ_LINKS)
		p->irq[link] = (int8_t)pirq_decode(reg);
}

void
pirq_set_level(struct pirq *p, unsigned int link, bool up)
{
	if (link < PIRQ_LINKS)
		p->up[link] = up;
}

uint16_t
pirq_levels(const struct pirq *p)
{
	uint16_t levels = 0;
	unsigned int i;

	for (i = 0; i < PIRQ_LINKS; i++)
		if (p->up[i] && p->irq[i] >= 0)
			levels |= (uint16_t)(1u << p->irq[i]);
	return levels;
}
