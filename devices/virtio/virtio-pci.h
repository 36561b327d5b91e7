/*
 * The virtio 1.x PCI transport, modern interface only (Virtual I/O
 * Device (VIRTIO) Version 1.2, 4.1): vendor 0x1af4, device 0x1040 + the
 * device type, and one memory BAR holding the common configuration,
 * the ISR status, the device-specific configuration and the queue
 * notification area, each found through a vendor capability (4.1.4).
 *
 * A function drives any virtio device through its struct virtio_dev
 * (virtio-dev.h), held by pointer: the transport does feature
 * negotiation, device status, queue setup (virtqueue.h) and interrupts;
 * the device sees kicks and its own configuration space.  A board entry
 * makes the device, hands it to virtio_pci_new(), and has
 * virtio_pci_device_ops for its ops, whatever the device.
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
 * one write from any thread (the MSI-X capability's bits through
 * virtio_pci_device_ops' pci_written).  Before that, INTx (line 0 of the
 * device host) with the ISR register (4.1.4.5): reading ISR lowers the
 * line.
 *
 * Plain state, the device's and the function's under one lock, the
 * device's (device.h).
 */
#ifndef VMMD_VIRTIO_PCI_H
#define VMMD_VIRTIO_PCI_H

#include "device.h"
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

struct virtio_pci;

/*
 * A PCI function for device d, which it takes: d is freed with it
 * (first, see virtio-dev.h), or at once when the function cannot be
 * made.  NULL on ENOMEM, for a device it cannot carry, or for d NULL
 * (so that a device's constructor may be its argument).
 */
struct virtio_pci *virtio_pci_new(const struct device_host *host,
    struct virtio_dev *d);
/* The device vp drives, for calls of its own header's; under the
 * device's lock. */
struct virtio_dev *virtio_pci_dev(struct virtio_pci *vp);
/* The device, then the function.  NULL is fine. */
void virtio_pci_free(struct virtio_pci *vp);

/* A board entry's ops for the state virtio_pci_new() returns. */
extern const struct device_ops virtio_pci_device_ops;

#endif
