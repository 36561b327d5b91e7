/*
 * The linear framebuffer: finding it and drawing into it.
 *
 * The platform puts a display's framebuffer at FB_ADDR, x8r8g8b8 (bits
 * 23:16 red, 15:8 green, 7:0 blue), stride = width * 4, and lists it in
 * the PVH memory map as a reserved range; the width and height come from
 * "fb=WxH" on the command line (default 1024x768).  A guest with no such
 * range has no display and draws nothing.
 *
 * For QEMU, where PVH boot puts nothing at FB_ADDR, "fbaddr=0xADDR" names
 * the standard VGA's linear framebuffer instead (with -device VGA or
 * -vga std, its BAR 0, usually 0xfd000000); the Bochs VBE registers then
 * set the mode.
 *
 * Every fill is REP STOSQ and every copy REP MOVSQ, one row at a time:
 * an emulator of CPL0 code decodes a string instruction once, two pixels
 * an element, where a loop of stores would cost a few emulated
 * instructions a pixel.  Whether it still pays something per element is
 * the emulator's business; README.md has the counts.
 */
#include "rt.h"

#define FB_DEFAULT_W	1024
#define FB_DEFAULT_H	768
#define FB_MAX_DIM	16384

/* Bochs VBE "DISPI" registers (QEMU's std VGA, hw/display/vga.c). */
#define VBE_INDEX	0x1ce
#define VBE_DATA	0x1cf
#define VBE_ID		0
#define VBE_XRES	1
#define VBE_YRES	2
#define VBE_BPP		3
#define VBE_ENABLE	4
#define VBE_VIRT_W	6
#define VBE_ID_MIN	0xb0c0
#define VBE_ID_MAX	0xb0c5
#define VBE_ENABLED	0x01
#define VBE_LFB		0x40

/* A decimal or 0x-prefixed hexadecimal number; *end past its digits. */
static uint64_t
fb_number(const char *s, const char **end)
{
	uint64_t v = 0;
	unsigned d;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (s += 2;; s++) {
			if (*s >= '0' && *s <= '9')
				d = *s - '0';
			else if (*s >= 'a' && *s <= 'f')
				d = *s - 'a' + 10;
			else if (*s >= 'A' && *s <= 'F')
				d = *s - 'A' + 10;
			else
				break;
			v = v << 4 | d;
		}
	} else {
		for (; *s >= '0' && *s <= '9'; s++)
			v = v * 10 + (*s - '0');
	}
	*end = s;
	return v;
}

static const char *
fb_geometry(uint32_t *w, uint32_t *h)
{
	char buf[24];
	const char *p;
	uint64_t x, y;

	*w = FB_DEFAULT_W;
	*h = FB_DEFAULT_H;
	if (!cmdline_get("fb", buf, sizeof(buf)))
		return NULL;
	x = fb_number(buf, &p);
	if (*p != 'x' || x == 0 || x > FB_MAX_DIM)
		return "fb= wants WIDTHxHEIGHT";
	y = fb_number(p + 1, &p);
	if (*p != '\0' || y == 0 || y > FB_MAX_DIM)
		return "fb= wants WIDTHxHEIGHT";
	*w = (uint32_t)x;
	*h = (uint32_t)y;
	return NULL;
}

static uint16_t
vbe_read(uint16_t index)
{
	outw(VBE_INDEX, index);
	return inw(VBE_DATA);
}

/*
 * The Bochs VBE mode set, only when the registers answer.  The card may
 * round the mode (widths to a multiple of 8): read back what it took.
 */
static const char *
fb_bochs_mode(uint32_t *w, uint32_t *h, uint32_t *pitch)
{
	uint16_t id;

	id = vbe_read(VBE_ID);
	if (id < VBE_ID_MIN || id > VBE_ID_MAX)
		return "fbaddr= given, but no Bochs VBE registers";
	outw(VBE_INDEX, VBE_ENABLE);
	outw(VBE_DATA, 0);
	outw(VBE_INDEX, VBE_XRES);
	outw(VBE_DATA, (uint16_t)*w);
	outw(VBE_INDEX, VBE_YRES);
	outw(VBE_DATA, (uint16_t)*h);
	outw(VBE_INDEX, VBE_BPP);
	outw(VBE_DATA, 32);
	outw(VBE_INDEX, VBE_VIRT_W);
	outw(VBE_DATA, (uint16_t)*w);
	outw(VBE_INDEX, VBE_ENABLE);
	outw(VBE_DATA, VBE_ENABLED | VBE_LFB);
	*w = vbe_read(VBE_XRES);
	*h = vbe_read(VBE_YRES);
	*pitch = vbe_read(VBE_VIRT_W);
	if (*w == 0 || *h == 0 || *pitch < *w)
		return "the Bochs VBE registers refused the mode";
	return NULL;
}

