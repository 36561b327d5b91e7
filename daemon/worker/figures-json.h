/*
 * Figures (figure.h) as vm.info shows them: each row of a table as a
 * member named by its key, a counter or gauge as an integer, a
 * histogram as the array of its bucket counts.  The numbers stay in the
 * unit the source keeps them in (vm.info's "late_max_ns").
 */
#ifndef VMMD_FIGURES_JSON_H
#define VMMD_FIGURES_JSON_H

#include <json-c/json.h>

#include "figure.h"
#include "json-u64.h"

static inline void
figure_json_add(struct json_object *obj, const struct figure *f,
    const void *src)
{
	struct json_object *a;

	if (f->kind != FIGURE_HISTOGRAM) {
		json_add_u64(obj, f->key, figure_value(f, src));
		return;
	}
	a = json_object_new_array();
	for (unsigned int i = 0; i < f->nbuckets; i++)
		json_object_array_add(a, json_object_new_int64(
		    (int64_t)(figure_bucket(f, src, i) & INT64_MAX)));
	json_object_object_add(obj, f->key, a);
}

/* Every row of t, read from src, in the table's order. */
static inline void
figures_json_add(struct json_object *obj, const struct figure_table *t,
    const void *src)
{
	for (size_t i = 0; i < t->n; i++)
		figure_json_add(obj, &t->rows[i], src);
}

#endif
