/* See bochs-display.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bochs-display.h"
#include "dev-state.h"
#include "edid.h"
#include "pci-config.h"

#define BOCHS_QEXT_LEN		8	/* BOCHS_QEXT_SIZE's value */

struct bochs_display {
	const struct device_host *host;
	struct pci_config pc;
	uint64_t vram_size;
	uint8_t *rom;			/* rom_size bytes, zero past the image */
	uint32_t rom_size;
	uint8_t edid[EDID_BLOCK_LEN];	/* all zeros: none */

	uint16_t reg[BOCHS_DISPI_NREGS];
	struct bochs_display_mode mode;

	uint64_t mode_sets;		/* modes enabled */
	uint64_t bad_writes;		/* register writes out of range */
	uint64_t bad_modes;		/* enables (or changes) refused */
	uint64_t bad_accesses;		/* sizes, offsets, BARs we lack */
	uint64_t bad_offset;		/* the last one's, as the bus gives it */
	uint64_t vga_accesses;		/* to the VGA ports we do not have */
	uint64_t edid_reads;		/* of the EDID's area */
};

/* An access no register takes, at offset (PCI_BAR_OFFSET(bar) + ...). */
static void
bochs_display_bad(struct bochs_display *b, uint64_t offset)
{
	b->bad_accesses++;
	b->bad_offset = offset;
}

/*
 * The mode the registers describe, if it is one we show: 32 bits per
 * pixel, the virtual width at least the visible one, and every visible
 * pixel (offsets included) inside the framebuffer.  Arithmetic in 64
 * bits: each factor is at most 16 bits.
 */
static bool
bochs_display_check(const struct bochs_display *b,
    struct bochs_display_mode *m)
{
	uint64_t xres = b->reg[BOCHS_DISPI_XRES];
	uint64_t yres = b->reg[BOCHS_DISPI_YRES];
	uint64_t vw = b->reg[BOCHS_DISPI_VIRT_WIDTH];
	uint64_t xoff = b->reg[BOCHS_DISPI_X_OFFSET];
	uint64_t yoff = b->reg[BOCHS_DISPI_Y_OFFSET];
	uint64_t stride, offset;

	if (xres == 0 || yres == 0 || b->reg[BOCHS_DISPI_BPP] != 32)
		return false;
	if (vw < xres)
		vw = xres;
	if (xoff + xres > vw)
		return false;
	stride = vw * 4;
	offset = yoff * stride + xoff * 4;
	if (offset + (yres - 1) * stride + xres * 4 > b->vram_size)
		return false;
	*m = (struct bochs_display_mode){
		.enabled = true,
		.width = (uint32_t)xres,
		.height = (uint32_t)yres,
		.bpp = 32,
		.stride = (uint32_t)stride,
		.offset = offset,
	};
	return true;
}

/*
 * After a write to a mode register or ENABLE: the mode shown, or none.
 * A mode refused clears ENABLED, so that the guest reads back that it
 * did not take.  enabling: the write set ENABLED.
 */
static void
bochs_display_update(struct bochs_display *b, bool enabling)
{
	struct bochs_display_mode m;

	if (!(b->reg[BOCHS_DISPI_ENABLE] & BOCHS_DISPI_ENABLED)) {
		memset(&b->mode, 0, sizeof(b->mode));
		return;
	}
	if (!bochs_display_check(b, &m)) {
		b->bad_modes++;
		b->reg[BOCHS_DISPI_ENABLE] &= (uint16_t)~BOCHS_DISPI_ENABLED;
		memset(&b->mode, 0, sizeof(b->mode));
		return;
	}
	if (!b->mode.enabled || enabling)
		b->mode_sets++;
	b->mode = m;
}

static uint16_t
bochs_display_dispi_read(const struct bochs_display *b, unsigned int index)
{
	bool caps = (b->reg[BOCHS_DISPI_ENABLE] & BOCHS_DISPI_GETCAPS) != 0;
	uint64_t stride;

	switch (index) {
	case BOCHS_DISPI_XRES:
		return caps ? BOCHS_DISPLAY_MAX_XRES : b->reg[index];
	case BOCHS_DISPI_YRES:
		return caps ? BOCHS_DISPLAY_MAX_YRES : b->reg[index];
	case BOCHS_DISPI_BPP:
		return caps ? 32 : b->reg[index];
	case BOCHS_DISPI_VIRT_WIDTH:
		if (b->mode.enabled)
			return (uint16_t)(b->mode.stride / 4);
		return b->reg[index];
	case BOCHS_DISPI_VIRT_HEIGHT:
		/* As many lines as the memory holds at this width. */
		if (!b->mode.enabled)
			return b->reg[index];
		stride = b->mode.stride;
		return (uint16_t)(b->vram_size / stride > 0xffff ? 0xffff :
		    b->vram_size / stride);
	case BOCHS_DISPI_VIDEO_MEMORY_64K:
		return (uint16_t)(b->vram_size >> 16);
	default:
		return index < BOCHS_DISPI_NREGS ? b->reg[index] : 0;
	}
}

