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
 *   net: slot S mac xx:xx:xx:xx:xx:xx      (one line per virtio-net)
 *   net: N cards
 *   virtio: rng in slot S, BAR 16384 bytes, interrupt line G
 *   rng: 64 bytes, interrupts N
 *   garbage: status 0x4f isr 0x2
 *   msix: vector 0x51 1, retargeted 0x52 1, masked pba 1, unmasked 1,
 *     function masked pba 1, unmasked 1
 *   PASS | FAIL: reason
 *
 * The MSI-X part: after the INTx part, the driver enables MSI-X, points
 * the queue at table entry 0, programs and unmasks it (an interrupt
 * arrives on the LAPIC at that vector), reprograms it to another vector
 * while unmasked, masks it (the buffer is used, no interrupt comes, the
 * pending bit is set), unmasks it (the interrupt comes), then does the
 * same with the function mask.
 */
#include "runtime/rt.h"

#define BAR_ADDR	0xc0000000u
#define VEC_VIRTIO	0x50
#define VEC_MSI_A	0x51
#define VEC_MSI_B	0x52

static struct vq vq;
static uint8_t buf[64] __attribute__((aligned(64)));
static struct vio vio;
static volatile unsigned interrupts;
static volatile uint8_t last_isr;

static volatile unsigned msi_a, msi_b;

static void
msi_irq_a(struct trap_frame *f)
{
	msi_a++;
	lapic_eoi();
}

static void
msi_irq_b(struct trap_frame *f)
{
	msi_b++;
	lapic_eoi();
}

static void
virtio_irq(struct trap_frame *f)
{
	last_isr |= vio_isr(&vio);	/* lowers the line */
	interrupts++;
	lapic_eoi();
}

/*
 * How long an answer may take before the test gives up: far beyond any
 * host's pace (an answer comes within milliseconds), only reached when
 * the answer never comes.
 */
#define ANSWER_US	5000000

static uint16_t used_want;

static bool
used_reached(void *arg)
{
	return vq_used(&vq) == used_want && interrupts > 0;
}

/* Wait (with interrupts on) until the used index reaches want. */
static int
wait_used(uint16_t want)
{
	used_want = want;
	return wait_us(used_reached, NULL, ANSWER_US) ? 0 : -1;
}

static bool
needs_reset(void *arg)
{
	return (vio_status(&vio) & 0x40) != 0;
}

