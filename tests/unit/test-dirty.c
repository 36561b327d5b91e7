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
	return tap_done();
}