static void
bochs_display_dispi_write(struct bochs_display *b, unsigned int index,
    uint16_t v)
{
	uint16_t old;
	bool ok = true;

	switch (index) {
	case BOCHS_DISPI_ID:
		ok = v >= BOCHS_DISPI_ID0 && v <= BOCHS_DISPI_ID5;
		break;
	case BOCHS_DISPI_XRES:
		ok = v <= BOCHS_DISPLAY_MAX_XRES;
		break;
	case BOCHS_DISPI_YRES:
		ok = v <= BOCHS_DISPLAY_MAX_YRES;
		break;
	case BOCHS_DISPI_BPP:
		/* 0 is "the default" to bochs: 8, which we lack. */
		ok = v == 32;
		break;
	case BOCHS_DISPI_BANK:
		/* 64 KiB banks of a window we do not have: kept, checked. */
		ok = (uint64_t)v << 16 < b->vram_size;
		break;
	case BOCHS_DISPI_ENABLE:
	case BOCHS_DISPI_VIRT_WIDTH:
	case BOCHS_DISPI_X_OFFSET:
	case BOCHS_DISPI_Y_OFFSET:
		break;
	default:
		/* VIRT_HEIGHT and VIDEO_MEMORY_64K are computed. */
		ok = false;
		break;
	}
	if (!ok) {
		b->bad_writes++;
		return;
	}
	old = b->reg[BOCHS_DISPI_ENABLE];
	b->reg[index] = v;
	if (index == BOCHS_DISPI_ID || index == BOCHS_DISPI_BANK)
		return;
	bochs_display_update(b, index == BOCHS_DISPI_ENABLE &&
	    (v & BOCHS_DISPI_ENABLED) && !(old & BOCHS_DISPI_ENABLED));
}

/*
 * QEMU's standard VGA has its VGA ports in its MMIO BAR at 0x400 (port
 * 0x3c0 + i at 0x400 + i), and SeaBIOS's VGA BIOS touches them on a
 * bochs-display too (the attribute controller, as it sets a mode).
 * There is no VGA here: they read as ones and take nothing, counted
 * apart from accesses that are a guest's mistake.
 */
static bool
bochs_display_vga(struct bochs_display *b, uint64_t off)
{
	if (off < BOCHS_DISPLAY_VGA || off >= BOCHS_DISPLAY_VGA + 0x20)
		return false;
	b->vga_accesses++;
	return true;
}

/* BAR 2 at off, size bytes: DISPI registers are 16 bits wide. */
static void
bochs_display_mmio_read(struct bochs_display *b, uint64_t off, void *data,
    unsigned int size)
{
	uint32_t v;

	if (bochs_display_vga(b, off)) {
		memset(data, 0xff, size);
		return;
	}
	/* The EDID, then zeros (the bus gave data zeroed: mmio_read). */
	if (off < BOCHS_DISPLAY_VGA) {
		b->edid_reads++;
		if (off < EDID_BLOCK_LEN)
			memcpy(data, b->edid + off, off + size <=
			    EDID_BLOCK_LEN ? size : EDID_BLOCK_LEN - off);
		return;
	}

	if (off >= BOCHS_DISPLAY_DISPI &&
	    off < BOCHS_DISPLAY_DISPI + 2 * BOCHS_DISPI_NREGS && size == 2) {
		uint16_t r = bochs_display_dispi_read(b,
		    (unsigned int)(off - BOCHS_DISPLAY_DISPI) / 2);

		memcpy(data, &r, 2);
		return;
	}
	if (off >= BOCHS_DISPLAY_QEXT &&
	    off < BOCHS_DISPLAY_QEXT + BOCHS_QEXT_LEN && size == 4) {
		v = off - BOCHS_DISPLAY_QEXT == BOCHS_QEXT_SIZE ?
		    BOCHS_QEXT_LEN : BOCHS_QEXT_LITTLE;
		memcpy(data, &v, 4);
		return;
	}
	bochs_display_bad(b, PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + off);
}

