/* See fw-cfg.h. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "fw-cfg.h"

/* A directory entry: size, select, reserved, name; big-endian. */
#define FW_CFG_DIR_ENTRY	(4 + 2 + 2 + FW_CFG_NAME_MAX)
#define FW_CFG_ENTRIES		(FW_CFG_MAX_ITEMS + 3)

struct fw_cfg_entry {
	uint16_t key;
	const uint8_t *data;
	uint32_t len;
	int (*prepare)(void *opaque);	/* NULL: nothing to prepare */
	void *opaque;
	bool prepared;
};

struct fw_cfg {
	const struct device_host *host;
	/* The device's own items, then the board's; found by key. */
	struct fw_cfg_entry entry[FW_CFG_ENTRIES];
	unsigned int nentries;
	uint8_t signature[4];
	uint8_t features[4];
	uint8_t *dir;		/* the file directory, built at creation */

	/* What the guest set. */
	uint16_t selector;
	const struct fw_cfg_entry *cur;	/* NULL: no such item */
	uint32_t offset;	/* into cur's bytes */
	uint32_t dma_high;	/* the descriptor address's high half */
	/*
	 * Set by a load: the items prepared before the snapshot are built
	 * again before the guest reads the next byte of any item (not at
	 * the load: the devices the tables describe load after this one).
	 */
	bool rebuild;
	/* Each entry's prepared flag, as its state section holds them. */
	uint32_t nprepared;
	uint8_t prepared[FW_CFG_ENTRIES];

	void (*first_dma)(void *opaque);	/* fw_cfg_on_first_dma() */
	void *first_dma_opaque;

	/* Diagnostics. */
	uint64_t dma_transfers;
	uint64_t dma_errors;	/* answered with the error bit */
	uint64_t dma_dropped;	/* the descriptor was not in guest RAM */
	uint64_t prepared_selects;	/* selects of items with prepare */
	uint64_t prepare_calls;
	uint64_t prepare_errors;
};

static void
fw_cfg_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
fw_cfg_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint32_t
fw_cfg_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
fw_cfg_be64(const uint8_t *p)
{
	return (uint64_t)fw_cfg_be32(p) << 32 | fw_cfg_be32(p + 4);
}

/* The first select of an item to prepare prepares its whole group. */
static void
fw_cfg_prepare(struct fw_cfg *fc, struct fw_cfg_entry *e)
{
	int (*prepare)(void *) = e->prepare;
	void *opaque = e->opaque;

	fc->prepared_selects++;
	if (e->prepared)
		return;
	for (unsigned int i = 0; i < fc->nentries; i++)
		if (fc->entry[i].prepare == prepare &&
		    fc->entry[i].opaque == opaque)
			fc->entry[i].prepared = true;
	fc->prepare_calls++;
	if (prepare(opaque) < 0)
		fc->prepare_errors++;
}

/*
 * After a load: prepare again each group that was prepared, so that the
 * guest reads the bytes it would have read without the snapshot.
 */
static void
fw_cfg_rebuild(struct fw_cfg *fc)
{
	struct fw_cfg_entry *e, *g;
	unsigned int i, j;
	bool done;

	if (!fc->rebuild)
		return;
	fc->rebuild = false;
	for (i = 0; i < fc->nentries; i++) {
		e = &fc->entry[i];
		if (e->prepare == NULL || !e->prepared)
			continue;
		/* Once per group: at its first prepared entry. */
		done = false;
		for (j = 0; j < i && !done; j++) {
			g = &fc->entry[j];
			done = g->prepared && g->prepare == e->prepare &&
			    g->opaque == e->opaque;
		}
		if (done)
			continue;
		fc->prepare_calls++;
		if (e->prepare(e->opaque) < 0)
			fc->prepare_errors++;
	}
}

static void
fw_cfg_select(struct fw_cfg *fc, uint16_t selector)
{
	uint16_t key = selector & ~FW_CFG_WRITE_BIT;

	fw_cfg_rebuild(fc);
	fc->selector = selector;
	fc->offset = 0;
	fc->cur = NULL;
	for (unsigned int i = 0; i < fc->nentries; i++)
		if (fc->entry[i].key == key) {
			fc->cur = &fc->entry[i];
			break;
		}
	if (fc->cur != NULL && fc->cur->prepare != NULL)
		fw_cfg_prepare(fc, &fc->entry[fc->cur - fc->entry]);
}

/* The current item's bytes left from the offset on (0 past its end). */
static uint32_t
fw_cfg_left(const struct fw_cfg *fc)
{
	if (fc->cur == NULL || fc->offset >= fc->cur->len)
		return 0;
	return fc->cur->len - fc->offset;
}

