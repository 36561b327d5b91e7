/*
 * The virtio PCI transport, driven as Linux's virtio_pci_modern driver
 * drives it, with virtio-rng behind it: capabilities, feature
 * negotiation, queue setup, a kick that fills buffers and raises INTx,
 * ISR acknowledgement, a hostile chain that ends in DEVICE_NEEDS_RESET
 * (not a crash), a reset that makes the device usable again, and a
 * driver that keeps offering buffers served 64 a turn of the loop.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"
#include "virtio-pci.h"
#include "virtio-rng.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define DESC		(RAM_BASE + 0x0000)
#define AVAIL		(RAM_BASE + 0x1000)
#define USED		(RAM_BASE + 0x2000)
#define BUF		(RAM_BASE + 0x10000)
#define QSIZE		16

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static void *dev;

static uint64_t
rd(uint32_t off, unsigned int size)
{
	uint64_t v = 0;

	virtio_pci_device_ops.read(dev, PCI_BAR_OFFSET(0) + off, &v, size);
	return v;
}

static void
wr(uint32_t off, uint64_t v, unsigned int size)
{
	virtio_pci_device_ops.write(dev, PCI_BAR_OFFSET(0) + off, &v, size);
}

static void *
gmem(uint64_t gpa)
{
	return fh.mem + (gpa - RAM_BASE);
}

/* Reset, negotiate and set queue 0 up; the status it ends with. */
static uint8_t
bring_up(uint64_t features)
{
	memset(fh.mem, 0, RAM_SIZE);
	wr(0x14, 0, 1);
	wr(0x14, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER, 1);
	wr(0x08, 0, 4);
	wr(0x0c, (uint32_t)features, 4);
	wr(0x08, 1, 4);
	wr(0x0c, (uint32_t)(features >> 32), 4);
	wr(0x14, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
	    VIRTIO_STATUS_FEATURES_OK, 1);
	if (!(rd(0x14, 1) & VIRTIO_STATUS_FEATURES_OK))
		return (uint8_t)rd(0x14, 1);
	wr(0x16, 0, 2);
	wr(0x18, QSIZE, 2);
	wr(0x20, DESC, 4);
	wr(0x24, DESC >> 32, 4);
	wr(0x28, AVAIL, 8);
	wr(0x30, USED, 8);
	wr(0x1c, 1, 2);
	wr(0x14, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
	    VIRTIO_STATUS_FEATURES_OK | VIRTIO_STATUS_DRIVER_OK, 1);
	return (uint8_t)rd(0x14, 1);
}

static void
offer(uint16_t slot, uint16_t head)
{
	struct virtq_avail *a = gmem(AVAIL);

	a->ring[slot % QSIZE] = head;
	a->idx = (uint16_t)(slot + 1);
	wr(VIRTIO_PCI_NOTIFY, 0, 2);
}

/* A driver on another vCPU that offers a buffer again as it comes back. */
static unsigned int refill;
static uint16_t refill_slot;

static void
refill_one(struct fake_host *h)
{
	struct virtq_avail *a = gmem(AVAIL);

	if (refill == 0)
		return;
	refill--;
	a->ring[refill_slot % QSIZE] = 0;
	a->idx = ++refill_slot;
}

/* Write the MSI-X message control's upper byte, as the PCI bus does. */
static void
msix_ctl(struct pci_config *pc, unsigned int at, uint8_t v)
{
	pci_config_write(pc, at + 3, &v, 1);
	virtio_pci_device_ops.pci_written(dev, at + 3, 1);
}

