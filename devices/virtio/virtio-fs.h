/*
 * virtio-fs (Virtio 1.2, 5.11) on a struct vhost_backend: a host
 * directory the guest mounts by its tag (mount -t virtiofs TAG DIR),
 * its FUSE requests served by a vhost-user file server (virtiofsd)
 * through the worker's front end (daemon/machine/vhost-user.c).
 *
 * Queues: 0 high priority, 1 the one request queue, both the
 * backend's: when the driver is ready (DRIVER_OK) the device hands it
 * both rings, guest memory (shareable: device_mem_region.fd) and for
 * each queue the eventfd the driver's kicks land in (the transport's
 * doorbell) and the one that raises its interrupt (the transport's
 * MSI-X irqfd), so that no request, kick nor interrupt passes through
 * the worker.  A kick that comes as a register write is passed on; a
 * queue's vector that changes gives the backend the new eventfd.  A
 * driver without MSI-X, or a backend that fails, gets
 * DEVICE_NEEDS_RESET (the guest's I/O on the share then fails).
 *
 * Configuration (5.11.4): tag[36] (UTF-8, NUL-padded, not terminated
 * when 36 bytes long), le32 num_request_queues = 1.  No device
 * features: no notification queue, no DAX window.
 *
 * Snapshots: the guest's open files are the backend's and do not
 * survive, so a VM with a share cannot be saved (save: -ENOTSUP).
 */
#ifndef VMMD_VIRTIO_FS_H
#define VMMD_VIRTIO_FS_H

#include "device.h"
#include "vhost-backend.h"
#include "virtio-dev.h"

#define VIRTIO_FS_ID		26
#define VIRTIO_FS_QUEUE		1024
#define VIRTIO_FS_QUEUES	2	/* hiprio, one request queue */
#define VIRTIO_FS_TAG_MAX	36
#define VIRTIO_FS_ENOTCONN	107	/* Linux's, as FUSE carries errno */

/*
 * tag: 1 to 36 bytes, no NUL.  NULL on ENOMEM or a tag out of range;
 * be outlives the device.  A transport takes it (virtio-dev.h).
 */
struct virtio_dev *virtio_fs_new(const struct device_host *host,
    const char *tag, const struct vhost_backend *be);

/* The backend serves the queues now (DRIVER_OK reached it). */
bool virtio_fs_started(struct virtio_dev *d);

/*
 * The backend is gone for good (its connection closed): the device
 * takes the queues back, resuming where the used ring says the backend
 * finished (what it had taken and not answered is lost, as with QEMU),
 * and from then on answers every request itself with FUSE's
 * -ENOTCONN, so that the guest's I/O on the share fails rather than
 * waits forever.  Under the device's lock.
 */
void virtio_fs_backend_gone(struct virtio_dev *d);

#endif
