/*
 * A virtio PCI function's state (virtio-pci.c's "virtio-pci" section,
 * virtqueue.c's "virtq"), with virtio-rng behind it: a driven device
 * saved and loaded into a fresh one over the same guest RAM reads back
 * as the driver left it, is told its MSI-X route again, and serves the
 * next buffer at the saved index, interrupting through the saved
 * vector.  Damaged state is refused with the field named: an MSI-X
 * vector beyond the table, another device type, a read-only config
 * byte, queue rings away from where the transport has them or outside
 * guest RAM, a size not a power of two, indices beyond the ring, a
 * truncated or overlong state; a refused load leaves a device the
 * driver can set up again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"
#include "virtio-driver.h"
#include "virtio-pci.h"
#include "virtio-rng.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define BUF		(RAM_BASE + 0x10000)

static struct fake_host fh1 = FAKE_HOST_INITIALIZER(fh1);
static struct fake_host fh2 = FAKE_HOST_INITIALIZER(fh2);
static struct vdrv d1, d2;

/*
 * Overwrite size bytes of field name's value at byte off in a copy of
 * the sections in b (the format is dev-state.h's: namelen, name, type,
 * count, value): the copy, or NULL when the field is not there.
 */
static uint8_t *
patched(const struct dev_state_buf *b, const char *name, size_t off,
    uint64_t v, size_t size)
{
	size_t n = strlen(name);
	uint8_t *c = malloc(b->len);

	if (c == NULL)
		tap_bail("out of memory");
	memcpy(c, b->data, b->len);
	for (size_t i = 0; i + 1 + n + 5 + off + size <= b->len; i++)
		if (c[i] == n && memcmp(c + i + 1, name, n) == 0) {
			memcpy(c + i + 1 + n + 5 + off, &v, size);
			return c;
		}
	free(c);
	return NULL;
}

/* Load damaged state into a fresh function: the refusal's errno. */
static int
load_patched(const struct dev_state_buf *b, const char *name, size_t off,
    uint64_t v, size_t size, struct dev_state_error *e)
{
	void *dev = virtio_pci_new(&fh2.host, virtio_rng_new(&fh2.host));
	uint8_t *c = patched(b, name, off, v, size);
	int rc;

	if (dev == NULL || c == NULL)
		tap_bail("%s: no device or no such field", name);
	e->msg[0] = '\0';
	rc = virtio_pci_device_ops.load(dev, c, b->len, e);
	free(c);
	virtio_pci_free(dev);
	return rc;
}

static void
msix_on(const struct vdrv *d, uint32_t data)
{
	struct pci_config *pc = virtio_pci_device_ops.pci(d->dev);
	unsigned int at = 0;

	for (unsigned int c = pc->cfg[PCI_CAPABILITY_LIST]; c != 0;
	    c = pc->cfg[c + 1])
		if (pc->cfg[c] == PCI_CAP_ID_MSIX)
			at = c;
	vdrv_cfg_write(d, at + 3, 0x80, 1);
	vdrv_wr(d, VIRTIO_PCI_MSIX_TABLE + 0, 0xfee00000, 4);
	vdrv_wr(d, VIRTIO_PCI_MSIX_TABLE + 8, data, 4);
	vdrv_wr(d, VIRTIO_PCI_MSIX_TABLE + 12, 0, 4);
	vdrv_wr(d, 0x1a, 0, 2);			/* queue 0: vector 0 */
}

