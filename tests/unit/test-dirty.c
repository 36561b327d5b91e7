/* Dirty pages to tiles to rectangles, with hand-made bitmaps. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "dirty.h"

static uint64_t bitmap[1024];
static struct dirty_rect rects[64];
static size_t tiles;

static void
set_page(size_t p)
{
	bitmap[p / 64] |= 1ull << (p % 64);
}

static int
run(uint32_t w, uint32_t h, uint32_t stride, size_t max)
{
	struct dirty_geometry geo = { w, h, stride };

	return dirty_rects(&geo, bitmap, rects, max, &tiles);
}

static bool
rect_is(int i, uint32_t x, uint32_t y, uint32_t w, uint32_t h)
{
	return rects[i].x == x && rects[i].y == y && rects[i].w == w &&
	    rects[i].h == h;
}

/*
 * The shadow compare on a 1024x768 screen: a bar of 16 lines moved down
 * twice between two refreshes (the benchmark's moving bar) dirties
 * three tile rows, of which the middle one is back to what viewers saw.
 */
static void
test_shadow(void)
{
	struct dirty_geometry geo = { 1024, 768, 4096 };
	size_t size = (size_t)4096 * 768;
	uint8_t *fb = malloc(size), *shadow = malloc(size);
	int n;

	if (fb == NULL || shadow == NULL)
		tap_bail("out of memory");
	for (size_t i = 0; i < size; i++)
		fb[i] = (uint8_t)(i * 7 / 3);
	memcpy(shadow, fb, size);
	memset(bitmap, 0, sizeof(bitmap));
	n = dirty_rects_changed(&geo, bitmap, fb, shadow, rects, 64, &tiles);
	tap_ok(n == 0 && tiles == 0, "shadow: nothing dirty, nothing sent");

	/* The bar was at lines 160-175 when viewers last looked; it went
	 * to 176-191, then 192-207, and 160-191 show the picture again. */
	memset(fb + 192 * 4096, 0xff, 16 * 4096);
	for (size_t p = 160; p < 208; p++)
		set_page(p);
	memset(shadow + 160 * 4096, 0xff, 16 * 4096);
	n = dirty_rects_changed(&geo, bitmap, fb, shadow, rects, 64, &tiles);
	tap_ok(n == 2 && rect_is(0, 0, 160, 1024, 16) &&
	    rect_is(1, 0, 192, 1024, 16) && tiles == 32,
	    "shadow: of three dirty tile rows, the two that changed (%d "
	    "rectangles, %zu tiles)", n, tiles);
	tap_ok(memcmp(fb, shadow, size) == 0, "and the shadow took them");
	n = dirty_rects_changed(&geo, bitmap, fb, shadow, rects, 64, &tiles);
	tap_ok(n == 0 && tiles == 0,
	    "the same pages dirty again, nothing new: nothing sent");

	/* One pixel in the middle of a tile, in its last line. */
	fb[(15 * 4096) + 100 * 4] ^= 1;
	set_page(15);
	n = dirty_rects_changed(&geo, bitmap, fb, shadow, rects, 64, &tiles);
	tap_ok(n == 1 && rect_is(0, 64, 15, 64, 1) && tiles == 1,
	    "one pixel changed: its tile alone, its line alone");

	/* The guest caught drawing: of the bar's 16 lines at 400, the
	 * first 6 are drawn.  Only those go, one rectangle of them. */
	memset(fb + 400 * 4096, 0xee, 6 * 4096);
	for (size_t p = 400; p < 416; p++)
		set_page(p);
	n = dirty_rects_changed(&geo, bitmap, fb, shadow, rects, 64, &tiles);
	tap_ok(n == 1 && rect_is(0, 0, 400, 1024, 6) && tiles == 16,
	    "a bar drawn to its sixth line: those 6 lines (%d rectangles)",
	    n);

	/* Lines 10-15 of the first tile row and 0-5 of the second, the
	 * whole width: one rectangle across the tile rows; and in tile row
	 * 5 two spans of lines side by side: two rectangles. */
	memset(fb + 42 * 4096, 0x11, 12 * 4096);
	memset(fb + 81 * 4096, 0x22, 512 * 4);
	memset(fb + 84 * 4096 + 512 * 4, 0x33, 512 * 4);
	for (size_t p = 0; p < 96; p++)
		set_page(p);
	n = dirty_rects_changed(&geo, bitmap, fb, shadow, rects, 64, &tiles);
	tap_ok(n == 3 && rect_is(0, 0, 42, 1024, 12) &&
	    rect_is(1, 0, 81, 512, 1) && rect_is(2, 512, 84, 512, 1),
	    "changed lines across tile rows merge, different ones side by "
	    "side do not (%d rectangles)", n);
	tap_ok(memcmp(fb, shadow, size) == 0, "the shadow took them all");
	tap_ok(dirty_rects_changed(&geo, bitmap, NULL, shadow, rects, 64,
	    &tiles) == -EINVAL, "no framebuffer: -EINVAL");
	memset(bitmap, 0, sizeof(bitmap));
	free(fb);
	free(shadow);
}

