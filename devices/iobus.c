/*
 * Port and MMIO dispatch.  See iobus.h for the locking rules.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iobus.h"

void
vdev_init(struct vdev *d, const struct device_ops *ops, void *state)
{
	d->ops = ops;
	d->state = state;
	pthread_mutex_init(&d->lock, NULL);
}

void
vdev_destroy(struct vdev *d)
{
	if (d->ops == NULL)
		return;
	if (d->ops->free != NULL)
		d->ops->free(d->state);
	pthread_mutex_destroy(&d->lock);
	d->ops = NULL;
	d->state = NULL;
}

void
iobus_init(struct iobus *bus)
{
	memset(bus, 0, sizeof(*bus));
}

void
iobus_destroy(struct iobus *bus)
{
	free(bus->ranges);
	memset(bus, 0, sizeof(*bus));
}

int
iobus_register(struct iobus *bus, uint64_t base, uint64_t len,
    struct vdev *dev, uint64_t dev_offset)
{
	struct iobus_range *r;
	size_t i;

	if (len == 0 || base + len < base || dev == NULL)
		return -EINVAL;
	for (i = 0; i < bus->nranges; i++) {
		r = &bus->ranges[i];
		if (base < r->base + r->len && r->base < base + len)
			return -EEXIST;
		if (r->base > base)
			break;
	}
	r = realloc(bus->ranges, (bus->nranges + 1) * sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	bus->ranges = r;
	memmove(&r[i + 1], &r[i], (bus->nranges - i) * sizeof(*r));
	r[i] = (struct iobus_range){ base, len, dev_offset, dev };
	bus->nranges++;
	return 0;
}

const struct iobus_range *
iobus_lookup(struct iobus *bus, uint64_t addr, unsigned int size)
{
	size_t lo = 0, hi = bus->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct iobus_range *r = &bus->ranges[mid];

		if (addr < r->base)
			hi = mid;
		else if (addr - r->base >= r->len)
			lo = mid + 1;
		else
			return size <= r->len - (addr - r->base) ? r : NULL;
	}
	return NULL;
}

int
iobus_range_read(struct iobus *bus, const struct iobus_range *r,
    uint64_t addr, void *data, unsigned int size)
{
	if (r == NULL || r->dev->ops->read == NULL) {
		memset(data, 0xff, size);
		__atomic_add_fetch(&bus->unknown_reads, 1, __ATOMIC_RELAXED);
		return -ENOENT;
	}
	vdev_lock(r->dev);
	r->dev->ops->read(r->dev->state, addr - r->base + r->dev_offset,
	    data, size);
	vdev_unlock(r->dev);
	return 0;
}

int
iobus_range_write(struct iobus *bus, const struct iobus_range *r,
    uint64_t addr, const void *data, unsigned int size)
{
	if (r == NULL || r->dev->ops->write == NULL) {
		__atomic_add_fetch(&bus->unknown_writes, 1, __ATOMIC_RELAXED);
		return -ENOENT;
	}
	vdev_lock(r->dev);
	r->dev->ops->write(r->dev->state, addr - r->base + r->dev_offset,
	    data, size);
	vdev_unlock(r->dev);
	return 0;
}

int
iobus_read(struct iobus *bus, uint64_t addr, void *data, unsigned int size)
{
	return iobus_range_read(bus, iobus_lookup(bus, addr, size), addr,
	    data, size);
}

int
iobus_write(struct iobus *bus, uint64_t addr, const void *data,
    unsigned int size)
{
	return iobus_range_write(bus, iobus_lookup(bus, addr, size), addr,
	    data, size);
}
