/* See virtio-driver.h. */
#include <string.h>
#include <unistd.h>

#include "pci-config.h"
#include "virtio-driver.h"
#include "virtio-pci.h"

/* Common configuration registers (4.1.4.3). */
#define CC_DFSELECT	0x08
#define CC_DF		0x0c
#define CC_STATUS	0x14
#define CC_QSELECT	0x16
#define CC_QSIZE	0x18
#define CC_QENABLE	0x1c
#define CC_QDESC	0x20
#define CC_QAVAIL	0x28
#define CC_QUSED	0x30

void
vdrv_init(struct vdrv *d, struct fake_host *fh, void *ram, uint64_t base,
    size_t size)
{
	fh->mem = ram;
	fh->mem_base = base;
	fh->mem_size = size;
	*d = (struct vdrv){ .fh = fh, .rings = base, .qsize = 16 };
}

void *
vdrv_gmem(const struct vdrv *d, uint64_t gpa)
{
	return d->fh->mem + (gpa - d->fh->mem_base);
}

uint64_t
vdrv_desc_gpa(const struct vdrv *d, unsigned int q)
{
	return d->rings + (uint64_t)VDRV_QUEUE_STRIDE * q;
}

uint64_t
vdrv_avail_gpa(const struct vdrv *d, unsigned int q)
{
	return vdrv_desc_gpa(d, q) + VDRV_AVAIL_OFF;
}

uint64_t
vdrv_used_gpa(const struct vdrv *d, unsigned int q)
{
	return vdrv_desc_gpa(d, q) + VDRV_USED_OFF;
}

struct virtq_desc *
vdrv_desc(const struct vdrv *d, unsigned int q)
{
	return vdrv_gmem(d, vdrv_desc_gpa(d, q));
}

struct virtq_avail *
vdrv_avail(const struct vdrv *d, unsigned int q)
{
	return vdrv_gmem(d, vdrv_avail_gpa(d, q));
}

struct virtq_used *
vdrv_used(const struct vdrv *d, unsigned int q)
{
	return vdrv_gmem(d, vdrv_used_gpa(d, q));
}

uint16_t *
vdrv_used_event(const struct vdrv *d, unsigned int q)
{
	return &vdrv_avail(d, q)->ring[d->qsize];
}

uint16_t *
vdrv_avail_event(const struct vdrv *d, unsigned int q)
{
	return (uint16_t *)&vdrv_used(d, q)->ring[d->qsize];
}

uint64_t
vdrv_rd(const struct vdrv *d, uint32_t off, unsigned int size)
{
	uint64_t v = 0;

	pthread_mutex_lock(&d->fh->lock);
	virtio_pci_device_ops.read(d->dev, PCI_BAR_OFFSET(VIRTIO_PCI_BAR) +
	    off, &v, size);
	pthread_mutex_unlock(&d->fh->lock);
	return v;
}

void
vdrv_wr(const struct vdrv *d, uint32_t off, uint64_t v, unsigned int size)
{
	pthread_mutex_lock(&d->fh->lock);
	virtio_pci_device_ops.write(d->dev, PCI_BAR_OFFSET(VIRTIO_PCI_BAR) +
	    off, &v, size);
	pthread_mutex_unlock(&d->fh->lock);
}

void
vdrv_cfg_write(const struct vdrv *d, unsigned int off, uint64_t v,
    unsigned int size)
{
	pthread_mutex_lock(&d->fh->lock);
	pci_config_write(virtio_pci_device_ops.pci(d->dev), off, &v, size);
	virtio_pci_device_ops.pci_written(d->dev, off, size);
	pthread_mutex_unlock(&d->fh->lock);
}

bool
vdrv_negotiate(const struct vdrv *d, uint64_t features)
{
	const uint8_t s = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;

	vdrv_wr(d, CC_STATUS, 0, 1);
	vdrv_wr(d, CC_STATUS, s, 1);
	vdrv_wr(d, CC_DFSELECT, 0, 4);
	vdrv_wr(d, CC_DF, (uint32_t)features, 4);
	vdrv_wr(d, CC_DFSELECT, 1, 4);
	vdrv_wr(d, CC_DF, (uint32_t)(features >> 32), 4);
	vdrv_wr(d, CC_STATUS, s | VIRTIO_STATUS_FEATURES_OK, 1);
	return (vdrv_rd(d, CC_STATUS, 1) & VIRTIO_STATUS_FEATURES_OK) != 0;
}

void
vdrv_queue(const struct vdrv *d, unsigned int q, unsigned int size,
    uint64_t desc, uint64_t avail, uint64_t used)
{
	vdrv_wr(d, CC_QSELECT, q, 2);
	vdrv_wr(d, CC_QSIZE, size, 2);
	vdrv_wr(d, CC_QDESC, (uint32_t)desc, 4);
	vdrv_wr(d, CC_QDESC + 4, desc >> 32, 4);
	vdrv_wr(d, CC_QAVAIL, avail, 8);
	vdrv_wr(d, CC_QUSED, used, 8);
	vdrv_wr(d, CC_QENABLE, 1, 2);
}

uint8_t
vdrv_driver_ok(const struct vdrv *d)
{
	vdrv_wr(d, CC_STATUS, VIRTIO_STATUS_ACKNOWLEDGE |
	    VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK |
	    VIRTIO_STATUS_DRIVER_OK, 1);
	return (uint8_t)vdrv_rd(d, CC_STATUS, 1);
}

uint8_t
vdrv_bring_up(const struct vdrv *d, uint64_t features, unsigned int nq)
{
	memset(d->fh->mem, 0, d->fh->mem_size);
	if (!vdrv_negotiate(d, features))
		return (uint8_t)vdrv_rd(d, CC_STATUS, 1);
	for (unsigned int q = 0; q < nq; q++)
		vdrv_queue(d, q, d->qsize, vdrv_desc_gpa(d, q),
		    vdrv_avail_gpa(d, q), vdrv_used_gpa(d, q));
	return vdrv_driver_ok(d);
}

void
vdrv_add(const struct vdrv *d, unsigned int q, uint16_t head)
{
	struct virtq_avail *a = vdrv_avail(d, q);

	a->ring[a->idx % d->qsize] = head;
	a->idx++;
}

void
vdrv_kick(const struct vdrv *d, unsigned int q)
{
	vdrv_wr(d, VIRTIO_PCI_NOTIFY + VIRTIO_PCI_NOTIFY_MULT * q, q, 2);
}

void
vdrv_offer(const struct vdrv *d, unsigned int q, uint16_t head)
{
	vdrv_add(d, q, head);
	vdrv_kick(d, q);
}

unsigned int
vdrv_bell(const struct vdrv *d, unsigned int q)
{
	struct fake_host *fh = d->fh;
	unsigned int rung = 0;

	for (unsigned int i = 0; i < fh->nbells; i++) {
		/* A handed doorbell is a kernel backend's to read. */
		if (fh->bell[i].id != q || fh->bell[i].handed)
			continue;
		pthread_mutex_lock(&fh->lock);
		fh->bell[i].fn(fh->bell[i].dev, q);
		pthread_mutex_unlock(&fh->lock);
		rung++;
	}
	return rung;
}

bool
vdrv_wait_used(const struct vdrv *d, unsigned int q, uint16_t idx, int ms)
{
	volatile struct virtq_used *u = vdrv_used(d, q);
	bool there;

	for (int i = 0; i <= ms; i++) {
		pthread_mutex_lock(&d->fh->lock);
		there = u->idx == idx;
		pthread_mutex_unlock(&d->fh->lock);
		if (there)
			return true;
		usleep(1000);
	}
	return false;
}
