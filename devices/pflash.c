/*
 * CFI parallel flash, Intel/Sharp command set, after the Intel
 * StrataFlash 28F128J3 datasheet ("Command Definitions", "Status
 * Register", "Read Identifier Codes") and JEDEC JESD68.01, Common Flash
 * Interface (the query structure, its sections 4.3 to 4.5, and the
 * Intel primary extended query of Intel AP-646).
 *
 * The device is x8 on a one-byte bus: every byte address is one flash
 * byte, and query offsets are byte offsets.  An access of 2, 4 or 8
 * bytes is that many byte accesses at once: a read returns each byte
 * address's answer, a write takes its command from the lowest byte and,
 * as program data, programs all of its bytes.
 *
 * Every guest write is hostile: an address past the image, a block out
 * of range or a command out of sequence sets error bits in the status
 * register and changes nothing else.
 */
#include <stdlib.h>
#include <string.h>

#include "pflash.h"

/* Commands (28F128J3, "Command Definitions"). */
#define CMD_PROGRAM		0x10
#define CMD_ERASE		0x20
#define CMD_PROGRAM_ALT		0x40
#define CMD_CLEAR_STATUS	0x50
#define CMD_READ_STATUS		0x70
#define CMD_READ_ID		0x90
#define CMD_QUERY		0x98
#define CMD_SUSPEND		0xb0
#define CMD_CONFIRM		0xd0	/* erase confirm; alone: resume */
#define CMD_READ_ARRAY		0xff

#define PFLASH_CFI_LEN		0x40
#define PFLASH_MIN_BLOCK	256u
#define PFLASH_MAX_BLOCK	(8u << 20)	/* 0x8000 units of 256 */
#define PFLASH_MAX_BLOCKS	65536u

/* What reads return. */
enum pflash_mode {
	PFLASH_MODE_ARRAY,
	PFLASH_MODE_STATUS,
	PFLASH_MODE_ID,
	PFLASH_MODE_QUERY,
};

/* What the next write is. */
enum pflash_cycle {
	PFLASH_CYCLE_COMMAND,
	PFLASH_CYCLE_PROGRAM,	/* after 0x10/0x40: the data */
	PFLASH_CYCLE_ERASE,	/* after 0x20: must be 0xd0 */
};

struct pflash {
	struct pflash_store *s;		/* the worker's; see pflash.h */

	enum pflash_mode mode;
	enum pflash_cycle cycle;
	uint8_t status;
	uint8_t cfi[PFLASH_CFI_LEN];

	/* Figures. */
	uint64_t programs;	/* program cycles that changed the image */
	uint64_t erases;
	uint64_t errors;	/* cycles that set an error bit */
};

static bool
pflash_block_dirty(const struct pflash_store *s, size_t b)
{
	return (s->bitmap[b / 64] >> (b % 64)) & 1;
}

/* Mark block b dirty; tell the owner when it is the first one. */
static void
pflash_dirty(struct pflash_store *s, size_t b, bool notify)
{
	if (pflash_block_dirty(s, b))
		return;
	s->bitmap[b / 64] |= UINT64_C(1) << (b % 64);
	if (s->ndirty++ == 0 && notify && s->dirty != NULL)
		s->dirty(s->opaque);
}

static void
pflash_error(struct pflash *p, uint8_t bits)
{
	p->status |= bits;
	p->errors++;
}

/*
 * Program len bytes of v at offset: each byte ANDs into the array, as
 * flash cells only go from 1 to 0 (a 1 over a 0 stays 0, no error, as
 * on the chip).  Outside the image: SR.4, nothing programmed.
 */
static void
pflash_program(struct pflash *p, uint64_t offset, const uint8_t *v,
    unsigned int len)
{
	bool changed = false;

	if (offset >= p->s->size || len > p->s->size - offset) {
		pflash_error(p, PFLASH_SR_PROG_ERR);
		return;
	}
	if (p->s->readonly) {
		pflash_error(p, PFLASH_SR_PROG_ERR | PFLASH_SR_LOCKED);
		return;
	}
	for (unsigned int i = 0; i < len; i++) {
		uint8_t *c = &p->s->image[offset + i];

		if ((*c & v[i]) != *c) {
			*c &= v[i];
			pflash_dirty(p->s, (offset + i) / p->s->block_size, true);
			changed = true;
		}
	}
	if (changed)
		p->programs++;
	p->status |= PFLASH_SR_READY;
}

