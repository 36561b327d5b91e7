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

static struct iobus_table *
iobus_table_new(size_t nranges)
{
	struct iobus_table *t;

	t = calloc(1, sizeof(*t) + nranges * sizeof(t->ranges[0]));
	if (t != NULL)
		t->nranges = nranges;
	return t;
}

int
iobus_init(struct iobus *bus)
{
	memset(bus, 0, sizeof(*bus));
	bus->table = iobus_table_new(0);
	if (bus->table == NULL)
		return -ENOMEM;
	pthread_mutex_init(&bus->writer, NULL);
	return 0;
}

void
iobus_destroy(struct iobus *bus)
{
	struct iobus_table *t, *next;

	if (bus->table == NULL)
		return;
	for (t = bus->retired; t != NULL; t = next) {
		next = t->retired_next;
		free(t);
	}
	free(bus->table);
	pthread_mutex_destroy(&bus->writer);
	memset(bus, 0, sizeof(*bus));
}

/*
 * Publish t in place of the current table, which is retired.  Under
 * the writer lock.
 */
static void
iobus_publish(struct iobus *bus, struct iobus_table *t)
{
	struct iobus_table *old = bus->table;

	__atomic_store_n(&bus->table, t, __ATOMIC_RELEASE);
	old->retired_next = bus->retired;
	bus->retired = old;
	bus->nretired++;
}

/* Under the writer lock: may the table change once more? */
static int
iobus_may_change(struct iobus *bus)
{
	if (bus->nretired < IOBUS_MAX_RETIRED)
		return 0;
	bus->refused_changes++;
	return -ENOSPC;
}

int
iobus_register(struct iobus *bus, uint64_t base, uint64_t len,
    struct vdev *dev, uint64_t dev_offset)
{
	struct iobus_table *cur, *t;
	struct iobus_range *r;
	size_t i;
	int ret;

	if (len == 0 || base + len < base || dev == NULL)
		return -EINVAL;
	pthread_mutex_lock(&bus->writer);
	cur = bus->table;
	for (i = 0; i < cur->nranges; i++) {
		r = &cur->ranges[i];
		if (base < r->base + r->len && r->base < base + len) {
			ret = -EEXIST;
			goto out;
		}
		if (r->base > base)
			break;
	}
	if ((ret = iobus_may_change(bus)) < 0)
		goto out;
	t = iobus_table_new(cur->nranges + 1);
	if (t == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(t->ranges, cur->ranges, i * sizeof(*r));
	t->ranges[i] = (struct iobus_range){ base, len, dev_offset, dev };
	memcpy(&t->ranges[i + 1], &cur->ranges[i],
	    (cur->nranges - i) * sizeof(*r));
	iobus_publish(bus, t);
out:
	pthread_mutex_unlock(&bus->writer);
	return ret;
}

int
iobus_unregister(struct iobus *bus, uint64_t base, struct vdev *dev)
{
	struct iobus_table *cur, *t;
	size_t i;
	int ret;

	pthread_mutex_lock(&bus->writer);
	cur = bus->table;
	for (i = 0; i < cur->nranges; i++)
		if (cur->ranges[i].base == base && cur->ranges[i].dev == dev)
			break;
	if (i == cur->nranges) {
		ret = -ENOENT;
		goto out;
	}
	if ((ret = iobus_may_change(bus)) < 0)
		goto out;
	t = iobus_table_new(cur->nranges - 1);
	if (t == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	memcpy(t->ranges, cur->ranges, i * sizeof(t->ranges[0]));
	memcpy(&t->ranges[i], &cur->ranges[i + 1],
	    (cur->nranges - i - 1) * sizeof(t->ranges[0]));
	iobus_publish(bus, t);
out:
	pthread_mutex_unlock(&bus->writer);
	return ret;
}

const struct iobus_range *
iobus_lookup(struct iobus *bus, uint64_t addr, unsigned int size)
{
	const struct iobus_table *t = iobus_table(bus);
	size_t lo = 0, hi = t->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct iobus_range *r = &t->ranges[mid];

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