static uint8_t
fw_cfg_data_byte(struct fw_cfg *fc)
{
	fw_cfg_rebuild(fc);
	if (fw_cfg_left(fc) == 0)
		return 0;
	return fc->cur->data[fc->offset++];
}

/*
 * Carry out the descriptor at gpa and answer in its control word: 0, or
 * the error bit.  A descriptor outside guest RAM cannot be answered: it
 * is dropped (a firmware that waits on it has pointed at nothing).
 */
static void
fw_cfg_dma(struct fw_cfg *fc, uint64_t gpa)
{
	uint8_t d[FW_CFG_DMA_DESC_SIZE], *desc, *buf;
	uint32_t control, len, n;
	uint64_t addr;
	bool error = false;

	desc = device_guest_mem(fc->host, gpa, sizeof(d));
	if (desc == NULL) {
		fc->dma_dropped++;
		return;
	}
	/* One copy: the guest may change the descriptor meanwhile. */
	memcpy(d, desc, sizeof(d));
	control = fw_cfg_be32(d);
	len = fw_cfg_be32(d + 4);
	addr = fw_cfg_be64(d + 8);
	if (fc->dma_transfers++ == 0 && fc->first_dma != NULL)
		fc->first_dma(fc->first_dma_opaque);

	fw_cfg_rebuild(fc);
	if (control & FW_CFG_DMA_SELECT)
		fw_cfg_select(fc, control >> 16);
	if (control & FW_CFG_DMA_WRITE) {
		error = true;	/* no item takes guest data */
	} else if (control & FW_CFG_DMA_READ) {
		/* Past the item's end the guest reads zeros (QEMU does). */
		n = fw_cfg_left(fc);
		if (n > len)
			n = len;
		buf = len == 0 ? NULL : device_guest_mem(fc->host, addr, len);
		if (len != 0 && buf == NULL) {
			error = true;
		} else if (len != 0) {
			if (n != 0)
				memcpy(buf, fc->cur->data + fc->offset, n);
			memset(buf + n, 0, len - n);
			device_guest_written(fc->host, buf, len);
			fc->offset += n;
		}
	} else if (control & FW_CFG_DMA_SKIP) {
		n = fw_cfg_left(fc);
		fc->offset += n < len ? n : len;
	}
	if (error)
		fc->dma_errors++;

	/* Look the descriptor up again: the answer goes where it is now. */
	desc = device_guest_mem(fc->host, gpa, sizeof(d));
	if (desc == NULL) {
		fc->dma_dropped++;
		return;
	}
	fw_cfg_put_be32(d, error ? FW_CFG_DMA_ERROR : 0);
	memcpy(desc, d, 4);
	device_guest_written(fc->host, desc, 4);
}

static void
fw_cfg_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct fw_cfg *fc = dev;
	uint8_t *out = data;

	/* A wider read at the data port reads that many bytes in turn. */
	for (unsigned int i = 0; i < size; i++) {
		uint64_t off = offset + i;

		if (offset == FW_CFG_DATA_OFFSET) {
			out[i] = fw_cfg_data_byte(fc);
		} else if (offset >= FW_CFG_DMA_OFFSET &&
		    off < FW_CFG_DMA_OFFSET + 8) {
			/*
			 * The signature as a big-endian register: byte i of
			 * a read is the value's i-th least significant one.
			 */
			unsigned int first = offset - FW_CFG_DMA_OFFSET;
			unsigned int shift = (8 - first - size + i) * 8;

			out[i] = first + size <= 8 ?
			    FW_CFG_DMA_SIGNATURE >> shift : 0;
		} else {
			out[i] = 0;
		}
	}
}

static void
fw_cfg_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct fw_cfg *fc = dev;
	const uint8_t *in = data;

	if (offset == FW_CFG_SEL_OFFSET && size >= 2) {
		fw_cfg_select(fc, in[0] | in[1] << 8);
	} else if (offset == FW_CFG_DMA_OFFSET && size == 4) {
		fc->dma_high = fw_cfg_be32(in);
	} else if (offset == FW_CFG_DMA_OFFSET + 4 && size == 4) {
		/* The low half starts the transfer; the high half is spent. */
		uint64_t gpa = (uint64_t)fc->dma_high << 32 | fw_cfg_be32(in);

		fc->dma_high = 0;
		fw_cfg_dma(fc, gpa);
	}
	/* Data port writes and other sizes: dropped (items are read-only). */
}

