/*
 * The PIIX3's PCI interrupt links as the machine follows them (pirq.h):
 * which ISA IRQs the links hold up for the route register values a
 * guest writes, the wired-OR of two links on one IRQ (SeaBIOS's 10, 10,
 * 11, 11), re-routing a link that is up, the values a PIIX3 ignores,
 * and the board's wiring of slots to links that SeaBIOS assumes.
 */
#include <stdbool.h>
#include <stdint.h>

#include "pc-layout.h"
#include "pirq.h"
#include "tap.h"

/* SeaBIOS's piix interrupt-line rule: slot s, pin p (1-based). */
static unsigned int
seabios_link(unsigned int slot, unsigned int pin)
{
	return (pin - 1 + slot - 1) & 3;
}

static void
test_decode(void)
{
	static const int want[16] = {
		-1, -1, -1, 3, 4, 5, 6, 7, -1, 9, 10, 11, 12, -1, 14, 15,
	};
	bool all = true;
	unsigned int v;

	for (v = 0; v < 16; v++)
		all &= pirq_decode((uint8_t)v) == want[v];
	tap_ok(all, "IRQs 3-7, 9-12, 14, 15 routable; 0-2, 8, 13 reserved");
	for (v = 0; v < 16; v++)
		all &= pirq_decode((uint8_t)(0x80 | v)) == -1;
	tap_ok(all, "bit 7 disables the route whatever the IRQ");
	TAP_EQ(pirq_decode(0x7a), 10, "bits 6:4 do not matter");
}

static void
test_levels(void)
{
	struct pirq p;

	pirq_init(&p);
	pirq_set_level(&p, 0, true);
	TAP_EQ(pirq_levels(&p), 0, "power-on: a link up drives nothing");
	pirq_set_route(&p, 0, 0x0a);
	pirq_set_route(&p, 1, 0x0a);
	pirq_set_route(&p, 2, 0x0b);
	pirq_set_route(&p, 3, 0x0b);
	TAP_EQ(pirq_levels(&p), 1u << 10,
	    "routing a link that is up raises its IRQ");
	pirq_set_level(&p, 1, true);
	TAP_EQ(pirq_levels(&p), 1u << 10, "PIRQB up too: IRQ 10 still");
	pirq_set_level(&p, 0, false);
	TAP_EQ(pirq_levels(&p), 1u << 10,
	    "PIRQA down while PIRQB holds IRQ 10: it stays up");
	pirq_set_level(&p, 1, false);
	TAP_EQ(pirq_levels(&p), 0, "both down: IRQ 10 down");
	pirq_set_level(&p, 3, true);
	TAP_EQ(pirq_levels(&p), 1u << 11, "PIRQD up: IRQ 11");
	pirq_set_route(&p, 3, 0x05);
	TAP_EQ(pirq_levels(&p), 1u << 5, "PIRQD re-routed while up: 11 to 5");
	pirq_set_route(&p, 3, 0x08);
	TAP_EQ(pirq_levels(&p), 0, "routed to a reserved value: nowhere");
	pirq_set_route(&p, 3, 0x8b);
	TAP_EQ(pirq_levels(&p), 0, "disabled: nowhere");
	pirq_set_route(&p, 3, 0x0f);
	pirq_set_level(&p, 2, true);
	TAP_EQ(pirq_levels(&p), 1u << 15 | 1u << 11, "two IRQs at once");
	pirq_set_route(&p, 4, 0x03);
	pirq_set_level(&p, 4, true);
	pirq_set_route(&p, 200, 0x03);
	pirq_set_level(&p, 200, true);
	TAP_EQ(pirq_levels(&p), 1u << 15 | 1u << 11,
	    "links past PIRQD are ignored");
}

static void
test_wiring(void)
{
	unsigned int slot, pin;
	bool all = true;

	for (slot = 1; slot < PC_PCI_SLOTS; slot++)
		for (pin = 0; pin < 4; pin++)
			all &= PC_PCI_GSI_PIRQ(PC_PCI_INTX_GSI(slot, pin)) ==
			    seabios_link(slot, pin + 1);
	tap_ok(all, "every slot's INTx GSI is on the link SeaBIOS assumes");
	TAP_EQ(PC_PCI_GSI_PIRQ(PC_PCI_INTX_GSI(1, 0)), 0,
	    "slot 1 INTA#: PIRQA");
}

int
main(void)
{
	test_decode();
	test_levels();
	test_wiring();
	return tap_done();
}