int
main(void)
{
	struct dirty_geometry geo = { 1024, 768, 4096 };
	int n;

	tap_ok(dirty_pages(&geo) == 768 && dirty_bitmap_words(&geo) == 12,
	    "1024x768: 768 pages, 12 words");

	n = run(1024, 768, 4096, 64);
	tap_ok(n == 0 && tiles == 0, "nothing dirty: no rectangle");

	set_page(70);
	n = run(1024, 768, 4096, 64);
	tap_ok(n == 1 && rect_is(0, 0, 64, 1024, 16) && tiles == 16,
	    "one page of a 1024-wide screen: its line's tile row");

	memset(bitmap, 0, sizeof(bitmap));
	set_page(3);		/* 2048 wide: line 1, right half */
	n = run(2048, 64, 8192, 64);
	tap_ok(n == 1 && rect_is(0, 1024, 0, 1024, 16) && tiles == 16,
	    "a page that is half a line: only that half");

	memset(bitmap, 0, sizeof(bitmap));
	set_page(1);		/* 1500 wide: end of line 0, start of line 1 */
	n = run(1500, 32, 6000, 64);
	tap_ok(n == 2 && rect_is(0, 0, 0, 576, 16) &&
	    rect_is(1, 1024, 0, 476, 16) && tiles == 17,
	    "a page spanning two lines: both pieces, clipped to the screen");

	memset(bitmap, 0, sizeof(bitmap));
	set_page(0);
	set_page(1);		/* past the end: ignored */
	n = run(100, 10, 400, 64);
	tap_ok(n == 1 && rect_is(0, 0, 0, 100, 10) && tiles == 2,
	    "the last, partial page");

	memset(bitmap, 0xff, 12 * sizeof(uint64_t));
	n = run(1024, 768, 4096, 64);
	tap_ok(n == 1 && rect_is(0, 0, 0, 1024, 768) && tiles == 768,
	    "everything dirty: one rectangle of 768 tiles");

	/* Lines 0, 32, 64, ... on the right half: many rectangles. */
	memset(bitmap, 0, sizeof(bitmap));
	for (int y = 0; y < 256; y += 32)
		set_page((size_t)y * 2 + 1);
	n = run(2048, 256, 8192, 64);
	tap_ok(n == 8, "eight separate bands (%d)", n);
	n = run(2048, 256, 8192, 3);
	{
		bool covered = n == 3;

		for (int y = 0; y < 256 && covered; y += 32) {
			bool in = false;

			for (int i = 0; i < n; i++)
				in |= rects[i].x <= 1024 &&
				    rects[i].x + rects[i].w >= 2048 &&
				    rects[i].y <= (uint32_t)y &&
				    rects[i].y + rects[i].h >= (uint32_t)y + 16;
			covered &= in;
		}
		tap_ok(covered, "capped at 3, the merged rectangles still "
		    "cover every dirty tile");
	}

	geo = (struct dirty_geometry){ 1024, 768, 1024 };
	tap_ok(dirty_rects(&geo, bitmap, rects, 64, NULL) == -EINVAL,
	    "a stride shorter than a line: -EINVAL");
	test_shadow();
	return tap_done();
}