static void
fw_cfg_diag(void *dev, struct device_diag *d)
{
	struct fw_cfg *fc = dev;

	device_diag_put(d, "selector", fc->selector, DEVICE_DIAG_HEX);
	device_diag_put(d, "offset", fc->offset, DEVICE_DIAG_UINT);
	device_diag_put(d, "dma_transfers", fc->dma_transfers,
	    DEVICE_DIAG_UINT);
	device_diag_put(d, "dma_errors", fc->dma_errors, DEVICE_DIAG_UINT);
	device_diag_put(d, "dma_dropped", fc->dma_dropped, DEVICE_DIAG_UINT);
	device_diag_put(d, "prepared_selects", fc->prepared_selects,
	    DEVICE_DIAG_UINT);
	device_diag_put(d, "prepare_calls", fc->prepare_calls,
	    DEVICE_DIAG_UINT);
	device_diag_put(d, "prepare_errors", fc->prepare_errors,
	    DEVICE_DIAG_UINT);
}

static int
fw_cfg_add(struct fw_cfg *fc, uint16_t key, const void *data, uint32_t len)
{
	for (unsigned int i = 0; i < fc->nentries; i++)
		if (fc->entry[i].key == key)
			return -EINVAL;
	fc->entry[fc->nentries++] = (struct fw_cfg_entry){ key, data, len,
	    NULL, NULL, false };
	return 0;
}

static int
fw_cfg_build(struct fw_cfg *fc, const struct fw_cfg_item *items,
    unsigned int n)
{
	unsigned int nfiles = 0, f = 0;
	uint8_t *e;

	if (n > FW_CFG_MAX_ITEMS)
		return -EINVAL;
	memcpy(fc->signature, "QEMU", 4);
	fc->features[0] = FW_CFG_F_TRADITIONAL | FW_CFG_F_DMA;
	for (unsigned int i = 0; i < n; i++) {
		if (items[i].name == NULL) {
			if (items[i].key <= FW_CFG_ID ||
			    items[i].key == FW_CFG_FILE_DIR ||
			    items[i].key >= FW_CFG_FILE_FIRST)
				return -EINVAL;
			continue;
		}
		if (strnlen(items[i].name, FW_CFG_NAME_MAX) >= FW_CFG_NAME_MAX)
			return -EINVAL;
		for (unsigned int j = 0; j < i; j++)
			if (items[j].name != NULL &&
			    strcmp(items[i].name, items[j].name) == 0)
				return -EINVAL;
		nfiles++;
	}

	fc->dir = calloc(1, 4 + (size_t)nfiles * FW_CFG_DIR_ENTRY);
	if (fc->dir == NULL)
		return -ENOMEM;
	fw_cfg_put_be32(fc->dir, nfiles);
	(void)fw_cfg_add(fc, FW_CFG_SIGNATURE, fc->signature, 4);
	(void)fw_cfg_add(fc, FW_CFG_ID, fc->features, 4);
	(void)fw_cfg_add(fc, FW_CFG_FILE_DIR, fc->dir,
	    4 + nfiles * FW_CFG_DIR_ENTRY);
	for (unsigned int i = 0; i < n; i++) {
		uint16_t key = items[i].key;

		if (items[i].name != NULL) {
			key = FW_CFG_FILE_FIRST + f;
			e = fc->dir + 4 + (size_t)f++ * FW_CFG_DIR_ENTRY;
			fw_cfg_put_be32(e, items[i].len);
			fw_cfg_put_be16(e + 4, key);
			memcpy(e + 8, items[i].name, strlen(items[i].name));
		}
		if (fw_cfg_add(fc, key, items[i].data, items[i].len) < 0)
			return -EINVAL;
		fc->entry[fc->nentries - 1].prepare = items[i].prepare;
		fc->entry[fc->nentries - 1].opaque = items[i].opaque;
	}
	return 0;
}

struct fw_cfg *
fw_cfg_new(const struct device_host *host, const struct fw_cfg_item *items,
    unsigned int n)
{
	struct fw_cfg *fc;
	int r;

	fc = calloc(1, sizeof(*fc));
	if (fc == NULL)
		return NULL;
	fc->host = host;
	r = fw_cfg_build(fc, items, n);
	if (r < 0) {
		fw_cfg_free(fc);
		errno = -r;
		return NULL;
	}
	fw_cfg_select(fc, FW_CFG_SIGNATURE);
	return fc;
}

void
fw_cfg_on_first_dma(struct fw_cfg *fc, void (*fn)(void *opaque),
    void *opaque)
{
	fc->first_dma = fn;
	fc->first_dma_opaque = opaque;
}

void
fw_cfg_free(struct fw_cfg *fc)
{
	if (fc == NULL)
		return;
	free(fc->dir);
	free(fc);
}

