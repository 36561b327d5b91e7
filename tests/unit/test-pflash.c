/*
 * CFI flash (devices/pflash.c): reads in read-array mode, the ID codes
 * and the CFI query table, program (only 1 bits become 0), block erase,
 * the status register after good and bad sequences, writes past the
 * end and on a read-only flash, OVMF's flash probe as the firmware
 * runs it, and persistence: the store keeps what was written across a
 * guest reset (a new flash on it), the dirty blocks the worker takes
 * out (under the flash's lock while one exists) make a second flash
 * that reads the same.  Where Debian's ovmf package is
 * installed (or VMMD_TEST_OVMF_VARS names a VARS image), its template
 * too: the geometry fits, OVMF's probe finds a writable flash.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "pflash.h"
#include "tap.h"
#include "unit-util.h"

#define BS	4096u		/* OVMF's block size */
#define NB	4u
#define SIZE	(BS * NB)

#define SR_OK	PFLASH_SR_READY
#define SR_SEQ	(PFLASH_SR_PROG_ERR | PFLASH_SR_ERASE_ERR)

static uint8_t image[SIZE];

static uint64_t
rd(struct pflash *p, uint64_t off, unsigned int size)
{
	uint8_t b[8] = { 0 };

	pflash_device_ops.read(p, off, b, size);
	return get64(b);
}

static void
wr(struct pflash *p, uint64_t off, unsigned int size, uint64_t v)
{
	uint8_t b[8];

	put64(b, v);
	pflash_device_ops.write(p, off, b, size);
}

static uint8_t
status(struct pflash *p)
{
	wr(p, 0, 1, 0x70);
	return (uint8_t)rd(p, 0, 1);
}

/* The store of a test's flash, and the flash; unmake() frees both. */
static struct pflash_store store;

static struct pflash *
make(struct fake_host *fh, bool ro)
{
	struct pflash *p;

	if (pflash_store_init(&store, image, SIZE, BS, ro) != 0)
		tap_bail("pflash_store_init");
	if ((p = pflash_new(&fh->host, &store)) == NULL)
		tap_bail("pflash_new");
	return p;
}

static void
unmake(struct pflash *p)
{
	pflash_free(p);
	pflash_store_fini(&store);
}

static void
fill_image(void)
{
	for (size_t i = 0; i < SIZE; i++)
		image[i] = (uint8_t)(i * 7 + (i >> 8) + 1);
}

static void
test_geometry(void)
{
	struct pflash_store st;

	TAP_EQ(pflash_store_init(&st, image, SIZE, 3000, false), -EINVAL,
	    "a block size that is no power of two is refused");
	TAP_EQ(pflash_store_init(&st, image, SIZE, 128, false), -EINVAL,
	    "a block under 256 bytes is refused");
	TAP_EQ(pflash_store_init(&st, image, SIZE, 16u << 20, false),
	    -EINVAL, "a block over 8 MiB is refused");
	TAP_EQ(pflash_store_init(&st, image, SIZE - 1, BS, false), -EINVAL,
	    "a size that is not whole blocks is refused");
	TAP_EQ(pflash_store_init(&st, image, 0, BS, false), -EINVAL,
	    "an empty flash is refused");
	TAP_EQ(pflash_store_init(&st, image, (size_t)65537 * 256, 256,
	    false), -EINVAL, "more than 65536 blocks are refused");
	tap_ok(st.image == NULL && st.bitmap == NULL, "nothing allocated");
	pflash_store_fini(&st);
}

static void
test_read_array(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p = make(&fh, false);
	bool same = true;

	for (size_t i = 0; i < SIZE; i++)
		same &= rd(p, i, 1) == image[i];
	tap_ok(same, "power-on: every byte reads the image");
	TAP_EQ(rd(p, 0x1001, 4), get32(&image[0x1001]),
	    "an unaligned 4-byte read reads four bytes of the image");
	TAP_EQ(rd(p, 8, 8), get64(&image[8]), "an 8-byte read");
	TAP_EQ(rd(p, SIZE - 2, 4), 0xffff0000u | get16(&image[SIZE - 2]),
	    "bytes past the end read 0xff");
	TAP_EQ(rd(p, UINT64_MAX, 1), 0xffu, "the last address reads 0xff");
	unmake(p);
}

