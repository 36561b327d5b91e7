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
#include "virtio-driver.h"
#include "virtio-pci.h"
#include "virtio-rng.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define BUF		(RAM_BASE + 0x10000)
#define QSIZE		16

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct vdrv d;

/* Reset, negotiate and set queue 0 up; the status it ends with. */
static uint8_t
bring_up(uint64_t features)
{
	return vdrv_bring_up(&d, features, 1);
}

/* A driver on another vCPU that offers a buffer again as it comes back. */
static unsigned int refill;

static void
refill_one(struct fake_host *h)
{
	if (refill == 0)
		return;
	refill--;
	vdrv_add(&d, 0, 0);
}

/* Write the MSI-X message control's upper byte, as the PCI bus does. */
static void
msix_ctl(unsigned int at, uint8_t v)
{
	vdrv_cfg_write(&d, at + 3, v, 1);
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

	vdrv_init(&d, &fh, calloc(1, RAM_SIZE), RAM_BASE, RAM_SIZE);
	desc = vdrv_desc(&d, 0);
	used = vdrv_used(&d, 0);
	buf = vdrv_gmem(&d, BUF);

	d.dev = virtio_pci_new(&fh.host, virtio_rng_new(&fh.host));
	tap_ok(d.dev != NULL, "device made");
	pc = virtio_pci_device_ops.pci(d.dev);
	tap_ok(pci_config_get16(pc, PCI_VENDOR_ID) == 0x1af4 &&
	    pci_config_get16(pc, PCI_DEVICE_ID) == 0x1044 &&
	    pc->cfg[PCI_REVISION_ID] == 1, "modern virtio-rng IDs");
	for (at = pc->cfg[PCI_CAPABILITY_LIST]; at != 0;
	    at = pc->cfg[at + 1]) {
		if (pc->cfg[at] == PCI_CAP_ID_VNDR && pc->cfg[at + 4] == 0)
			types |= 1u << pc->cfg[at + 3];
	}
	TAP_EQ(types, 0x0e, "common, notify and ISR capabilities in BAR 0");
	TAP_EQ(vdrv_rd(&d, 0x12, 2), 1, "one queue");
	vdrv_wr(&d, 0x00, 1, 4);
	TAP_EQ(vdrv_rd(&d, 0x04, 4) & 1, 1, "VERSION_1 offered");

	TAP_EQ(bring_up(0) & VIRTIO_STATUS_FEATURES_OK, 0,
	    "FEATURES_OK refused without VERSION_1");
	TAP_EQ(bring_up(v1 | 1ULL << 40) & VIRTIO_STATUS_FEATURES_OK, 0,
	    "FEATURES_OK refused for features not offered");
	TAP_EQ(bring_up(v1), 0x0f, "driver OK");
	TAP_EQ(vdrv_rd(&d, 0x18, 2), QSIZE, "queue size reads back");

	desc[0] = (struct virtq_desc){ BUF, 64, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 0);
	tap_ok(used->idx == 1 && used->ring[0].len == 64 &&
	    memcmp(buf, zero, 64) != 0, "buffer filled with entropy");
	tap_ok(fh.irq[0] && fh.rises[0] == 1, "INTx raised");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_ISR, 1), 1, "ISR says: queue");
	tap_ok(!fh.irq[0], "reading ISR lowers the line");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_ISR, 1), 0, "and clears it");

	desc[0] = (struct virtq_desc){ BUF, 1u << 20, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 0);
	TAP_EQ(used->idx, 1, "a buffer outside RAM is not used");
	TAP_EQ(vdrv_rd(&d, 0x14, 1) & VIRTIO_STATUS_NEEDS_RESET,
	    VIRTIO_STATUS_NEEDS_RESET, "device asks for a reset");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_ISR, 1), 2,
	    "with a configuration interrupt");
	desc[0] = (struct virtq_desc){ BUF, 64, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 0);
	TAP_EQ(used->idx, 1, "a broken queue stays quiet");

	TAP_EQ(bring_up(v1), 0x0f, "after a reset, driver OK again");
	desc[0] = (struct virtq_desc){ BUF, 8, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 0);
	TAP_EQ(used->idx, 1, "and the queue works");
	vdrv_wr(&d, 0x18, 8, 2);
	TAP_EQ(vdrv_rd(&d, 0x18, 2), QSIZE, "queue size frozen while enabled");
	vdrv_wr(&d, VIRTIO_PCI_NOTIFY + 4 * 3, 0, 2);
	vdrv_wr(&d, 0x5000, 0, 4);
	vdrv_rd(&d, 0x3f, 1);
	tap_ok(used->idx == 1, "kicks at absent queues ignored");

	/* A driver that keeps offering: one kick, then 200 more buffers. */
	TAP_EQ(bring_up(v1), 0x0f, "driver OK for a driver that keeps adding");
	desc[0] = (struct virtq_desc){ BUF, 8, VIRTQ_DESC_F_WRITE, 0 };
	refill = 200;
	fh.on_guest_mem = refill_one;
	vdrv_offer(&d, 0, 0);
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
	vdrv_offer(&d, 0, 0);
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
	msix_ctl(at, 0x80);
	TAP_EQ(fh.route_calls, 0, "MSI-X on, every entry masked: no route");
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 0, 0xfee00000, 4);
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 4, 0, 4);
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 8, 0x41, 4);
	TAP_EQ(fh.route_calls, 0, "a masked entry's message: still none");
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 12, 0, 4);
	tap_ok(fh.route_calls == 1 && fh.route[0].on &&
	    fh.route[0].addr == 0xfee00000 && fh.route[0].data == 0x41,
	    "unmasked: the host is told vector 0's message");
	vdrv_wr(&d, 0x1a, 0, 2);
	TAP_EQ(vdrv_rd(&d, 0x1a, 2), 0, "queue vector 0 accepted");
	vdrv_wr(&d, 0x10, 7, 2);
	TAP_EQ(vdrv_rd(&d, 0x10, 2), 0xffff,
	    "vector 7 does not exist: NO_VECTOR");
	desc[0] = (struct virtq_desc){ BUF, 8, VIRTQ_DESC_F_WRITE, 0 };
	vdrv_offer(&d, 0, 0);
	tap_ok(fh.msis == 1 && fh.msi_vector == 0 &&
	    fh.msi_addr == 0xfee00000 && fh.msi_data == 0x41,
	    "queue interrupt sent as an MSI through vector 0");
	tap_ok(!fh.irq[0], "and not on INTx");
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 12, 1, 4);
	tap_ok(fh.route_calls == 2 && !fh.route[0].on,
	    "masked: the host drops vector 0's route");
	vdrv_offer(&d, 0, 0);
	TAP_EQ(fh.msis, 1, "masked vector: nothing sent");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_MSIX_PBA, 4), 1, "but pending");
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 12, 0, 4);
	tap_ok(fh.route_calls == 3 && fh.route[0].on,
	    "unmasked: routed again");
	TAP_EQ(fh.msis, 2, "sent when unmasked");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_MSIX_PBA, 4), 0, "no longer pending");

	/* Reprogrammed while unmasked: the route follows at once. */
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 8, 0x42, 4);
	tap_ok(fh.route_calls == 4 && fh.route[0].on &&
	    fh.route[0].data == 0x42, "retargeted: the route follows");
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 8, 0x42, 4);
	TAP_EQ(fh.route_calls, 4, "the same message again: no call");
	vdrv_offer(&d, 0, 0);
	tap_ok(fh.msis == 3 && fh.msi_data == 0x42, "sent with the new data");

	/* The function mask holds messages back without dropping routes. */
	msix_ctl(at, 0xc0);
	vdrv_offer(&d, 0, 0);
	tap_ok(fh.msis == 3 && vdrv_rd(&d, VIRTIO_PCI_MSIX_PBA, 4) == 1,
	    "function masked: pending, not sent");
	TAP_EQ(fh.route_calls, 4, "and the route stays");
	msix_ctl(at, 0x80);
	tap_ok(fh.msis == 4 && vdrv_rd(&d, VIRTIO_PCI_MSIX_PBA, 4) == 0,
	    "function unmasked: the pending message goes");

	/* MSI-X off: no vector sends any more; INTx again. */
	msix_ctl(at, 0);
	tap_ok(fh.route_calls == 5 && !fh.route[0].on,
	    "MSI-X disabled: the route goes");
	msix_ctl(at, 0x80);
	tap_ok(fh.route_calls == 6 && fh.route[0].on &&
	    fh.route[0].data == 0x42, "enabled again: routed again");

	virtio_pci_device_ops.free(d.dev);
	free(fh.mem);
	return tap_done();
}