/*
 * The guest's registers and which items were prepared.  The prepared
 * bytes are not kept: they are built again from the loaded machine
 * (fw_cfg_rebuild), the same bytes as long as what they describe (the
 * PM block's address) has not moved since they were first built.  The
 * items themselves are the board's, made from the VM's definition.
 */
static const struct dev_state_field fw_cfg_state_fields[] = {
	{ "selector", DEV_STATE_U16, DEV_STATE_AT(struct fw_cfg, selector) },
	{ "offset", DEV_STATE_U32, DEV_STATE_AT(struct fw_cfg, offset) },
	{ "dma_high", DEV_STATE_U32, DEV_STATE_AT(struct fw_cfg, dma_high) },
	{ "prepared", DEV_STATE_ARRAY_U8, DEV_STATE_VARLEN,
	    DEV_STATE_AT(struct fw_cfg, prepared),
	    .count_offset = offsetof(struct fw_cfg, nprepared), .max = 1 },
	{ "dma_transfers", DEV_STATE_U64,
	    DEV_STATE_AT(struct fw_cfg, dma_transfers) },
	{ "dma_errors", DEV_STATE_U64,
	    DEV_STATE_AT(struct fw_cfg, dma_errors) },
	{ "dma_dropped", DEV_STATE_U64,
	    DEV_STATE_AT(struct fw_cfg, dma_dropped) },
	{ "prepared_selects", DEV_STATE_U64,
	    DEV_STATE_AT(struct fw_cfg, prepared_selects) },
	{ "prepare_calls", DEV_STATE_U64,
	    DEV_STATE_AT(struct fw_cfg, prepare_calls) },
	{ "prepare_errors", DEV_STATE_U64,
	    DEV_STATE_AT(struct fw_cfg, prepare_errors) },
};

static const struct fw_cfg_entry *
fw_cfg_find(const struct fw_cfg *fc, uint16_t selector)
{
	uint16_t key = selector & ~FW_CFG_WRITE_BIT;

	for (unsigned int i = 0; i < fc->nentries; i++)
		if (fc->entry[i].key == key)
			return &fc->entry[i];
	return NULL;
}

/*
 * On the loaded copy, whose items are this device's: one flag per item,
 * a prepared flag only where there is something to prepare, the offset
 * within the selected item (an unknown selector has offset 0).
 */
static int
fw_cfg_state_check(const void *state, struct dev_state_error *err)
{
	const struct fw_cfg *fc = state;
	const struct fw_cfg_entry *e;

	if (fc->nprepared != fc->nentries)
		return dev_state_fail(err, -EINVAL, "%u items where the "
		    "device has %u", fc->nprepared, fc->nentries);
	for (unsigned int i = 0; i < fc->nentries; i++)
		if (fc->prepared[i] != 0 && fc->entry[i].prepare == NULL)
			return dev_state_fail(err, -EINVAL, "item 0x%x "
			    "prepared but has nothing to prepare",
			    fc->entry[i].key);
	e = fw_cfg_find(fc, fc->selector);
	if (fc->offset > (e != NULL ? e->len : 0))
		return dev_state_fail(err, -EINVAL, "offset %u past "
		    "item 0x%x's end", fc->offset, fc->selector);
	return 0;
}

const struct dev_state_table fw_cfg_state_table = {
	DEV_STATE_TABLE("fw-cfg", 1, struct fw_cfg, fw_cfg_state_fields),
	.check = fw_cfg_state_check,
};

static int
fw_cfg_save(void *dev, struct dev_state_buf *out)
{
	struct fw_cfg *fc = dev;

	fc->nprepared = fc->nentries;
	for (unsigned int i = 0; i < fc->nentries; i++)
		fc->prepared[i] = fc->entry[i].prepared;
	return dev_state_save(&fw_cfg_state_table, fc, out);
}

static int
fw_cfg_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct fw_cfg *fc = dev;
	int rc;

	rc = dev_state_load(&fw_cfg_state_table, fc, buf, len, err);
	if (rc < 0)
		return rc;
	fc->cur = fw_cfg_find(fc, fc->selector);
	for (unsigned int i = 0; i < fc->nentries; i++)
		fc->entry[i].prepared = fc->prepared[i] != 0;
	fc->rebuild = true;
	return 0;
}

static void
fw_cfg_ops_free(void *dev)
{
	fw_cfg_free(dev);
}

const struct device_ops fw_cfg_device_ops = {
	.name = "fw-cfg",
	.read = fw_cfg_read,
	.write = fw_cfg_write,
	.diag = fw_cfg_diag,
	.save = fw_cfg_save,
	.load = fw_cfg_load,
	.free = fw_cfg_ops_free,
};