static void
bochs_display_mmio_write(struct bochs_display *b, uint64_t off,
    const void *data, unsigned int size)
{
	uint32_t v = 0;

	if (bochs_display_vga(b, off))
		return;
	memcpy(&v, data, size);
	if (off >= BOCHS_DISPLAY_DISPI &&
	    off < BOCHS_DISPLAY_DISPI + 2 * BOCHS_DISPI_NREGS && size == 2) {
		bochs_display_dispi_write(b,
		    (unsigned int)(off - BOCHS_DISPLAY_DISPI) / 2,
		    (uint16_t)v);
		return;
	}
	/* Little endian stays; big endian is refused. */
	if (off == BOCHS_DISPLAY_QEXT + BOCHS_QEXT_ENDIAN && size == 4) {
		if (v != BOCHS_QEXT_LITTLE)
			b->bad_writes++;
		return;
	}
	bochs_display_bad(b, PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + off);
}

static bool
bochs_display_access_ok(uint64_t off, unsigned int size, uint64_t len)
{
	return (size == 1 || size == 2 || size == 4 || size == 8) &&
	    off % size == 0 && off < len && size <= len - off;
}

static void
bochs_display_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct bochs_display *b = dev;
	uint64_t off = PCI_BAR_REL(offset);

	memset(data, 0xff, size);
	switch (PCI_BAR_OF(offset)) {
	case BOCHS_DISPLAY_MMIO_BAR:
		if (bochs_display_access_ok(off, size,
		    BOCHS_DISPLAY_MMIO_SIZE)) {
			memset(data, 0, size);
			bochs_display_mmio_read(b, off, data, size);
			return;
		}
		break;
	case PCI_ROM_BAR:
		if (b->rom != NULL &&
		    bochs_display_access_ok(off, size, b->rom_size)) {
			memcpy(data, b->rom + off, size);
			return;
		}
		break;
	default:
		/* The framebuffer while the machine has not mapped it. */
		break;
	}
	bochs_display_bad(b, offset);
}

static void
bochs_display_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
	struct bochs_display *b = dev;
	uint64_t off = PCI_BAR_REL(offset);

	if (PCI_BAR_OF(offset) == BOCHS_DISPLAY_MMIO_BAR &&
	    bochs_display_access_ok(off, size, BOCHS_DISPLAY_MMIO_SIZE) &&
	    size <= 4) {
		bochs_display_mmio_write(b, off, data, size);
		return;
	}
	bochs_display_bad(b, offset);
}

static struct pci_config *
bochs_display_pci(void *dev)
{
	struct bochs_display *b = dev;

	return &b->pc;
}

static void
bochs_display_diag(void *dev, struct device_diag *d)
{
	struct bochs_display *b = dev;

	device_diag_put(d, "enabled", b->mode.enabled, DEVICE_DIAG_BOOL);
	device_diag_put(d, "width", b->mode.width, DEVICE_DIAG_UINT);
	device_diag_put(d, "height", b->mode.height, DEVICE_DIAG_UINT);
	device_diag_put(d, "bpp", b->mode.bpp, DEVICE_DIAG_UINT);
	device_diag_put(d, "stride", b->mode.stride, DEVICE_DIAG_UINT);
	device_diag_put(d, "offset", b->mode.offset, DEVICE_DIAG_HEX);
	device_diag_put(d, "vram_size", b->vram_size, DEVICE_DIAG_UINT);
	device_diag_put(d, "rom_size", b->rom_size, DEVICE_DIAG_UINT);
	device_diag_put(d, "mode_sets", b->mode_sets, DEVICE_DIAG_UINT);
	device_diag_put(d, "bad_writes", b->bad_writes, DEVICE_DIAG_UINT);
	device_diag_put(d, "bad_modes", b->bad_modes, DEVICE_DIAG_UINT);
	device_diag_put(d, "bad_accesses", b->bad_accesses,
	    DEVICE_DIAG_UINT);
	device_diag_put(d, "bad_offset", b->bad_offset, DEVICE_DIAG_HEX);
	device_diag_put(d, "vga_accesses", b->vga_accesses,
	    DEVICE_DIAG_UINT);
	device_diag_put(d, "edid_reads", b->edid_reads, DEVICE_DIAG_UINT);
}

