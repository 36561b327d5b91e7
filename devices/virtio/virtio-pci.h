/*
 * The virtio 1.x PCI transport, modern interface only (Virtual I/O
 * Device (VIRTIO) Version 1.2, 4.1): vendor 0x1af4, device 0x1040 + the
 * device type, and one memory BAR holding the common configuration,
 * the ISR status, the device-specific configuration and the queue
 * notification area, each found through a vendor capability (4.1.4).
 *
 * A virtio device (virtio-rng.c, virtio-blk.c) begins its state with a
 * struct virtio_pci and describes itself with struct virtio_dev_ops; its
 * board entry uses virtio_pci_device_ops-style entry points through
 * VIRTIO_PCI_DEVICE_OPS().  The transport does feature negotiation,
 * device status, queue setup (virtqueue.h) and interrupts; the device
 * sees kicks and its own configuration space.
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
#include "virtqueue.h"

#define VIRTIO_PCI_MAX_QUEUES	4

/* Feature bits the transport itself handles (6). */
#define VIRTIO_F_INDIRECT_DESC	28
#define VIRTIO_F_EVENT_IDX	29
#define VIRTIO_F_VERSION_1	32

/* Device status (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE	1
#define VIRTIO_STATUS_DRIVER		2
#define VIRTIO_STATUS_DRIVER_OK		4
#define VIRTIO_STATUS_FEATURES_OK	8
#define VIRTIO_STATUS_NEEDS_RESET	0x40
#define VIRTIO_STATUS_FAILED		0x80

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

struct virtio_pci;

struct virtio_dev_ops {
	uint16_t type;			/* 5: 4 = entropy, 2 = block, 1 = net */
	uint32_t class_code;		/* PCI class for lspci */
	unsigned int nqueues;
	uint16_t queue_max;		/* entries, a power of two */
	uint64_t features;		/* device-specific offers */
	uint32_t config_size;		/* bytes of device configuration */
	/* Device configuration, offset < config_size; may be NULL. */
	void (*config_read)(struct virtio_pci *vp, uint32_t offset,
	    void *data, unsigned int size);
	void (*config_write)(struct virtio_pci *vp, uint32_t offset,
	    const void *data, unsigned int size);
	/* The driver kicked queue q (enabled, DRIVER_OK set). */
	void (*notify)(struct virtio_pci *vp, unsigned int q);
	/*
	 * Optional: the driver set DRIVER_OK; its features are final
	 * (virtio_pci_has()).
	 */
	void (*driver_ok)(struct virtio_pci *vp);
	/*
	 * Optional: the driver wrote 0 to device_status.  true when
	 * nothing the device started can still reach guest memory or its
	 * backend, and the reset goes on at once; false to hold it back
	 * until the device calls virtio_pci_reset_done().  Meanwhile
	 * device_status keeps reading what it was (the driver polls it
	 * until it reads 0, 4.1.4.3.2), the queues stay as they are, and
	 * the transport takes no kick and no write to the common or the
	 * device configuration.
	 */
	bool (*quiesce)(struct virtio_pci *vp);
	/* The driver reset the device; queues are already forgotten. */
	void (*reset)(struct virtio_pci *vp);
};

struct virtio_pci_queue {
	uint16_t size;
	bool enable;
	uint64_t desc, avail, used;
	uint16_t msix_vector;
};

struct virtio_pci {
	struct pci_config pc;
	const struct virtio_dev_ops *ops;
	const struct device_host *host;
	uint64_t features;		/* the device's offer: ops' at init */
	uint32_t dfselect, gfselect;
	uint64_t driver_features;
	uint8_t status;
	bool resetting;			/* held back by ops->quiesce */
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
	struct virtq vq[VIRTIO_PCI_MAX_QUEUES];
	unsigned int doorbells;		/* queues notified through the host */
	/* Diagnostics. */
	uint64_t kicks;
	uint64_t doorbell_kicks;	/* ... of which through a doorbell */
	uint64_t interrupts;
	uint64_t msi_pending;		/* sent late: the vector was masked */
	uint64_t route_changes;		/* msi_route() calls */
	uint64_t bad_accesses;
};

/* Describe the function: 0 or -EINVAL for a bad ops table. */
int virtio_pci_init(struct virtio_pci *vp, const struct device_host *host,
    const struct virtio_dev_ops *ops);

/* Has the driver accepted feature bit? */
static inline bool
virtio_pci_has(const struct virtio_pci *vp, unsigned int bit)
{
	return (vp->driver_features >> bit) & 1;
}

/*
 * After pushing used buffers onto queue q: interrupt the driver if it
 * wants to be (virtq_should_notify()).
 */
void virtio_pci_queue_done(struct virtio_pci *vp, unsigned int q);
/*
 * A queue went bad (virtq_pop() failed): set DEVICE_NEEDS_RESET and
 * tell the driver with a configuration change interrupt (2.1.2).
 */
void virtio_pci_needs_reset(struct virtio_pci *vp);
/* The device configuration changed: interrupt the driver. */
void virtio_pci_config_changed(struct virtio_pci *vp);
/*
 * The device is quiet now (see ops->quiesce): finish the reset the
 * driver asked for, ops->reset included.  Under the device's lock, any
 * thread; nothing when no reset waits.
 */
void virtio_pci_reset_done(struct virtio_pci *vp);

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
