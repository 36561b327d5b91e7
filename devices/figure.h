/*
 * Figures: the numbers a source publishes about itself (a device, the
 * device host, the interrupt routes, the console, the display), each
 * declared once, in one table of its source: its vm.info key, its
 * /metrics family, whether it counts or measures, its unit, its help,
 * and where its value lies in the source's state.  vm.info, /metrics
 * and whatever else shows them walk these tables; none of them keeps a
 * list of names of its own.
 *
 * A figure is an unsigned number read from src + offset (a member of
 * 1, 2, 4 or 8 bytes: FIGURE_AT fills both), or computed by get(src);
 * a histogram is an array of nbuckets uint64_t bucket counts at offset.
 * The reader holds whatever lock guards src.
 */
#ifndef VMMD_FIGURE_H
#define VMMD_FIGURE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum figure_kind {
	FIGURE_COUNTER,		/* only grows (until the source is rebuilt) */
	FIGURE_GAUGE,		/* goes up and down */
	FIGURE_HISTOGRAM,	/* bucket counts, see bounds */
};

/* The unit the value is kept in; /metrics shows base units. */
enum figure_unit {
	FIGURE_UNIT_NONE,
	FIGURE_UNIT_BYTES,
	FIGURE_UNIT_HERTZ,
	FIGURE_UNIT_NS,		/* /metrics: seconds */
	FIGURE_UNIT_SECONDS,
};

struct figure {
	const char *key;	/* vm.info's member */
	const char *metric;	/* /metrics family, no "_total"; NULL: none */
	enum figure_kind kind;
	enum figure_unit unit;
	const char *help;	/* /metrics' HELP */
	size_t offset;
	unsigned char size;	/* of the member at offset; 0 with get */
	uint64_t (*get)(const void *src);
	/* Histograms: nbuckets counts, the upper bounds of all but the
	 * last (+Inf) in base units. */
	unsigned int nbuckets;
	const double *bounds;
};

struct figure_table {
	const struct figure *rows;
	size_t n;
};

#define FIGURE_AT(type, member)						\
	.offset = offsetof(type, member),				\
	.size = sizeof(((type *)0)->member)

#define FIGURE_TABLE(rows)	{ (rows), sizeof(rows) / sizeof((rows)[0]) }

/* The value of a counter or gauge f of src. */
static inline uint64_t
figure_value(const struct figure *f, const void *src)
{
	const unsigned char *p = (const unsigned char *)src + f->offset;
	uint64_t v64;
	uint32_t v32;
	uint16_t v16;

	if (f->get != NULL)
		return f->get(src);
	switch (f->size) {
	case 1:
		return *p;
	case 2:
		memcpy(&v16, p, sizeof(v16));
		return v16;
	case 4:
		memcpy(&v32, p, sizeof(v32));
		return v32;
	default:
		memcpy(&v64, p, sizeof(v64));
		return v64;
	}
}

/* Bucket i of histogram f of src. */
static inline uint64_t
figure_bucket(const struct figure *f, const void *src, unsigned int i)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)src + f->offset + i * sizeof(v),
	    sizeof(v));
	return v;
}

#endif
