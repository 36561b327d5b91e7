/*
 * fb: draw a known picture into the framebuffer and show the keys typed
 * on the PS/2 keyboard, on the screen and on COM1; what a VNC test needs
 * to check pixels and input.
 *
 * The picture (W x H from "fb=WxH", default 1024x768; x8r8g8b8):
 *   four solid quadrants split at (W/2, H/2): red 0xff0000 top-left,
 *   green 0x00ff00 top-right, blue 0x0000ff bottom-left, white 0xffffff
 *   bottom-right.
 * Keys: every byte read from port 0x60 (scan code set 1, as the i8042
 * translates by default) is printed.  Each make code (0x02-0x7f; 0xe0
 * and 0xe1 prefixes and break codes are >= 0x80) fills square N (from 1)
 * of 64x64 pixels at grid cell N - 1 of W/64 cells a row, left to right
 * then top to bottom, wrapping, in the colour red = sc * 37, green =
 * sc * 91, blue = sc * 173 (each mod 256).  Escape's make code (0x01)
 * clears the screen to black and starts the squares again at 1.
 * Without a framebuffer only the keys are printed.
 *
 * "anim" or "anim=MS" (default 20 ms; a benchmark's screen that never
 * stops changing): after the picture, a white bar of BAR_H rows across
 * the whole width moves down by BAR_H rows every MS milliseconds (local
 * APIC timer), wrapping at the bottom; the rows it leaves get the
 * picture back.  Each frame is a few string instructions.
 *
 * Output:
 *   fb: framebuffer WxH at 0xADDR, N KiB  |  fb: no framebuffer (why)
 *   fb: drawn WxH
 *   fb: picture took N TSC cycles
 *   fb: key 0xSS              (every byte)
 *   fb: square N              (each make code)
 *   fb: cleared               (Escape)
 *   fb: anim every MS ms      (anim given, with a framebuffer)
 */
#include "runtime/rt.h"

#define SQUARE		64
#define SC_ESCAPE	0x01
#define BAR_H		16
#define ANIM_DEFAULT_MS	20

#define RED		FB_RGB(0xff, 0x00, 0x00)
#define GREEN		FB_RGB(0x00, 0xff, 0x00)
#define BLUE		FB_RGB(0x00, 0x00, 0xff)
#define WHITE		FB_RGB(0xff, 0xff, 0xff)
#define BLACK		FB_RGB(0x00, 0x00, 0x00)

/* Scan codes from the IRQ 1 handler to the main loop. */
#define RING_SIZE	256	/* a power of two */
static uint8_t ring[RING_SIZE];
static volatile uint32_t ring_head, ring_tail;

static struct fb fb;
static uint32_t squares;

/* anim: frames the timer asked for, and where the bar is. */
static volatile uint32_t anim_ticks;
static uint32_t anim_done, bar_y;

static void
fb_key_irq(uint8_t sc)
{
	if (ring_head - ring_tail < RING_SIZE) {
		ring[ring_head % RING_SIZE] = sc;
		ring_head++;
	}
}

static void
fb_picture(void)
{
	uint32_t lw = fb.width / 2, th = fb.height / 2;

	fb_fill(&fb, 0, 0, lw, th, RED);
	fb_fill(&fb, lw, 0, fb.width - lw, th, GREEN);
	fb_fill(&fb, 0, th, lw, fb.height - th, BLUE);
	fb_fill(&fb, lw, th, fb.width - lw, fb.height - th, WHITE);
}

/* The picture's rows [y, y + h), as fb_picture drew them. */
static void
fb_picture_rows(uint32_t y, uint32_t h)
{
	uint32_t lw = fb.width / 2, th = fb.height / 2;

	fb_fill(&fb, 0, y, lw, h, y < th ? RED : BLUE);
	fb_fill(&fb, lw, y, fb.width - lw, h, y < th ? GREEN : WHITE);
}

static void
anim_tick(void)
{
	anim_ticks++;
}

/* One frame: the bar's old rows get the picture back; the bar moves. */
static void
anim_frame(void)
{
	fb_picture_rows(bar_y, BAR_H);
	bar_y += BAR_H;
	if (bar_y + BAR_H > fb.height)
		bar_y = 0;
	fb_fill(&fb, 0, bar_y, fb.width, BAR_H, WHITE);
}

static void
anim_start(void)
{
	char buf[16];
	unsigned long ms;

	if (!cmdline_get("anim", buf, sizeof(buf)) || fb.base == NULL ||
	    fb.height < 2 * BAR_H || fb.height / 2 % BAR_H != 0)
		return;
	ms = cmdline_get_ulong("anim", ANIM_DEFAULT_MS);
	if (ms == 0)
		ms = ANIM_DEFAULT_MS;
	if (lapic_timer_calibrate(50) != 0)
		printf("fb: timer calibration failed, assuming 1 GHz\n");
	fb_fill(&fb, 0, bar_y, fb.width, BAR_H, WHITE);
	lapic_timer_periodic_ms((uint32_t)ms, anim_tick);
	printf("fb: anim every %lu ms\n", ms);
}

static void
fb_square(uint8_t sc)
{
	uint32_t cols = fb.width / SQUARE, rows = fb.height / SQUARE;
	uint32_t cell, colour;

	if (cols == 0 || rows == 0)
		cols = rows = 1;
	cell = squares % (cols * rows);
	squares++;
	colour = FB_RGB((sc * 37) & 0xff, (sc * 91) & 0xff, (sc * 173) & 0xff);
	fb_fill(&fb, cell % cols * SQUARE, cell / cols * SQUARE, SQUARE, SQUARE,
	    colour);
	printf("fb: square %u\n", squares);
}

static void
fb_key(uint8_t sc)
{
	printf("fb: key 0x%02x\n", sc);
	if (fb.base == NULL || sc >= 0x80 || sc == 0)
		return;
	if (sc == SC_ESCAPE) {
		fb_fill(&fb, 0, 0, fb.width, fb.height, BLACK);
		squares = 0;
		printf("fb: cleared\n");
		return;
	}
	fb_square(sc);
}

void
guest_main(void)
{
	const char *why;
	uint64_t t0, t1;
	uint8_t sc;

	if (i8042_kbd_irq_enable(fb_key_irq) != 0)
		printf("fb: warning: keyboard controller not responding\n");
	if ((why = fb_find(&fb)) != NULL) {
		printf("fb: no framebuffer (%s)\n", why);
	} else {
		printf("fb: framebuffer %ux%u at 0x%lx, %lu KiB\n", fb.width,
		    fb.height, fb.phys, fb.size >> 10);
		t0 = rdtsc();
		fb_picture();
		t1 = rdtsc();
		printf("fb: drawn %ux%u\n", fb.width, fb.height);
		printf("fb: picture took %lu TSC cycles\n", t1 - t0);
		anim_start();
	}
	for (;;) {
		cli();
		if (anim_done != anim_ticks) {
			/* Frames the timer asked for while we drew: one. */
			anim_done = anim_ticks;
			sti();
			anim_frame();
			continue;
		}
		if (ring_tail == ring_head) {
			idle();
			continue;
		}
		sc = ring[ring_tail % RING_SIZE];
		ring_tail++;
		sti();
		fb_key(sc);
	}
}
