/*
 * The CFI flash's registers (fuzz-device.h), on a flash of four
 * 256-byte blocks: the first block (the query table, the ID codes) and
 * the last block with 128 bytes past the image, as a window larger than
 * the image would deliver them.  Host input is the worker's write-back:
 * taking every dirty block out (each offset must be a block inside the
 * image, and no more blocks than there are), or giving one back.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz-device.h"
#include "pflash.h"

#define FUZZ_PFLASH_BLOCK	256u
#define FUZZ_PFLASH_BLOCKS	4u
#define FUZZ_PFLASH_SIZE	(FUZZ_PFLASH_BLOCK * FUZZ_PFLASH_BLOCKS)

static void
fuzz_pflash_dirty(void *opaque)
{
}

static const struct pflash_backend fuzz_pflash_backend = {
	.dirty = fuzz_pflash_dirty,
};

static void *
fuzz_pflash_create(struct fake_host *fh)
{
	static uint8_t image[FUZZ_PFLASH_SIZE];
	struct pflash *p;

	for (size_t i = 0; i < sizeof(image); i++)
		image[i] = (uint8_t)(i * 13 + 0x5a);
	if (pflash_new(&fh->host, image, sizeof(image), FUZZ_PFLASH_BLOCK,
	    false, &fuzz_pflash_backend, &p) != 0)
		return NULL;
	return p;
}

static void
fuzz_pflash_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	uint8_t buf[FUZZ_PFLASH_BLOCK];
	unsigned int n = 0;
	int64_t off;

	if (sel & 1) {
		(void)pflash_mark_dirty(dev, len > 0 ? data[0] * 8u : 0);
		return;
	}
	while ((off = pflash_take_dirty(dev, buf)) >= 0) {
		if (off % FUZZ_PFLASH_BLOCK != 0 ||
		    off >= FUZZ_PFLASH_SIZE || ++n > FUZZ_PFLASH_BLOCKS) {
			fprintf(stderr, "pflash: took block at %lld\n",
			    (long long)off);
			abort();
		}
	}
	if (pflash_dirty_blocks(dev) != 0) {
		fprintf(stderr, "pflash: dirty blocks left after a take\n");
		abort();
	}
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &pflash_device_ops,
	.ranges = { { 0, 256 }, { FUZZ_PFLASH_SIZE - 128, 256 } },
	.nranges = 2,
	.create = fuzz_pflash_create,
	.input = fuzz_pflash_input,
};
