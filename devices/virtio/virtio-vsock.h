/*
 * virtio-vsock (Virtio 1.2, 5.10) on a struct vsock_backend: sockets
 * between the guest and the host with no network, addressed by the
 * guest's CID (the backend's) and a port.
 *
 * Queues: 0 receive and 1 transmit, served by the backend in the kernel
 * (vsock-backend.h): when the driver is ready (DRIVER_OK) the device
 * hands it the two rings, guest memory, and for each queue the
 * eventfd the driver's kicks land in (the transport's doorbell) and the
 * one that raises its interrupt (the transport's MSI-X irqfd), so that
 * neither a packet nor a kick nor an interrupt passes through the
 * worker.  A kick that reaches the device as a register write instead
 * is passed on; when a queue's vector changes the backend gets the new
 * interrupt eventfd, and an interrupt the driver may have missed
 * meanwhile is raised once.  A driver without MSI-X gets no vsock: the
 * device asks to be reset.  Queue 2 holds the driver's event buffers
 * for the device's own use: a transport reset event
 * (virtio_vsock_transport_reset()) after the guest was restored or
 * moved and its connections are gone.
 *
 * Configuration: the guest's CID, 64 bits (5.10.4).  Features: what the
 * backend serves of VIRTIO_VSOCK_F_SEQPACKET.
 */
#ifndef VMMD_VIRTIO_VSOCK_H
#define VMMD_VIRTIO_VSOCK_H

#include "device.h"
#include "virtio-dev.h"
#include "vsock-backend.h"

#define VIRTIO_VSOCK_ID		19
#define VIRTIO_VSOCK_QUEUE	256
#define VIRTIO_VSOCK_F_SEQPACKET	1

/*
 * NULL on ENOMEM; be outlives the device.  A transport takes it
 * (virtio-dev.h).
 */
struct virtio_dev *virtio_vsock_new(const struct device_host *host,
    const struct vsock_backend *be);

/*
 * Tell the driver its connections are gone (a transport reset event,
 * 5.10.6.6): 0, -ENODEV while the driver is not ready, -ENOSPC when it
 * left no event buffer.  Under the device's lock.
 */
int virtio_vsock_transport_reset(struct virtio_dev *d);

#endif
