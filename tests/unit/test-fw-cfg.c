/*
 * fw_cfg: the selector and data ports, the file directory, and the DMA
 * interface with reads of every size across item ends, skip, select,
 * refused writes and descriptors or buffers outside guest RAM; items
 * prepared at their first select (once per group, the same bytes after,
 * again in a device made anew as at reset).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"
#include "fw-cfg.h"
#include "tap.h"
#include "unit-util.h"

#define RAM_BASE	0x1000ULL
#define RAM_SIZE	0x10000ULL
#define DESC		0x2000ULL	/* where the tests put descriptors */
#define BUF		0x3000ULL	/* and the buffers they read into */

static const uint8_t e820[40] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
	30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40 };
static const char bootorder[] = "";
static const uint8_t sercon[2] = { 0xf8, 0x03 };
static const uint8_t ncpus[2] = { 2, 0 };

static const struct fw_cfg_item items[] = {
	{ .key = FW_CFG_NB_CPUS, .data = ncpus, .len = 2 },
	{ .name = "etc/e820", .data = e820, .len = sizeof(e820) },
	{ .name = "bootorder", .data = bootorder, .len = 0 },
	{ .name = "etc/sercon-port", .data = sercon, .len = 2 },
};

struct host {
	struct fake_host fh;
	struct fw_cfg *fc;
	uint8_t ram[RAM_SIZE];
};

static void
outw_sel(struct host *h, uint16_t sel)
{
	uint8_t b[2] = { (uint8_t)sel, (uint8_t)(sel >> 8) };

	fw_cfg_device_ops.write(h->fc, FW_CFG_SEL_OFFSET, b, 2);
}

static uint8_t
inb_data(struct host *h)
{
	uint8_t v;

	fw_cfg_device_ops.read(h->fc, FW_CFG_DATA_OFFSET, &v, 1);
	return v;
}

static void
be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint32_t
getbe32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint8_t *
ram(struct host *h, uint64_t gpa)
{
	return h->ram + (gpa - RAM_BASE);
}

/* Kick the DMA interface at gpa as SeaBIOS does (low half only) or in halves. */
static void
dma_kick(struct host *h, uint64_t gpa, bool halves)
{
	uint8_t b[4];

	if (halves) {
		be32(b, gpa >> 32);
		fw_cfg_device_ops.write(h->fc, FW_CFG_DMA_OFFSET, b, 4);
	}
	be32(b, (uint32_t)gpa);
	fw_cfg_device_ops.write(h->fc, FW_CFG_DMA_OFFSET + 4, b, 4);
}

/* Write a descriptor at DESC, run it; returns its control word after. */
static uint32_t
dma(struct host *h, uint32_t control, uint32_t len, uint64_t addr)
{
	uint8_t *d = ram(h, DESC);

	be32(d, control);
	be32(d + 4, len);
	be32(d + 8, addr >> 32);
	be32(d + 12, (uint32_t)addr);
	dma_kick(h, DESC, true);
	return getbe32(d);
}

static void
host_init(struct host *h)
{
	fake_host_init(&h->fh);
	memset(h->ram, 0xee, sizeof(h->ram));
	h->fh.mem = h->ram;
	h->fh.mem_base = RAM_BASE;
	h->fh.mem_size = RAM_SIZE;
	h->fc = fw_cfg_new(&h->fh.host, items,
	    sizeof(items) / sizeof(items[0]));
	if (h->fc == NULL)
		tap_bail("fw_cfg_new failed");
}