/* Erase the block holding offset to 0xff; outside the image: SR.5. */
static void
pflash_erase(struct pflash *p, uint64_t offset)
{
	size_t b;

	if (offset >= p->s->size) {
		pflash_error(p, PFLASH_SR_ERASE_ERR);
		return;
	}
	if (p->s->readonly) {
		pflash_error(p, PFLASH_SR_ERASE_ERR | PFLASH_SR_LOCKED);
		return;
	}
	b = offset / p->s->block_size;
	memset(p->s->image + b * p->s->block_size, 0xff, p->s->block_size);
	pflash_dirty(p->s, b, true);
	p->erases++;
	p->status |= PFLASH_SR_READY;
}

static uint8_t
pflash_read_byte(const struct pflash *p, uint64_t addr)
{
	switch (p->mode) {
	case PFLASH_MODE_ARRAY:
		return addr < p->s->size ? p->s->image[addr] : 0xff;
	case PFLASH_MODE_STATUS:
		return p->status;
	case PFLASH_MODE_ID:
		/* Per block: manufacturer, device, lock status. */
		switch (addr % p->s->block_size) {
		case 0:
			return PFLASH_MANUFACTURER;
		case 1:
			return PFLASH_DEVICE_ID;
		case 2:
			return p->s->readonly ? 1 : 0;
		default:
			return 0;
		}
	case PFLASH_MODE_QUERY:
		return addr < PFLASH_CFI_LEN ? p->cfi[addr] : 0;
	}
	return 0xff;
}

static void
pflash_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct pflash *p = dev;
	uint8_t *d = data;

	for (unsigned int i = 0; i < size; i++)
		d[i] = offset + i < offset ? 0xff :
		    pflash_read_byte(p, offset + i);
}

/* What reads return from now on; tells the store's owner when reads
 * leave read-array mode or come back to it. */
static void
pflash_set_mode(struct pflash *p, enum pflash_mode mode)
{
	bool was = p->mode == PFLASH_MODE_ARRAY;
	bool is = mode == PFLASH_MODE_ARRAY;

	p->mode = mode;
	if (was != is && p->s->array != NULL)
		p->s->array(p->s->array_opaque, is);
}

static void
pflash_command(struct pflash *p, uint8_t cmd)
{
	switch (cmd) {
	case CMD_READ_ARRAY:
		pflash_set_mode(p, PFLASH_MODE_ARRAY);
		break;
	case CMD_READ_STATUS:
		pflash_set_mode(p, PFLASH_MODE_STATUS);
		break;
	case CMD_CLEAR_STATUS:
		/* Ready too: see pflash.h.  The read mode stays. */
		p->status = 0;
		break;
	case CMD_READ_ID:
		pflash_set_mode(p, PFLASH_MODE_ID);
		break;
	case CMD_QUERY:
		pflash_set_mode(p, PFLASH_MODE_QUERY);
		break;
	case CMD_PROGRAM:
	case CMD_PROGRAM_ALT:
		p->cycle = PFLASH_CYCLE_PROGRAM;
		pflash_set_mode(p, PFLASH_MODE_STATUS);
		break;
	case CMD_ERASE:
		p->cycle = PFLASH_CYCLE_ERASE;
		pflash_set_mode(p, PFLASH_MODE_STATUS);
		break;
	case CMD_SUSPEND:
	case CMD_CONFIRM:
		/* Nothing is ever in progress to suspend or resume. */
		pflash_set_mode(p, PFLASH_MODE_STATUS);
		break;
	default:
		/* Lock bits, buffered writes, protection registers: none. */
		pflash_error(p, PFLASH_SR_PROG_ERR | PFLASH_SR_ERASE_ERR);
		pflash_set_mode(p, PFLASH_MODE_STATUS);
		break;
	}
}

