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
 * Members are read with relaxed atomic loads, so that counters a vCPU
 * thread bumps without a lock can be read; for the rest the reader holds
 * whatever lock guards src.
 *
 * Rows with a label are samples of one family, told apart by that label
 * with the row's key as its value (vmmd_vcpu_exits{kind="io"}).
 */
#ifndef VMMD_FIGURE_H
#define VMMD_FIGURE_H

#include <stddef.h>
#include <stdint.h>

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
	const char *label;	/* NULL, or the label whose value is key */
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

	if (f->get != NULL)
		return f->get(src);
	switch (f->size) {
	case 1:
		return __atomic_load_n(p, __ATOMIC_RELAXED);
	case 2:
		return __atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED);
	case 4:
		return __atomic_load_n((const uint32_t *)p, __ATOMIC_RELAXED);
	default:
		return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
	}
}

/* Bucket i of histogram f of src. */
static inline uint64_t
figure_bucket(const struct figure *f, const void *src, unsigned int i)
{
	const uint64_t *b = (const uint64_t *)((const unsigned char *)src +
	    f->offset);

	return __atomic_load_n(&b[i], __ATOMIC_RELAXED);
}

#endif