static void
test_query(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p = make(&fh, false);

	wr(p, 0, 1, 0x90);
	TAP_EQ(rd(p, 0, 1), PFLASH_MANUFACTURER, "ID: manufacturer at 0");
	TAP_EQ(rd(p, 1, 1), PFLASH_DEVICE_ID, "ID: device at 1");
	TAP_EQ(rd(p, BS + 2, 1), 0u, "ID: block 1 is not locked");

	wr(p, 0x55, 1, 0x98);
	TAP_EQ(rd(p, 0x10, 2) | rd(p, 0x12, 1) << 16, 0x595251u,
	    "query: \"QRY\" at 0x10");
	TAP_EQ(rd(p, 0x13, 2), 1u, "query: primary command set 0x0001");
	TAP_EQ(rd(p, 0x15, 2), 0x31u, "query: extended table at 0x31");
	TAP_EQ(rd(p, 0x27, 1), 14u, "query: device size 2^14 bytes");
	TAP_EQ(rd(p, 0x2c, 1), 1u, "query: one erase block region");
	TAP_EQ(rd(p, 0x2d, 2), NB - 1, "query: block count - 1");
	TAP_EQ(rd(p, 0x2f, 2), BS / 256, "query: block size / 256");
	TAP_EQ(rd(p, 0x31, 4) & 0xffffff, 0x495250u,
	    "query: \"PRI\" at 0x31");
	TAP_EQ(rd(p, 0x40, 1), 0u, "query: past the table reads 0");
	TAP_EQ(rd(p, 0x1000, 1), 0u, "query: the image does not show");

	wr(p, 0, 1, 0xff);
	TAP_EQ(rd(p, 0x10, 1), image[0x10], "0xff: back to the array");
	unmake(p);
}

static void
test_program(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p;

	memset(image, 0xf0, SIZE);
	image[0x20] = 0x5a;
	p = make(&fh, false);

	wr(p, 0x10, 1, 0x10);
	TAP_EQ(rd(p, 0x10, 1), SR_OK, "after the setup, reads are status");
	wr(p, 0x10, 1, 0x3c);
	TAP_EQ(rd(p, 0x10, 1), SR_OK, "after the data: status, ready");
	wr(p, 0, 1, 0xff);
	TAP_EQ(rd(p, 0x10, 1), 0x30u, "0xf0 programmed with 0x3c is 0x30");

	wr(p, 0x20, 1, 0x40);
	wr(p, 0x20, 1, 0xff);
	TAP_EQ(status(p), SR_OK, "programming 1 bits over 0 bits: no error");
	wr(p, 0, 1, 0xff);
	TAP_EQ(rd(p, 0x20, 1), 0x5au, "... and they stay 0 (0x40 too)");

	wr(p, 0x100, 4, 0x10);
	wr(p, 0x100, 4, 0x12345678);
	wr(p, 0x100, 1, 0xff);
	TAP_EQ(rd(p, 0x100, 4), 0x12345678u & 0xf0f0f0f0u,
	    "a 4-byte program programs four bytes");
	TAP_EQ(rd(p, 0x104, 1), 0xf0u, "... and no more");
	TAP_EQ(rd(p, 0xff, 1), 0xf0u, "... and no less");
	fill_image();
	unmake(p);
}

