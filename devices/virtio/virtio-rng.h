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

#define VIRTIO_RNG_CHUNK	4096

struct virtio_rng;

/* NULL on ENOMEM. */
struct virtio_rng *virtio_rng_new(const struct device_host *host);
void virtio_rng_free(struct virtio_rng *r);

extern const struct device_ops virtio_rng_device_ops;

#endif