static void
test_ports(struct host *h)
{
	char sig[5] = { 0 };
	uint8_t b[8], want[8];
	uint32_t v;

	/* Power-on: the signature is selected. */
	for (int i = 0; i < 4; i++)
		sig[i] = inb_data(h);
	tap_ok(strcmp(sig, "QEMU") == 0, "signature at power-on: %s", sig);
	TAP_EQ(inb_data(h), 0, "past the signature's end: zero");

	outw_sel(h, FW_CFG_ID);
	v = 0;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)inb_data(h) << (8 * i);
	TAP_EQ(v, FW_CFG_F_TRADITIONAL | FW_CFG_F_DMA,
	    "features: traditional and DMA (%#x)", v);

	outw_sel(h, FW_CFG_NB_CPUS);
	TAP_EQ(inb_data(h), 2, "nb_cpus from the board");
	outw_sel(h, FW_CFG_NB_CPUS);
	TAP_EQ(inb_data(h), 2, "selecting again restarts at offset 0");

	outw_sel(h, 0x1234);
	tap_ok(inb_data(h) == 0 && inb_data(h) == 0,
	    "a key without an item reads as zero");
	outw_sel(h, FW_CFG_NB_CPUS | FW_CFG_WRITE_BIT);
	TAP_EQ(inb_data(h), 2, "the write bit selects the same item");
	b[0] = 0x55;
	outw_sel(h, FW_CFG_NB_CPUS);
	fw_cfg_device_ops.write(h->fc, FW_CFG_DATA_OFFSET, b, 1);
	TAP_EQ(inb_data(h), 2, "a data port write changes nothing");

	/* A one-byte write at the selector is not a selection. */
	outw_sel(h, FW_CFG_NB_CPUS);
	b[0] = FW_CFG_SIGNATURE;
	fw_cfg_device_ops.write(h->fc, FW_CFG_SEL_OFFSET, b, 1);
	TAP_EQ(inb_data(h), 2, "a byte write at the selector is dropped");

	/* The DMA port's signature, as a big-endian register. */
	memcpy(want, "QEMU CFG", 8);
	fw_cfg_device_ops.read(h->fc, FW_CFG_DMA_OFFSET, b, 4);
	tap_ok(b[0] == 'U' && b[1] == 'M' && b[2] == 'E' && b[3] == 'Q',
	    "inl at 0x514 is 0x51454d55 (\"QEMU\")");
	fw_cfg_device_ops.read(h->fc, FW_CFG_DMA_OFFSET + 4, b, 4);
	tap_ok(b[0] == 'G' && b[1] == 'F' && b[2] == 'C' && b[3] == ' ',
	    "inl at 0x518 is \" CFG\"");
	for (int i = 0; i < 8; i++)
		fw_cfg_device_ops.read(h->fc, FW_CFG_DMA_OFFSET + i, &b[i], 1);
	tap_ok(memcmp(b, want, 8) == 0, "bytes at 0x514-0x51b spell QEMU CFG");
}

static void
test_directory(struct host *h)
{
	uint8_t dir[4 + 3 * 64];
	uint32_t n;
	bool ok = true;

	outw_sel(h, FW_CFG_FILE_DIR);
	for (size_t i = 0; i < sizeof(dir); i++)
		dir[i] = inb_data(h);
	n = getbe32(dir);
	TAP_EQ(n, 3, "directory: three files (%u)", n);
	for (unsigned int i = 0; i < 3 && n == 3; i++) {
		const uint8_t *e = dir + 4 + i * 64;
		const struct fw_cfg_item *it = &items[i + 1];
		uint16_t sel = (uint16_t)(e[4] << 8 | e[5]);

		if (getbe32(e) != it->len || sel != FW_CFG_FILE_FIRST + i ||
		    strcmp((const char *)e + 8, it->name) != 0) {
			tap_diag("entry %u: size %u select %#x name %.56s", i,
			    getbe32(e), sel, (const char *)e + 8);
			ok = false;
		}
	}
	tap_ok(ok, "directory entries: big-endian size and select, names");

	outw_sel(h, FW_CFG_FILE_FIRST + 2);
	tap_ok(inb_data(h) == 0xf8 && inb_data(h) == 0x03,
	    "etc/sercon-port by its selector: 0x3f8");
	outw_sel(h, FW_CFG_FILE_FIRST + 3);
	TAP_EQ(inb_data(h), 0, "one past the last file: zero");
}

