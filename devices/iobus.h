/*
 * A sorted registry of port or MMIO ranges and the devices behind them.
 *
 * Most ranges are registered while the machine is built; PCI BARs come
 * and go while vCPUs run, when a guest moves them.  Lookups take no
 * lock: a vCPU loads the current table (an immutable sorted array) with
 * one acquire load and binary-searches it.  Changes copy the table,
 * edit the copy and publish it with a release store, serialized by the
 * bus's writer lock.  A replaced table may still be read by a vCPU in
 * the middle of a lookup, so it is retired, not freed: retired tables
 * are freed by iobus_destroy(), when no vCPU runs.  A guest gets at most
 * IOBUS_MAX_RETIRED changes (PCI enumeration moves each BAR a handful of
 * times); past that, changes fail with -ENOSPC and are counted.
 *
 * Each device carries its own lock, taken around every access, so vCPU
 * threads and the event loop can share it.
 */
#ifndef VMMD_IOBUS_H
#define VMMD_IOBUS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define IOBUS_MAX_RETIRED	4096

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

/* One published state of the bus: never changed once published. */
struct iobus_table {
	struct iobus_table *retired_next;	/* on the retired list */
	size_t nranges;
	struct iobus_range ranges[];
};

struct iobus {
	struct iobus_table *table;	/* atomic; never NULL after init */
	pthread_mutex_t writer;		/* serializes changes */
	struct iobus_table *retired;	/* replaced tables, under writer */
	unsigned int nretired;
	/* Accesses that hit no device: counted, never fatal. */
	uint64_t unknown_reads;
	uint64_t unknown_writes;
	uint64_t refused_changes;	/* -ENOSPC past IOBUS_MAX_RETIRED */
};

/* 0 or -ENOMEM. */
int iobus_init(struct iobus *bus);
/* No vCPU may be running.  Accepts a bus iobus_init() failed on. */
void iobus_destroy(struct iobus *bus);
/*
 * Any thread.  -EINVAL for an empty or wrapping range, -EEXIST if it
 * overlaps one, -ENOSPC when the bus refuses further changes.
 */
int iobus_register(struct iobus *bus, uint64_t base, uint64_t len,
    struct vdev *dev, uint64_t dev_offset);
/* Remove dev's range at base: 0, -ENOENT, -ENOSPC.  Any thread. */
int iobus_unregister(struct iobus *bus, uint64_t base, struct vdev *dev);

/* The current table, for inspection (tests, diagnostics). */
static inline const struct iobus_table *
iobus_table(struct iobus *bus)
{
	return __atomic_load_n(&bus->table, __ATOMIC_ACQUIRE);
}

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
