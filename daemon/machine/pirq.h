/*
 * The PIIX3's PCI interrupt router, as the machine follows it: four
 * PCI interrupt links (PIRQA-D), each the wired-OR of the INTx pins
 * the board ties to it, and each steered by its route register
 * (piix3-isa.h) to one ISA IRQ, or to none.  What this computes is the
 * level each ISA IRQ gets from the links: the machine drives that ISA
 * IRQ's GSI, which reaches the 8259 input and the IOAPIC pin of that
 * number, as the PIIX3's IRQ output reaches both on a PC.
 *
 * Why not a second entry in KVM's GSI routing (GSI 16 to both IOAPIC
 * pin 16 and PIC pin 10): KVM keeps one level per PIC pin for all of
 * user space, and SeaBIOS steers two links to each of IRQs 10 and 11,
 * so a link going down would lower an IRQ its sibling still holds up.
 * The wired-OR has to be computed here, where every link's level is
 * known.
 *
 * Pure logic (no ioctls, no locks): the device host serializes it and
 * issues KVM_IRQ_LINE for what changes; unit tests reach it directly.
 */
#ifndef VMMD_PIRQ_H
#define VMMD_PIRQ_H

#include <stdbool.h>
#include <stdint.h>

#define PIRQ_LINKS	4

struct pirq {
	int8_t irq[PIRQ_LINKS];		/* the ISA IRQ a link drives, or -1 */
	bool up[PIRQ_LINKS];		/* a link's level */
};

/* Every link down and routed nowhere: the router at power-on. */
void	pirq_init(struct pirq *p);

/*
 * The ISA IRQ a route register value names, or -1: bit 7 disables the
 * route, and the values the datasheet reserves (0-2, 8, 13: the timer,
 * keyboard, cascade, RTC and FPU inputs, which a PIIX3 never drives
 * from a link) route nowhere, as on the chip.
 */
int	pirq_decode(uint8_t reg);

/* The guest wrote link's route register: a link past PIRQD is ignored. */
void	pirq_set_route(struct pirq *p, unsigned int link, uint8_t reg);
/* A link's wired-OR changed level: a link past PIRQD is ignored. */
void	pirq_set_level(struct pirq *p, unsigned int link, bool up);

/*
 * The ISA IRQs the links hold up now, bit n for IRQ n.  The caller
 * compares it before and after a change, and drives the IRQs whose bit
 * changed.
 */
uint16_t pirq_levels(const struct pirq *p);

#endif