static void
test_erase(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p = make(&fh, false);
	bool erased = true;

	wr(p, 0, 1, 0x20);
	wr(p, BS + 0x123, 1, 0xd0);
	TAP_EQ(rd(p, 0, 1), SR_OK, "erase done: status reads ready");
	wr(p, 0, 1, 0xff);
	for (size_t i = BS; i < 2 * BS; i++)
		erased &= rd(p, i, 1) == 0xff;
	tap_ok(erased, "the confirm's block reads 0xff");
	tap_ok(rd(p, BS - 1, 1) == image[BS - 1] &&
	    rd(p, 2 * BS, 1) == image[2 * BS],
	    "its neighbours are untouched");

	wr(p, BS, 1, 0x10);
	wr(p, BS, 1, 0xa5);
	wr(p, BS, 1, 0xff);
	TAP_EQ(rd(p, BS, 1), 0xa5u, "an erased byte takes any value");
	unmake(p);
}

static void
test_bad_sequences(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p = make(&fh, false);

	wr(p, 0, 1, 0x50);
	TAP_EQ(status(p), 0u, "clear status: every bit clear");

	wr(p, 0, 1, 0x20);
	wr(p, 0, 1, 0xff);
	TAP_EQ(rd(p, 0, 1), SR_SEQ,
	    "erase setup then 0xff: a command sequence error");
	wr(p, 0, 1, 0xff);
	TAP_EQ(rd(p, 0, 1), image[0], "... and nothing erased");

	wr(p, 0, 1, 0x50);
	wr(p, 0, 1, 0x60);
	TAP_EQ(rd(p, 0, 1), SR_SEQ, "an unknown command: sequence error");
	wr(p, 0, 1, 0x50);
	TAP_EQ(rd(p, 0, 1), 0u, "clear status clears it");
	wr(p, 0, 1, 0xd0);
	TAP_EQ(rd(p, 0, 1), 0u, "a lone confirm (resume) is harmless");
	unmake(p);

	p = make(&fh, true);
	wr(p, 0, 1, 0x10);
	wr(p, 0, 1, 0x00);
	TAP_EQ(rd(p, 0, 1), SR_OK | PFLASH_SR_PROG_ERR | PFLASH_SR_LOCKED,
	    "read-only: program fails, block protected");
	wr(p, 0, 1, 0x50);
	wr(p, 0, 1, 0x20);
	wr(p, 0, 1, 0xd0);
	TAP_EQ(rd(p, 0, 1), PFLASH_SR_ERASE_ERR | PFLASH_SR_LOCKED,
	    "read-only: erase fails, block protected");
	wr(p, 0, 1, 0x90);
	TAP_EQ(rd(p, 2, 1), 1u, "read-only: ID says block 0 is locked");
	wr(p, 0, 1, 0xff);
	tap_ok(rd(p, 0, 1) == image[0] && rd(p, 1, 1) == image[1],
	    "read-only: the image is unchanged");
	TAP_EQ(store.ndirty, 0u, "read-only: nothing dirty");
	unmake(p);
}

static void
test_past_end(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p = make(&fh, false);

	wr(p, 0, 1, 0x50);
	wr(p, SIZE, 1, 0x10);
	wr(p, SIZE, 1, 0x00);
	TAP_EQ(status(p), PFLASH_SR_PROG_ERR,
	    "program past the end: SR.4, not ready");
	wr(p, 0, 1, 0x50);
	wr(p, SIZE - 2, 4, 0x10);
	wr(p, SIZE - 2, 4, 0);
	TAP_EQ(status(p), PFLASH_SR_PROG_ERR,
	    "a program that runs past the end: SR.4");
	wr(p, 0, 1, 0xff);
	TAP_EQ(rd(p, SIZE - 2, 2), get16(&image[SIZE - 2]),
	    "... and nothing of it programmed");
	wr(p, 0, 1, 0x50);
	wr(p, UINT64_MAX - 3, 4, 0x10);
	wr(p, UINT64_MAX - 3, 4, 0);
	TAP_EQ(status(p), PFLASH_SR_PROG_ERR, "program at the top of the "
	    "address space: SR.4");
	wr(p, 0, 1, 0x50);
	wr(p, 0, 1, 0x20);
	wr(p, SIZE + BS, 1, 0xd0);
	TAP_EQ(status(p), PFLASH_SR_ERASE_ERR, "erase past the end: SR.5");
	TAP_EQ(store.ndirty, 0u, "nothing dirty");
	unmake(p);
}

