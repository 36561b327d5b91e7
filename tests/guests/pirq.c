/*
 * pirq: a PCI interrupt through the PIIX3's PIRQ routing to the 8259,
 * with the IOAPIC left masked, as a guest in PIC mode takes it (no ACPI,
 * noapic, DOS, a BIOS's own drivers).  Runs as a firmware VM's firmware
 * (make-rom.py: the PIIX3 ISA bridge exists only on that board) with a
 * virtio-rng.
 *
 * It finds the PIIX3 at 00:01.0 and the rng, works out the rng's PIRQ
 * link as SeaBIOS does on an i440FX board (slot S pin P on link
 * (S - 1 + P - 1) & 3), makes IRQs 10 and 11 level-triggered (ELCR) as
 * SeaBIOS does, routes the link to IRQ 10 and takes an entropy buffer's
 * interrupt there; re-routes it to IRQ 11 and takes the next one there;
 * disables the route (the buffer is used, no interrupt comes, the line
 * stays up since nobody reads the ISR) and routes it to IRQ 10 again:
 * the level already up comes at once.
 *
 * Output:
 *   pirq: piix3 8086:7000, rng in slot S pin P, link L
 *   pirq: irq 10 N, re-routed irq 11 N, disabled N, routed again irq 10 N
 *   PASS | FAIL: reason
 */
#include "runtime/rt.h"

#define BAR_ADDR	0xc0000000u
#define PIIX3_SLOT	1
#define PIRQRC		0x60
#define ELCR2		0x4d1		/* IRQs 8-15 */
/* Far beyond any host's pace; reached only when nothing comes. */
#define ANSWER_US	5000000

static struct vq vq;
static uint8_t buf[64] __attribute__((aligned(64)));
static struct vio vio;
static volatile unsigned irq10, irq11;

static void
on_irq10(void)
{
	(void)vio_isr(&vio);	/* lowers the line before the EOI */
	irq10++;
}

static void
on_irq11(void)
{
	(void)vio_isr(&vio);
	irq11++;
}

/* Route PIRQ link to reg's IRQ (bit 7: nowhere); the others as they were. */
static void
route(unsigned link, uint8_t reg)
{
	uint32_t v = pci_read32(PIIX3_SLOT, PIRQRC);

	v &= ~(0xffu << (8 * link));
	v |= (uint32_t)reg << (8 * link);
	pci_write32(PIIX3_SLOT, PIRQRC, v);
}

struct want {
	uint16_t used;
	volatile unsigned *count;
	unsigned n;
};

static bool
reached(void *arg)
{
	const struct want *w = arg;

	return vq_used(&vq) == w->used && (w->count == NULL || *w->count >= w->n);
}

/*
 * Offer one buffer; wait until it is used and *count reaches n (count
 * NULL: only until it is used).  0, or -1 when that did not happen.
 */
static int
round_trip(volatile unsigned *count, unsigned n)
{
	struct want w = { (uint16_t)(vq_used(&vq) + 1), count, n };

	vq.desc[0] = (struct vq_desc){ (uintptr_t)buf, 8, 2, 0 };
	vq_submit(&vq, 0);
	return wait_us(reached, &w, ANSWER_US) ? 0 : -1;
}

void
guest_main(void)
{
	uint32_t id = pci_read32(PIIX3_SLOT, 0);
	unsigned pin, link, first, second, off, again;

	irq_set_mode(IRQ_MODE_PIC);
	if (id != 0x70008086) {
		printf("FAIL: no PIIX3 at 00:01.0 (%08x)\n", id);
		return;
	}
	if (vio_find(&vio, 4, BAR_ADDR, 0) < 0) {
		printf("FAIL: no virtio-rng found\n");
		return;
	}
	pin = (pci_read32(vio.slot, 0x3c) >> 8) & 0xff;
	if (pin < 1 || pin > 4) {
		printf("FAIL: rng interrupt pin %u\n", pin);
		return;
	}
	link = (vio.slot - 1 + pin - 1) & 3;
	printf("pirq: piix3 %04x:%04x, rng in slot %u pin %u, link %u\n",
	    id & 0xffff, id >> 16, vio.slot, pin, link);

	outb(ELCR2, inb(ELCR2) | 1 << (10 - 8) | 1 << (11 - 8));
	irq_enable(10, on_irq10);
	irq_enable(11, on_irq11);
	if (vio_start(&vio) < 0 || vio_queue(&vio, 0, &vq) < 0) {
		printf("FAIL: the rng refused its set-up\n");
		return;
	}
	vio_driver_ok(&vio);

	route(link, 10);
	(void)round_trip(&irq10, 1);
	first = irq10;
	route(link, 11);
	(void)round_trip(&irq11, 1);
	second = irq11;
	/* Used, and the line stays up: nothing reads the ISR. */
	route(link, 0x80);
	(void)round_trip(NULL, 0);
	sleep_ms(20);
	off = irq10 + irq11 - first - second;
	route(link, 10);
	(void)wait_us(reached, &(struct want){ vq_used(&vq), &irq10,
	    first + 1 }, ANSWER_US);
	again = irq10 - first;
	printf("pirq: irq 10 %u, re-routed irq 11 %u, disabled %u, "
	    "routed again irq 10 %u\n", first, second, off, again);
	if (first != 1 || second != 1 || off != 0 || again != 1) {
		printf("FAIL: PIRQ routing\n");
		return;
	}
	printf("PASS\n");
}