int
main(void)
{
	const uint64_t v1 = 1ULL << VIRTIO_F_VERSION_1;
	const uint64_t feats = v1;
	struct dev_state_buf b = { 0 }, b2 = { 0 };
	struct dev_state_error e = { "" };
	struct virtq_desc *desc;
	struct virtq_used *used;
	struct virtq_state qs;
	struct virtq vq;
	uint8_t *ram = calloc(1, RAM_SIZE);
	void *fresh;
	int rc;

	vdrv_init(&d1, &fh1, ram, RAM_BASE, RAM_SIZE);
	vdrv_init(&d2, &fh2, ram, RAM_BASE, RAM_SIZE);
	desc = vdrv_desc(&d1, 0);
	used = vdrv_used(&d1, 0);
	d1.dev = virtio_pci_new(&fh1.host, virtio_rng_new(&fh1.host));
	d2.dev = virtio_pci_new(&fh2.host, virtio_rng_new(&fh2.host));
	if (d1.dev == NULL || d2.dev == NULL)
		tap_bail("devices");

	TAP_EQ(vdrv_bring_up(&d1, feats, 1), 0x0f, "device 1: driver OK");
	msix_on(&d1, 0x41);
	desc[0] = (struct virtq_desc){ BUF, 16, VIRTQ_DESC_F_WRITE, 0 };
	for (int i = 0; i < 3; i++)
		vdrv_offer(&d1, 0, 0);
	tap_ok(used->idx == 3 && fh1.msis == 3, "three buffers served, "
	    "three MSIs (%u, %u)", used->idx, fh1.msis);

	rc = virtio_pci_device_ops.save(d1.dev, &b);
	tap_ok(rc == 0 && b.len > 0, "saved: %d, %zu bytes", rc, b.len);
	rc = virtio_pci_device_ops.load(d2.dev, b.data, b.len, &e);
	tap_ok(rc == 0, "loaded into a fresh function: %d %s", rc, e.msg);
	TAP_EQ(vdrv_rd(&d2, 0x14, 1), 0x0f, "status reads back");
	vdrv_wr(&d2, 0x16, 0, 2);
	tap_ok(vdrv_rd(&d2, 0x18, 2) == 16 && vdrv_rd(&d2, 0x1c, 2) == 1 &&
	    vdrv_rd(&d2, 0x1a, 2) == 0 &&
	    vdrv_rd(&d2, 0x20, 8) == vdrv_desc_gpa(&d1, 0) &&
	    vdrv_rd(&d2, 0x30, 8) == vdrv_used_gpa(&d1, 0),
	    "queue 0: size, enabled, vector and rings read back");
	vdrv_wr(&d2, 0x08, 1, 4);
	TAP_EQ(vdrv_rd(&d2, 0x0c, 4), 1, "the driver's features read back");
	tap_ok(fh2.route_calls == 1 && fh2.route[0].on &&
	    fh2.route[0].addr == 0xfee00000 && fh2.route[0].data == 0x41,
	    "the host is told vector 0's route again");
	TAP_EQ(vdrv_rd(&d2, VIRTIO_PCI_MSIX_TABLE + 8, 4), 0x41,
	    "the MSI-X table reads back");
	rc = virtio_pci_device_ops.save(d2.dev, &b2);
	tap_ok(rc == 0 && b2.len == b.len &&
	    memcmp(b.data, b2.data, b.len) == 0,
	    "saved again: the same %zu bytes", b2.len);

	vdrv_offer(&d2, 0, 0);
	tap_ok(used->idx == 4 && used->ring[3].len == 16,
	    "the next buffer is served at the saved index (%u)", used->idx);
	tap_ok(fh2.msis == 1 && fh2.msi_vector == 0 && fh2.msi_data == 0x41,
	    "interrupting through the saved vector");
	TAP_EQ(fh1.msis, 3, "and not through the old function");

	TAP_EQ(load_patched(&b, "queue.msix_vector", 0, 9, 2, &e), -EINVAL,
	    "a queue vector beyond the table: %s", e.msg);
	tap_ok(strstr(e.msg, "queue.msix_vector") != NULL, "named");
	TAP_EQ(load_patched(&b, "type", 0, 2, 2, &e), -EINVAL,
	    "another device type: %s", e.msg);
	TAP_EQ(load_patched(&b, "pci.cfg", 0, 0x1234, 2, &e), -EINVAL,
	    "another vendor in config space: %s", e.msg);
	TAP_EQ(load_patched(&b, "msix.pba", 0, 1u << 5, 4, &e), -EINVAL,
	    "a pending bit beyond the table: %s", e.msg);
	TAP_EQ(load_patched(&b, "desc", 0, RAM_BASE + 0x8000, 8, &e), -EINVAL,
	    "queue rings moved: %s", e.msg);
	TAP_EQ(load_patched(&b, "size", 0, 12, 2, &e), -EINVAL,
	    "a queue of 12 entries: %s", e.msg);
	TAP_EQ(load_patched(&b, "last_avail", 0, 3 + 17, 2, &e), -EINVAL,
	    "17 chains in flight on a ring of 16: %s", e.msg);
	TAP_EQ(load_patched(&b, "driver_features", 0, 1ULL << 40, 8, &e),
	    -EINVAL, "features never offered: %s", e.msg);
	fresh = virtio_pci_new(&fh2.host, virtio_rng_new(&fh2.host));
	rc = virtio_pci_device_ops.load(fresh, b.data, b.len - 1, &e);
	tap_ok(rc == -EBADMSG, "truncated: %d %s", rc, e.msg);
	dev_state_buf_free(&b2);
	b2 = b;
	b2.data = malloc(b.len + 1);
	memcpy(b2.data, b.data, b.len);
	b2.data[b.len] = 0;
	rc = virtio_pci_device_ops.load(fresh, b2.data, b.len + 1, &e);
	tap_ok(rc == -EBADMSG, "a byte too many: %d %s", rc, e.msg);
	free(b2.data);
	TAP_EQ(vdrv_rd(&d2, 0x14, 1), 0x0f, "(the loaded function is fine)");
	{
		struct vdrv d3 = d2;

		d3.dev = fresh;
		TAP_EQ(vdrv_bring_up(&d3, feats, 1), 0x0f,
		    "a refused load leaves a device the driver sets up");
	}
	virtio_pci_free(fresh);

	/*
	 * The queue alone, two chains in flight (popped, not yet used): it
	 * resumes past them, not at the used ring's index.
	 */
	{
		struct virtq_avail *av = vdrv_avail(&d1, 1);
		struct virtq_chain *ch = malloc(sizeof(*ch));

		memset(&vq, 0, sizeof(vq));
		qs = (struct virtq_state){ .desc = vdrv_desc_gpa(&d1, 1),
		    .avail = vdrv_avail_gpa(&d1, 1),
		    .used = vdrv_used_gpa(&d1, 1), .size = 16,
		    .enabled = true, .last_avail = 5, .used_idx = 3,
		    .flushed = 3, .signalled = 3 };
		vdrv_used(&d1, 1)->idx = 3;
		vdrv_desc(&d1, 1)[7] = (struct virtq_desc){ BUF, 8,
		    VIRTQ_DESC_F_WRITE, 0 };
		av->ring[5] = 7;
		av->idx = 6;
		e.msg[0] = '\0';
		rc = virtq_load_state(&vq, &fh2.host, &qs, 16, &e);
		tap_ok(rc == 0 && ch != NULL && virtq_pop(&vq, ch) == 1 &&
		    ch->head == 7 && vq.last_avail == 6 && vq.used_idx == 3,
		    "two chains in flight: the next pop is the sixth chain "
		    "(%d %s)", rc, e.msg);
		free(ch);
	}

	/* The queue alone: rings outside guest RAM. */
	memset(&vq, 0, sizeof(vq));
	qs = (struct virtq_state){ .desc = RAM_BASE + RAM_SIZE - 0x80,
	    .avail = RAM_BASE, .used = RAM_BASE + 0x1000, .size = 16,
	    .enabled = true };
	rc = virtq_load_state(&vq, &fh2.host, &qs, 16, &e);
	tap_ok(rc == -EINVAL && !vq.enabled,
	    "a descriptor table past the end of RAM: %s", e.msg);
	qs.desc = RAM_BASE + 0x2000;
	qs.size = 32;
	rc = virtq_load_state(&vq, &fh2.host, &qs, 16, &e);
	tap_ok(rc == -EINVAL, "32 entries on a device of 16: %s", e.msg);

	dev_state_buf_free(&b);
	virtio_pci_free(d1.dev);
	virtio_pci_free(d2.dev);
	free(ram);
	return tap_done();
}