/* OVMF's probe at offset off: true when it concludes "writable". */
static bool
ovmf_probe(struct pflash *p, uint64_t off)
{
	uint8_t orig = (uint8_t)rd(p, off, 1), probe;

	wr(p, off, 1, 0x50);
	probe = (uint8_t)rd(p, off, 1);
	if (orig != 0x50 && probe == 0x50)
		return false;		/* RAM */
	wr(p, off, 1, 0x70);
	probe = (uint8_t)rd(p, off, 1);
	if (probe != 0x00 || probe == orig)
		return false;		/* ROM, or RAM */
	wr(p, off, 1, 0x10);
	wr(p, off, 1, orig);
	wr(p, off, 1, 0x70);
	probe = (uint8_t)rd(p, off, 1);
	wr(p, off, 1, 0xff);
	return (probe & PFLASH_SR_PROG_ERR) == 0 && rd(p, off, 1) == orig;
}

/*
 * OVMF's QemuFlashDetected, as edk2-stable202211 runs it on the first
 * byte of a block that is neither 0x00, 0x50 nor 0x70: it must conclude
 * "FD behaves as FLASH, writable", or the firmware keeps its variables
 * in RAM.
 */
static void
test_ovmf_probe(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct pflash *p;
	uint8_t orig, probe;

	memset(image, 0, SIZE);
	image[0x48] = 0x5f;
	p = make(&fh, false);
	tap_ok(ovmf_probe(p, 0x48), "probe: the whole sequence says FLASH");
	orig = (uint8_t)rd(p, 0x48, 1);
	wr(p, 0x48, 1, 0x50);
	probe = (uint8_t)rd(p, 0x48, 1);
	tap_ok(!(orig != 0x50 && probe == 0x50), "probe: not RAM after 0x50");
	wr(p, 0x48, 1, 0x70);
	probe = (uint8_t)rd(p, 0x48, 1);
	TAP_EQ(probe, 0x00, "probe: status after clear status reads 0x00");
	wr(p, 0x48, 1, 0x10);
	wr(p, 0x48, 1, orig);
	wr(p, 0x48, 1, 0x70);
	probe = (uint8_t)rd(p, 0x48, 1);
	wr(p, 0x48, 1, 0xff);
	TAP_EQ(probe & PFLASH_SR_PROG_ERR, 0, "probe: writable");
	TAP_EQ(rd(p, 0x48, 1), 0x5fu, "probe: the byte is unchanged");
	unmake(p);
	fill_image();
}

struct wb {
	unsigned int calls;
	uint8_t file[SIZE];
};

static void
wb_dirty(void *opaque)
{
	((struct wb *)opaque)->calls++;
}

/* The worker's write-back: every dirty block into w->file. */
static unsigned int
wb_flush(struct pflash_store *s, struct wb *w)
{
	uint8_t buf[BS];
	unsigned int n = 0;
	int64_t off;

	while ((off = pflash_store_take_dirty(s, buf)) >= 0) {
		if ((uint64_t)off + BS > SIZE)
			tap_bail("take_dirty: offset %lld", (long long)off);
		memcpy(w->file + off, buf, BS);
		n++;
	}
	return n;
}

