/*
 * virtio: drive a virtio-rng over PCI by hand.  Finds the host bridge
 * and the device through configuration mechanism #1, sizes and places
 * its BAR, negotiates VERSION_1, takes entropy through one queue with
 * the device's INTx interrupt routed level-triggered through the IOAPIC,
 * then offers garbage descriptors: the device must answer with
 * DEVICE_NEEDS_RESET and a configuration interrupt (the worker must not
 * die), and work again after a reset.
 *
 * Output:
 *   pci: host bridge 8086:1237
 *   virtio: rng in slot S, BAR 16384 bytes, interrupt line G
 *   rng: 64 bytes, interrupts N
 *   garbage: status 0x4f isr 0x2
 *   PASS | FAIL: reason
 */
#include "runtime/rt.h"

#define BAR_ADDR	0xc0000000u
#define VEC_VIRTIO	0x50

static struct vq vq;
static uint8_t buf[64] __attribute__((aligned(64)));
static struct vio vio;
static volatile unsigned interrupts;
static volatile uint8_t last_isr;

static void
virtio_irq(struct trap_frame *f)
{
	last_isr |= vio_isr(&vio);	/* lowers the line */
	interrupts++;
	lapic_eoi();
}

/* Wait (with interrupts on) until the used index reaches want. */
static int
wait_used(uint16_t want)
{
	unsigned spins;

	for (spins = 0; spins < 1000; spins++) {
		if (vq_used(&vq) == want && interrupts > 0)
			return 0;
		idle();
	}
	return -1;
}

static int
bring_up(void)
{
	if (vio_start(&vio) < 0) {
		printf("FAIL: FEATURES_OK refused\n");
		return -1;
	}
	if (vio_queue(&vio, 0, &vq) < 0) {
		printf("FAIL: queue 0 too small\n");
		return -1;
	}
	vio_driver_ok(&vio);
	return 0;
}

void
guest_main(void)
{
	uint32_t id = pci_read32(0, 0);
	unsigned i, nonzero = 0;

	printf("pci: host bridge %04x:%04x\n", id & 0xffff, id >> 16);
	if (vio_find(&vio, 4, BAR_ADDR, 0) < 0) {
		printf("FAIL: no virtio-rng found\n");
		return;
	}
	printf("virtio: rng in slot %u, BAR %u bytes, interrupt line %u\n",
	    vio.slot, vio.bar_size, vio.gsi_line);
	trap_set_handler(VEC_VIRTIO, virtio_irq);
	ioapic_route_level(vio.gsi_line, VEC_VIRTIO, lapic_id());
	if (bring_up() < 0)
		return;

	vq.desc[0] = (struct vq_desc){ (uintptr_t)buf, sizeof(buf), 2, 0 };
	vq_submit(&vq, 0);
	if (wait_used(1) < 0) {
		printf("FAIL: no answer (used %u, interrupts %u)\n",
		    vq_used(&vq), interrupts);
		return;
	}
	for (i = 0; i < sizeof(buf); i++)
		nonzero += buf[i] != 0;
	printf("rng: %u bytes, interrupts %u\n", vq.used_ring[0].len,
	    interrupts);
	if (vq.used_ring[0].len != sizeof(buf) || nonzero < 32) {
		printf("FAIL: buffer not filled (%u non-zero)\n", nonzero);
		return;
	}

	/* Garbage: a buffer far outside RAM, then a loop. */
	interrupts = 0;
	last_isr = 0;
	vq.desc[1] = (struct vq_desc){ 0x7ff000000000ull, 4096, 2, 0 };
	vq_submit(&vq, 1);
	for (i = 0; i < 100 && interrupts == 0; i++)
		idle();
	printf("garbage: status 0x%02x isr 0x%x\n", vio_status(&vio),
	    last_isr);
	if (!(vio_status(&vio) & 0x40) || !(last_isr & 2) ||
	    vq_used(&vq) != 1) {
		printf("FAIL: garbage not refused\n");
		return;
	}

	/* After a reset the device works again. */
	interrupts = 0;
	if (bring_up() < 0)
		return;
	vq.desc[0] = (struct vq_desc){ (uintptr_t)buf, 16, 1 | 2, 1 };
	vq.desc[1] = (struct vq_desc){ (uintptr_t)buf + 16, 16, 1 | 2, 0 };
	vq_submit(&vq, 0);
	/*
	 * The notification may reach the device through an ioeventfd, on
	 * the worker's loop rather than during the write: wait for the
	 * configuration interrupt that comes with NEEDS_RESET.
	 */
	for (i = 0; i < 100 && !(vio_status(&vio) & 0x40); i++)
		idle();
	if (!(vio_status(&vio) & 0x40)) {
		printf("FAIL: a descriptor loop was not refused\n");
		return;
	}
	if (bring_up() < 0)
		return;
	vq.desc[0] = (struct vq_desc){ (uintptr_t)buf, 32, 2, 0 };
	vq_submit(&vq, 0);
	if (wait_used(1) < 0 || vq.used_ring[0].len != 32) {
		printf("FAIL: no entropy after the reset\n");
		return;
	}
	printf("PASS\n");
}
