/*
 * virtio-vsock on the PCI transport with a recording backend in place
 * of the kernel's vhost-vsock: the guest's CID in the configuration,
 * SEQPACKET offered as the backend can, DRIVER_OK handing the backend
 * both data rings where the driver put them, guest memory, each
 * queue's doorbell (no longer the transport's) and MSI-X irqfd; a kick
 * by register write passed on; a vector masked and unmasked giving the
 * backend the new eventfd and the driver the interrupt it may have
 * missed; a driver without MSI-X, or a backend that fails, answered
 * with DEVICE_NEEDS_RESET; a reset stopping the backend and taking the
 * doorbells back; the transport reset event on the event queue.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"
#include "virtio-driver.h"
#include "virtio-pci.h"
#include "virtio-vsock.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define BUF		(RAM_BASE + 0x20000)
#define CID		42

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct vdrv d;

/* The backend: what the device asked of it. */
static struct {
	uint64_t features;
	int fail;			/* start's answer when non-zero */
	unsigned int starts, stops, set_calls;
	unsigned int kicks[VSOCK_BACKEND_QUEUES];
	struct vsock_backend_start last;
	int call[VSOCK_BACKEND_QUEUES];
} be_rec;

static uint64_t
be_features(void *ctx)
{
	return be_rec.features;
}

static uint64_t
be_cid(void *ctx)
{
	return CID;
}

static int
be_start(void *ctx, const struct vsock_backend_start *s)
{
	be_rec.starts++;
	if (be_rec.fail != 0)
		return be_rec.fail;
	be_rec.last = *s;
	for (unsigned int q = 0; q < VSOCK_BACKEND_QUEUES; q++)
		be_rec.call[q] = s->ring[q].call;
	return 0;
}

static int
be_set_call(void *ctx, unsigned int q, int fd)
{
	be_rec.set_calls++;
	be_rec.call[q] = fd;
	return 0;
}

static void
be_kick(void *ctx, unsigned int q)
{
	be_rec.kicks[q]++;
}

static int
be_stop(void *ctx, uint16_t next_avail[VSOCK_BACKEND_QUEUES])
{
	be_rec.stops++;
	return 0;
}

static const struct vsock_backend_ops be_ops = {
	.features = be_features,
	.cid = be_cid,
	.start = be_start,
	.set_call = be_set_call,
	.kick = be_kick,
	.stop = be_stop,
};

static unsigned int msix_at;

/* MSI-X on, vector v for queue q (0 and 1, and 2 for the events). */
static void
msix_setup(void)
{
	vdrv_cfg_write(&d, msix_at + 3, 0x80, 1);
	for (unsigned int v = 0; v < 3; v++) {
		vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v, 0xfee00000, 4);
		vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v + 4, 0, 4);
		vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v + 8, 0x40 + v, 4);
		vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v + 12, 0, 4);
	}
}

/* Reset, MSI-X, features, three queues with vectors 0-2, DRIVER_OK. */
static uint8_t
bring_up(bool msix, uint64_t features)
{
	vdrv_wr(&d, 0x14, 0, 1);		/* reset */
	if (msix)
		msix_setup();
	else
		vdrv_cfg_write(&d, msix_at + 3, 0, 1);
	memset(fh.mem, 0, RAM_SIZE);
	if (!vdrv_negotiate(&d, features))
		return (uint8_t)vdrv_rd(&d, 0x14, 1);
	for (unsigned int q = 0; q < 3; q++) {
		vdrv_wr(&d, 0x16, q, 2);
		vdrv_wr(&d, 0x1a, msix ? q : 0xffff, 2);
		vdrv_queue(&d, q, 16, vdrv_desc_gpa(&d, q),
		    vdrv_avail_gpa(&d, q), vdrv_used_gpa(&d, q));
	}
	return vdrv_driver_ok(&d);
}

static bool
handed(unsigned int q)
{
	for (unsigned int i = 0; i < fh.nbells; i++)
		if (fh.bell[i].id == q)
			return fh.bell[i].handed;
	return false;
}