void
bochs_display_get_mode(const struct bochs_display *b,
    struct bochs_display_mode *mode)
{
	*mode = b->mode;
}

struct bochs_display *
bochs_display_new(const struct device_host *host,
    const struct bochs_display_config *cfg)
{
	const struct pci_ids ids = {
		.vendor = 0x1234,
		.device = 0x1111,
		.class_code = 0x030000,		/* VGA-compatible display */
		.revision = 2,
		.subsys_vendor = 0x1af4,
		.subsys = 0x1100,
	};
	struct bochs_display *b;
	uint32_t rom_size = 2048;

	if (cfg->vram_size < (1u << 20) || cfg->vram_size > (1u << 30) ||
	    (cfg->vram_size & (cfg->vram_size - 1)) != 0 ||
	    cfg->rom_len > (16u << 20) || (cfg->rom == NULL) !=
	    (cfg->rom_len == 0))
		return NULL;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->host = host;
	b->vram_size = cfg->vram_size;
	pci_config_init(&b->pc, &ids);
	if (pci_config_add_bar(&b->pc, BOCHS_DISPLAY_FB_BAR, PCI_BAR_MEM32,
	    cfg->vram_size) < 0 ||
	    pci_config_add_bar(&b->pc, BOCHS_DISPLAY_MMIO_BAR, PCI_BAR_MEM32,
	    BOCHS_DISPLAY_MMIO_SIZE) < 0)
		goto fail;
	/* The framebuffer is memory: prefetchable (PCI 3.0 6.2.5.1). */
	b->pc.cfg[PCI_BAR0 + 4 * BOCHS_DISPLAY_FB_BAR] |= 0x8;
	if (cfg->rom != NULL) {
		while (rom_size < cfg->rom_len)
			rom_size *= 2;
		if ((b->rom = calloc(1, rom_size)) == NULL ||
		    pci_config_add_rom(&b->pc, rom_size) < 0)
			goto fail;
		memcpy(b->rom, cfg->rom, cfg->rom_len);
		b->rom_size = rom_size;
	}
	if (cfg->edid_width != 0 && edid_build(b->edid, cfg->edid_width,
	    cfg->edid_height) < 0)
		memset(b->edid, 0, sizeof(b->edid));
	b->reg[BOCHS_DISPI_ID] = BOCHS_DISPI_ID5;
	b->reg[BOCHS_DISPI_BPP] = 32;
	return b;

fail:
	bochs_display_free(b);
	return NULL;
}

void
bochs_display_free(struct bochs_display *b)
{
	if (b == NULL)
		return;
	free(b->rom);
	free(b);
}

/*
 * The config space (a copy: pci_config_load checks its read-only bits
 * against this function's), the DISPI registers and the counters.  The
 * mode shown is not kept: it is what the registers say.  Where the
 * framebuffer is follows BAR 0 (the machine moves its slot when
 * pcibus_sync() maps the BARs after a load).
 */
struct bochs_display_state {
	uint8_t cfg[PCI_CONFIG_SIZE];
	uint16_t reg[BOCHS_DISPI_NREGS];
	uint64_t mode_sets;
	uint64_t bad_writes;
	uint64_t bad_modes;
	uint64_t bad_accesses;
	uint64_t bad_offset;
	uint64_t vga_accesses;
	uint64_t edid_reads;
};

#define BOCHS_STATE_U64(nm, member)					\
	{ nm, DEV_STATE_U64, DEV_STATE_AT(struct bochs_display_state, member) }

static const struct dev_state_field bochs_display_state_fields[] = {
	{ "cfg", DEV_STATE_BYTES,
	    DEV_STATE_AT(struct bochs_display_state, cfg) },
	{ "dispi", DEV_STATE_ARRAY_U16,
	    DEV_STATE_AT(struct bochs_display_state, reg) },
	BOCHS_STATE_U64("mode_sets", mode_sets),
	BOCHS_STATE_U64("bad_writes", bad_writes),
	BOCHS_STATE_U64("bad_modes", bad_modes),
	BOCHS_STATE_U64("bad_accesses", bad_accesses),
	BOCHS_STATE_U64("bad_offset", bad_offset),
	BOCHS_STATE_U64("vga_accesses", vga_accesses),
	BOCHS_STATE_U64("edid_reads", edid_reads),
};

/*
 * Each register holds what a write could have left there: the limits
 * bochs_display_dispi_write() puts on the guest (the bank's against the
 * memory is checked at load, where the size is known), the computed
 * ones never written.
 */
