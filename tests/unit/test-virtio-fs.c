/*
 * virtio-fs on the PCI transport with a recording backend in place of
 * the vhost-user front end: the tag and one request queue in the
 * configuration; DRIVER_OK handing the backend both queues (high
 * priority and requests) where the driver put them, guest memory, each
 * queue's doorbell (no longer the transport's) and MSI-X irqfd; a kick
 * by register write passed on; a driver without MSI-X, or a backend
 * that fails, answered with DEVICE_NEEDS_RESET; a reset stopping the
 * backend and taking the doorbells back; no snapshot of a share.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"
#include "virtio-driver.h"
#include "virtio-fs.h"
#include "virtio-pci.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define TAG		"hostshare"
#define BUF		(RAM_BASE + 0x20000)

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct vdrv d;

static struct {
	uint64_t features;
	int fail;
	unsigned int starts, stops;
	unsigned int kicks[VHOST_BACKEND_QUEUES];
	struct vhost_backend_start last;
} be_rec;

static uint64_t
be_features(void *ctx)
{
	return be_rec.features;
}

static int
be_start(void *ctx, const struct vhost_backend_start *s)
{
	be_rec.starts++;
	if (be_rec.fail != 0)
		return be_rec.fail;
	be_rec.last = *s;
	return 0;
}

static int
be_set_call(void *ctx, unsigned int q, int fd)
{
	return 0;
}

static void
be_kick(void *ctx, unsigned int q)
{
	be_rec.kicks[q]++;
}

static int
be_stop(void *ctx, uint16_t next_avail[VHOST_BACKEND_QUEUES])
{
	be_rec.stops++;
	return 0;
}

static const struct vhost_backend_ops be_ops = {
	.features = be_features,
	.start = be_start,
	.set_call = be_set_call,
	.kick = be_kick,
	.stop = be_stop,
};

static unsigned int msix_at;

static uint8_t
bring_up(bool msix, uint64_t features)
{
	vdrv_wr(&d, 0x14, 0, 1);		/* reset */
	if (msix) {
		vdrv_cfg_write(&d, msix_at + 3, 0x80, 1);
		for (unsigned int v = 0; v < 2; v++) {
			vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v,
			    0xfee00000, 4);
			vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v + 4, 0, 4);
			vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v + 8,
			    0x40 + v, 4);
			vdrv_wr(&d, VIRTIO_PCI_MSIX_TABLE + 16 * v + 12, 0, 4);
		}
	} else {
		vdrv_cfg_write(&d, msix_at + 3, 0, 1);
	}
	memset(fh.mem, 0, RAM_SIZE);
	if (!vdrv_negotiate(&d, features))
		return (uint8_t)vdrv_rd(&d, 0x14, 1);
	for (unsigned int q = 0; q < 2; q++) {
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
	struct vhost_backend be = { &be_ops, NULL };
	char tag[VIRTIO_FS_TAG_MAX + 2];
	struct pci_config *pc;
	struct dev_state_buf sb = { 0 };
	struct virtio_dev *vd;

	vdrv_init(&d, &fh, calloc(1, RAM_SIZE), RAM_BASE, RAM_SIZE);
	be_rec.features = v1 | 1ULL << VIRTIO_F_EVENT_IDX;
	tap_ok(virtio_fs_new(&fh.host, "", &be) == NULL, "an empty tag "
	    "is refused");
	memset(tag, 'x', sizeof(tag) - 1);
	tag[sizeof(tag) - 1] = '\0';
	tap_ok(virtio_fs_new(&fh.host, tag, &be) == NULL, "a 37-byte tag "
	    "is refused");
	vd = virtio_fs_new(&fh.host, TAG, &be);
	d.dev = virtio_pci_new(&fh.host, vd);
	tap_ok(d.dev != NULL, "device made");
	pc = virtio_pci_device_ops.pci(d.dev);
	TAP_EQ(pci_config_get16(pc, PCI_DEVICE_ID), 0x1040 + VIRTIO_FS_ID,
	    "modern virtio-fs device ID");
	for (unsigned int c = pc->cfg[PCI_CAPABILITY_LIST]; c != 0;
	    c = pc->cfg[c + 1])
		if (pc->cfg[c] == PCI_CAP_ID_MSIX)
			msix_at = c;
	tap_ok(msix_at != 0, "an MSI-X capability");
	for (unsigned int i = 0; i < VIRTIO_FS_TAG_MAX; i++)
		tag[i] = (char)vdrv_rd(&d, VIRTIO_PCI_DEVICE + i, 1);
	tag[VIRTIO_FS_TAG_MAX] = '\0';
	tap_ok(strcmp(tag, TAG) == 0, "the configuration holds the tag, "
	    "NUL-padded (%s)", tag);
	TAP_EQ(vdrv_rd(&d, VIRTIO_PCI_DEVICE + VIRTIO_FS_TAG_MAX, 4), 1,
	    "one request queue");

	TAP_EQ(bring_up(true, v1), 0x0f, "driver OK with MSI-X");
	TAP_EQ(be_rec.starts, 1, "the backend started");
	tap_ok(be_rec.last.nrings == 2 && be_rec.last.features == v1,
	    "two rings, with the driver's features");
	tap_ok(be_rec.last.nmem == 1 && be_rec.last.mem[0].gpa == RAM_BASE &&
	    be_rec.last.mem[0].hva == fh.mem, "and guest memory as mapped");
	for (unsigned int q = 0; q < 2; q++) {
		const struct vhost_backend_ring *r = &be_rec.last.ring[q];

		tap_ok(r->size == 16 && r->desc == vdrv_desc(&d, q) &&
		    r->avail == (void *)vdrv_avail(&d, q) &&
		    r->used == (void *)vdrv_used(&d, q),
		    "queue %u: its rings where the driver put them", q);
		tap_ok(r->kick == FAKE_HOST_BELL_FD(q) && handed(q),
		    "queue %u: its doorbell handed over", q);
		TAP_EQ(r->call, FAKE_HOST_MSI_FD(q),
		    "queue %u: its vector's irqfd", q);
	}
	tap_ok(virtio_fs_started(vd), "started");
	vdrv_kick(&d, 1);
	TAP_EQ(be_rec.kicks[1], 1, "a register kick is passed on");
	TAP_EQ(virtio_pci_device_ops.save(d.dev, &sb), -ENOTSUP,
	    "a share cannot be saved");
	dev_state_buf_free(&sb);

	vdrv_wr(&d, 0x14, 0, 1);
	tap_ok(be_rec.stops == 1 && !handed(0) && !handed(1),
	    "a reset stops the backend and takes the doorbells back");
	tap_ok(!virtio_fs_started(vd), "not started after the reset");

	TAP_EQ(bring_up(false, v1) & 0x40, 0x40,
	    "without MSI-X: DEVICE_NEEDS_RESET");
	be_rec.fail = -EIO;
	TAP_EQ(bring_up(true, v1) & 0x40, 0x40,
	    "a backend that fails: DEVICE_NEEDS_RESET");
	tap_ok(!handed(0) && !handed(1), "and the doorbells are back");

	/*
	 * The backend goes while it serves: it finished request 0 (the
	 * used ring says so), request 1 waits.  The device answers it,
	 * and the next, with ENOTCONN.
	 */
	be_rec.fail = 0;
	TAP_EQ(bring_up(true, v1), 0x0f, "started again");
	{
		struct virtq_desc *desc = vdrv_desc(&d, 1);
		uint8_t *in = vdrv_gmem(&d, BUF), *out = vdrv_gmem(&d,
		    BUF + 0x100);
		struct virtq_used *used = vdrv_used(&d, 1);
		uint64_t unique = 0x1122334455667788ULL;
		int32_t err;

		memset(in, 0, 64);
		memcpy(in + 8, &unique, 8);
		desc[2] = (struct virtq_desc){ BUF, 40, VIRTQ_DESC_F_NEXT, 3 };
		desc[3] = (struct virtq_desc){ BUF + 0x100, 64,
		    VIRTQ_DESC_F_WRITE, 0 };
		desc[0] = desc[2];
		desc[0].next = 1;
		desc[1] = desc[3];
		vdrv_add(&d, 1, 0);
		vdrv_add(&d, 1, 2);
		/* The backend took both, answered the first. */
		used->ring[0] = (struct virtq_used_elem){ 0, 16 };
		used->idx = 1;
		virtio_fs_backend_gone(vd);
		memcpy(&err, out + 4, 4);
		tap_ok(used->idx == 2 && used->ring[1].id == 2 &&
		    used->ring[1].len == 16 && err == -VIRTIO_FS_ENOTCONN &&
		    memcmp(out + 8, &unique, 8) == 0,
		    "the backend gone: the request it left is answered "
		    "ENOTCONN, with its unique (used %u, error %d)",
		    used->idx, err);
		tap_ok(!handed(0) && !handed(1) && !virtio_fs_started(vd),
		    "the doorbells are the device's again");
		memset(out, 0, 16);
		vdrv_offer(&d, 1, 0);
		memcpy(&err, out + 4, 4);
		tap_ok(used->idx == 3 && err == -VIRTIO_FS_ENOTCONN,
		    "so is the next request");
		TAP_EQ(bring_up(true, v1), 0x0f, "after a reset the driver "
		    "starts it again");
		TAP_EQ(be_rec.starts, 3, "without the backend");
	}
	virtio_pci_device_ops.free(d.dev);
	free(fh.mem);
	return tap_done();
}