static void
test_dma_read(struct host *h)
{
	bool ok = true;

	/* Every length from 0 to past the end, from offset 0. */
	for (uint32_t len = 0; len <= sizeof(e820) + 8; len++) {
		uint32_t c;

		memset(ram(h, BUF), 0xee, 64);
		outw_sel(h, FW_CFG_FILE_FIRST);
		c = dma(h, FW_CFG_DMA_READ, len, BUF);
		for (uint32_t i = 0; i < len; i++) {
			uint8_t want = i < sizeof(e820) ? e820[i] : 0;

			if (*ram(h, BUF + i) != want)
				ok = false;
		}
		if (c != 0 || *ram(h, BUF + len) != 0xee) {
			tap_diag("len %u: control %#x, byte after %#x", len, c,
			    *ram(h, BUF + len));
			ok = false;
		}
	}
	tap_ok(ok, "DMA read of 0..%zu bytes: the item, then zeros, "
	    "nothing beyond", sizeof(e820) + 8);

	/* Reads continue where the last one stopped, across the end. */
	ok = true;
	outw_sel(h, FW_CFG_FILE_FIRST);
	for (uint32_t off = 0; off < sizeof(e820) + 6; off += 3) {
		memset(ram(h, BUF), 0xee, 8);
		if (dma(h, FW_CFG_DMA_READ, 3, BUF) != 0)
			ok = false;
		for (uint32_t i = 0; i < 3; i++)
			if (*ram(h, BUF + i) != (off + i < sizeof(e820) ?
			    e820[off + i] : 0))
				ok = false;
	}
	tap_ok(ok, "consecutive 3-byte DMA reads walk the item");

	/* Select in the descriptor; then the data port goes on from there. */
	memset(ram(h, BUF), 0xee, 8);
	TAP_EQ(dma(h, FW_CFG_DMA_SELECT | FW_CFG_DMA_READ |
	    (uint32_t)FW_CFG_SIGNATURE << 16, 2, BUF), 0, "select+read: ok");
	tap_ok(memcmp(ram(h, BUF), "QE", 2) == 0 && inb_data(h) == 'M',
	    "select+read read QE, the data port goes on with M");

	TAP_EQ(dma(h, FW_CFG_DMA_SELECT | FW_CFG_DMA_SKIP |
	    (uint32_t)FW_CFG_FILE_FIRST << 16, 10, 0), 0, "select+skip: ok");
	TAP_EQ(inb_data(h), e820[10], "skip moved the offset by 10");
	TAP_EQ(dma(h, FW_CFG_DMA_SKIP, 1000, 0), 0, "skip past the end: ok");
	TAP_EQ(inb_data(h), 0, "after it: zero");

	/* SeaBIOS's way: only the low half, high half left 0. */
	{
		uint8_t *d = ram(h, DESC);

		outw_sel(h, FW_CFG_SIGNATURE);
		be32(d, FW_CFG_DMA_READ);
		be32(d + 4, 4);
		be32(d + 8, 0);
		be32(d + 12, BUF);
		dma_kick(h, DESC, false);
		tap_ok(getbe32(d) == 0 && memcmp(ram(h, BUF), "QEMU", 4) == 0,
		    "a low-half write alone starts a transfer");
	}

	/* A zero-length read into nowhere is fine. */
	TAP_EQ(dma(h, FW_CFG_DMA_READ, 0, 0xdead00000000ULL), 0,
	    "a zero-length read at any address");
	/* Control 0: nothing to do, answered 0. */
	TAP_EQ(dma(h, 0, 16, BUF), 0, "an empty control word: done");
}

/* One of the device's diagnostics (fw_cfg_device_ops.diag). */
struct diag_one {
	struct device_diag d;
	const char *key;
	uint64_t value;
};

static void
diag_one_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_one *o = (struct diag_one *)d;

	if (strcmp(key, o->key) == 0)
		o->value = value;
}

static uint64_t
diag_value(struct host *h, const char *key)
{
	struct diag_one o = { .d = { .put = diag_one_put }, .key = key,
	    .value = UINT64_MAX };

	fw_cfg_device_ops.diag(h->fc, &o.d);
	return o.value;
}