static void
pflash_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct pflash *p = dev;
	const uint8_t *d = data;
	enum pflash_cycle cycle = p->cycle;

	if (size == 0)
		return;
	p->cycle = PFLASH_CYCLE_COMMAND;
	switch (cycle) {
	case PFLASH_CYCLE_PROGRAM:
		pflash_program(p, offset, d, size);
		break;
	case PFLASH_CYCLE_ERASE:
		/* The confirm's address picks the block. */
		if (d[0] == CMD_CONFIRM)
			pflash_erase(p, offset);
		else
			pflash_error(p, PFLASH_SR_PROG_ERR |
			    PFLASH_SR_ERASE_ERR);
		break;
	case PFLASH_CYCLE_COMMAND:
		pflash_command(p, d[0]);
		break;
	}
}

/* JESD68.01 query structure and Intel's primary extended table. */
static void
pflash_cfi_init(struct pflash *p)
{
	uint8_t *q = p->cfi;
	uint32_t regions = (uint32_t)p->s->nblocks - 1;
	uint32_t units = p->s->block_size / 256;
	unsigned int order = 0;

	while (order < 63 && (UINT64_C(1) << order) < p->s->size)
		order++;
	q[0x00] = PFLASH_MANUFACTURER;
	q[0x01] = PFLASH_DEVICE_ID;
	memcpy(&q[0x10], "QRY", 3);
	q[0x13] = 0x01;		/* primary command set 0x0001 */
	q[0x15] = 0x31;		/* its extended table at 0x31 */
	q[0x1b] = 0x27;		/* Vcc 2.7 to 3.6 V, no Vpp */
	q[0x1c] = 0x36;
	q[0x1f] = 7;		/* byte program: 2^7 us typical */
	q[0x21] = 10;		/* block erase: 2^10 ms typical */
	q[0x23] = 4;		/* maxima: 2^4 times typical */
	q[0x25] = 4;
	q[0x27] = order;	/* 2^n bytes holds the image */
	/* 0x28: x8 asynchronous; 0x2a: no multi-byte write. */
	q[0x2c] = 1;		/* one erase block region */
	q[0x2d] = regions & 0xff;
	q[0x2e] = regions >> 8;
	q[0x2f] = units & 0xff;
	q[0x30] = units >> 8;
	memcpy(&q[0x31], "PRI10", 5);
	/* 0x36-0x3c: no optional features, no lock bits. */
	q[0x3d] = 0x33;		/* Vcc optimum 3.3 V */
}

int
pflash_store_init(struct pflash_store *s, const void *image, size_t size,
    uint32_t block_size, bool readonly)
{
	memset(s, 0, sizeof(*s));
	if (block_size < PFLASH_MIN_BLOCK || block_size > PFLASH_MAX_BLOCK ||
	    (block_size & (block_size - 1)) != 0 || size == 0 ||
	    size % block_size != 0 || size / block_size > PFLASH_MAX_BLOCKS ||
	    image == NULL)
		return -EINVAL;
	s->size = size;
	s->block_size = block_size;
	s->nblocks = size / block_size;
	s->readonly = readonly;
	/* Whole pages, page-aligned: a memory slot can map it. */
	s->image = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	s->bitmap = calloc((s->nblocks + 63) / 64, sizeof(uint64_t));
	if (s->image == NULL || s->bitmap == NULL) {
		pflash_store_fini(s);
		return -ENOMEM;
	}
	memcpy(s->image, image, size);
	return 0;
}

void
pflash_store_fini(struct pflash_store *s)
{
	if (s == NULL)
		return;
	free(s->image);
	free(s->bitmap);
	s->image = NULL;
	s->bitmap = NULL;
}

/* The lock of the flash using s, if one does: loop thread only. */
static void
pflash_store_lock(struct pflash_store *s)
{
	if (s->host != NULL)
		device_lock(s->host);
}

static void
pflash_store_unlock(struct pflash_store *s)
{
	if (s->host != NULL)
		device_unlock(s->host);
}

