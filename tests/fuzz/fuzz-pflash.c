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

/* The worker's store: made once, its contents new for every input. */
static struct pflash_store fuzz_pflash_store;

static void *
fuzz_pflash_create(struct fake_host *fh)
{
	struct pflash_store *s = &fuzz_pflash_store;
	uint8_t image[FUZZ_PFLASH_SIZE];

	for (size_t i = 0; i < sizeof(image); i++)
		image[i] = (uint8_t)(i * 13 + 0x5a);
	pflash_store_fini(s);
	if (pflash_store_init(s, image, sizeof(image), FUZZ_PFLASH_BLOCK,
	    false) != 0)
		return NULL;
	s->dirty = fuzz_pflash_dirty;
	return pflash_new(&fh->host, s);
}

static void
fuzz_pflash_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	struct pflash_store *s = &fuzz_pflash_store;
	uint8_t buf[FUZZ_PFLASH_BLOCK];
	unsigned int n = 0;
	int64_t off;

	if (sel & 1) {
		(void)pflash_store_mark_dirty(s, len > 0 ? data[0] * 8u : 0);
		return;
	}
	while ((off = pflash_store_take_dirty(s, buf)) >= 0) {
		if (off % FUZZ_PFLASH_BLOCK != 0 ||
		    off >= FUZZ_PFLASH_SIZE || ++n > FUZZ_PFLASH_BLOCKS) {
			fprintf(stderr, "pflash: took block at %lld\n",
			    (long long)off);
			abort();
		}
	}
	if (s->ndirty != 0) {
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
