/*
 * From dirty 4 KiB pages of a linear framebuffer to a short list of
 * rectangles to send.
 *
 * The bitmap is what KVM_GET_DIRTY_LOG or a write-protect tracker
 * reports: bit i of 64-bit word j stands for page 64 * j + i, page 0
 * holding the framebuffer's first byte.  Pixels are 4 bytes.
 *
 * Pages become tiles of 64 pixels by 16 lines, and tiles become
 * rectangles: runs of dirty tiles along a tile row, then runs of rows
 * with the same span.  Why this tile: it holds as many pixels as a page
 * (4 KiB), the finest grain the dirty log knows.  At 1024 pixels or
 * fewer a page is one line or less, so the log says nothing about x:
 * what matters is how many lines a change drags along, and a 16-line
 * tile row sends a glyph's 16 lines, where a 64x64 tile would send 64.
 * On wider screens a page covers part of a line and the 64-pixel
 * columns keep that precision.  Runs are merged so that the number of
 * rectangles (12 header bytes and one encoder start each) stays small.
 * With a shadow copy to compare with (dirty_rects_changed()), a tile
 * keeps only the lines between the first and the last that differ, and
 * runs are of tiles whose kept lines are the same.
 */
#ifndef VMMD_DIRTY_H
#define VMMD_DIRTY_H

#include <stddef.h>
#include <stdint.h>

#define DIRTY_PAGE_SIZE		4096u
#define DIRTY_TILE_W		64u	/* pixels */
#define DIRTY_TILE_H		16u	/* lines */
#define DIRTY_BYTES_PER_PIXEL	4u

struct dirty_geometry {
	uint32_t width;		/* pixels */
	uint32_t height;	/* lines */
	uint32_t stride;	/* bytes from one line to the next */
};

struct dirty_rect {
	uint32_t x, y, w, h;	/* pixels, clipped to the framebuffer */
};

/* Pages the framebuffer covers (the last one may be partial). */
size_t dirty_pages(const struct dirty_geometry *geo);

/* 64-bit words of a bitmap with one bit per page. */
size_t dirty_bitmap_words(const struct dirty_geometry *geo);

/*
 * Turn the dirty pages of bitmap (dirty_bitmap_words() words; bits past
 * the framebuffer are ignored) into at most max rectangles in rects.
 * Returns how many were written (0: nothing changed), or -EINVAL for a
 * geometry that is empty or whose stride is shorter than a line,
 * -ENOMEM.  When more than max rectangles would be needed, rectangles
 * are merged into their bounding boxes, so the result always covers
 * every dirty tile.  *tiles (if not NULL) receives the number of dirty
 * tiles.
 */
int dirty_rects(const struct dirty_geometry *geo, const uint64_t *bitmap,
    struct dirty_rect *rects, size_t max, size_t *tiles);

/*
 * The same, for the tiles whose pixels differ from a shadow copy of
 * what viewers were sent.  A dirty page says only that the guest wrote
 * there, and guests often write what was there already: a moving bar
 * puts back the picture it covered, a console redraws a line.  Each
 * dirty tile of fb is compared with shadow (laid out as fb, stride
 * bytes a line) and the lines that differ are copied into it; only
 * those tiles make rectangles, of the lines from the first to the last
 * that differ, and *tiles counts only them.  A write racing the
 * comparison leaves its page dirty for the next call.
 */
int dirty_rects_changed(const struct dirty_geometry *geo,
    const uint64_t *bitmap, const uint8_t *fb, uint8_t *shadow,
    struct dirty_rect *rects, size_t max, size_t *tiles);

#endif
