/* See virtio-pci.h; section numbers are Virtio 1.2's. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pci-config.h"
#include "virtio-pci.h"

/* Configuration structure types of the vendor capabilities (4.1.4). */
#define VIRTIO_PCI_CAP_COMMON_CFG	1
#define VIRTIO_PCI_CAP_NOTIFY_CFG	2
#define VIRTIO_PCI_CAP_ISR_CFG		3
#define VIRTIO_PCI_CAP_DEVICE_CFG	4

#define VIRTIO_PCI_COMMON_SIZE		0x38
#define VIRTIO_PCI_NO_VECTOR		0xffff

/* Common configuration registers (4.1.4.3). */
#define VPC_DFSELECT		0x00
#define VPC_DF			0x04
#define VPC_GFSELECT		0x08
#define VPC_GF			0x0c
#define VPC_MSIX_CONFIG		0x10
#define VPC_NUM_QUEUES		0x12
#define VPC_STATUS		0x14
#define VPC_GENERATION		0x15
#define VPC_Q_SELECT		0x16
#define VPC_Q_SIZE		0x18
#define VPC_Q_MSIX		0x1a
#define VPC_Q_ENABLE		0x1c
#define VPC_Q_NOTIFY_OFF	0x1e
#define VPC_Q_DESC		0x20
#define VPC_Q_AVAIL		0x28
#define VPC_Q_USED		0x30

/* A queue as the driver sets it up; enabled: the device's vq[]. */
struct virtio_pci_queue {
	uint16_t size;
	uint64_t desc, avail, used;
	uint16_t msix_vector;
};

struct virtio_pci {
	struct pci_config pc;
	struct virtio_dev *dev;		/* the device it drives */
	const struct device_host *host;
	uint32_t dfselect, gfselect;
	uint8_t status;
	bool resetting;			/* held back by the device's quiesce */
	uint8_t generation;
	uint16_t qselect;
	uint8_t isr;
	bool intx;			/* the interrupt is pending */
	bool intx_raised;		/* ... and the line is up */
	uint16_t config_msix_vector;
	/* MSI-X: the capability's offset, the table and pending bits. */
	unsigned int msix_cap;
	unsigned int nvectors;
	struct {
		uint32_t addr_lo, addr_hi, data, ctrl;
	} msix[VIRTIO_PCI_MSIX_MAX];
	uint32_t pba;
	/* What the host was last told each vector sends (msi_route). */
	struct {
		bool on;
		uint64_t addr;
		uint32_t data;
	} routed[VIRTIO_PCI_MSIX_MAX];
	struct virtio_pci_queue qcfg[VIRTIO_PCI_MAX_QUEUES];
	unsigned int doorbells;		/* queues notified through the host */
	/* Diagnostics. */
	uint64_t kicks;
	uint64_t doorbell_kicks;	/* ... of which through a doorbell */
	uint64_t interrupts;
	uint64_t msi_pending;		/* sent late: the vector was masked */
	uint64_t route_changes;		/* msi_route() calls */
	uint64_t bad_accesses;
};

static int
virtio_pci_add_cap(struct virtio_pci *vp, uint8_t type, uint32_t offset,
    uint32_t length, unsigned int len)
{
	int at = pci_config_add_cap(&vp->pc, PCI_CAP_ID_VNDR, len);

	if (at < 0)
		return at;
	vp->pc.cfg[at + 2] = (uint8_t)len;
	vp->pc.cfg[at + 3] = type;
	vp->pc.cfg[at + 4] = VIRTIO_PCI_BAR;
	pci_config_set32(&vp->pc, (unsigned int)at + 8, offset);
	pci_config_set32(&vp->pc, (unsigned int)at + 12, length);
	return at;
}

static void
virtio_pci_reset_queues(struct virtio_pci *vp)
{
	unsigned int q;

	for (q = 0; q < VIRTIO_PCI_MAX_QUEUES; q++) {
		vp->qcfg[q] = (struct virtio_pci_queue){
			.size = q < vp->dev->ops->nqueues ?
			    vp->dev->ops->queue_max : 0,
			.msix_vector = VIRTIO_PCI_NO_VECTOR,
		};
	}
}

/* The driver notified queue q (4.1.4.4): a register write or a doorbell. */
static void
virtio_pci_kick(struct virtio_pci *vp, unsigned int q)
{
	if (q >= vp->dev->ops->nqueues || !vp->dev->vq[q].enabled ||
	    !(vp->status & VIRTIO_STATUS_DRIVER_OK) || vp->resetting) {
		vp->bad_accesses++;
		return;
	}
	vp->kicks++;
	vp->dev->ops->notify(vp->dev, q);
}

static void
virtio_pci_doorbell(void *dev, unsigned int q)
{
	struct virtio_pci *vp = dev;

	vp->doorbell_kicks++;
	virtio_pci_kick(vp, q);
}

/* The PCI class lspci shows for a device type (5). */
static uint32_t
virtio_pci_class(uint16_t type)
{
	switch (type) {
	case 1:
		return 0x020000;	/* Ethernet controller */
	case 2:
		return 0x010000;	/* mass storage, SCSI-like */
	default:
		return 0x00ff00;	/* unclassified, as virtio-rng */
	}
}

static const struct virtio_transport_ops virtio_pci_transport_ops;

/*
 * Describe the function for device d and take d (d->transport): 0 or
 * -EINVAL for a device it cannot carry (too many queues, too large a
 * configuration for its page of the BAR).
 */
static int
virtio_pci_init(struct virtio_pci *vp, const struct device_host *host,
    struct virtio_dev *d)
{
	const struct virtio_dev_ops *ops = d->ops;
	struct pci_ids ids = {
		.vendor = 0x1af4,
		.device = (uint16_t)(0x1040 + ops->type),
		.class_code = virtio_pci_class(ops->type),
		.revision = 1,		/* modern only (4.1.2.1) */
		.subsys_vendor = 0x1af4,
		.subsys = ops->type,
		.int_pin = 1,
	};
	int at;