static int
bochs_display_state_check(const void *state, struct dev_state_error *err)
{
	const struct bochs_display_state *st = state;
	const uint16_t *r = st->reg;

	if (r[BOCHS_DISPI_ID] < BOCHS_DISPI_ID0 ||
	    r[BOCHS_DISPI_ID] > BOCHS_DISPI_ID5)
		return dev_state_fail(err, -EINVAL, "dispi id %#x",
		    r[BOCHS_DISPI_ID]);
	if (r[BOCHS_DISPI_XRES] > BOCHS_DISPLAY_MAX_XRES ||
	    r[BOCHS_DISPI_YRES] > BOCHS_DISPLAY_MAX_YRES)
		return dev_state_fail(err, -EINVAL, "dispi resolution "
		    "%ux%u", r[BOCHS_DISPI_XRES], r[BOCHS_DISPI_YRES]);
	if (r[BOCHS_DISPI_BPP] != 32)
		return dev_state_fail(err, -EINVAL, "dispi bpp %u",
		    r[BOCHS_DISPI_BPP]);
	if (r[BOCHS_DISPI_VIRT_HEIGHT] != 0 ||
	    r[BOCHS_DISPI_VIDEO_MEMORY_64K] != 0)
		return dev_state_fail(err, -EINVAL, "a computed dispi "
		    "register kept a value");
	return 0;
}

const struct dev_state_table bochs_display_state_table = {
	DEV_STATE_TABLE("bochs-display", 1, struct bochs_display_state,
	    bochs_display_state_fields),
	.check = bochs_display_state_check,
};

static int
bochs_display_save(void *dev, struct dev_state_buf *out)
{
	struct bochs_display *b = dev;
	struct bochs_display_state st = {
		.mode_sets = b->mode_sets, .bad_writes = b->bad_writes,
		.bad_modes = b->bad_modes, .bad_accesses = b->bad_accesses,
		.bad_offset = b->bad_offset, .vga_accesses = b->vga_accesses,
		.edid_reads = b->edid_reads,
	};

	memcpy(st.cfg, b->pc.cfg, sizeof(st.cfg));
	memcpy(st.reg, b->reg, sizeof(st.reg));
	return dev_state_save(&bochs_display_state_table, &st, out);
}

/*
 * An enabled mode must be one this display shows (its memory's size is
 * the instance's): a section with one it would have refused is refused.
 */
static int
bochs_display_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct bochs_display *b = dev;
	struct bochs_display_state *st;
	struct bochs_display_mode mode = { 0 };
	struct bochs_display probe;
	int rc;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	rc = dev_state_load(&bochs_display_state_table, st, buf, len, err);
	if (rc < 0)
		goto out;
	rc = -EINVAL;
	if ((uint64_t)st->reg[BOCHS_DISPI_BANK] << 16 >= b->vram_size) {
		(void)dev_state_fail(err, rc, "dispi bank %u beyond the "
		    "memory", st->reg[BOCHS_DISPI_BANK]);
		goto out;
	}
	probe = *b;
	memcpy(probe.reg, st->reg, sizeof(probe.reg));
	if ((st->reg[BOCHS_DISPI_ENABLE] & BOCHS_DISPI_ENABLED) &&
	    !bochs_display_check(&probe, &mode)) {
		(void)dev_state_fail(err, rc, "dispi: an enabled mode the "
		    "display does not show");
		goto out;
	}
	if ((rc = pci_config_load(&b->pc, st->cfg, err)) < 0)
		goto out;
	memcpy(b->reg, st->reg, sizeof(b->reg));
	b->mode = mode;
	b->mode_sets = st->mode_sets;
	b->bad_writes = st->bad_writes;
	b->bad_modes = st->bad_modes;
	b->bad_accesses = st->bad_accesses;
	b->bad_offset = st->bad_offset;
	b->vga_accesses = st->vga_accesses;
	b->edid_reads = st->edid_reads;
	rc = 0;
out:
	free(st);
	return rc;
}

static void
bochs_display_free_op(void *dev)
{
	bochs_display_free(dev);
}

const struct device_ops bochs_display_device_ops = {
	.name = "bochs-display",
	.read = bochs_display_read,
	.write = bochs_display_write,
	.diag = bochs_display_diag,
	.pci = bochs_display_pci,
	.save = bochs_display_save,
	.load = bochs_display_load,
	.free = bochs_display_free_op,
};
