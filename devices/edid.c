/* See edid.h.  Sections cited are VESA E-EDID Release A, Revision 2's. */
#include <errno.h>
#include <string.h>

#include "edid.h"

#define EDID_REFRESH_HZ		60
/* Reduced blanking: a fixed horizontal blank, sync and front porch. */
#define EDID_HBLANK		160
#define EDID_HFRONT		48
#define EDID_HSYNC		32
/* Vertical: front porch, sync, and at least 460 us of blanking. */
#define EDID_VFRONT		3
#define EDID_VSYNC		5
#define EDID_VBLANK_MIN		(EDID_VFRONT + EDID_VSYNC + 6)
#define EDID_VBLANK_NS		460000ULL
#define EDID_CLOCK_MIN		10000000ULL
/* The picture's size in millimetres, as a 96 dpi screen's. */
#define EDID_MM(px)		((px) * 254u / 960u)

static void
edid_le16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Three letters, five bits each, 'A' as 1 (3.4.1). */
static void
edid_vendor(uint8_t *p, const char id[3])
{
	uint16_t v = (uint16_t)(((id[0] - 'A' + 1) << 10) |
	    ((id[1] - 'A' + 1) << 5) | (id[2] - 'A' + 1));

	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * sRGB's primaries and D65 white as 10-bit binary fractions (3.7): the
 * two low bits of each packed in bytes 25 and 26, the high eight after.
 */
static void
edid_chroma(uint8_t *p)
{
	/* Red x, y; green x, y; blue x, y; white x, y; in 1/1024. */
	static const uint16_t c[8] = {
		655, 338, 307, 614, 154, 61, 320, 337,
	};

	p[0] = (uint8_t)(((c[0] & 3) << 6) | ((c[1] & 3) << 4) |
	    ((c[2] & 3) << 2) | (c[3] & 3));
	p[1] = (uint8_t)(((c[4] & 3) << 6) | ((c[5] & 3) << 4) |
	    ((c[6] & 3) << 2) | (c[7] & 3));
	for (int i = 0; i < 8; i++)
		p[2 + i] = (uint8_t)(c[i] >> 2);
}

struct edid_timing {
	uint32_t hactive, hblank, vactive, vblank;
	uint64_t clock_hz;		/* a multiple of 10 kHz */
};

/* width x height at EDID_REFRESH_HZ with reduced blanking. */
static void
edid_timing(struct edid_timing *t, uint32_t width, uint32_t height)
{
	uint64_t htotal = width + EDID_HBLANK, vtotal, line_ns;

	t->hactive = width;
	t->hblank = EDID_HBLANK;
	t->vactive = height;
	/* A line lasts 1 s / (refresh * vtotal); blank >= 460 us of them. */
	t->vblank = EDID_VBLANK_MIN;
	for (;;) {
		vtotal = height + t->vblank;
		line_ns = 1000000000ULL / (EDID_REFRESH_HZ * vtotal);
		if ((uint64_t)t->vblank * line_ns >= EDID_VBLANK_NS)
			break;
		t->vblank++;
	}
	vtotal = height + t->vblank;
	t->clock_hz = (htotal * vtotal * EDID_REFRESH_HZ + 9999) / 10000 *
	    10000;
	/* Below 10 MHz readers take a clock for garbage: refresh faster. */
	if (t->clock_hz < EDID_CLOCK_MIN)
		t->clock_hz = EDID_CLOCK_MIN;
}

/* The detailed timing descriptor (3.10.2), 18 bytes. */
static void
edid_dtd(uint8_t *p, const struct edid_timing *t)
{
	uint32_t hmm = EDID_MM(t->hactive), vmm = EDID_MM(t->vactive);

	edid_le16(p, (uint32_t)(t->clock_hz / 10000));
	p[2] = (uint8_t)t->hactive;
	p[3] = (uint8_t)t->hblank;
	p[4] = (uint8_t)(((t->hactive >> 8) << 4) | (t->hblank >> 8));
	p[5] = (uint8_t)t->vactive;
	p[6] = (uint8_t)t->vblank;
	p[7] = (uint8_t)(((t->vactive >> 8) << 4) | (t->vblank >> 8));
	p[8] = EDID_HFRONT;
	p[9] = EDID_HSYNC;
	p[10] = (EDID_VFRONT << 4) | EDID_VSYNC;
	p[11] = 0;			/* the high bits of the four above */
	p[12] = (uint8_t)hmm;
	p[13] = (uint8_t)vmm;
	p[14] = (uint8_t)(((hmm >> 8) << 4) | (vmm >> 8));
	p[15] = p[16] = 0;		/* no border */
	/* Digital separate sync, +hsync -vsync as reduced blanking has. */
	p[17] = 0x18 | 0x02;
}

/* The display range limits descriptor (3.10.3.3), covering t. */
static void
edid_range(uint8_t *p, const struct edid_timing *t)
{
	uint64_t hz = t->clock_hz / (t->hactive + t->hblank);
	uint64_t khz = (hz + 999) / 1000;
	uint64_t mhz10 = (t->clock_hz + 9999999) / 10000000;
	uint64_t vhz = hz / (t->vactive + t->vblank) + 1;

	p[3] = 0xfd;
	p[5] = EDID_REFRESH_HZ - 10;		/* vertical, Hz */
	p[6] = (uint8_t)(vhz > EDID_REFRESH_HZ + 15 ? vhz :
	    EDID_REFRESH_HZ + 15);
	p[7] = 1;				/* horizontal, kHz */
	p[8] = (uint8_t)(khz > 255 ? 255 : khz);
	p[9] = (uint8_t)(mhz10 > 255 ? 255 : mhz10);	/* 10 MHz units */
	p[10] = 0x01;				/* range limits only */
	p[11] = 0x0a;
	memset(p + 12, 0x20, 6);
}

/* A display descriptor of tag with text (at most 13 bytes). */
static void
edid_text(uint8_t *p, uint8_t tag, const char *text)
{
	size_t len = strlen(text);

	p[3] = tag;
	memset(p + 5, 0x20, 13);
	memcpy(p + 5, text, len);
	if (len < 13)
		p[5 + len] = 0x0a;
}

int
edid_build(uint8_t out[EDID_BLOCK_LEN], uint32_t width, uint32_t height)
{
	static const uint8_t header[8] = {
		0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00,
	};
	struct edid_timing t;
	uint8_t sum = 0;

	if (width < EDID_MIN_SIZE || width > EDID_MAX_SIZE ||
	    height < EDID_MIN_SIZE || height > EDID_MAX_SIZE)
		return -EINVAL;
	memset(out, 0, EDID_BLOCK_LEN);
	memcpy(out, header, sizeof(header));
	edid_vendor(out + 8, "VMD");
	edid_le16(out + 10, 1);		/* product code */
	/* Serial number 0; week 0 and a fixed year, not the clock's. */
	out[17] = 2026 - 1990;
	out[18] = 1;			/* version 1.4 */
	out[19] = 4;
	out[20] = 0x80;			/* digital, depth and port undefined */
	out[21] = (uint8_t)((EDID_MM(width) + 5) / 10);	/* cm */
	out[22] = (uint8_t)((EDID_MM(height) + 5) / 10);
	out[23] = 220 - 100;		/* gamma 2.2 */
	/* RGB 4:4:4, sRGB, the preferred timing is native (3.6.4). */
	out[24] = 0x04 | 0x02;
	edid_chroma(out + 25);
	/* No established timings (35-37); standard timings unused. */
	memset(out + 38, 0x01, 16);
	edid_timing(&t, width, height);
	edid_dtd(out + 54, &t);
	edid_range(out + 72, &t);
	edid_text(out + 90, 0xfc, "vmmd");
	out[108 + 3] = 0x10;		/* a dummy descriptor */
	out[126] = 0;			/* no extension blocks */
	for (int i = 0; i < EDID_BLOCK_LEN - 1; i++)
		sum += out[i];
	out[127] = (uint8_t)(0x100 - sum);
	return 0;
}