	if (ops->nqueues > VIRTIO_PCI_MAX_QUEUES ||
	    ops->config_size > VIRTIO_PCI_NOTIFY - VIRTIO_PCI_DEVICE)
		return -EINVAL;
	memset(vp, 0, sizeof(*vp));
	vp->dev = d;
	vp->host = host;
	vp->config_msix_vector = VIRTIO_PCI_NO_VECTOR;
	pci_config_init(&vp->pc, &ids);
	if (pci_config_add_bar(&vp->pc, VIRTIO_PCI_BAR, PCI_BAR_MEM32,
	    VIRTIO_PCI_BAR_SIZE) < 0 ||
	    virtio_pci_add_cap(vp, VIRTIO_PCI_CAP_COMMON_CFG,
	    VIRTIO_PCI_COMMON, VIRTIO_PCI_COMMON_SIZE, 16) < 0 ||
	    virtio_pci_add_cap(vp, VIRTIO_PCI_CAP_ISR_CFG, VIRTIO_PCI_ISR,
	    1, 16) < 0)
		return -EINVAL;
	if (ops->config_size > 0 &&
	    virtio_pci_add_cap(vp, VIRTIO_PCI_CAP_DEVICE_CFG,
	    VIRTIO_PCI_DEVICE, ops->config_size, 16) < 0)
		return -EINVAL;
	/* MSI-X (6.8.2): table and PBA in the same BAR. */
	vp->nvectors = ops->nqueues + 1;
	at = pci_config_add_cap(&vp->pc, PCI_CAP_ID_MSIX, 12);
	if (at < 0)
		return -EINVAL;
	vp->msix_cap = (unsigned int)at;
	pci_config_set16(&vp->pc, (unsigned int)at + 2,
	    (uint16_t)(vp->nvectors - 1));
	vp->pc.wmask[at + 3] = 0xc0;	/* MSI-X Enable, Function Mask */
	pci_config_set32(&vp->pc, (unsigned int)at + 4,
	    VIRTIO_PCI_MSIX_TABLE | VIRTIO_PCI_BAR);
	pci_config_set32(&vp->pc, (unsigned int)at + 8,
	    VIRTIO_PCI_MSIX_PBA | VIRTIO_PCI_BAR);
	for (unsigned int v = 0; v < vp->nvectors; v++)
		vp->msix[v].ctrl = 1;	/* masked at reset (6.8.2.9) */
	at = virtio_pci_add_cap(vp, VIRTIO_PCI_CAP_NOTIFY_CFG,
	    VIRTIO_PCI_NOTIFY, VIRTIO_PCI_NOTIFY_MULT * ops->nqueues, 20);
	if (at < 0)
		return -EINVAL;
	pci_config_set32(&vp->pc, (unsigned int)at + 16,
	    VIRTIO_PCI_NOTIFY_MULT);
	virtio_pci_reset_queues(vp);
	/*
	 * Doorbells where the host has them: Linux notifies with a 16-bit
	 * write (vp_notify()), which then never leaves the kernel.
	 */
	for (unsigned int q = 0; q < ops->nqueues; q++)
		if (device_doorbell(host, VIRTIO_PCI_BAR, VIRTIO_PCI_NOTIFY +
		    VIRTIO_PCI_NOTIFY_MULT * q, 2, virtio_pci_doorbell, vp,
		    q) == 0)
			vp->doorbells++;
	d->transport = (struct virtio_transport){
		&virtio_pci_transport_ops, vp
	};
	return 0;
}

static uint64_t
virtio_pci_offered(const struct virtio_pci *vp)
{
	return vp->dev->features | 1ULL << VIRTIO_F_VERSION_1 |
	    1ULL << VIRTIO_F_INDIRECT_DESC | 1ULL << VIRTIO_F_EVENT_IDX;
}

/*
 * The INTx pending state; the line follows it unless the driver set
 * Interrupt Disable (6.2.2), and only changes are reported: the line
 * may be shared.
 */
static void
virtio_pci_set_intx(struct virtio_pci *vp, bool level)
{
	bool up = level && !(pci_config_get16(&vp->pc, PCI_COMMAND) &
	    PCI_COMMAND_INTX_DISABLE);

	vp->intx = level;
	pci_config_set_intx(&vp->pc, level);
	if (up != vp->intx_raised) {
		vp->intx_raised = up;
		device_irq_set(vp->host, 0, up);
	}
}

static bool
virtio_pci_msix_on(const struct virtio_pci *vp)
{
	return vp->pc.cfg[vp->msix_cap + 3] & 0x80;
}

static bool
virtio_pci_function_masked(const struct virtio_pci *vp)
{
	return vp->pc.cfg[vp->msix_cap + 3] & 0x40;
}

static uint64_t
virtio_pci_msix_addr(const struct virtio_pci *vp, unsigned int v)
{
	return (uint64_t)vp->msix[v].addr_hi << 32 | vp->msix[v].addr_lo;
}

static void
virtio_pci_msix_send(struct virtio_pci *vp, unsigned int v)
{
	vp->interrupts++;
	device_msi(vp->host, v, virtio_pci_msix_addr(vp, v), vp->msix[v].data);
}

/* A queue's interrupt may have moved: tell a device that cares. */
static void
virtio_pci_vectors_changed(struct virtio_pci *vp)
{
	if (vp->dev->driver_ok && vp->dev->ops->vectors_changed != NULL)
		vp->dev->ops->vectors_changed(vp->dev);
}

/*
 * Vector v's table entry, MSI-X enable or the function mask may have
 * changed: tell the host what v sends now (a message while MSI-X is on
 * and the entry unmasked; the function mask only holds messages back),
 * and send what was pending if v may send again (6.8.2.9).
 */
static void
virtio_pci_msix_sync(struct virtio_pci *vp, unsigned int v)
{
	bool on = virtio_pci_msix_on(vp) && !(vp->msix[v].ctrl & 1);
	uint64_t addr = virtio_pci_msix_addr(vp, v);
	uint32_t data = vp->msix[v].data;

	if (on != vp->routed[v].on || (on && (addr != vp->routed[v].addr ||
	    data != vp->routed[v].data))) {
		vp->routed[v].on = on;
		vp->routed[v].addr = addr;
		vp->routed[v].data = data;
		vp->route_changes++;
		device_msi_route(vp->host, v, on, addr, data);
		virtio_pci_vectors_changed(vp);
	}
	if (on && !virtio_pci_function_masked(vp) && (vp->pba & (1u << v))) {
		vp->pba &= ~(1u << v);
		vp->msi_pending++;
		virtio_pci_msix_send(vp, v);
	}
}

