/*
 * virtio-rng: an entropy device (Virtio 1.2, 5.4) fed by the host's
 * getrandom(2).  Each buffer the driver offers comes back filled, up to
 * VIRTIO_RNG_CHUNK bytes at a time so that one kick never holds a vCPU
 * long; a host that cannot give entropy now returns the buffer empty.
 * A kick fills 64 buffers at most; what the driver offers beyond them
 * (a driver that keeps adding) is filled at the loop's next turn.
 */
#ifndef VMMD_VIRTIO_RNG_H
#define VMMD_VIRTIO_RNG_H

#include "device.h"
#include "virtio-dev.h"

#define VIRTIO_RNG_CHUNK	4096

/* NULL on ENOMEM; a transport takes it (virtio-dev.h) and frees it. */
struct virtio_dev *virtio_rng_new(const struct device_host *host);

#endif
