/* See stats-table.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-table.h"

#define STATS_MAX_COLS	10
#define STATS_CELL	32

static const char *const stats_segs[] = {
	"exit", "dispatch", "handler", "irq", "reentry",
};
#define STATS_NSEGS	(sizeof(stats_segs) / sizeof(stats_segs[0]))

/* A table of cells, printed once every width is known. */
struct stats_grid {
	size_t rows, cols, cap;
	char (*cell)[STATS_MAX_COLS][STATS_CELL];
	size_t width[STATS_MAX_COLS];
};

static char *
stats_grid_add(struct stats_grid *g)
{
	void *p;

	if (g->rows == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		p = realloc(g->cell, g->cap * sizeof(*g->cell));
		if (p == NULL)
			return NULL;
		g->cell = p;
	}
	memset(g->cell[g->rows], 0, sizeof(*g->cell));
	return g->cell[g->rows++][0];
}

static void
stats_grid_print(FILE *fp, struct stats_grid *g)
{
	size_t r, c, w, last;

	for (r = 0; r < g->rows; r++)
		for (c = 0; c < g->cols; c++)
			if ((w = strlen(g->cell[r][c])) > g->width[c])
				g->width[c] = w;
	/* The first column reads left to right, numbers line up right. */
	for (r = 0; r < g->rows; r++) {
		/* No trailing blanks after the last cell with something. */
		for (last = g->cols - 1; last > 0; last--)
			if (g->cell[r][last][0] != '\0')
				break;
		fprintf(fp, "  %-*s", last > 0 ? (int)g->width[0] : 0,
		    g->cell[r][0]);
		for (c = 1; c <= last; c++)
			fprintf(fp, "  %*s", (int)g->width[c], g->cell[r][c]);
		fputc('\n', fp);
	}
	free(g->cell);
	memset(g, 0, sizeof(*g));
}

static double
stats_num(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_double(v);
}

static const char *
stats_str(struct json_object *o, const char *key, const char *dflt)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return dflt;
	return json_object_get_string(v);
}

static void
stats_row(struct stats_grid *g, struct json_object *row, int segments)
{
	char (*c)[STATS_CELL];
	struct json_object *seg;
	double count = stats_num(row, "count");
	size_t k;

	if ((c = (char (*)[STATS_CELL])stats_grid_add(g)) == NULL)
		return;
	snprintf(c[0], STATS_CELL, "%s", stats_str(row, "name", "?"));
	snprintf(c[1], STATS_CELL, "%s", stats_str(row, "device", ""));
	snprintf(c[2], STATS_CELL, "%.0f", count);
	if (!segments) {
		snprintf(c[3], STATS_CELL, "%.3f", stats_num(row, "min_us"));
		snprintf(c[4], STATS_CELL, "%.3f", stats_num(row, "max_us"));
		snprintf(c[5], STATS_CELL, "%.3f", stats_num(row, "sum_us"));
		snprintf(c[6], STATS_CELL, "%.3f", stats_num(row, "avg_us"));
		snprintf(c[7], STATS_CELL, "%.3f",
		    stats_num(row, "stddev_us"));
		snprintf(c[8], STATS_CELL, "%.2f", stats_num(row, "time_pct"));
		return;
	}
	snprintf(c[3], STATS_CELL, "%.3f", stats_num(row, "avg_us"));
	if (!json_object_object_get_ex(row, "segments", &seg))
		return;		/* TIMEINGUEST has none */
	/* Averages over the exits timed by segments, which may be fewer. */
	count = stats_num(seg, "count");
	snprintf(c[4], STATS_CELL, "%.0f", count);
	for (k = 0; k < STATS_NSEGS; k++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_us", stats_segs[k]);
		if (count > 0)
			snprintf(c[5 + k], STATS_CELL, "%.3f",
			    stats_num(seg, key) / count);
		else
			snprintf(c[5 + k], STATS_CELL, "-");
	}
}