static void
virtio_pci_config_written(void *dev, unsigned int offset, unsigned int size)
{
	struct virtio_pci *vp = dev;
	unsigned int v;

	/* Only the message control's upper byte is writable (6.8.2.3). */
	if (offset > vp->msix_cap + 3 || offset + size <= vp->msix_cap + 3)
		return;
	for (v = 0; v < vp->nvectors; v++)
		virtio_pci_msix_sync(vp, v);
	/* MSI-X on or off, the function mask set or cleared. */
	virtio_pci_vectors_changed(vp);
}

/* Interrupt the driver: through vector (MSI-X) or INTx with isr_bit. */
static void
virtio_pci_interrupt(struct virtio_pci *vp, uint8_t isr_bit,
    uint16_t vector)
{
	if (!virtio_pci_msix_on(vp)) {
		vp->isr |= isr_bit;
		vp->interrupts++;
		virtio_pci_set_intx(vp, true);
		return;
	}
	if (vector >= vp->nvectors)
		return;			/* NO_VECTOR: the driver wants none */
	if (virtio_pci_function_masked(vp) || (vp->msix[vector].ctrl & 1)) {
		vp->pba |= 1u << vector;
		return;
	}
	virtio_pci_msix_send(vp, vector);
}

static void
virtio_pci_config_changed(struct virtio_pci *vp)
{
	vp->generation++;
	if (vp->status & VIRTIO_STATUS_DRIVER_OK)
		virtio_pci_interrupt(vp, 2, vp->config_msix_vector);
}

/* A vector number the driver asks for: kept if it exists (4.1.5.1.2). */
static uint16_t
virtio_pci_vector(const struct virtio_pci *vp, uint64_t v)
{
	return v < vp->nvectors ? (uint16_t)v : VIRTIO_PCI_NO_VECTOR;
}

/* An MSI-X table or PBA access (dwords only, 6.8.2). */
static void
virtio_pci_msix_access(struct virtio_pci *vp, uint32_t off, uint32_t *val,
    bool write)
{
	unsigned int v = (off - VIRTIO_PCI_MSIX_TABLE) / 16;
	uint32_t *field;

	if (off >= VIRTIO_PCI_MSIX_PBA) {
		if (!write)
			*val = off == VIRTIO_PCI_MSIX_PBA ? vp->pba : 0;
		return;
	}
	if (v >= vp->nvectors) {
		if (!write)
			*val = 0;
		return;
	}
	switch (off % 16) {
	case 0: field = &vp->msix[v].addr_lo; break;
	case 4: field = &vp->msix[v].addr_hi; break;
	case 8: field = &vp->msix[v].data; break;
	default: field = &vp->msix[v].ctrl; break;
	}
	if (!write) {
		*val = *field;
		return;
	}
	*field = field == &vp->msix[v].ctrl ? (*val & 1) : *val;
	virtio_pci_msix_sync(vp, v);
}

static void
virtio_pci_needs_reset(struct virtio_pci *vp)
{
	if (vp->status & VIRTIO_STATUS_NEEDS_RESET)
		return;
	vp->status |= VIRTIO_STATUS_NEEDS_RESET;
	virtio_pci_config_changed(vp);
}

static void
virtio_pci_reset(struct virtio_pci *vp)
{
	vp->resetting = false;
	vp->status = 0;
	vp->dfselect = vp->gfselect = 0;
	vp->qselect = 0;
	vp->isr = 0;
	vp->config_msix_vector = VIRTIO_PCI_NO_VECTOR;
	virtio_pci_set_intx(vp, false);
	virtio_pci_reset_queues(vp);
	virtio_dev_reset(vp->dev);
}

/* What the device asks of its transport (struct virtio_transport_ops). */
static void
virtio_pci_dev_queue_interrupt(void *ctx, unsigned int q)
{
	struct virtio_pci *vp = ctx;

	virtio_pci_interrupt(vp, 1, vp->qcfg[q].msix_vector);
}

static void
virtio_pci_dev_config_changed(void *ctx)
{
	virtio_pci_config_changed(ctx);
}

static void
virtio_pci_dev_needs_reset(void *ctx)
{
	virtio_pci_needs_reset(ctx);
}

/* Doorbell ids are queue numbers (virtio_pci_init). */
static int
virtio_pci_dev_queue_kick_fd(void *ctx, unsigned int q, bool take)
{
	struct virtio_pci *vp = ctx;

	return device_doorbell_fd(vp->host, q, take);
}

static int
virtio_pci_dev_queue_call_fd(void *ctx, unsigned int q)
{
	struct virtio_pci *vp = ctx;
	uint16_t v = vp->qcfg[q].msix_vector;

	if (!virtio_pci_msix_on(vp) || v >= vp->nvectors ||
	    virtio_pci_function_masked(vp) || (vp->msix[v].ctrl & 1))
		return -ENOENT;
	return device_msi_fd(vp->host, v);
}

static void
virtio_pci_dev_reset_done(void *ctx)
{
	struct virtio_pci *vp = ctx;

	if (vp->resetting)
		virtio_pci_reset(vp);
}

