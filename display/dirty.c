/*
 * Dirty pages to tiles to rectangles; see dirty.h for the choice of tile.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "dirty.h"

static bool
dirty_geometry_valid(const struct dirty_geometry *geo)
{
	return geo->width != 0 && geo->height != 0 &&
	    (uint64_t)geo->width * DIRTY_BYTES_PER_PIXEL <= geo->stride;
}

static uint64_t
dirty_bytes(const struct dirty_geometry *geo)
{
	return (uint64_t)geo->stride * geo->height;
}

size_t
dirty_pages(const struct dirty_geometry *geo)
{
	return (size_t)((dirty_bytes(geo) + DIRTY_PAGE_SIZE - 1) /
	    DIRTY_PAGE_SIZE);
}

size_t
dirty_bitmap_words(const struct dirty_geometry *geo)
{
	return (dirty_pages(geo) + 63) / 64;
}

/*
 * What changed in a tile: its lines [top, bot), counted from the tile's
 * first line; bot == 0: nothing.  Without a shadow to compare with, a
 * marked tile is all of its lines.
 */
struct dirty_tile {
	uint8_t top, bot;
};

/* Mark the tiles that the bytes [start, end) of the framebuffer touch. */
static void
dirty_mark_bytes(const struct dirty_geometry *geo, struct dirty_tile *grid,
    uint32_t tiles_x, uint64_t start, uint64_t end)
{
	uint64_t y, line;
	uint64_t b0, b1, x0, x1;

	for (y = start / geo->stride; y < geo->height; y++) {
		line = y * geo->stride;
		if (line >= end)
			break;
		b0 = start > line ? start - line : 0;
		b1 = end - line < geo->stride ? end - line : geo->stride;
		x0 = b0 / DIRTY_BYTES_PER_PIXEL;
		x1 = (b1 + DIRTY_BYTES_PER_PIXEL - 1) / DIRTY_BYTES_PER_PIXEL;
		if (x1 > geo->width)
			x1 = geo->width;
		if (x0 >= x1)
			continue;	/* only the padding past the line */
		for (uint64_t tx = x0 / DIRTY_TILE_W;
		    tx <= (x1 - 1) / DIRTY_TILE_W; tx++)
			grid[(y / DIRTY_TILE_H) * tiles_x + tx] =
			    (struct dirty_tile){ 0, DIRTY_TILE_H };
	}
}

static void
dirty_union(struct dirty_rect *a, const struct dirty_rect *b)
{
	uint32_t x1 = a->x + a->w > b->x + b->w ? a->x + a->w : b->x + b->w;
	uint32_t y1 = a->y + a->h > b->y + b->h ? a->y + a->h : b->y + b->h;

	a->x = a->x < b->x ? a->x : b->x;
	a->y = a->y < b->y ? a->y : b->y;
	a->w = x1 - a->x;
	a->h = y1 - a->y;
}

/*
 * Keep the marked tiles whose pixels differ from shadow, copying the
 * lines that differ there, and narrow each to the lines between the
 * first and the last that differ; unmark the others.  Why lines: a
 * viewer may look while the guest is drawing, and what it drew so far
 * is often a few whole lines of one colour, which cost a few bytes as
 * a rectangle of their own and many more inside a tile that mixes them
 * with what is not drawn yet.  Line by line: a tile's lines are apart
 * by the stride.
 */
static void
dirty_keep_changed(const struct dirty_geometry *geo, struct dirty_tile *grid,
    uint32_t tiles_x, uint32_t tiles_y, const uint8_t *fb, uint8_t *shadow)
{
	for (uint32_t ty = 0; ty < tiles_y; ty++) {
		uint32_t y0 = ty * DIRTY_TILE_H, y1 = y0 + DIRTY_TILE_H;

		if (y1 > geo->height)
			y1 = geo->height;
		for (uint32_t tx = 0; tx < tiles_x; tx++) {
			struct dirty_tile *t = &grid[ty * tiles_x + tx];
			uint32_t x0 = tx * DIRTY_TILE_W, w = DIRTY_TILE_W;
			uint32_t top = 0, bot = 0;
			size_t off, len;

			if (t->bot == 0)
				continue;
			if (x0 + w > geo->width)
				w = geo->width - x0;
			len = (size_t)w * DIRTY_BYTES_PER_PIXEL;
			for (uint32_t y = y0; y < y1; y++) {
				off = (size_t)y * geo->stride +
				    (size_t)x0 * DIRTY_BYTES_PER_PIXEL;
				if (memcmp(fb + off, shadow + off, len) == 0)
					continue;
				memcpy(shadow + off, fb + off, len);
				if (bot == 0)
					top = y - y0;
				bot = y - y0 + 1;
			}
			*t = (struct dirty_tile){ (uint8_t)top, (uint8_t)bot };
		}
	}
}