int64_t
pflash_store_take_dirty(struct pflash_store *s, void *buf)
{
	int64_t off = -ENOENT;

	pflash_store_lock(s);
	for (size_t w = 0; w < (s->nblocks + 63) / 64; w++) {
		size_t b;

		if (s->bitmap[w] == 0)
			continue;
		b = w * 64 + (size_t)__builtin_ctzll(s->bitmap[w]);
		s->bitmap[w] &= ~(UINT64_C(1) << (b % 64));
		s->ndirty--;
		memcpy(buf, s->image + b * s->block_size, s->block_size);
		off = (int64_t)(b * s->block_size);
		break;
	}
	pflash_store_unlock(s);
	return off;
}

int
pflash_store_mark_dirty(struct pflash_store *s, uint64_t offset)
{
	if (offset >= s->size)
		return -EINVAL;
	pflash_store_lock(s);
	pflash_dirty(s, offset / s->block_size, false);
	pflash_store_unlock(s);
	return 0;
}

struct pflash *
pflash_new(const struct device_host *host, struct pflash_store *s)
{
	struct pflash *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->s = s;
	p->mode = PFLASH_MODE_ARRAY;
	p->cycle = PFLASH_CYCLE_COMMAND;
	p->status = PFLASH_SR_READY;
	pflash_cfi_init(p);
	s->host = host;
	s->user = p;
	return p;
}

void
pflash_free(struct pflash *p)
{
	if (p == NULL)
		return;
	if (p->s->user == p) {
		p->s->user = NULL;
		p->s->host = NULL;
	}
	free(p);
}

/* The store's gauge, for the figure table. */
static uint64_t
pflash_fig_dirty(const void *src)
{
	return ((const struct pflash *)src)->s->ndirty;
}

static const struct figure pflash_figure_rows[] = {
	{ "programs", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Program cycles that cleared bits of the image",
	    FIGURE_AT(struct pflash, programs) },
	{ "erases", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Blocks erased", FIGURE_AT(struct pflash, erases) },
	{ "errors", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Cycles that set an error bit of the status register",
	    FIGURE_AT(struct pflash, errors) },
	{ "dirty_blocks", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Blocks changed and not yet written back",
	    .get = pflash_fig_dirty },
};

static const struct figure_table pflash_figures =
    FIGURE_TABLE(pflash_figure_rows);

static void
pflash_diag(void *dev, struct device_diag *d)
{
	struct pflash *p = dev;

	device_diag_put(d, "mode", p->mode, DEVICE_DIAG_UINT);
	device_diag_put(d, "status", p->status, DEVICE_DIAG_HEX);
	device_diag_figures(d, &pflash_figures, p);
}

static void
pflash_ops_free(void *dev)
{
	pflash_free(dev);
}

#define PFLASH_STATE(nm, ty, m, ...)					\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct pflash, m),	\
	    __VA_ARGS__ }

/*
 * The command state machine and the status register.  The array's
 * bytes are the store's (its owner keeps them, see pflash.h), and the
 * CFI table follows from the store's geometry.
 */
static const struct dev_state_field pflash_state_fields[] = {
	PFLASH_STATE("mode", DEV_STATE_U32, mode, .max = PFLASH_MODE_QUERY),
	PFLASH_STATE("cycle", DEV_STATE_U32, cycle,
	    .max = PFLASH_CYCLE_ERASE),
	PFLASH_STATE("status", DEV_STATE_U8, status),
	PFLASH_STATE("programs", DEV_STATE_U64, programs),
	PFLASH_STATE("erases", DEV_STATE_U64, erases),
	PFLASH_STATE("errors", DEV_STATE_U64, errors),
};

const struct dev_state_table pflash_state_table = {
	DEV_STATE_TABLE("pflash", 1, struct pflash, pflash_state_fields),
};

static int
pflash_save(void *dev, struct dev_state_buf *out)
{
	return dev_state_save(&pflash_state_table, dev, out);
}

static int
pflash_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	return dev_state_load(&pflash_state_table, dev, buf, len, err);
}

const struct device_ops pflash_device_ops = {
	.name = "pflash",
	.read = pflash_read,
	.write = pflash_write,
	.diag = pflash_diag,
	.save = pflash_save,
	.load = pflash_load,
	.free = pflash_ops_free,
};