static const struct virtio_transport_ops virtio_pci_transport_ops = {
	.queue_interrupt = virtio_pci_dev_queue_interrupt,
	.config_changed = virtio_pci_dev_config_changed,
	.needs_reset = virtio_pci_dev_needs_reset,
	.reset_done = virtio_pci_dev_reset_done,
	.queue_kick_fd = virtio_pci_dev_queue_kick_fd,
	.queue_call_fd = virtio_pci_dev_queue_call_fd,
};

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static void
virtio_pci_common_read(struct virtio_pci *vp, uint32_t off, void *data,
    unsigned int size)
{
	uint8_t img[VIRTIO_PCI_COMMON_SIZE] = { 0 };
	const struct virtio_dev *d = vp->dev;
	const struct virtio_pci_queue *qc = NULL;
	uint64_t f = virtio_pci_offered(vp);

	if (vp->qselect < d->ops->nqueues)
		qc = &vp->qcfg[vp->qselect];
	put32(&img[VPC_DFSELECT], vp->dfselect);
	put32(&img[VPC_DF], vp->dfselect == 0 ? (uint32_t)f :
	    vp->dfselect == 1 ? (uint32_t)(f >> 32) : 0);
	put32(&img[VPC_GFSELECT], vp->gfselect);
	put32(&img[VPC_GF], vp->gfselect == 0 ? (uint32_t)d->driver_features :
	    vp->gfselect == 1 ? (uint32_t)(d->driver_features >> 32) : 0);
	put16(&img[VPC_MSIX_CONFIG], vp->config_msix_vector);
	put16(&img[VPC_NUM_QUEUES], (uint16_t)d->ops->nqueues);
	img[VPC_STATUS] = vp->status;
	img[VPC_GENERATION] = vp->generation;
	put16(&img[VPC_Q_SELECT], vp->qselect);
	if (qc != NULL) {
		put16(&img[VPC_Q_SIZE], qc->size);
		put16(&img[VPC_Q_MSIX], qc->msix_vector);
		put16(&img[VPC_Q_ENABLE], d->vq[vp->qselect].enabled);
		put16(&img[VPC_Q_NOTIFY_OFF], vp->qselect);
		put64(&img[VPC_Q_DESC], qc->desc);
		put64(&img[VPC_Q_AVAIL], qc->avail);
		put64(&img[VPC_Q_USED], qc->used);
	}
	if (off + size > sizeof(img)) {
		memset(data, 0xff, size);
		vp->bad_accesses++;
		return;
	}
	memcpy(data, &img[off], size);
}

/* Write half or all of a 64-bit queue address. */
static void
virtio_pci_set_addr(uint64_t *addr, uint32_t rel, uint64_t v,
    unsigned int size)
{
	if (size == 8 && rel == 0)
		*addr = v;
	else if (size == 4 && rel == 0)
		*addr = (*addr & ~0xffffffffULL) | (uint32_t)v;
	else if (size == 4 && rel == 4)
		*addr = (*addr & 0xffffffffULL) | v << 32;
}

static void
virtio_pci_set_status(struct virtio_pci *vp, uint8_t v)
{
	uint64_t f = vp->dev->driver_features;

	if (v == 0) {
		if (!virtio_dev_quiesce(vp->dev))
			vp->resetting = true;
		else
			virtio_pci_reset(vp);
		return;
	}
	/* FEATURES_OK only for a subset of the offer with VERSION_1 (3.1.1). */
	if ((v & VIRTIO_STATUS_FEATURES_OK) &&
	    !(vp->status & VIRTIO_STATUS_FEATURES_OK) &&
	    ((f & ~virtio_pci_offered(vp)) != 0 ||
	    !virtio_dev_has(vp->dev, VIRTIO_F_VERSION_1)))
		v &= (uint8_t)~VIRTIO_STATUS_FEATURES_OK;
	/* The driver cannot clear what only a reset clears. */
	vp->status = (uint8_t)(v | (vp->status & VIRTIO_STATUS_NEEDS_RESET));
	virtio_dev_set_driver_ok(vp->dev,
	    vp->status & VIRTIO_STATUS_DRIVER_OK);
}

static void
virtio_pci_enable_queue(struct virtio_pci *vp, unsigned int q)
{
	struct virtio_pci_queue *qc = &vp->qcfg[q];
	struct virtq *vq = &vp->dev->vq[q];

	if (vq->enabled)
		return;
	if (virtq_enable(vq, vp->host, qc->size, qc->desc, qc->avail,
	    qc->used, virtio_dev_has(vp->dev, VIRTIO_F_EVENT_IDX)) < 0) {
		vp->bad_accesses++;
		virtio_pci_needs_reset(vp);
	}
}

static void
virtio_pci_common_write(struct virtio_pci *vp, uint32_t off, uint64_t v,
    unsigned int size)
{
	struct virtio_dev *d = vp->dev;
	struct virtio_pci_queue *qc = NULL;
	bool features_open = !(vp->status & VIRTIO_STATUS_FEATURES_OK);

	if (vp->resetting) {
		/* The driver waits for status 0: nothing else is for now. */
		if (off != VPC_STATUS || v != 0)
			vp->bad_accesses++;
		return;
	}
	if (vp->qselect < d->ops->nqueues)
		qc = &vp->qcfg[vp->qselect];
	switch (off) {
	case VPC_DFSELECT:
		vp->dfselect = (uint32_t)v;
		return;
	case VPC_GFSELECT:
		vp->gfselect = (uint32_t)v;
		return;
	case VPC_GF:
		if (!features_open || vp->gfselect > 1) {
			vp->bad_accesses++;
			return;
		}
		if (vp->gfselect == 0)
			d->driver_features = (d->driver_features &
			    ~0xffffffffULL) | (uint32_t)v;
		else
			d->driver_features = (d->driver_features &
			    0xffffffffULL) | (uint64_t)(uint32_t)v << 32;
		return;
	case VPC_MSIX_CONFIG:
		vp->config_msix_vector = virtio_pci_vector(vp, v);
		return;
	case VPC_STATUS:
		virtio_pci_set_status(vp, (uint8_t)v);
		return;
	case VPC_Q_SELECT:
		vp->qselect = (uint16_t)v;
		return;
	}
	if (qc == NULL) {
		vp->bad_accesses++;
		return;
	}
	if (off == VPC_Q_MSIX) {
		qc->msix_vector = virtio_pci_vector(vp, v);
		virtio_pci_vectors_changed(vp);
		return;
	}
	if (off == VPC_Q_ENABLE) {
		if (v == 1)
			virtio_pci_enable_queue(vp, vp->qselect);
		return;
	}
	/* The rest may change only while the queue is off (4.1.4.3.2). */
	if (d->vq[vp->qselect].enabled) {
		vp->bad_accesses++;
		return;
	}
	if (off == VPC_Q_SIZE) {
		/* Checked when the queue is enabled. */
		if (v <= d->ops->queue_max)
			qc->size = (uint16_t)v;
		return;
	}
	if (off >= VPC_Q_DESC && off < VPC_Q_DESC + 8)
		virtio_pci_set_addr(&qc->desc, off - VPC_Q_DESC, v, size);
	else if (off >= VPC_Q_AVAIL && off < VPC_Q_AVAIL + 8)
		virtio_pci_set_addr(&qc->avail, off - VPC_Q_AVAIL, v, size);
	else if (off >= VPC_Q_USED && off < VPC_Q_USED + 8)
		virtio_pci_set_addr(&qc->used, off - VPC_Q_USED, v, size);
	else
		vp->bad_accesses++;
}

