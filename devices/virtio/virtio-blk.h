/*
 * virtio-blk (Virtio 1.2, 5.2) on a struct blk_backend: read, write,
 * flush, discard, write zeroes, get ID, and read-only disks.
 *
 * Requests never run on the vCPU thread: a kick only checks each chain
 * and hands it to the backend, whose threads complete it under the
 * device's lock (device_lock()).  What a guest's flush guarantees:
 * when VIRTIO_BLK_T_FLUSH completes, every write that had completed
 * before the flush was submitted is on stable storage (the backend
 * fdatasync()s the image); writes still in flight are not covered, as
 * the specification allows.  The device offers VIRTIO_BLK_F_FLUSH, so
 * Linux treats it as a write-back cache and sends flushes when its file
 * systems need them.
 *
 * A request that breaks the rules (a header that is not 16 bytes, data
 * that is not whole sectors, a range past the end, writes to a read-only
 * disk) completes with VIRTIO_BLK_S_IOERR; unknown types with
 * VIRTIO_BLK_S_UNSUPP.  A chain that breaks the virtqueue's rules stops
 * the queue (virtqueue.h).
 *
 * A reset (0 written to device_status) completes when the last request
 * in flight has come back from the backend: until then device_status
 * reads non-zero, as the driver expects while the device resets
 * (4.1.4.3.2), and nothing the old requests do reaches guest memory or
 * the disk after the driver sees 0.  See virtio_blk_quiesce().
 */
#ifndef VMMD_VIRTIO_BLK_H
#define VMMD_VIRTIO_BLK_H

#include "blk-backend.h"
#include "device.h"
#include "virtio-dev.h"

#define VIRTIO_BLK_QUEUE	128
#define VIRTIO_BLK_SEG_MAX	(VIRTIO_BLK_QUEUE - 2)

/*
 * NULL on ENOMEM; be outlives the device.  A transport takes it
 * (virtio-dev.h); its free waits for the requests in flight first.
 */
struct virtio_dev *virtio_blk_new(const struct device_host *host,
    const struct blk_backend *be);

#endif
