/*
 * The I/O bus: registration order, overlap refusal, offsets, boundary
 * accesses and the unknown-access counters.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "iobus.h"
#include "tap.h"

struct probe {
	uint64_t last_offset;
	unsigned int last_size;
	uint8_t last_value;
	int reads, writes, freed;
};

static void
probe_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct probe *p = dev;

	p->reads++;
	p->last_offset = offset;
	p->last_size = size;
	memset(data, (int)offset, size);
}

static void
probe_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct probe *p = dev;

	p->writes++;
	p->last_offset = offset;
	p->last_size = size;
	p->last_value = *(const uint8_t *)data;
}

static void
probe_free(void *dev)
{
	((struct probe *)dev)->freed++;
}

static const struct device_ops probe_ops = {
	.name = "probe",
	.read = probe_read,
	.write = probe_write,
	.free = probe_free,
};

int
main(void)
{
	struct probe a = { 0 }, b = { 0 };
	struct vdev da, db;
	const struct iobus_table *t;
	struct iobus bus;
	uint8_t buf[4];
	uint8_t v = 0x5a;

	vdev_init(&da, &probe_ops, &a);
	vdev_init(&db, &probe_ops, &b);
	TAP_EQ(iobus_init(&bus), 0, "bus made");

	TAP_EQ(iobus_register(&bus, 0x3f8, 8, &da, 0), 0, "register uart-like range");
	TAP_EQ(iobus_register(&bus, 0x60, 1, &db, 0), 0, "register 0x60 (added before)");
	TAP_EQ(iobus_register(&bus, 0x64, 1, &db, 4), 0, "register 0x64 with offset 4");
	TAP_EQ(iobus_register(&bus, 0x3fc, 8, &da, 0), -EEXIST, "overlap refused");
	TAP_EQ(iobus_register(&bus, 0x3f0, 9, &da, 0), -EEXIST, "overlap from below refused");
	TAP_EQ(iobus_register(&bus, 0x10, 0, &da, 0), -EINVAL, "empty range refused");
	TAP_EQ(iobus_register(&bus, UINT64_MAX, 2, &da, 0), -EINVAL, "wrapping range refused");
	t = iobus_table(&bus);
	tap_ok(t->nranges == 3 && t->ranges[0].base == 0x60 &&
	    t->ranges[1].base == 0x64 && t->ranges[2].base == 0x3f8,
	    "ranges kept sorted");

	TAP_EQ(iobus_read(&bus, 0x3fd, buf, 1), 0, "read inside range");
	tap_ok(a.last_offset == 5 && buf[0] == 5, "offset relative to base");
	TAP_EQ(iobus_write(&bus, 0x64, &v, 1), 0, "write to 0x64");
	tap_ok(b.last_offset == 4 && b.last_value == 0x5a, "dev_offset applied");
	TAP_EQ(iobus_read(&bus, 0x3ff, buf, 1), 0, "last byte of range");
	TAP_EQ(iobus_read(&bus, 0x3ff, buf, 2), -ENOENT, "access crossing the end");
	tap_ok(buf[0] == 0xff && buf[1] == 0xff, "unknown read is all ones");
	TAP_EQ(iobus_read(&bus, 0x400, buf, 4), -ENOENT, "read past every range");
	TAP_EQ(iobus_write(&bus, 0x0, &v, 1), -ENOENT, "write below every range");
	TAP_EQ(iobus_read(&bus, 0x61, buf, 1), -ENOENT, "gap between ranges");
	tap_ok(bus.unknown_reads == 3 && bus.unknown_writes == 1,
	    "unknown accesses counted (%llu reads, %llu writes)",
	    (unsigned long long)bus.unknown_reads,
	    (unsigned long long)bus.unknown_writes);

	/* A BAR that moves: the old table stays readable until destroy. */
	TAP_EQ(iobus_register(&bus, 0x1000, 0x10, &db, 0), 0, "BAR mapped");
	t = iobus_table(&bus);
	TAP_EQ(iobus_unregister(&bus, 0x1000, &da), -ENOENT,
	    "unregister needs the same device");
	TAP_EQ(iobus_unregister(&bus, 0x1000, &db), 0, "BAR unmapped");
	TAP_EQ(iobus_register(&bus, 0x2000, 0x10, &db, 0), 0, "BAR moved");
	tap_ok(t->nranges == 4 && t->ranges[3].base == 0x1000,
	    "a table a reader may still hold is not changed");
	TAP_EQ(iobus_read(&bus, 0x1004, buf, 1), -ENOENT, "old place gone");
	TAP_EQ(iobus_read(&bus, 0x2004, buf, 1), 0, "new place answers");
	tap_ok(b.last_offset == 4, "offset at the new place");
	while (bus.nretired < IOBUS_MAX_RETIRED)
		if (iobus_unregister(&bus, 0x2000, &db) < 0 ||
		    iobus_register(&bus, 0x2000, 0x10, &db, 0) < 0)
			break;
	TAP_EQ(iobus_unregister(&bus, 0x2000, &db), -ENOSPC,
	    "a guest cannot grow the retired list without bound");
	tap_ok(bus.refused_changes == 1, "refused change counted");
	TAP_EQ(iobus_read(&bus, 0x2004, buf, 1), 0,
	    "the bus still dispatches after refusing");

	iobus_destroy(&bus);
	vdev_destroy(&da);
	vdev_destroy(&db);
	vdev_destroy(&db);
	tap_ok(a.freed == 1 && b.freed == 1, "device state freed exactly once");
	return tap_done();
}