static void
virtio_pci_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct virtio_pci *vp = dev;
	uint64_t off = PCI_BAR_REL(offset);

	memset(data, 0, size);
	if (PCI_BAR_OF(offset) != VIRTIO_PCI_BAR)
		return;
	if (off < VIRTIO_PCI_ISR) {
		virtio_pci_common_read(vp, (uint32_t)off, data, size);
	} else if (off == VIRTIO_PCI_ISR) {
		/* Reading ISR acknowledges it (4.1.4.5.1). */
		*(uint8_t *)data = vp->isr;
		vp->isr = 0;
		virtio_pci_set_intx(vp, false);
	} else if (off >= VIRTIO_PCI_MSIX_TABLE) {
		if (size == 4 && off % 4 == 0)
			virtio_pci_msix_access(vp, (uint32_t)off, data, false);
	} else if (off >= VIRTIO_PCI_DEVICE &&
	    off - VIRTIO_PCI_DEVICE + size <= vp->dev->ops->config_size) {
		if (vp->dev->ops->config_read != NULL)
			vp->dev->ops->config_read(vp->dev,
			    (uint32_t)(off - VIRTIO_PCI_DEVICE), data, size);
	}
}

static void
virtio_pci_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
	struct virtio_pci *vp = dev;
	uint64_t off = PCI_BAR_REL(offset), v = 0;
	unsigned int q;

	if (PCI_BAR_OF(offset) != VIRTIO_PCI_BAR || size > 8)
		return;
	memcpy(&v, data, size);		/* little endian, like the guest */
	if (off < VIRTIO_PCI_ISR) {
		virtio_pci_common_write(vp, (uint32_t)off, v, size);
	} else if (off >= VIRTIO_PCI_MSIX_TABLE) {
		uint32_t w = (uint32_t)v;

		if (size == 4 && off % 4 == 0)
			virtio_pci_msix_access(vp, (uint32_t)off, &w, true);
		else
			vp->bad_accesses++;
	} else if (off >= VIRTIO_PCI_NOTIFY) {
		q = (unsigned int)((off - VIRTIO_PCI_NOTIFY) /
		    VIRTIO_PCI_NOTIFY_MULT);
		virtio_pci_kick(vp, q);
	} else if (off >= VIRTIO_PCI_DEVICE &&
	    off - VIRTIO_PCI_DEVICE + size <= vp->dev->ops->config_size) {
		if (vp->resetting)
			vp->bad_accesses++;
		else if (vp->dev->ops->config_write != NULL)
			vp->dev->ops->config_write(vp->dev,
			    (uint32_t)(off - VIRTIO_PCI_DEVICE), data, size);
	}
}

static struct pci_config *
virtio_pci_config(void *dev)
{
	return &((struct virtio_pci *)dev)->pc;
}
/* Chains popped from queue q, q a constant. */
#define VIRTIO_PCI_POPPED(q)						\
static uint64_t								\
virtio_pci_figure_q##q(const void *src)					\
{									\
	const struct virtio_pci *vp = src;				\
									\
	return vp->dev->vq[q].popped;					\
}
VIRTIO_PCI_POPPED(0)
VIRTIO_PCI_POPPED(1)
VIRTIO_PCI_POPPED(2)
VIRTIO_PCI_POPPED(3)

static uint64_t
virtio_pci_figure_bad_chains(const void *src)
{
	const struct virtio_pci *vp = src;
	uint64_t bad = 0;

	for (unsigned int q = 0; q < vp->dev->ops->nqueues; q++)
		bad += vp->dev->vq[q].bad_chains;
	return bad;
}

#define VP_FIGURE(key, kind, help, member)				\
	{ key, NULL, kind, FIGURE_UNIT_NONE, help,			\
	    FIGURE_AT(struct virtio_pci, member) }
#define VP_FIGURE_GET(key, help, fn)					\
	{ key, NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE, help, .get = fn }

/*
 * Of a struct virtio_pci, in vm.info's order: notifications and
 * interrupts, MSI (VP_FIG_MSI), chains per queue (VP_FIG_QUEUES, one
 * row per queue up to VIRTIO_PCI_DIAG_QUEUES), bad input (VP_FIG_BAD).
 */
#define VP_FIG_MSI	4
#define VP_FIG_QUEUES	6
#define VP_FIG_BAD	10
#define VIRTIO_PCI_DIAG_QUEUES	4

static const struct figure virtio_pci_figure_rows[] = {
	VP_FIGURE("doorbells", FIGURE_GAUGE,
	    "Queues notified through a doorbell", doorbells),
	VP_FIGURE("doorbell_kicks", FIGURE_COUNTER,
	    "Queue notifications through a doorbell", doorbell_kicks),
	VP_FIGURE("kicks", FIGURE_COUNTER, "Queue notifications", kicks),
	VP_FIGURE("interrupts", FIGURE_COUNTER, "Interrupts sent",
	    interrupts),
	[VP_FIG_MSI] = VP_FIGURE("msi_pending", FIGURE_COUNTER,
	    "MSI-X messages sent late: the vector was masked", msi_pending),
	VP_FIGURE("msi_route_changes", FIGURE_COUNTER,
	    "Changes of the function's MSI routes", route_changes),
	[VP_FIG_QUEUES] = VP_FIGURE_GET("q0_chains",
	    "Chains popped from queue 0", virtio_pci_figure_q0),
	VP_FIGURE_GET("q1_chains", "Chains popped from queue 1",
	    virtio_pci_figure_q1),
	VP_FIGURE_GET("q2_chains", "Chains popped from queue 2",
	    virtio_pci_figure_q2),
	VP_FIGURE_GET("q3_chains", "Chains popped from queue 3",
	    virtio_pci_figure_q3),
	[VP_FIG_BAD] = VP_FIGURE_GET("bad_chains",
	    "Malformed chains the guest offered",
	    virtio_pci_figure_bad_chains),
	VP_FIGURE("bad_accesses", FIGURE_COUNTER,
	    "Accesses to the function's registers that were refused",
	    bad_accesses),
};