int
main(void)
{
	const uint64_t v1 = 1ULL << VIRTIO_F_VERSION_1;
	const uint64_t seq = 1ULL << VIRTIO_VSOCK_F_SEQPACKET;
	struct vsock_backend be = { &be_ops, NULL };
	struct virtio_dev *vd;
	struct pci_config *pc;
	uint8_t *buf;
	unsigned int msis;

	vdrv_init(&d, &fh, calloc(1, RAM_SIZE), RAM_BASE, RAM_SIZE);
	buf = vdrv_gmem(&d, BUF);
	be_rec.features = seq | v1;
	vd = virtio_vsock_new(&fh.host, &be);
	d.dev = virtio_pci_new(&fh.host, vd);
	tap_ok(d.dev != NULL, "device made");
	pc = virtio_pci_device_ops.pci(d.dev);
	TAP_EQ(pci_config_get16(pc, PCI_DEVICE_ID), 0x1053,
	    "modern virtio-vsock device ID");
	for (unsigned int c = pc->cfg[PCI_CAPABILITY_LIST]; c != 0;
	    c = pc->cfg[c + 1])
		if (pc->cfg[c] == PCI_CAP_ID_MSIX)
			msix_at = c;
	tap_ok(msix_at != 0, "an MSI-X capability");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE, 8), CID,
	    "the configuration holds the guest's CID");
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE + 4, 4), 0, "as a le64");
	vdrv_wr(&d, 0x00, 0, 4);
	tap_ok(vdrv_rd(&d, 0x04, 4) & seq, "SEQPACKET offered: the backend "
	    "serves it");

	TAP_EQ(bring_up(true, v1 | seq), 0x0f, "driver OK with MSI-X");
	TAP_EQ(be_rec.starts, 1, "the backend started");
	tap_ok(be_rec.last.features == (v1 | seq), "with the driver's "
	    "features");
	tap_ok(be_rec.last.nmem == 1 && be_rec.last.mem[0].gpa == RAM_BASE &&
	    be_rec.last.mem[0].hva == fh.mem, "and guest memory as mapped");
	for (unsigned int q = 0; q < 2; q++) {
		const struct vsock_backend_ring *r = &be_rec.last.ring[q];

		tap_ok(r->size == 16 && r->desc == vdrv_desc(&d, q) &&
		    r->avail == (void *)vdrv_avail(&d, q) &&
		    r->used == (void *)vdrv_used(&d, q) &&
		    r->next_avail == 0, "queue %u: its rings where the "
		    "driver put them", q);
		tap_ok(r->kick == FAKE_HOST_BELL_FD(q) && handed(q),
		    "queue %u: its doorbell handed over", q);
		TAP_EQ(r->call, FAKE_HOST_MSI_FD(q),
		    "queue %u: its vector's irqfd", q);
	}
	tap_ok(!handed(2), "the event queue's doorbell stays the "
	    "transport's");
	TAP_EQ(vdrv_bell(&d, 0), 0, "a handed doorbell no longer reaches "
	    "the device");
	vdrv_kick(&d, 1);
	TAP_EQ(be_rec.kicks[1], 1, "a register kick is passed on");
	vdrv_kick(&d, 2);
	tap_ok(be_rec.kicks[0] == 0 && be_rec.kicks[1] == 1,
	    "event buffers wait in the device");

	/* Queue 1's vector masked, then unmasked. */
	msis = fh.msis;
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 + 12, 1, 4);
	tap_ok(be_rec.call[1] == -1 && be_rec.call[0] == FAKE_HOST_MSI_FD(0),
	    "vector 1 masked: the backend loses queue 1's irqfd only");
	vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 + 12, 0, 4);
	TAP_EQ(be_rec.call[1], FAKE_HOST_MSI_FD(1), "unmasked: it is back");
	tap_ok(fh.msis == msis + 1 && fh.msi_vector == 1,
	    "and the interrupt it may have missed is raised");

	/* The transport reset event. */
	TAP_EQ(virtio_vsock_transport_reset(vd), -ENOSPC,
	    "an event with no buffer: -ENOSPC");
	vdrv_desc(&d, 2)[0] = (struct virtq_desc){ BUF, 8,
	    VIRTQ_DESC_F_WRITE, 0 };
	memset(buf, 0xff, 8);
	vdrv_offer(&d, 2, 0);
	msis = fh.msis;
	TAP_EQ(virtio_vsock_transport_reset(vd), 0,
	    "a transport reset event");
	tap_ok(vdrv_used(&d, 2)->idx == 1 && vdrv_used(&d, 2)->ring[0].len ==
	    4 && buf[0] == 0 && buf[1] == 0 && buf[2] == 0 && buf[3] == 0 &&
	    buf[4] == 0xff, "goes to the driver as a le32 0, 4 bytes");
	tap_ok(fh.msis == msis + 1 && fh.msi_vector == 2,
	    "through the event queue's vector");

	/* Reset. */
	vdrv_wr(&d, 0x14, 0, 1);
	tap_ok(be_rec.stops == 1 && !handed(0) && !handed(1),
	    "a reset stops the backend and takes the doorbells back");
	TAP_EQ(vdrv_bell(&d, 0), 1, "which reach the device again");

	/* No MSI-X, then a backend that fails. */
	TAP_EQ(bring_up(false, v1) & 0x40, 0x40,
	    "without MSI-X: DEVICE_NEEDS_RESET");
	tap_ok(be_rec.starts == 1 && !handed(0) && !handed(1),
	    "and the backend never started");
	be_rec.fail = -EIO;
	TAP_EQ(bring_up(true, v1) & 0x40, 0x40,
	    "a backend that cannot start: DEVICE_NEEDS_RESET");
	tap_ok(!handed(0) && !handed(1), "its doorbells taken back");
	be_rec.fail = 0;
	TAP_EQ(bring_up(true, v1), 0x0f, "a reset, and it starts");
	TAP_EQ(be_rec.starts, 3, "the backend too");

	/* Saved and loaded into a fresh function: the backend afresh. */
	{
		struct dev_state_buf sb = { 0 };
		struct dev_state_error e = { "" };
		void *dev2;
		int rc;

		vdrv_desc(&d, 2)[0] = (struct virtq_desc){ BUF, 8,
		    VIRTQ_DESC_F_WRITE, 0 };
		memset(buf, 0xff, 8);
		vdrv_offer(&d, 2, 0);
		TAP_EQ(virtio_pci_device_ops.save(d.dev, &sb), 0, "saved");
		dev2 = virtio_pci_new(&fh.host, virtio_vsock_new(&fh.host,
		    &be));
		msis = fh.msis;
		rc = virtio_pci_device_ops.load(dev2, sb.data, sb.len, &e);
		TAP_EQ(rc, 0, "loaded into a fresh function %s", e.msg);
		tap_ok(be_rec.starts == 4 && be_rec.last.ring[0].size == 16,
		    "its backend starts again on the saved queues");
		tap_ok(vdrv_used(&d, 2)->idx == 1 && buf[0] == 0 &&
		    fh.msis == msis + 1 && fh.msi_vector == 2,
		    "and the guest is told with a TRANSPORT_RESET event");
		virtio_pci_device_ops.free(dev2);
		dev_state_buf_free(&sb);
	}

	virtio_pci_device_ops.free(d.dev);
	tap_ok(be_rec.stops >= 2, "freeing the device stops the backend");
	free(fh.mem);
	return tap_done();
}
