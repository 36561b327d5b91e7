/*
 * libFuzzer entry point for the device register fuzzers (fuzz-device.h).
 *
 * Input, one operation after another until the bytes run out:
 *
 *   op & 7   0-2  write: range, offset, size, 4 value bytes
 *            3-4  read: range, offset, size
 *            5    VM time passes: 4 bytes of ns, kept below 2^(b % 31)
 *                 for the next byte b: up to a second in one step (the
 *                 fake host fires every deadline on the way, each at its
 *                 own time, so a longer step only costs time)
 *            6    host input: a selector, a length (mod 16), that many
 *                 bytes (the device's input hook)
 *            7    what the next rising edge achieves (delivered,
 *                 coalesced, masked), and whether the wall clock fails
 *
 * Whatever the guest does, the device must keep the host's contracts:
 * an interrupt line is only set when its level changes, and its timers
 * stay within what it allocated.  A violation aborts (a finding).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-device.h"
#include "fuzz-input.h"

/* An access the bus would deliver: *offset and *size. */
static void
fuzz_access(const struct fuzz_device *fd, struct fuzz_in *in,
    uint64_t *offset, unsigned int *size)
{
	const struct fuzz_device_range *r;
	uint64_t off, room;

	r = &fd->ranges[fuzz_byte(in) % fd->nranges];
	off = fuzz_byte(in) % r->len;
	room = r->len - off;
	*size = 1u << (fuzz_byte(in) % 3);
	while (*size > room)
		*size >>= 1;
	*offset = r->offset + off;
}

static void
fuzz_check(const struct fake_host *fh, const char *after)
{
	if (fh->irq_bad != 0) {
		fprintf(stderr, "%s: interrupt line set to the level it had "
		    "(or out of range) after %s\n", fuzz_device_desc.ops->name,
		    after);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct fuzz_device *fd = &fuzz_device_desc;
	struct fuzz_in in = { data, size };
	struct fake_host fh;
	uint8_t buf[16], val[8];
	uint64_t offset;
	unsigned int sz, n, i;
	int64_t ns;
	void *dev;

	fake_host_init(&fh);
	fh.wall.tv_sec = 1796020200;	/* 2026-11-30 06:30 UTC */
	fh.wall_follows_vm = true;
	dev = fd->create(&fh);
	if (dev == NULL)
		abort();

	while (in.left > 0) {
		uint8_t op = fuzz_byte(&in) & 7;

		switch (op) {
		case 0:
		case 1:
		case 2:
			fuzz_access(fd, &in, &offset, &sz);
			memset(val, 0, sizeof(val));
			for (i = 0; i < 4; i++)
				val[i] = fuzz_byte(&in);
			fd->ops->write(dev, offset, val, sz);
			fuzz_check(&fh, "a write");
			break;
		case 3:
		case 4:
			fuzz_access(fd, &in, &offset, &sz);
			fd->ops->read(dev, offset, val, sz);
			fuzz_check(&fh, "a read");
			break;
		case 5:
			ns = (uint32_t)fuzz_uint(&in, 4);
			ns &= (INT64_C(1) << (fuzz_byte(&in) % 31)) - 1;
			fake_host_advance(&fh, ns);
			fuzz_check(&fh, "a timer");
			break;
		case 6: {
			uint8_t sel = fuzz_byte(&in);

			n = fuzz_byte(&in) % sizeof(buf);
			for (i = 0; i < n; i++)
				buf[i] = fuzz_byte(&in);
			if (fd->input != NULL)
				fd->input(dev, &fh, sel, buf, n);
			fuzz_check(&fh, "host input");
			break;
		}
		case 7: {
			uint8_t b = fuzz_byte(&in);

			fh.raise_status = (int)(b % 3);
			fh.wall_error = (b & 0x80) != 0;
			break;
		}
		}
	}
	fd->ops->free(dev);
	return 0;
}