static const struct figure_table virtio_pci_figures =
    FIGURE_TABLE(virtio_pci_figure_rows);

/* The transport's part of the diagnostics, before the device's. */
static void
virtio_pci_diag(struct virtio_pci *vp, struct device_diag *d)
{
	const struct figure_table *t = &virtio_pci_figures;

	device_diag_put(d, "status", vp->status, DEVICE_DIAG_HEX);
	device_diag_put(d, "resetting", vp->resetting, DEVICE_DIAG_BOOL);
	device_diag_put(d, "features", vp->dev->driver_features,
	    DEVICE_DIAG_HEX);
	device_diag_figure_range(d, t, 0, VP_FIG_MSI, vp);
	device_diag_put(d, "msix", virtio_pci_msix_on(vp), DEVICE_DIAG_BOOL);
	/* INTx: what the driver has not read yet, and the line. */
	device_diag_put(d, "isr", vp->isr, DEVICE_DIAG_HEX);
	device_diag_put(d, "intx_raised", vp->intx_raised, DEVICE_DIAG_BOOL);
	/*
	 * Queue 0's indices as the driver left them and as the device
	 * has them: chains offered but not taken (a kick that never
	 * came), or taken and not given back.
	 */
	if (vp->dev->vq[0].enabled) {
		const struct virtq *vq = &vp->dev->vq[0];

		device_diag_put(d, "q0_avail_idx", __atomic_load_n(
		    &vq->avail->idx, __ATOMIC_RELAXED), DEVICE_DIAG_UINT);
		device_diag_put(d, "q0_last_avail", vq->last_avail,
		    DEVICE_DIAG_UINT);
		device_diag_put(d, "q0_used_idx", __atomic_load_n(
		    &vq->used->idx, __ATOMIC_RELAXED), DEVICE_DIAG_UINT);
	}
	device_diag_figure_range(d, t, VP_FIG_MSI, VP_FIG_QUEUES - VP_FIG_MSI,
	    vp);
	device_diag_figure_range(d, t, VP_FIG_QUEUES,
	    vp->dev->ops->nqueues < VIRTIO_PCI_DIAG_QUEUES ?
	    vp->dev->ops->nqueues : VIRTIO_PCI_DIAG_QUEUES, vp);
	device_diag_figure_range(d, t, VP_FIG_BAD, t->n - VP_FIG_BAD, vp);
}

struct virtio_dev *
virtio_pci_dev(struct virtio_pci *vp)
{
	return vp->dev;
}

struct virtio_pci *
virtio_pci_new(const struct device_host *host, struct virtio_dev *d)
{
	struct virtio_pci *vp;

	if (d == NULL)
		return NULL;
	if ((vp = calloc(1, sizeof(*vp))) == NULL)
		goto free_d;
	if (virtio_pci_init(vp, host, d) < 0)
		goto free_vp;
	return vp;

free_vp:
	free(vp);
free_d:
	d->ops->free(d);
	return NULL;
}

void
virtio_pci_free(struct virtio_pci *vp)
{
	if (vp == NULL)
		return;
	/* First: the device may reach its transport while it goes. */
	vp->dev->ops->free(vp->dev);
	free(vp);
}

static void
virtio_pci_ops_diag(void *dev, struct device_diag *d)
{
	struct virtio_pci *vp = dev;

	virtio_pci_diag(vp, d);
	if (vp->dev->ops->diag != NULL)
		vp->dev->ops->diag(vp->dev, d);
}

static void
virtio_pci_ops_free(void *dev)
{
	virtio_pci_free(dev);
}

static int virtio_pci_save(void *dev, struct dev_state_buf *out);
static int virtio_pci_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err);

const struct device_ops virtio_pci_device_ops = {
	.name = "virtio-pci",
	.read = virtio_pci_read,
	.write = virtio_pci_write,
	.diag = virtio_pci_ops_diag,
	.pci = virtio_pci_config,
	.pci_written = virtio_pci_config_written,
	.save = virtio_pci_save,
	.load = virtio_pci_load,
	.free = virtio_pci_ops_free,
};

/*
 * Snapshots: the section "virtio-pci" (the function's config space and
 * the transport's registers, MSI-X table and PBA included), then one
 * "virtq" section per queue of the device, then the device's own if it
 * has one (virtio-dev.h's save).  What derives from them is not kept:
 * the INTx line and the MSI routes the host was told of are
 * re-established on load, the doorbells follow the BAR where the PCI
 * bus maps it anew.
 */
struct virtio_pci_state {
	uint8_t cfg[PCI_CONFIG_SIZE];
	uint16_t type;
	uint32_t nqueues;
	uint32_t dfselect, gfselect;
	uint8_t status;
	uint8_t generation;
	uint16_t qselect;
	uint8_t isr;
	bool intx;
	uint16_t config_msix_vector;
	uint32_t nvectors;
	uint32_t msix_addr_lo[VIRTIO_PCI_MSIX_MAX];
	uint32_t msix_addr_hi[VIRTIO_PCI_MSIX_MAX];
	uint32_t msix_data[VIRTIO_PCI_MSIX_MAX];
	uint32_t msix_ctrl[VIRTIO_PCI_MSIX_MAX];
	uint32_t pba;
	uint16_t q_size[VIRTIO_PCI_MAX_QUEUES];
	uint16_t q_msix_vector[VIRTIO_PCI_MAX_QUEUES];
	uint64_t q_desc[VIRTIO_PCI_MAX_QUEUES];
	uint64_t q_avail[VIRTIO_PCI_MAX_QUEUES];
	uint64_t q_used[VIRTIO_PCI_MAX_QUEUES];
	uint64_t driver_features;
	bool driver_ok;
};

#define VPS(nm, ty, m, ...)						\
	{ .name = (nm), .type = (ty),					\
	    DEV_STATE_AT(struct virtio_pci_state, m), __VA_ARGS__ }