static void
test_persistence(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct fake_host fh2 = FAKE_HOST_INITIALIZER(fh2);
	static struct wb w;
	struct pflash_store again;
	struct pflash *p, *q;
	uint8_t buf[BS];
	unsigned int locks;
	bool same = true;

	p = make(&fh, false);
	store.dirty = wb_dirty;
	store.opaque = &w;
	memcpy(w.file, image, SIZE);
	TAP_EQ(pflash_store_take_dirty(&store, buf), -ENOENT,
	    "nothing dirty at first");
	wr(p, 0, 1, 0x20);
	wr(p, 3 * BS, 1, 0xd0);
	wr(p, 0, 1, 0x10);
	wr(p, 3 * BS + 5, 1, 0x42);
	wr(p, 0, 1, 0x10);
	wr(p, BS + 7, 1, 0x00);
	wr(p, 0, 1, 0xff);
	TAP_EQ(w.calls, 1u, "dirty() once, for the first dirty block");
	TAP_EQ(store.ndirty, 2u, "two blocks dirty");
	locks = fh.locks;
	TAP_EQ(pflash_store_take_dirty(&store, buf), (int64_t)BS,
	    "the lowest dirty block comes first");
	tap_ok(fh.locks == locks + 1, "taken under the flash's lock");
	tap_ok(buf[7] == 0 && buf[8] == image[BS + 8],
	    "with what it holds now");
	TAP_EQ(pflash_store_mark_dirty(&store, BS + 100), 0,
	    "a failed write gives the block back");
	TAP_EQ(pflash_store_mark_dirty(&store, SIZE), -EINVAL,
	    "... but not one past the end");
	TAP_EQ(w.calls, 1u, "giving back calls no dirty()");

	/* A guest reset: the new flash is made before the old is freed. */
	q = pflash_new(&fh2.host, &store);
	if (q == NULL)
		tap_bail("pflash_new");
	pflash_free(p);
	tap_ok(store.host == &fh2.host, "the new flash keeps the store");
	TAP_EQ(rd(q, 3 * BS + 5, 1), 0x42u, "a reset keeps what was written");
	TAP_EQ(store.ndirty, 2u, "... and what is still to write back");
	TAP_EQ(wb_flush(&store, &w), 2u, "the write-back takes two blocks");
	TAP_EQ(store.ndirty, 0u, "then none is dirty");

	wr(q, 0, 1, 0x10);
	wr(q, 9, 1, 0x00);
	wr(q, 0, 1, 0xff);
	TAP_EQ(w.calls, 2u, "dirty() again once all were clean");
	pflash_free(q);
	tap_ok(store.host == NULL, "a freed flash leaves the store");
	locks = fh2.locks;
	TAP_EQ(wb_flush(&store, &w), 1u,
	    "the last block written back after the flash is gone");
	TAP_EQ(fh2.locks, locks, "... without a lock");

	if (pflash_store_init(&again, w.file, SIZE, BS, false) != 0 ||
	    (q = pflash_new(&fh.host, &again)) == NULL)
		tap_bail("pflash_new");
	for (size_t i = 0; i < SIZE; i++)
		same &= rd(q, i, 1) == store.image[i];
	tap_ok(same, "a flash made from the file reads what the first held");
	TAP_EQ(rd(q, 3 * BS + 5, 1), 0x42u, "the programmed byte persisted");
	TAP_EQ(rd(q, 3 * BS + 6, 1), 0xffu, "the erase persisted");
	tap_ok(memcmp(w.file + 2 * BS, image + 2 * BS, BS) == 0,
	    "a block never touched was never written");
	pflash_free(q);
	pflash_store_fini(&again);
	pflash_store_fini(&store);
}

