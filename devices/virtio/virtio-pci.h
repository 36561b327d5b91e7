/*
 * The virtio 1.x PCI transport, modern interface only (Virtual I/O
 * Device (VIRTIO) Version 1.2, 4.1): vendor 0x1af4, device 0x1040 + the
 * device type, and one memory BAR holding the common configuration,
 * the ISR status, the device-specific configuration and the queue
 * notification area, each found through a vendor capability (4.1.4).
 *
 * It drives any virtio device through the device's struct virtio_dev
 * (virtio-dev.h): the transport does feature negotiation, device
 * status, queue setup (virtqueue.h) and interrupts; the device sees
 * kicks and its own configuration space.  A device's state begins with
 * a struct virtio_pci for now, its device_ops the entry points below.
 *
 * Notifications: a write to a queue's doorbell in the notification
 * area, which the device host turns into a kick on its event loop
 * without a user-space exit when it can (device_doorbell()), or else
 * takes as a register write on the vCPU thread.
 *
 * Interrupts: MSI-X (PCI 3.0 6.8) once the driver enables it, one vector
 * per queue and one for configuration changes at most, sent through the
 * device host (device_msi()); a masked vector's interrupt (entry or
 * function mask) is kept pending in the PBA and sent when it is
 * unmasked.  The host is told what each vector sends whenever the
 * table, MSI-X enable or a mask changes it (device_msi_route(), from
 * the vCPU's access, under the device's lock), so that sending stays
 * one write from any thread; the board entry's pci_written must be
 * virtio_pci_config_written() for the capability's bits.  Before that, INTx
 * (line 0 of the device host) with the ISR register (4.1.4.5): reading
 * ISR lowers the line.
 *
 * Plain state, under the device's lock like any device.
 */
#ifndef VMMD_VIRTIO_PCI_H
#define VMMD_VIRTIO_PCI_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "pci-config.h"
#include "virtio-dev.h"

#define VIRTIO_PCI_MAX_QUEUES	VIRTIO_DEV_MAX_QUEUES

/* The BAR's layout: one 4 KiB page per structure. */
#define VIRTIO_PCI_BAR		0
#define VIRTIO_PCI_COMMON	0x0000
#define VIRTIO_PCI_ISR		0x1000
#define VIRTIO_PCI_DEVICE	0x2000
#define VIRTIO_PCI_NOTIFY	0x3000
#define VIRTIO_PCI_NOTIFY_MULT	4	/* bytes between queues' doorbells */
#define VIRTIO_PCI_MSIX_TABLE	0x4000
#define VIRTIO_PCI_MSIX_PBA	0x5000
#define VIRTIO_PCI_BAR_SIZE	0x8000
#define VIRTIO_PCI_MSIX_MAX	(VIRTIO_PCI_MAX_QUEUES + 1)

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

/*
 * A PCI function for device d, which it takes: d is freed with it
 * (first, see virtio-dev.h), or at once when the function cannot be
 * made.  NULL on ENOMEM, for a device it cannot carry, or for d NULL
 * (so that a device's constructor may be its argument).
 */
struct virtio_pci *virtio_pci_new(const struct device_host *host,
    struct virtio_dev *d);
/* The device, then the function.  NULL is fine. */
void virtio_pci_free(struct virtio_pci *vp);
/* A board entry's ops for the state virtio_pci_new() returns. */
extern const struct device_ops virtio_pci_device_ops;

/*
 * The same in a state that begins with a struct virtio_pci, which then
 * does not free d: 0 or -EINVAL for a device it cannot carry.
 */
int virtio_pci_init(struct virtio_pci *vp, const struct device_host *host,
    struct virtio_dev *d);

/* device_ops entry points for a state that begins with struct virtio_pci. */
void virtio_pci_read(void *dev, uint64_t offset, void *data,
    unsigned int size);
void virtio_pci_write(void *dev, uint64_t offset, const void *data,
    unsigned int size);
struct pci_config *virtio_pci_config(void *dev);
void virtio_pci_config_written(void *dev, unsigned int offset,
    unsigned int size);
/* The transport's part of a device's diagnostics. */
void virtio_pci_diag(struct virtio_pci *vp, struct device_diag *d);

#endif