static const struct dev_state_field virtio_pci_state_fields[] = {
	VPS("pci.cfg", DEV_STATE_BYTES, cfg),
	VPS("type", DEV_STATE_U16, type),
	VPS("nqueues", DEV_STATE_U32, nqueues, .max = VIRTIO_PCI_MAX_QUEUES),
	VPS("dfselect", DEV_STATE_U32, dfselect),
	VPS("gfselect", DEV_STATE_U32, gfselect),
	VPS("status", DEV_STATE_U8, status),
	VPS("generation", DEV_STATE_U8, generation),
	VPS("qselect", DEV_STATE_U16, qselect),
	VPS("isr", DEV_STATE_U8, isr, .max = 3),
	VPS("intx", DEV_STATE_BOOL, intx),
	VPS("config_msix_vector", DEV_STATE_U16, config_msix_vector),
	VPS("nvectors", DEV_STATE_U32, nvectors, .max = VIRTIO_PCI_MSIX_MAX),
	VPS("msix.addr_lo", DEV_STATE_ARRAY_U32, msix_addr_lo),
	VPS("msix.addr_hi", DEV_STATE_ARRAY_U32, msix_addr_hi),
	VPS("msix.data", DEV_STATE_ARRAY_U32, msix_data),
	VPS("msix.ctrl", DEV_STATE_ARRAY_U32, msix_ctrl),
	VPS("msix.pba", DEV_STATE_U32, pba),
	VPS("queue.size", DEV_STATE_ARRAY_U16, q_size),
	VPS("queue.msix_vector", DEV_STATE_ARRAY_U16, q_msix_vector),
	VPS("queue.desc", DEV_STATE_ARRAY_U64, q_desc),
	VPS("queue.avail", DEV_STATE_ARRAY_U64, q_avail),
	VPS("queue.used", DEV_STATE_ARRAY_U64, q_used),
	VPS("driver_features", DEV_STATE_U64, driver_features),
	VPS("driver_ok", DEV_STATE_BOOL, driver_ok),
};

/* A vector field: one of the table's, or NO_VECTOR. */
static int
virtio_pci_state_vector(const struct virtio_pci_state *st, uint16_t v,
    const char *field, unsigned int q, struct dev_state_error *err)
{
	if (v == VIRTIO_PCI_NO_VECTOR || v < st->nvectors)
		return 0;
	return dev_state_fail(err, -EINVAL, "virtio-pci: %s[%u] is vector "
	    "%u beyond the table's %u", field, q, v, st->nvectors);
}

static int
virtio_pci_state_check(const void *state, struct dev_state_error *err)
{
	const struct virtio_pci_state *st = state;
	unsigned int i;
	int rc;

	if ((rc = virtio_pci_state_vector(st, st->config_msix_vector,
	    "config_msix_vector", 0, err)) < 0)
		return rc;
	for (i = 0; i < VIRTIO_PCI_MAX_QUEUES; i++) {
		if ((rc = virtio_pci_state_vector(st, st->q_msix_vector[i],
		    "queue.msix_vector", i, err)) < 0)
			return rc;
		if (i >= st->nqueues && (st->q_size[i] != 0 ||
		    st->q_desc[i] != 0 || st->q_avail[i] != 0 ||
		    st->q_used[i] != 0))
			return dev_state_fail(err, -EINVAL, "virtio-pci: "
			    "queue.size[%u] etc. for a device of %u queues",
			    i, st->nqueues);
	}
	for (i = 0; i < VIRTIO_PCI_MSIX_MAX; i++)
		if (st->msix_ctrl[i] > 1 || (i >= st->nvectors &&
		    (st->msix_ctrl[i] != 0 || st->msix_addr_lo[i] != 0 ||
		    st->msix_addr_hi[i] != 0 || st->msix_data[i] != 0)))
			return dev_state_fail(err, -EINVAL, "virtio-pci: "
			    "msix.ctrl[%u] %#x for a table of %u vectors", i,
			    st->msix_ctrl[i], st->nvectors);
	if (st->pba >> st->nvectors)
		return dev_state_fail(err, -EINVAL, "virtio-pci: msix.pba %#x "
		    "beyond the table's %u vectors", st->pba, st->nvectors);
	return 0;
}

static const struct dev_state_table virtio_pci_state_table = {
	DEV_STATE_TABLE("virtio-pci", 1, struct virtio_pci_state,
	    virtio_pci_state_fields),
	.check = virtio_pci_state_check,
};

static int
virtio_pci_save(void *dev, struct dev_state_buf *out)
{
	struct virtio_pci *vp = dev;
	struct virtio_dev *d = vp->dev;
	struct virtio_pci_state *st;
	struct virtq_state qs;
	unsigned int i;
	int rc;

	/* A reset held back waits for the device's work: not now. */
	if (vp->resetting)
		return -EBUSY;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	memcpy(st->cfg, vp->pc.cfg, sizeof(st->cfg));
	st->type = d->ops->type;
	st->nqueues = d->ops->nqueues;
	st->dfselect = vp->dfselect;
	st->gfselect = vp->gfselect;
	st->status = vp->status;
	st->generation = vp->generation;
	st->qselect = vp->qselect;
	st->isr = vp->isr;
	st->intx = vp->intx;
	st->config_msix_vector = vp->config_msix_vector;
	st->nvectors = vp->nvectors;
	for (i = 0; i < vp->nvectors; i++) {
		st->msix_addr_lo[i] = vp->msix[i].addr_lo;
		st->msix_addr_hi[i] = vp->msix[i].addr_hi;
		st->msix_data[i] = vp->msix[i].data;
		st->msix_ctrl[i] = vp->msix[i].ctrl;
	}
	st->pba = vp->pba;
	for (i = 0; i < d->ops->nqueues; i++) {
		st->q_size[i] = vp->qcfg[i].size;
		st->q_msix_vector[i] = vp->qcfg[i].msix_vector;
		st->q_desc[i] = vp->qcfg[i].desc;
		st->q_avail[i] = vp->qcfg[i].avail;
		st->q_used[i] = vp->qcfg[i].used;
	}
	st->driver_features = d->driver_features;
	st->driver_ok = d->driver_ok;
	rc = dev_state_save(&virtio_pci_state_table, st, out);
	free(st);
	for (i = 0; rc == 0 && i < d->ops->nqueues; i++) {
		virtq_save_state(&d->vq[i], &qs);
		rc = dev_state_save(&virtq_state_table, &qs, out);
	}
	if (rc == 0 && d->ops->save != NULL)
		rc = d->ops->save(d, out);
	return rc;
}