int
main(void)
{
	const uint64_t v1 = 1ULL << VIRTIO_F_VERSION_1;
	struct virtq_desc *desc;
	struct virtq_used *used;
	struct pci_config *pc;
	uint8_t *buf, zero[64] = { 0 };
	unsigned int at, types = 0;

	fh.mem = calloc(1, RAM_SIZE);
	fh.mem_base = RAM_BASE;
	fh.mem_size = RAM_SIZE;
	desc = gmem(DESC);
	used = gmem(USED);
	buf = gmem(BUF);

	dev = virtio_pci_new(&fh.host, virtio_rng_new(&fh.host));
	tap_ok(dev != NULL, "device made");
	pc = virtio_pci_device_ops.pci(dev);
	tap_ok(pci_config_get16(pc, PCI_VENDOR_ID) == 0x1af4 &&
	    pci_config_get16(pc, PCI_DEVICE_ID) == 0x1044 &&
	    pc->cfg[PCI_REVISION_ID] == 1, "modern virtio-rng IDs");
	for (at = pc->cfg[PCI_CAPABILITY_LIST]; at != 0;
	    at = pc->cfg[at + 1]) {
		if (pc->cfg[at] == PCI_CAP_ID_VNDR && pc->cfg[at + 4] == 0)
			types |= 1u << pc->cfg[at + 3];
	}
	TAP_EQ(types, 0x0e, "common, notify and ISR capabilities in BAR 0");
	TAP_EQ(rd(0x12, 2), 1, "one queue");
	wr(0x00, 1, 4);
	TAP_EQ(rd(0x04, 4) & 1, 1, "VERSION_1 offered");

	TAP_EQ(bring_up(0) & VIRTIO_STATUS_FEATURES_OK, 0,
	    "FEATURES_OK refused without VERSION_1");
	TAP_EQ(bring_up(v1 | 1ULL << 40) & VIRTIO_STATUS_FEATURES_OK, 0,
	    "FEATURES_OK refused for features not offered");
	TAP_EQ(bring_up(v1), 0x0f, "driver OK");
	TAP_EQ(rd(0x18, 2), QSIZE, "queue size reads back");

	desc[0] = (struct virtq_desc){ BUF, 64, VIRTQ_DESC_F_WRITE, 0 };
	offer(0, 0);
	tap_ok(used->idx == 1 && used->ring[0].len == 64 &&
	    memcmp(buf, zero, 64) != 0, "buffer filled with entropy");
	tap_ok(fh.irq[0] && fh.rises[0] == 1, "INTx raised");
	TAP_EQ(rd(VIRTIO_PCI_ISR, 1), 1, "ISR says: queue");
	tap_ok(!fh.irq[0], "reading ISR lowers the line");
	TAP_EQ(rd(VIRTIO_PCI_ISR, 1), 0, "and clears it");

	desc[0] = (struct virtq_desc){ BUF, 1u << 20, VIRTQ_DESC_F_WRITE, 0 };
	offer(1, 0);
	TAP_EQ(used->idx, 1, "a buffer outside RAM is not used");
	TAP_EQ(rd(0x14, 1) & VIRTIO_STATUS_NEEDS_RESET,
	    VIRTIO_STATUS_NEEDS_RESET, "device asks for a reset");
	TAP_EQ(rd(VIRTIO_PCI_ISR, 1), 2, "with a configuration interrupt");
	desc[0] = (struct virtq_desc){ BUF, 64, VIRTQ_DESC_F_WRITE, 0 };
	offer(2, 0);
	TAP_EQ(used->idx, 1, "a broken queue stays quiet");

	TAP_EQ(bring_up(v1), 0x0f, "after a reset, driver OK again");
	desc[0] = (struct virtq_desc){ BUF, 8, VIRTQ_DESC_F_WRITE, 0 };
	offer(0, 0);
	TAP_EQ(used->idx, 1, "and the queue works");
	wr(0x18, 8, 2);
	TAP_EQ(rd(0x18, 2), QSIZE, "queue size frozen while enabled");
	wr(VIRTIO_PCI_NOTIFY + 4 * 3, 0, 2);
	wr(0x5000, 0, 4);
	rd(0x3f, 1);
	tap_ok(used->idx == 1, "kicks at absent queues ignored");

	/* A driver that keeps offering: one kick, then 200 more buffers. */
	TAP_EQ(bring_up(v1), 0x0f, "driver OK for a driver that keeps adding");
	desc[0] = (struct virtq_desc){ BUF, 8, VIRTQ_DESC_F_WRITE, 0 };
	refill = 200;
	refill_slot = 1;
	fh.on_guest_mem = refill_one;
	offer(0, 0);
	TAP_EQ(used->idx, 64, "a kick fills 64 buffers and stops");
	tap_ok(fake_host_timers_armed(&fh) == 1 &&
	    fake_host_next_deadline(&fh) <= fh.vm_now,
	    "the rest deferred to the loop's next turn");
	{
		unsigned int fires = fh.timer_fires;

		fake_host_advance(&fh, 0);
		tap_ok(used->idx == 201 && refill == 0 &&
		    fake_host_timers_armed(&fh) == 0,
		    "then every buffer is filled");
		TAP_EQ(fh.timer_fires - fires, 3,
		    "in three more turns: 64, 64 and the last 9");
	}
	refill = 100;
	offer(refill_slot++, 0);
	fh.on_guest_mem = NULL;
	TAP_EQ(fake_host_timers_armed(&fh), 1, "deferred again");
	TAP_EQ(bring_up(v1), 0x0f, "a reset");
	TAP_EQ(fake_host_timers_armed(&fh), 0, "leaves no timer behind");

	/* MSI-X: vector 0 for the queue, then masked, then unmasked. */
	at = 0;
	for (unsigned int c = pc->cfg[PCI_CAPABILITY_LIST]; c != 0;
	    c = pc->cfg[c + 1])
		if (pc->cfg[c] == PCI_CAP_ID_MSIX)
			at = c;
	tap_ok(at != 0 && (pci_config_get16(pc, at + 2) & 0x7ff) == 1,
	    "MSI-X capability, two vectors");
	TAP_EQ(bring_up(v1), 0x0f, "driver OK again");
	msix_ctl(pc, at, 0x80);
	TAP_EQ(fh.route_calls, 0, "MSI-X on, every entry masked: no route");
	wr(VIRTIO_PCI_MSIX_TABLE + 0, 0xfee00000, 4);
	wr(VIRTIO_PCI_MSIX_TABLE + 4, 0, 4);
	wr(VIRTIO_PCI_MSIX_TABLE + 8, 0x41, 4);
	TAP_EQ(fh.route_calls, 0, "a masked entry's message: still none");
	wr(VIRTIO_PCI_MSIX_TABLE + 12, 0, 4);
	tap_ok(fh.route_calls == 1 && fh.route[0].on &&
	    fh.route[0].addr == 0xfee00000 && fh.route[0].data == 0x41,
	    "unmasked: the host is told vector 0's message");
	wr(0x1a, 0, 2);
	TAP_EQ(rd(0x1a, 2), 0, "queue vector 0 accepted");
	wr(0x10, 7, 2);
	TAP_EQ(rd(0x10, 2), 0xffff, "vector 7 does not exist: NO_VECTOR");
	desc[0] = (struct virtq_desc){ BUF, 8, VIRTQ_DESC_F_WRITE, 0 };
	offer(0, 0);
	tap_ok(fh.msis == 1 && fh.msi_vector == 0 &&
	    fh.msi_addr == 0xfee00000 && fh.msi_data == 0x41,
	    "queue interrupt sent as an MSI through vector 0");
	tap_ok(!fh.irq[0], "and not on INTx");
	wr(VIRTIO_PCI_MSIX_TABLE + 12, 1, 4);
	tap_ok(fh.route_calls == 2 && !fh.route[0].on,
	    "masked: the host drops vector 0's route");
	offer(1, 0);
	TAP_EQ(fh.msis, 1, "masked vector: nothing sent");
	TAP_EQ(rd(VIRTIO_PCI_MSIX_PBA, 4), 1, "but pending");
	wr(VIRTIO_PCI_MSIX_TABLE + 12, 0, 4);
	tap_ok(fh.route_calls == 3 && fh.route[0].on,
	    "unmasked: routed again");
	TAP_EQ(fh.msis, 2, "sent when unmasked");
	TAP_EQ(rd(VIRTIO_PCI_MSIX_PBA, 4), 0, "no longer pending");

	/* Reprogrammed while unmasked: the route follows at once. */
	wr(VIRTIO_PCI_MSIX_TABLE + 8, 0x42, 4);
	tap_ok(fh.route_calls == 4 && fh.route[0].on &&
	    fh.route[0].data == 0x42, "retargeted: the route follows");
	wr(VIRTIO_PCI_MSIX_TABLE + 8, 0x42, 4);
	TAP_EQ(fh.route_calls, 4, "the same message again: no call");
	offer(2, 0);
	tap_ok(fh.msis == 3 && fh.msi_data == 0x42, "sent with the new data");

	/* The function mask holds messages back without dropping routes. */
	msix_ctl(pc, at, 0xc0);
	offer(3, 0);
	tap_ok(fh.msis == 3 && rd(VIRTIO_PCI_MSIX_PBA, 4) == 1,
	    "function masked: pending, not sent");
	TAP_EQ(fh.route_calls, 4, "and the route stays");
	msix_ctl(pc, at, 0x80);
	tap_ok(fh.msis == 4 && rd(VIRTIO_PCI_MSIX_PBA, 4) == 0,
	    "function unmasked: the pending message goes");

	/* MSI-X off: no vector sends any more; INTx again. */
	msix_ctl(pc, at, 0);
	tap_ok(fh.route_calls == 5 && !fh.route[0].on,
	    "MSI-X disabled: the route goes");
	msix_ctl(pc, at, 0x80);
	tap_ok(fh.route_calls == 6 && fh.route[0].on &&
	    fh.route[0].data == 0x42, "enabled again: routed again");

	virtio_pci_device_ops.free(dev);
	free(fh.mem);
	return tap_done();
}
