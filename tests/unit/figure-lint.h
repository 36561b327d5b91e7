/*
 * Checks of a figure table (figure.h) that hold for every source: each
 * row has a key and help, no key twice, a /metrics family (where there
 * is one) named vmmd_ and without the "_total" the renderer adds, a
 * member that lies inside the source's struct, and a histogram's
 * bounds rising.  Returns how many rows break one (each told in a TAP
 * comment).
 */
#ifndef VMMD_FIGURE_LINT_H
#define VMMD_FIGURE_LINT_H

#include <string.h>

#include "figure.h"
#include "tap.h"

static inline unsigned int
figure_lint(const char *what, const struct figure_table *t, size_t srcsize)
{
	unsigned int bad = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct figure *f = &t->rows[i];
		const char *why = NULL;
		size_t n = f->metric != NULL ? strlen(f->metric) : 0;

		if (f->key == NULL || f->key[0] == '\0')
			why = "no key";
		else if (f->help == NULL || f->help[0] == '\0')
			why = "no help";
		else if (f->metric != NULL && (strncmp(f->metric, "vmmd_", 5)
		    != 0 || (n > 6 && strcmp(f->metric + n - 6, "_total") ==
		    0) || strspn(f->metric, "abcdefghijklmnopqrstuvwxyz"
		    "0123456789_") != n))
			why = "a family name /metrics would not take as it is";
		else if (f->get == NULL && (f->size == 0 ||
		    f->offset + (f->kind == FIGURE_HISTOGRAM ? 8 * f->nbuckets :
		    f->size) > srcsize))
			why = "a member outside its source";
		else if (f->kind == FIGURE_HISTOGRAM && (f->nbuckets < 2 ||
		    f->bounds == NULL || f->get != NULL))
			why = "a histogram without buckets";
		for (size_t j = 0; why == NULL && j < i; j++)
			if (strcmp(t->rows[j].key, f->key) == 0)
				why = "its key twice";
		for (unsigned int b = 1; why == NULL &&
		    f->kind == FIGURE_HISTOGRAM && b + 1 < f->nbuckets; b++)
			if (!(f->bounds[b] > f->bounds[b - 1]))
				why = "bounds that do not rise";
		if (why != NULL) {
			tap_diag("%s: figure %zu (%s): %s", what, i,
			    f->key != NULL ? f->key : "?", why);
			bad++;
		}
	}
	return bad;
}

#endif