static void
test_ovmf_template(void)
{
	const char *path = getenv("VMMD_TEST_OVMF_VARS");
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	static uint8_t vars[4u << 20];
	uint8_t buf[BS];
	struct pflash *p;
	size_t n, off;
	FILE *f;

	if (path == NULL)
		path = "/usr/share/OVMF/OVMF_VARS_4M.fd";
	f = fopen(path, "re");
	if (f == NULL) {
		tap_ok(1, "OVMF's template # SKIP %s: not installed", path);
		return;
	}
	n = fread(vars, 1, sizeof(vars), f);
	fclose(f);
	TAP_EQ(pflash_store_init(&store, vars, n, BS, false), 0,
	    "%s: %zu bytes make a flash of 4 KiB blocks", path, n);
	if (store.image == NULL)
		return;
	if ((p = pflash_new(&fh.host, &store)) == NULL)
		tap_bail("pflash_new");
	TAP_EQ(rd(p, 0x28, 4), 0x4856465fu, "its \"_FVH\" reads at 0x28");
	for (off = 0; off < BS; off++)
		if (vars[off] != 0 && vars[off] != 0x50 && vars[off] != 0x70)
			break;
	tap_ok(off < BS && ovmf_probe(p, off),
	    "OVMF's probe at 0x%zx finds a writable flash", off);
	wr(p, 0, 1, 0x98);
	TAP_EQ(rd(p, 0x2d, 2) + 1, n / BS, "the query table's block count");
	wr(p, 0, 1, 0x20);
	wr(p, n - 1, 1, 0xd0);
	wr(p, 0, 1, 0x10);
	wr(p, n - 1, 1, 0x42);
	tap_ok(pflash_store_take_dirty(&store, buf) == (int64_t)(n - BS) &&
	    buf[BS - 1] == 0x42 && buf[0] == 0xff &&
	    pflash_store_take_dirty(&store, buf) == -ENOENT,
	    "the last block erased and programmed is the one dirty block");
	unmake(p);
}

/* What the store's owner is told: the modes reads move between. */
struct array_calls {
	unsigned int on, off;
	bool last;
};

static void
array_cb(void *opaque, bool on)
{
	struct array_calls *c = opaque;

	if (on)
		c->on++;
	else
		c->off++;
	c->last = on;
}

/*
 * The owner that maps the image for reads hears of every way out of
 * read-array mode and back, once each, and of nothing else: a program
 * (OVMF's QemuFlashWrite: setup and data per byte, then read array)
 * costs one way out and one back; the image is page-aligned.
 */
static void
test_array_calls(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct array_calls c = { 0 };
	struct pflash *p;

	p = make(&fh, false);
	store.array = array_cb;
	store.array_opaque = &c;
	TAP_EQ((uintptr_t)store.image % 4096, 0u, "the image starts a page");
	wr(p, 0, 1, 0xff);
	TAP_EQ(c.on + c.off, 0u, "read array in read-array mode: no call");
	for (unsigned int i = 0; i < 8; i++) {
		wr(p, 0x40 + i, 1, 0x10);
		wr(p, 0x40 + i, 1, 0x00);
	}
	TAP_EQ(c.off, 1u, "eight byte programs: out of read-array once");
	TAP_EQ(c.on, 0u, "... and not back yet");
	wr(p, 0x47, 1, 0xff);
	TAP_EQ(c.on, 1u, "read array: back, once");
	tap_ok(c.last, "... the last call says so");
	wr(p, 0, 1, 0x50);
	TAP_EQ(c.on + c.off, 2u, "clear status keeps the mode: no call");
	wr(p, 0, 1, 0x98);
	wr(p, 0, 1, 0x70);
	wr(p, 0, 1, 0x90);
	TAP_EQ(c.off, 2u, "query, status, ID: one way out");
	wr(p, BS, 1, 0x20);
	wr(p, BS, 1, 0xd0);
	wr(p, 0, 1, 0xff);
	tap_ok(c.off == 2 && c.on == 2 && c.last,
	    "an erase from ID mode, then read array: one way back");
	unmake(p);
}

int
main(void)
{
	fill_image();
	test_geometry();
	test_read_array();
	test_query();
	test_program();
	test_erase();
	test_bad_sequences();
	test_past_end();
	test_ovmf_probe();
	test_persistence();
	test_ovmf_template();
	test_array_calls();
	return tap_done();
}
