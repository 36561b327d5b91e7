/*
 * A sorted registry of port or MMIO ranges and the devices behind them.
 *
 * Ranges are registered while the machine is built and never change
 * while vCPUs run, so lookups take no lock: a binary search over an
 * immutable array.  Each device carries its own lock, taken around every
 * access, so vCPU threads and the event loop can share it.
 */
#ifndef VMMD_IOBUS_H
#define VMMD_IOBUS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* A device instance as the bus sees it. */
struct vdev {
	const struct device_ops *ops;
	void *state;
	pthread_mutex_t lock;
};

void vdev_init(struct vdev *d, const struct device_ops *ops, void *state);
/* Frees the device state through ops->free; accepts an unused vdev. */
void vdev_destroy(struct vdev *d);

static inline void
vdev_lock(struct vdev *d)
{
	pthread_mutex_lock(&d->lock);
}

static inline void
vdev_unlock(struct vdev *d)
{
	pthread_mutex_unlock(&d->lock);
}

struct iobus_range {
	uint64_t base;
	uint64_t len;
	uint64_t dev_offset;	/* added to (addr - base) for the device */
	struct vdev *dev;
};

struct iobus {
	struct iobus_range *ranges;
	size_t nranges;
	/* Accesses that hit no device: counted, never fatal. */
	uint64_t unknown_reads;
	uint64_t unknown_writes;
};

void iobus_init(struct iobus *bus);
void iobus_destroy(struct iobus *bus);
/* -EINVAL for an empty or wrapping range, -EEXIST if it overlaps one. */
int iobus_register(struct iobus *bus, uint64_t base, uint64_t len,
    struct vdev *dev, uint64_t dev_offset);
/*
 * Dispatch one access.  Returns 0, or -ENOENT when no single range holds
 * [addr, addr + size): reads then see all ones and writes are dropped.
 */
int iobus_read(struct iobus *bus, uint64_t addr, void *data,
    unsigned int size);
int iobus_write(struct iobus *bus, uint64_t addr, const void *data,
    unsigned int size);

/*
 * The same in two steps, for a caller that wants to know the device
 * before the access (exit statistics): the range that holds
 * [addr, addr + size), or NULL; then the access through it (r may be
 * NULL: then as above for no device).
 */
const struct iobus_range *iobus_lookup(struct iobus *bus, uint64_t addr,
    unsigned int size);
int iobus_range_read(struct iobus *bus, const struct iobus_range *r,
    uint64_t addr, void *data, unsigned int size);
int iobus_range_write(struct iobus *bus, const struct iobus_range *r,
    uint64_t addr, const void *data, unsigned int size);

#endif