static void
test_dma_bad(struct host *h)
{
	uint64_t before, errors = diag_value(h, "dma_errors");
	uint8_t *d;

	outw_sel(h, FW_CFG_FILE_FIRST);
	memset(ram(h, BUF), 0xee, 64);
	TAP_EQ(dma(h, FW_CFG_DMA_WRITE, 4, BUF), FW_CFG_DMA_ERROR,
	    "a DMA write is refused with the error bit");
	TAP_EQ(dma(h, FW_CFG_DMA_SELECT | FW_CFG_DMA_WRITE |
	    (uint32_t)FW_CFG_NB_CPUS << 16, 1, BUF), FW_CFG_DMA_ERROR,
	    "select+write: the error bit");
	outw_sel(h, FW_CFG_NB_CPUS);
	TAP_EQ(inb_data(h), 2, "the item is unchanged");

	outw_sel(h, FW_CFG_FILE_FIRST);
	TAP_EQ(dma(h, FW_CFG_DMA_READ, 16, RAM_BASE + RAM_SIZE - 8),
	    FW_CFG_DMA_ERROR, "a buffer running past RAM's end: error");
	TAP_EQ(dma(h, FW_CFG_DMA_READ, 4, RAM_BASE - 2), FW_CFG_DMA_ERROR,
	    "a buffer starting below RAM: error");
	TAP_EQ(dma(h, FW_CFG_DMA_READ, 0xffffffffu, BUF), FW_CFG_DMA_ERROR,
	    "a 4 GiB length: error");
	TAP_EQ(dma(h, FW_CFG_DMA_READ, 16, 0xfffffffffffffff8ULL),
	    FW_CFG_DMA_ERROR, "an address that wraps: error");
	TAP_EQ(*ram(h, RAM_BASE + RAM_SIZE - 8), 0xee,
	    "nothing was written by the failed reads");
	TAP_EQ(inb_data(h), e820[0], "failed reads did not move the offset");
	TAP_EQ(dma(h, FW_CFG_DMA_READ, 8, RAM_BASE + RAM_SIZE - 8), 0,
	    "a buffer ending exactly at RAM's end: ok");

	TAP_EQ(diag_value(h, "dma_errors"), errors + 6,
	    "each of the six refusals counted as an error");

	/* Descriptors outside RAM are dropped, and nothing is touched. */
	before = diag_value(h, "dma_dropped");
	dma_kick(h, RAM_BASE + RAM_SIZE - 8, true);
	dma_kick(h, 0xfffffffffffffff8ULL, true);
	dma_kick(h, 0, true);
	TAP_EQ(diag_value(h, "dma_dropped"), before + 3,
	    "descriptors outside RAM (across its end, wrapping, below it): "
	    "dropped and counted");
	d = ram(h, RAM_BASE + RAM_SIZE - 16);
	memset(d, 0, 16);
	be32(d, FW_CFG_DMA_READ);
	be32(d + 4, 4);
	be32(d + 12, BUF);
	dma_kick(h, RAM_BASE + RAM_SIZE - 16, true);
	TAP_EQ(getbe32(d), 0, "a descriptor in RAM's last 16 bytes: served");
}

/* A group of items prepared together: each build writes its number. */
struct prep {
	uint8_t a[4], b[2];
	unsigned int calls;
	int ret;
};

static int
prep_fill(void *opaque)
{
	struct prep *p = opaque;

	p->calls++;
	memset(p->a, (int)p->calls, sizeof(p->a));
	memset(p->b, 0x10 + (int)p->calls, sizeof(p->b));
	return p->ret;
}

