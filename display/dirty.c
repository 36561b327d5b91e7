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

/* Mark the tiles that the bytes [start, end) of the framebuffer touch. */
static void
dirty_mark_bytes(const struct dirty_geometry *geo, uint8_t *grid,
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
			grid[(y / DIRTY_TILE_H) * tiles_x + tx] = 1;
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
 * Keep the marked tiles whose pixels differ from shadow, copying them
 * there; unmark the others.  Line by line: a tile's lines are apart by
 * the stride.
 */
static void
dirty_keep_changed(const struct dirty_geometry *geo, uint8_t *grid,
    uint32_t tiles_x, uint32_t tiles_y, const uint8_t *fb, uint8_t *shadow)
{
	for (uint32_t ty = 0; ty < tiles_y; ty++) {
		uint32_t y0 = ty * DIRTY_TILE_H, y1 = y0 + DIRTY_TILE_H;

		if (y1 > geo->height)
			y1 = geo->height;
		for (uint32_t tx = 0; tx < tiles_x; tx++) {
			uint32_t x0 = tx * DIRTY_TILE_W, w = DIRTY_TILE_W;
			size_t off, len;
			bool changed = false;

			if (!grid[ty * tiles_x + tx])
				continue;
			if (x0 + w > geo->width)
				w = geo->width - x0;
			len = (size_t)w * DIRTY_BYTES_PER_PIXEL;
			for (uint32_t y = y0; y < y1; y++) {
				off = (size_t)y * geo->stride +
				    (size_t)x0 * DIRTY_BYTES_PER_PIXEL;
				if (!changed &&
				    memcmp(fb + off, shadow + off, len) == 0)
					continue;
				changed = true;
				memcpy(shadow + off, fb + off, len);
			}
			grid[ty * tiles_x + tx] = changed;
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
	uint8_t *grid;
	/* Built in tile coordinates, in scratch space: the list may
	 * exceed max until it is merged at the end. */
	struct dirty_rect *work;

	if (tiles != NULL)
		*tiles = 0;
	if (!dirty_geometry_valid(geo))
		return -EINVAL;
	tiles_x = (geo->width + DIRTY_TILE_W - 1) / DIRTY_TILE_W;
	tiles_y = (geo->height + DIRTY_TILE_H - 1) / DIRTY_TILE_H;
	grid = calloc((size_t)tiles_x * tiles_y, 1);
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
	 * Runs along each tile row; a run with the same span as a
	 * rectangle that ended on the row above extends that rectangle.
	 */
	for (uint32_t ty = 0; ty < tiles_y; ty++) {
		size_t row_first = count;	/* made on rows above */

		for (uint32_t tx = 0; tx < tiles_x; tx++) {
			uint32_t run;
			bool merged = false;

			if (!grid[ty * tiles_x + tx])
				continue;
			for (run = 0; tx + run < tiles_x &&
			    grid[ty * tiles_x + tx + run]; run++)
				ntiles++;
			for (size_t i = 0; i < row_first; i++) {
				if (work[i].x == tx && work[i].w == run &&
				    work[i].y + work[i].h == ty) {
					work[i].h++;
					merged = true;
					break;
				}
			}
			if (!merged)
				work[count++] = (struct dirty_rect){tx, ty, run, 1};
			tx += run;
		}
	}

	/* From tiles to pixels, clipped to the framebuffer. */
	for (size_t i = 0; i < count; i++) {
		struct dirty_rect *r = &work[i];
		uint32_t x1 = (r->x + r->w) * DIRTY_TILE_W;
		uint32_t y1 = (r->y + r->h) * DIRTY_TILE_H;

		r->x *= DIRTY_TILE_W;
		r->y *= DIRTY_TILE_H;
		r->w = (x1 > geo->width ? geo->width : x1) - r->x;
		r->h = (y1 > geo->height ? geo->height : y1) - r->y;
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