const char *
fb_find(struct fb *fb)
{
	const struct hvm_start_info *si = boot_start_info();
	const struct hvm_memmap_entry *mm;
	const char *why, *end;
	uint64_t need, addr = 0, size = 0;
	char buf[24];
	uint32_t i, w, h, pitch;

	memset(fb, 0, sizeof(*fb));
	if ((why = fb_geometry(&w, &h)) != NULL)
		return why;
	pitch = w;
	need = (uint64_t)w * h * 4;
	if (cmdline_get("fbaddr", buf, sizeof(buf))) {
		addr = fb_number(buf, &end);
		if (*end != '\0' || addr == 0 || (addr & 0xfff) != 0 ||
		    addr + need > 0x100000000ull)
			return "fbaddr= wants a page-aligned address "
			    "below 4 GiB";
		if ((why = fb_bochs_mode(&w, &h, &pitch)) != NULL)
			return why;
		size = (uint64_t)pitch * h * 4;
	} else {
		if (si == NULL || si->version < 1 || si->memmap_paddr == 0)
			return "no memory map";
		mm = phys_ptr(si->memmap_paddr);
		for (i = 0; i < si->memmap_entries; i++)
			if (mm[i].addr == FB_ADDR && mm[i].type == 2) {
				addr = FB_ADDR;
				size = mm[i].size;
			}
		if (addr == 0)
			return "no reserved memory map range at 0xd0000000";
		if (size < need)
			return "reserved range too small for fb=WxH";
	}
	fb->base = phys_ptr(addr);
	fb->phys = addr;
	fb->size = size;
	fb->width = w;
	fb->height = h;
	fb->pitch = pitch;
	return NULL;
}

/* n pixels of rgb from dst, two at a time. */
static void
fb_stos(uint32_t *dst, uint32_t n, uint32_t rgb)
{
	uint64_t q = (uint64_t)rgb << 32 | rgb;
	uint64_t nq = n / 2;

	__asm__ volatile("rep stosq" : "+D"(dst), "+c"(nq) : "a"(q) :
	    "memory");
	if (n & 1)
		*dst = rgb;
}

/* n pixels from src to dst. */
static void
fb_movs(uint32_t *dst, const uint32_t *src, uint32_t n)
{
	uint64_t nq = n / 2;

	__asm__ volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(nq) : :
	    "memory");
	if (n & 1)
		*dst = *src;
}

/* Clip [x, x + w) x [y, y + h) to the screen; false if nothing is left. */
static bool
fb_clip(const struct fb *fb, uint32_t *x, uint32_t *y, uint32_t *w,
    uint32_t *h)
{
	if (fb->base == NULL || *x >= fb->width || *y >= fb->height)
		return false;
	if (*w > fb->width - *x)
		*w = fb->width - *x;
	if (*h > fb->height - *y)
		*h = fb->height - *y;
	return *w > 0 && *h > 0;
}

void
fb_fill(const struct fb *fb, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
    uint32_t rgb)
{
	uint32_t *row;

	if (!fb_clip(fb, &x, &y, &w, &h))
		return;
	row = fb->base + (size_t)y * fb->pitch + x;
	/* The whole width: one string instruction for all of it. */
	if (x == 0 && w == fb->width && fb->pitch == fb->width) {
		fb_stos(row, w * h, rgb);
		return;
	}
	for (; h > 0; h--, row += fb->pitch)
		fb_stos(row, w, rgb);
}

/*
 * One character of the 5x7 font in a cell of 6x8 dots (a blank column
 * and row to separate it from the next), each dot scale x scale pixels.
 * Each row of dots is drawn once as runs of one colour and copied to the
 * scale - 1 pixel rows below it.
 */
void
fb_glyph(const struct fb *fb, uint32_t x, uint32_t y, char c,
    unsigned scale, uint32_t fg, uint32_t bg)
{
	const uint8_t *g = font5x7(c);
	uint32_t cw = FONT_CELL_W * scale, ch = FONT_CELL_H * scale;
	uint32_t w = cw, h = ch, *row, start, col, bits, on, k;
	unsigned r;

	if (scale == 0 || !fb_clip(fb, &x, &y, &w, &h) || w != cw || h != ch)
		return;		/* only whole characters */
	row = fb->base + (size_t)y * fb->pitch + x;
	for (r = 0; r < FONT_CELL_H; r++) {
		/* Bit 5 - n: column n; column 5 and row 7 are blank. */
		bits = r < 7 ? (uint32_t)g[r] << 1 : 0;
		for (col = 0; col < FONT_CELL_W; col = start) {
			on = (bits >> (5 - col)) & 1;
			for (start = col + 1; start < FONT_CELL_W &&
			    ((bits >> (5 - start)) & 1) == on; start++)
				;
			fb_stos(row + col * scale, (start - col) * scale,
			    on ? fg : bg);
		}
		for (k = 1; k < scale; k++)
			fb_movs(row + (size_t)k * fb->pitch, row, cw);
		row += (size_t)scale * fb->pitch;
	}
}

void
fb_text(const struct fb *fb, uint32_t x, uint32_t y, const char *s,
    unsigned scale, uint32_t fg, uint32_t bg)
{
	for (; *s != '\0'; s++, x += FONT_CELL_W * scale)
		fb_glyph(fb, x, y, *s, scale, fg, bg);
}