void
stats_table_print(FILE *fp, struct json_object *ret, int segments)
{
	static const char *const head[] = { "EXIT", "DEVICE", "count", "min",
		"max", "sum", "avg", "stddev", "time%" };
	static const char *const shead[] = { "EXIT", "DEVICE", "count", "avg",
		"segs", "exit", "dispatch", "handler", "irq", "reentry" };
	struct stats_grid g = { .cols = segments ? 10 : 9 };
	struct json_object *rows, *v;
	char (*c)[STATS_CELL];
	size_t i;

	if (json_object_object_get_ex(ret, "vcpu", &v))
		fprintf(fp, "vCPU %d", json_object_get_int(v));
	else
		fprintf(fp, "all %d vCPUs",
		    (int)stats_num(ret, "vcpus"));
	fprintf(fp, ", collection %s%s, %.3f s, times in microseconds "
	    "(%s at %.3f GHz)%s\n",
	    json_object_object_get_ex(ret, "enabled", &v) &&
	    json_object_get_boolean(v) ? "on" : "off",
	    json_object_object_get_ex(ret, "segments", &v) &&
	    json_object_get_boolean(v) ? " with segments" : "",
	    stats_num(ret, "elapsed_us") / 1e6,
	    stats_str(ret, "clock", "?"), stats_num(ret, "tsc_hz") / 1e9,
	    segments ? ", average per exit by segment" : "");
	if ((c = (char (*)[STATS_CELL])stats_grid_add(&g)) != NULL)
		for (i = 0; i < g.cols; i++)
			snprintf(c[i], STATS_CELL, "%s",
			    segments ? shead[i] : head[i]);
	if (json_object_object_get_ex(ret, "exits", &rows) &&
	    json_object_is_type(rows, json_type_array))
		for (i = 0; i < json_object_array_length(rows); i++)
			stats_row(&g, json_object_array_get_idx(rows, i),
			    segments);
	if (json_object_object_get_ex(ret, "guest", &v))
		stats_row(&g, v, segments);
	stats_grid_print(fp, &g);
}

/* A statistic's value as a cell: a number, or a histogram's summary. */
static int
stats_kvm_cell(struct json_object *v, char *buf, size_t len)
{
	if (v == NULL)
		return snprintf(buf, len, "-"), 0;
	if (json_object_is_type(v, json_type_object)) {
		snprintf(buf, len, "%.0f (p50 %.0f, p99 %.0f)",
		    stats_num(v, "samples"), stats_num(v, "p50"),
		    stats_num(v, "p99"));
		return stats_num(v, "samples") != 0;
	}
	snprintf(buf, len, "%" PRId64, json_object_get_int64(v));
	return json_object_get_int64(v) != 0;
}

static int
stats_by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One block: the names of first, with a column per object of cols. */
static void
stats_kvm_block(FILE *fp, struct json_object **cols, size_t ncols,
    const char *const *head)
{
	struct stats_grid g = { .cols = ncols + 1 };
	char (*c)[STATS_CELL];
	const char **names;
	size_t i, k, n = 0;
	int any;

	if (ncols == 0 || ncols + 1 > STATS_MAX_COLS)
		return;
	names = calloc(json_object_object_length(cols[0]) + 1,
	    sizeof(*names));
	if (names == NULL)
		return;
	json_object_object_foreach(cols[0], key, val) {
		(void)val;
		names[n++] = key;
	}
	qsort(names, n, sizeof(*names), stats_by_name);
	if ((c = (char (*)[STATS_CELL])stats_grid_add(&g)) != NULL)
		for (k = 0; k <= ncols; k++)
			snprintf(c[k], STATS_CELL, "%s", head[k]);
	for (i = 0; i < n; i++) {
		if ((c = (char (*)[STATS_CELL])stats_grid_add(&g)) == NULL)
			break;
		snprintf(c[0], STATS_CELL, "%s", names[i]);
		for (k = 0, any = 0; k < ncols; k++)
			any |= stats_kvm_cell(json_object_object_get(cols[k],
			    names[i]), c[k + 1], STATS_CELL);
		if (!any)
			g.rows--;	/* zero everywhere: not worth a line */
	}
	free(names);
	stats_grid_print(fp, &g);
}

void
stats_kvm_print(FILE *fp, struct json_object *ret)
{
	char heads[STATS_MAX_COLS][STATS_CELL];
	const char *head[STATS_MAX_COLS];
	struct json_object *kvm, *vm, *vcpus, *cols[STATS_MAX_COLS], *v;
	int first = 0;
	size_t i, n;

	if (!json_object_object_get_ex(ret, "kvm", &kvm))
		return;
	if (json_object_object_get_ex(ret, "vcpu", &v))
		first = json_object_get_int(v);
	head[0] = "KVM (VM)";
	if (json_object_object_get_ex(kvm, "vm", &vm)) {
		head[1] = "value";
		stats_kvm_block(fp, &vm, 1, head);
	}
	if (!json_object_object_get_ex(kvm, "vcpus", &vcpus) ||
	    !json_object_is_type(vcpus, json_type_array))
		return;
	n = json_object_array_length(vcpus);
	if (n > STATS_MAX_COLS - 1)
		n = STATS_MAX_COLS - 1;	/* --vcpu N shows the others */
	head[0] = "KVM (vCPU)";
	for (i = 0; i < n; i++) {
		cols[i] = json_object_array_get_idx(vcpus, i);
		snprintf(heads[i], STATS_CELL, "vcpu%zu", first + i);
		head[i + 1] = heads[i];
	}
	stats_kvm_block(fp, cols, n, head);
}