/* NEEDS_RESET, and the configuration interrupt that announces it. */
static bool
reset_announced(void *arg)
{
	return needs_reset(arg) && (last_isr & 2) != 0;
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

struct msix_want {
	uint16_t used;
	volatile unsigned *count;
	unsigned want;
};

static bool
msix_reached(void *arg)
{
	const struct msix_want *w = arg;

	return vq_used(&vq) == w->used && *w->count >= w->want;
}

/*
 * Wait until the queue's used index is used and *count reaches want (at
 * most ANSWER_US: a masked vector must not leave us halted forever).
 * 0, or -1 when that did not happen.
 */
static int
msix_wait(uint16_t used, volatile unsigned *count, unsigned want)
{
	struct msix_want w = { used, count, want };

	return wait_us(msix_reached, &w, ANSWER_US) ? 0 : -1;
}

/* Offer one buffer; wait for it and for *count to reach want. */
static int
msix_round(volatile unsigned *count, unsigned want)
{
	uint16_t used = (uint16_t)(vq_used(&vq) + 1);

	vq.desc[0] = (struct vq_desc){ (uintptr_t)buf, 8, 2, 0 };
	vq_submit(&vq, 0);
	return msix_wait(used, count, want);
}

/* A masked round: the buffer is used, and no interrupt comes meanwhile. */
static int
msix_masked_round(void)
{
	unsigned before = msi_a + msi_b, zero = 0;

	if (msix_round(&zero, 0) < 0)
		return -1;
	sleep_ms(20);
	return msi_a + msi_b == before ? 0 : -1;
}

static void
mask_entry(int on)
{
	vio_msix_mask(&vio, 0, on);
}

static void
mask_function(int on)
{
	vio_msix_control(&vio, 1, on);
}

/*
 * Mask (entry 0 or the function), offer a buffer: it is used and no
 * interrupt comes, the pending bit is set (*pba); unmask: the held
 * interrupt comes (*late of them).  -1 when one came while masked.
 */
static int
msix_held(void (*mask)(int on), uint32_t *pba, unsigned *late)
{
	unsigned before;

	mask(1);
	if (msix_masked_round() < 0)
		return -1;
	before = msi_b;
	*pba = vio_msix_pba(&vio);
	mask(0);
	msix_wait(vq_used(&vq), &msi_b, before + 1);
	sleep_ms(20);
	*late = msi_b - before;
	return 0;
}

static int
test_msix(void)
{
	unsigned a, b, b_unmasked, f_unmasked;
	uint32_t pba, fpba;

	if (vio.msix_cap == 0) {
		printf("FAIL: no MSI-X capability\n");
		return -1;
	}
	trap_set_handler(VEC_MSI_A, msi_irq_a);
	trap_set_handler(VEC_MSI_B, msi_irq_b);
	if (bring_up() < 0)
		return -1;
	vio_msix_control(&vio, 1, 0);
	vio_msix_entry(&vio, 0, lapic_id(), VEC_MSI_A);
	vio_queue_vector(&vio, 0, 0);
	vio_msix_mask(&vio, 0, 0);
	if (msix_round(&msi_a, 1) < 0) {
		printf("FAIL: no MSI-X answer\n");
		return -1;
	}
	sleep_ms(20);
	a = msi_a;
	/* Reprogrammed while unmasked: the next one takes the new vector. */
	vio_msix_entry(&vio, 0, lapic_id(), VEC_MSI_B);
	msix_round(&msi_b, 1);
	sleep_ms(20);		/* nothing more may come, on either vector */
	b = msi_b;
	if (msix_held(mask_entry, &pba, &b_unmasked) < 0) {
		printf("FAIL: an interrupt through a masked entry\n");
		return -1;
	}
	if (msix_held(mask_function, &fpba, &f_unmasked) < 0) {
		printf("FAIL: an interrupt while the function is masked\n");
		return -1;
	}
	printf("msix: vector 0x%x %u, retargeted 0x%x %u, masked pba %u, "
	    "unmasked %u, function masked pba %u, unmasked %u\n", VEC_MSI_A,
	    a, VEC_MSI_B, b, pba & 1, b_unmasked, fpba & 1, f_unmasked);
	if (a != 1 || b != 1 || msi_a != 1 || !(pba & 1) || b_unmasked != 1 ||
	    !(fpba & 1) || f_unmasked != 1 || (vio_msix_pba(&vio) & 1)) {
		printf("FAIL: MSI-X\n");
		return -1;
	}
	return 0;
}

/*
 * Every virtio-net function (device type 1), in slot order, with the MAC
 * its configuration space gives (virtio 1.2, 5.1.4): "net: slot S mac
 * xx:xx:xx:xx:xx:xx", then "net: N cards".  Each BAR 0 goes 1 MiB above
 * the one before, clear of the rng's.
 */
static void
net_scan(void)
{
	struct vio n;
	unsigned from = 0, count = 0;
	volatile uint8_t *mac;

	while (vio_find(&n, 1, BAR_ADDR + 0x100000u * (count + 1),
	    from) == 0) {
		mac = (volatile uint8_t *)n.device;
		printf("net: slot %u mac %02x:%02x:%02x:%02x:%02x:%02x\n",
		    n.slot, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
		from = n.slot + 1;
		count++;
	}
	printf("net: %u cards\n", count);
}

void
guest_main(void)
{
	uint32_t id = pci_read32(0, 0);
	unsigned i, nonzero = 0;

	printf("pci: host bridge %04x:%04x\n", id & 0xffff, id >> 16);
	net_scan();
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
	(void)wait_us(reset_announced, NULL, ANSWER_US);
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
	 * NEEDS_RESET that comes with a configuration interrupt.
	 */
	if (!wait_us(needs_reset, NULL, ANSWER_US)) {
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
	if (test_msix() < 0)
		return;
	printf("PASS\n");
}