static void
test_prepare(void)
{
	struct host *h = calloc(1, sizeof(*h));
	struct prep g = { .ret = 0 }, e = { .ret = -EIO };
	const struct fw_cfg_item it[] = {
		{ .name = "plain", .data = sercon, .len = 2 },
		{ .name = "etc/a", .data = g.a, .len = sizeof(g.a),
		    .prepare = prep_fill, .opaque = &g },
		{ .name = "etc/b", .data = g.b, .len = sizeof(g.b),
		    .prepare = prep_fill, .opaque = &g },
		{ .name = "etc/broken", .data = e.a, .len = sizeof(e.a),
		    .prepare = prep_fill, .opaque = &e },
	};
	const uint16_t a = FW_CFG_FILE_FIRST + 1, b = FW_CFG_FILE_FIRST + 2;
	uint8_t *buf;
	int round;

	if (h == NULL)
		tap_bail("out of memory");
	for (round = 0; round < 2; round++) {
		fake_host_init(&h->fh);
		h->fh.mem = h->ram;
		h->fh.mem_base = RAM_BASE;
		h->fh.mem_size = RAM_SIZE;
		h->fc = fw_cfg_new(&h->fh.host, it, 4);
		if (h->fc == NULL)
			tap_bail("fw_cfg_new failed");
		g.calls = 0;
		outw_sel(h, FW_CFG_FILE_DIR);
		outw_sel(h, FW_CFG_FILE_FIRST);
		TAP_EQ(g.calls, 0, "%s: the directory and a plain item "
		    "prepare nothing", round ? "made anew" : "made");
		outw_sel(h, a);
		tap_ok(g.calls == 1 && inb_data(h) == 1,
		    "the first select prepares the item (read %u)", g.a[0]);
		buf = ram(h, BUF);
		memset(buf, 0xee, 4);
		TAP_EQ(dma(h, FW_CFG_DMA_SELECT | (uint32_t)b << 16 |
		    FW_CFG_DMA_READ, 2, BUF), 0, "DMA select+read of the "
		    "other item of the group");
		tap_ok(g.calls == 1 && buf[0] == 0x11 && buf[1] == 0x11,
		    "the group was prepared once: the same bytes");
		outw_sel(h, a);
		tap_ok(g.calls == 1 && inb_data(h) == 1 && inb_data(h) == 1,
		    "a second select: the same bytes, not prepared again");
		outw_sel(h, FW_CFG_FILE_FIRST + 3);
		outw_sel(h, FW_CFG_FILE_FIRST + 3);
		tap_ok(e.calls == (unsigned int)round + 1 &&
		    diag_value(h, "prepare_errors") == 1,
		    "a failed prepare is counted, and not retried");
		tap_ok(diag_value(h, "prepare_calls") == 2 &&
		    diag_value(h, "prepared_selects") == 5,
		    "diagnostics: 2 prepares for 5 selects");
		fw_cfg_free(h->fc);
	}
	free(h);
}

static void
test_bad_items(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	char longname[FW_CFG_NAME_MAX + 1];
	struct fw_cfg_item bad[FW_CFG_MAX_ITEMS + 1];

	memset(longname, 'x', FW_CFG_NAME_MAX);
	longname[FW_CFG_NAME_MAX] = 0;
	bad[0] = (struct fw_cfg_item){ .name = longname };
	tap_ok(fw_cfg_new(&fh.host, bad, 1) == NULL, "a name too long");
	bad[0] = (struct fw_cfg_item){ .key = FW_CFG_SIGNATURE };
	tap_ok(fw_cfg_new(&fh.host, bad, 1) == NULL,
	    "a numbered item on the signature");
	bad[0] = (struct fw_cfg_item){ .key = FW_CFG_FILE_DIR };
	tap_ok(fw_cfg_new(&fh.host, bad, 1) == NULL,
	    "a numbered item on the directory");
	bad[0] = (struct fw_cfg_item){ .name = "a" };
	bad[1] = (struct fw_cfg_item){ .name = "a" };
	tap_ok(fw_cfg_new(&fh.host, bad, 2) == NULL, "a repeated name");
	for (unsigned int i = 0; i <= FW_CFG_MAX_ITEMS; i++)
		bad[i] = (struct fw_cfg_item){ .key = 0x100 + i };
	tap_ok(fw_cfg_new(&fh.host, bad, FW_CFG_MAX_ITEMS + 1) == NULL,
	    "too many items");
}

int
main(void)
{
	struct host *h = calloc(1, sizeof(*h));

	if (h == NULL)
		tap_bail("out of memory");
	host_init(h);
	test_ports(h);
	test_directory(h);
	test_dma_read(h);
	test_dma_bad(h);
	test_bad_items();
	test_prepare();
	fw_cfg_free(h->fc);
	free(h);
	return tap_done();
}
