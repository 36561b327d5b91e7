/*
 * What a virtio device whose queues another party serves asks of it:
 * a vhost-user backend (the worker's front end is
 * daemon/machine/vhost-user.c), which reads and writes the rings in
 * guest memory itself, is kicked through the doorbells' eventfds and
 * interrupts the guest through the MSI-X irqfds, so that no request
 * passes through the worker.  The device hands it the rings where the
 * driver put them, guest memory as the host maps it (with the file
 * another process maps it from: device_mem_region.fd), and for each
 * queue the eventfd the driver's kicks land in and the one that raises
 * its interrupt.  The backend outlives guest resets.
 */
#ifndef VMMD_VHOST_BACKEND_H
#define VMMD_VHOST_BACKEND_H

#include <stdint.h>

#include "device.h"

#define VHOST_BACKEND_QUEUES	4
#define VHOST_BACKEND_REGIONS	4

/* One queue as the driver set it up. */
struct vhost_backend_ring {
	uint16_t size;
	void *desc, *avail, *used;	/* where the host maps them */
	uint16_t next_avail;		/* the first entry not taken yet */
	int kick;			/* the driver's kicks */
	int call;			/* raises the interrupt; -1: none */
};

struct vhost_backend_start {
	uint64_t features;		/* what the driver accepted */
	struct device_mem_region mem[VHOST_BACKEND_REGIONS];
	unsigned int nmem;
	unsigned int nrings;
	struct vhost_backend_ring ring[VHOST_BACKEND_QUEUES];
};

struct vhost_backend_ops {
	/* The virtio features the backend can serve. */
	uint64_t (*features)(void *ctx);
	/* Serve the queues from now on: 0 or -errno. */
	int (*start)(void *ctx, const struct vhost_backend_start *s);
	/* Queue q's interrupt eventfd changed (-1: none for now). */
	int (*set_call)(void *ctx, unsigned int q, int fd);
	/*
	 * The driver kicked queue q in a way its kick eventfd did not see
	 * (a register write): pass it on.  While started.
	 */
	void (*kick)(void *ctx, unsigned int q);
	/*
	 * Stop serving the queues (the driver reset the device or it
	 * goes); what the backend had taken of each in next_avail[] (when
	 * not NULL).  0 or -errno; the backend stops whatever it says.
	 */
	int (*stop)(void *ctx, uint16_t next_avail[VHOST_BACKEND_QUEUES]);
};

struct vhost_backend {
	const struct vhost_backend_ops *ops;
	void *ctx;
};

#endif