static int
dirty_rects_of(const struct dirty_geometry *geo, const uint64_t *bitmap,
    const uint8_t *fb, uint8_t *shadow, struct dirty_rect *rects,
    size_t max, size_t *tiles)
{
	uint32_t tiles_x, tiles_y;
	size_t pages, count = 0, ntiles = 0;
	struct dirty_tile *grid;
	/* Built in scratch space: the list may exceed max until it is
	 * merged at the end. */
	struct dirty_rect *work;

	if (tiles != NULL)
		*tiles = 0;
	if (!dirty_geometry_valid(geo))
		return -EINVAL;
	tiles_x = (geo->width + DIRTY_TILE_W - 1) / DIRTY_TILE_W;
	tiles_y = (geo->height + DIRTY_TILE_H - 1) / DIRTY_TILE_H;
	grid = calloc((size_t)tiles_x * tiles_y, sizeof(*grid));
	work = calloc((size_t)tiles_x * tiles_y, sizeof(*work));
	if (grid == NULL || work == NULL) {
		free(grid);
		free(work);
		return -ENOMEM;
	}

	pages = dirty_pages(geo);
	for (size_t p = 0; p < pages; p++) {
		uint64_t start, end;

		if (!(bitmap[p / 64] >> (p % 64) & 1))
			continue;
		start = (uint64_t)p * DIRTY_PAGE_SIZE;
		end = start + DIRTY_PAGE_SIZE;
		if (end > dirty_bytes(geo))
			end = dirty_bytes(geo);
		dirty_mark_bytes(geo, grid, tiles_x, start, end);
	}
	if (shadow != NULL)
		dirty_keep_changed(geo, grid, tiles_x, tiles_y, fb, shadow);

	/*
	 * Runs along each tile row of tiles with the same changed lines; a
	 * run with the same columns as a rectangle that ended on the line
	 * above, made on a row above, extends that rectangle.
	 */
	for (uint32_t ty = 0; ty < tiles_y; ty++) {
		size_t row_first = count;	/* made on rows above */

		for (uint32_t tx = 0; tx < tiles_x; tx++) {
			struct dirty_tile t = grid[ty * tiles_x + tx];
			struct dirty_rect r;
			uint32_t run;
			bool merged = false;

			if (t.bot == 0)
				continue;
			for (run = 1; tx + run < tiles_x &&
			    grid[ty * tiles_x + tx + run].top == t.top &&
			    grid[ty * tiles_x + tx + run].bot == t.bot; run++)
				;
			ntiles += run;
			r.x = tx * DIRTY_TILE_W;
			r.w = run * DIRTY_TILE_W;
			r.y = ty * DIRTY_TILE_H + t.top;
			r.h = (uint32_t)(t.bot - t.top);
			/* From tiles to pixels: clipped to the framebuffer. */
			if (r.x + r.w > geo->width)
				r.w = geo->width - r.x;
			if (r.y + r.h > geo->height)
				r.h = geo->height - r.y;
			for (size_t i = 0; i < row_first; i++) {
				if (work[i].x == r.x && work[i].w == r.w &&
				    work[i].y + work[i].h == r.y) {
					work[i].h += r.h;
					merged = true;
					break;
				}
			}
			if (!merged)
				work[count++] = r;
			tx += run - 1;
		}
	}

	/* Too many: neighbours in scan order are merged into their
	 * bounding box, from the end. */
	while (count > max && count > 1) {
		dirty_union(&work[count - 2], &work[count - 1]);
		count--;
	}
	if (count > max)
		count = 0;	/* max == 0: nothing fits */
	for (size_t i = 0; i < count; i++)
		rects[i] = work[i];
	free(work);
	free(grid);
	if (tiles != NULL)
		*tiles = ntiles;
	return (int)count;
}

int
dirty_rects(const struct dirty_geometry *geo, const uint64_t *bitmap,
    struct dirty_rect *rects, size_t max, size_t *tiles)
{
	return dirty_rects_of(geo, bitmap, NULL, NULL, rects, max, tiles);
}

int
dirty_rects_changed(const struct dirty_geometry *geo, const uint64_t *bitmap,
    const uint8_t *fb, uint8_t *shadow, struct dirty_rect *rects,
    size_t max, size_t *tiles)
{
	if (fb == NULL || shadow == NULL)
		return -EINVAL;
	return dirty_rects_of(geo, bitmap, fb, shadow, rects, max, tiles);
}
