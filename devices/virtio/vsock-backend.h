/*
 * What virtio-vsock asks of the host side of its sockets: a backend in
 * the kernel that serves the receive and transmit queues by itself
 * (vhost-vsock; the worker's is daemon/machine/vhost-vsock.c), so that
 * no packet passes through the worker.  The device hands it the rings
 * where the driver put them, guest memory as the host maps it, and for
 * each queue the eventfd the driver's kicks land in and the one that
 * raises its interrupt.  The backend outlives guest resets; the guest's
 * address (its CID) is the backend's, fixed when it was made.
 */
#ifndef VMMD_VSOCK_BACKEND_H
#define VMMD_VSOCK_BACKEND_H

#include <stdint.h>

#include "device.h"

#define VSOCK_BACKEND_QUEUES	2	/* receive, transmit */
#define VSOCK_BACKEND_REGIONS	4

/* One queue as the driver set it up. */
struct vsock_backend_ring {
	uint16_t size;
	void *desc, *avail, *used;	/* where the host maps them */
	uint16_t next_avail;		/* the first entry not taken yet */
	int kick;			/* the driver's kicks */
	int call;			/* raises the interrupt; -1: none */
};

struct vsock_backend_start {
	uint64_t features;		/* what the driver accepted */
	struct device_mem_region mem[VSOCK_BACKEND_REGIONS];
	unsigned int nmem;
	struct vsock_backend_ring ring[VSOCK_BACKEND_QUEUES];
};

struct vsock_backend_ops {
	/* The virtio features the backend can serve. */
	uint64_t (*features)(void *ctx);
	/* The guest's CID. */
	uint64_t (*cid)(void *ctx);
	/* Serve the queues from now on: 0 or -errno. */
	int (*start)(void *ctx, const struct vsock_backend_start *s);
	/* Queue q's interrupt eventfd changed (-1: none for now). */
	int (*set_call)(void *ctx, unsigned int q, int fd);
	/*
	 * The driver kicked queue q in a way its kick eventfd did not see
	 * (a register write): pass it on.  While started.
	 */
	void (*kick)(void *ctx, unsigned int q);
	/*
	 * Stop serving them, the driver reset the device or it goes;
	 * what the backend had taken of each queue in next_avail (when
	 * not NULL).  0 or -errno; the backend stops whatever it says.
	 */
	int (*stop)(void *ctx, uint16_t next_avail[VSOCK_BACKEND_QUEUES]);
};

struct vsock_backend {
	const struct vsock_backend_ops *ops;
	void *ctx;
};

#endif