/* The next section at *at of buf: its length, or -EBADMSG with err. */
static long
virtio_pci_next(const uint8_t *buf, size_t len, size_t at,
    struct dev_state_error *err)
{
	long n = at < len ? dev_state_section_len(buf + at, len - at) : -1;

	if (n < 0)
		return dev_state_fail(err, -EBADMSG,
		    "virtio-pci: a section missing or malformed at byte %zu",
		    at);
	return n;
}

/* The saved transport against this function: what must match. */
static int
virtio_pci_load_match(const struct virtio_pci *vp,
    const struct virtio_pci_state *st, struct dev_state_error *err)
{
	const struct virtio_dev *d = vp->dev;
	unsigned int q;

	if (st->type != d->ops->type || st->nqueues != d->ops->nqueues ||
	    st->nvectors != vp->nvectors)
		return dev_state_fail(err, -EINVAL, "virtio-pci: type %u with "
		    "%u queues, %u vectors, for type %u with %u, %u",
		    st->type, st->nqueues, st->nvectors, d->ops->type,
		    d->ops->nqueues, vp->nvectors);
	if (st->driver_features & ~virtio_pci_offered(vp))
		return dev_state_fail(err, -EINVAL, "virtio-pci: "
		    "driver_features %#llx beyond the offer %#llx",
		    (unsigned long long)st->driver_features,
		    (unsigned long long)virtio_pci_offered(vp));
	for (q = 0; q < d->ops->nqueues; q++)
		if (st->q_size[q] > d->ops->queue_max)
			return dev_state_fail(err, -EINVAL, "virtio-pci: "
			    "queue.size[%u] %u beyond the device's %u", q,
			    st->q_size[q], d->ops->queue_max);
	return 0;
}

static int
virtio_pci_load_queues(struct virtio_pci *vp,
    const struct virtio_pci_state *st, const uint8_t *buf, size_t len,
    size_t *at, struct dev_state_error *err)
{
	struct virtio_dev *d = vp->dev;
	struct virtq_state qs;
	unsigned int q;
	long n;
	int rc;

	for (q = 0; q < d->ops->nqueues; q++) {
		if ((n = virtio_pci_next(buf, len, *at, err)) < 0)
			return (int)n;
		rc = dev_state_load(&virtq_state_table, &qs, buf + *at,
		    (size_t)n, err);
		if (rc < 0)
			return rc;
		*at += (size_t)n;
		if (qs.enabled && (qs.size != st->q_size[q] ||
		    qs.desc != st->q_desc[q] || qs.avail != st->q_avail[q] ||
		    qs.used != st->q_used[q]))
			return dev_state_fail(err, -EINVAL, "virtio-pci: "
			    "queue %u's rings are not where queue.desc[%u] "
			    "etc. say", q, q);
		rc = virtq_load_state(&d->vq[q], vp->host, &qs,
		    d->ops->queue_max, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Into a function made for the same board entry, as it was made (the
 * driver has not touched it): on a refusal the device is reset, as the
 * driver finds a device it must set up again.
 */
static int
virtio_pci_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct virtio_pci *vp = dev;
	struct virtio_dev *d = vp->dev;
	struct virtio_pci_state *st;
	uint8_t cfg[PCI_CONFIG_SIZE];
	size_t at = 0;
	unsigned int i;
	long n;
	int rc;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return dev_state_fail(err, -ENOMEM, "virtio-pci: no memory");
	if ((n = virtio_pci_next(buf, len, 0, err)) < 0) {
		rc = (int)n;
		goto out;
	}
	rc = dev_state_load(&virtio_pci_state_table, st, buf, (size_t)n, err);
	if (rc < 0 || (rc = virtio_pci_load_match(vp, st, err)) < 0)
		goto out;
	at = (size_t)n;
	memcpy(cfg, vp->pc.cfg, sizeof(cfg));
	if ((rc = pci_config_load(&vp->pc, st->cfg, err)) < 0)
		goto out;
	d->driver_features = st->driver_features;
	if ((rc = virtio_pci_load_queues(vp, st, buf, len, &at, err)) < 0)
		goto undo;
	if (d->ops->load != NULL) {
		if ((n = virtio_pci_next(buf, len, at, err)) < 0) {
			rc = (int)n;
			goto undo;
		}
		rc = d->ops->load(d, (const uint8_t *)buf + at, (size_t)n,
		    err);
		if (rc < 0)
			goto undo;
		at += (size_t)n;
	}
	if (at != len) {
		rc = dev_state_fail(err, -EBADMSG, "virtio-pci: %zu bytes "
		    "after the sections", len - at);
		goto undo;
	}

	vp->dfselect = st->dfselect;
	vp->gfselect = st->gfselect;
	vp->status = st->status;
	vp->generation = st->generation;
	vp->qselect = st->qselect;
	vp->isr = st->isr;
	vp->config_msix_vector = st->config_msix_vector;
	for (i = 0; i < vp->nvectors; i++) {
		vp->msix[i].addr_lo = st->msix_addr_lo[i];
		vp->msix[i].addr_hi = st->msix_addr_hi[i];
		vp->msix[i].data = st->msix_data[i];
		vp->msix[i].ctrl = st->msix_ctrl[i];
	}
	vp->pba = st->pba;
	for (i = 0; i < d->ops->nqueues; i++) {
		vp->qcfg[i].size = st->q_size[i];
		vp->qcfg[i].msix_vector = st->q_msix_vector[i];
		vp->qcfg[i].desc = st->q_desc[i];
		vp->qcfg[i].avail = st->q_avail[i];
		vp->qcfg[i].used = st->q_used[i];
	}
	/*
	 * What derives from it: the line (raised or lowered from where
	 * this function left it: up only if it was), the routes, then the
	 * device.
	 */
	virtio_pci_set_intx(vp, st->intx);
	for (i = 0; i < vp->nvectors; i++) {
		vp->routed[i].on = false;
		virtio_pci_msix_sync(vp, i);
	}
	virtio_dev_set_driver_ok(d, st->driver_ok);
	rc = 0;
	goto out;
undo:
	memcpy(vp->pc.cfg, cfg, sizeof(cfg));
	virtio_pci_reset(vp);
out:
	free(st);
	return rc;
}
