/*
 * See metrics-fmt.h.  Families are kept as JSON, in the order they were
 * first met: {"name", "type", "help", "samples": [[labels, value]],
 * "own"}, labels an object whose first member is vm (when there is
 * one), own true for the supervisor's families.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics-fmt.h"

struct mfmt {
	struct json_object *families;	/* array, in order */
	struct json_object *byname;	/* name -> index */
	struct json_object *rendered;	/* each name rendered -> index */
	size_t nownfams;		/* the supervisor's own families */
	size_t nsamples;		/* the workers' */
	size_t nown;			/* the supervisor's own */
	size_t quota;			/* of each worker's answer */
};

struct mfmt *
mfmt_new(void)
{
	struct mfmt *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->quota = MFMT_MAX_VM_SAMPLES;
	f->families = json_object_new_array();
	f->byname = json_object_new_object();
	f->rendered = json_object_new_object();
	if (f->families == NULL || f->byname == NULL || f->rendered == NULL) {
		mfmt_free(f);
		return NULL;
	}
	return f;
}

void
mfmt_free(struct mfmt *f)
{
	if (f == NULL)
		return;
	json_object_put(f->families);
	json_object_put(f->byname);
	json_object_put(f->rendered);
	free(f);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* (metric) or without ':' (label). */
static bool
mfmt_name_ok(const char *s, bool metric)
{
	size_t i;

	if (s == NULL || s[0] == '\0' || strlen(s) > MFMT_MAX_NAME)
		return false;
	for (i = 0; s[i] != '\0'; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    c == '_' || (metric && c == ':') ||
		    (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

static bool
mfmt_type_ok(const char *t)
{
	return t != NULL && (strcmp(t, "counter") == 0 ||
	    strcmp(t, "gauge") == 0 || strcmp(t, "histogram") == 0 ||
	    strcmp(t, "summary") == 0);
}

/*
 * The names a family of this type puts in the exposition: its own (the
 * family name of OpenMetrics) and each sample's, suffixes included.
 * Prometheus refuses a whole exposition where two families share one.
 */
static const char *const *
mfmt_suffixes(const char *type)
{
	static const char *const gauge[] = { "", NULL };
	static const char *const counter[] = { "", "_total", NULL };
	static const char *const histogram[] = { "", "_bucket", "_count",
	    "_sum", NULL };
	static const char *const summary[] = { "", "_count", "_sum", NULL };

	if (strcmp(type, "counter") == 0)
		return counter;
	if (strcmp(type, "histogram") == 0)
		return histogram;
	if (strcmp(type, "summary") == 0)
		return summary;
	return gauge;
}

static struct json_object *
mfmt_at(const struct mfmt *f, struct json_object *idx)
{
	return json_object_array_get_idx(f->families,
	    (size_t)json_object_get_int(idx));
}

/* A worker's family taken out of the exposition: no samples, and none
 * added later. */
static void
mfmt_evict(struct mfmt *f, struct json_object *fam)
{
	f->nsamples -= json_object_array_length(json_object_object_get(fam,
	    "samples"));
	json_object_object_add(fam, "samples", json_object_new_array());
	json_object_object_add(fam, "out", json_object_new_boolean(true));
}

/*
 * Claims every name family idx (name, type) renders.  One that another
 * family already renders is refused to a worker; the supervisor takes
 * it, the worker's family that had it evicted, unless it is one of its
 * own too.  false: refused, nothing changed.
 */
static bool
mfmt_claim(struct mfmt *f, const char *name, const char *type, int idx,
    bool own)
{
	const char *const *sfx = mfmt_suffixes(type);
	char r[MFMT_MAX_NAME + 8];
	struct json_object *o, *fam;
	int pass;
	size_t i;

	/* Pass 0 checks, pass 1 evicts and claims. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; sfx[i] != NULL; i++) {
			snprintf(r, sizeof(r), "%s%s", name, sfx[i]);
			if (json_object_object_get_ex(f->rendered, r, &o) &&
			    json_object_get_int(o) != idx) {
				fam = mfmt_at(f, o);
				if (!own || json_object_object_get(fam,
				    "own") != NULL)
					return false;
				if (pass == 1)
					mfmt_evict(f, fam);
			}
			if (pass == 1)
				json_object_object_add(f->rendered, r,
				    json_object_new_int(idx));
		}
	return true;
}

/*
 * The family's samples array, made if new; NULL if it cannot be.  own:
 * for the supervisor, whose families no worker may add to (NULL for a
 * worker); one a worker made first is the supervisor's from then on,
 * the worker's samples and type dropped.  made: of a worker, how many
 * families its answer made so far (NULL for the supervisor).
 */
static struct json_object *
mfmt_family(struct mfmt *f, const char *name, const char *type,
    const char *help, bool own, size_t *made)
{
	struct json_object *idx, *fam, *t, *o;
	size_t n;

	if (!mfmt_name_ok(name, true) || !mfmt_type_ok(type))
		return NULL;
	if (json_object_object_get_ex(f->byname, name, &idx)) {
		fam = mfmt_at(f, idx);
		o = json_object_object_get(fam, "own");
		if (!own && (o != NULL ||
		    json_object_object_get(fam, "out") != NULL))
			return NULL;
		if (own && o == NULL) {
			if (!mfmt_claim(f, name, type,
			    json_object_get_int(idx), true))
				return NULL;
			mfmt_evict(f, fam);
			json_object_object_del(fam, "out");
			json_object_object_add(fam, "type",
			    json_object_new_string(type));
			json_object_object_add(fam, "help",
			    json_object_new_string(help != NULL ? help : ""));
			json_object_object_add(fam, "own",
			    json_object_new_boolean(true));
			f->nownfams++;
		}
		t = json_object_object_get(fam, "type");
		if (strcmp(json_object_get_string(t), type) != 0)
			return NULL;
		return json_object_object_get(fam, "samples");
	}
	/* Each worker its own quota of new families, so that none can
	 * keep the others' out. */
	if (own ? f->nownfams >= MFMT_MAX_FAMILIES :
	    *made >= MFMT_MAX_FAMILIES)
		return NULL;
	/* Counter names must not end in _total: it is added. */
	if (strcmp(type, "counter") == 0 && strlen(name) > 6 &&
	    strcmp(name + strlen(name) - 6, "_total") == 0)
		return NULL;
	n = json_object_array_length(f->families);
	if (n >= INT32_MAX || !mfmt_claim(f, name, type, (int)n, own))
		return NULL;
	fam = json_object_new_object();
	json_object_object_add(fam, "name", json_object_new_string(name));
	json_object_object_add(fam, "type", json_object_new_string(type));
	json_object_object_add(fam, "help", json_object_new_string(
	    help != NULL ? help : ""));
	json_object_object_add(fam, "samples", json_object_new_array());
	if (own) {
		json_object_object_add(fam, "own",
		    json_object_new_boolean(true));
		f->nownfams++;
	} else
		(*made)++;
	json_object_array_add(f->families, fam);
	json_object_object_add(f->byname, name, json_object_new_int((int)n));
	return json_object_object_get(fam, "samples");
}

int
mfmt_add(struct mfmt *f, const char *name, const char *type,
    const char *help, const char *const *labels, double value)
{
	struct json_object *samples, *l, *s;

	/* Its own budget: the workers' answers cannot use it up. */
	if (f->nown >= MFMT_MAX_SAMPLES)
		return -E2BIG;
	if (strcmp(type, "counter") != 0 && strcmp(type, "gauge") != 0)
		return -EINVAL;
	if ((samples = mfmt_family(f, name, type, help, true, NULL)) == NULL)
		return -EINVAL;
	l = json_object_new_object();
	for (; labels != NULL && labels[0] != NULL; labels += 2) {
		if (!mfmt_name_ok(labels[0], false)) {
			json_object_put(l);
			return -EINVAL;
		}
		json_object_object_add(l, labels[0],
		    json_object_new_string(labels[1]));
	}
	s = json_object_new_array();
	json_object_array_add(s, l);
	json_object_array_add(s, json_object_new_double(value));
	json_object_array_add(samples, s);
	f->nown++;
	return 0;
}

int
mfmt_reserve(struct mfmt *f, const char *name, const char *type,
    const char *help)
{
	if (strcmp(type, "counter") != 0 && strcmp(type, "gauge") != 0)
		return -EINVAL;
	return mfmt_family(f, name, type, help, true, NULL) != NULL ? 0 :
	    -EINVAL;
}

void
mfmt_set_workers(struct mfmt *f, size_t n)
{
	f->quota = n > 0 && MFMT_MAX_SAMPLES / n < MFMT_MAX_VM_SAMPLES ?
	    MFMT_MAX_SAMPLES / n : MFMT_MAX_VM_SAMPLES;
}

static bool
mfmt_is_number(struct json_object *v)
{
	return json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_double);
}

/* A histogram's or summary's value, checked: bucket bounds rising. */
static bool
mfmt_value_ok(const char *type, struct json_object *v)
{
	struct json_object *c, *b, *e, *le;
	double last = -INFINITY;
	size_t i, n;

	if (strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0)
		return mfmt_is_number(v);
	if (!json_object_is_type(v, json_type_object) ||
	    !json_object_object_get_ex(v, "count", &c) || !mfmt_is_number(c))
		return false;
	if (strcmp(type, "summary") == 0)
		return json_object_object_get_ex(v, "sum", &c) &&
		    mfmt_is_number(c);
	if (!json_object_object_get_ex(v, "buckets", &b) ||
	    !json_object_is_type(b, json_type_array) ||
	    (n = json_object_array_length(b)) == 0 || n > MFMT_MAX_BUCKETS)
		return false;
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(b, i);
		if (!json_object_is_type(e, json_type_array) ||
		    json_object_array_length(e) != 2 ||
		    !mfmt_is_number(json_object_array_get_idx(e, 1)))
			return false;
		le = json_object_array_get_idx(e, 0);
		if (le == NULL) {
			/* +Inf: the last bucket only. */
			if (i + 1 != n)
				return false;
			continue;
		}
		if (!mfmt_is_number(le) || json_object_get_double(le) <= last)
			return false;
		last = json_object_get_double(le);
	}
	return true;
}

/* One sample of a worker's family, copied with the vm label first. */
static bool
mfmt_take_sample(struct json_object *samples, const char *type,
    struct json_object *s, const char *vm)
{
	struct json_object *labels, *value, *l, *copy = NULL;
	size_t nl = 0;

	if (!json_object_is_type(s, json_type_array) ||
	    json_object_array_length(s) != 2)
		return false;
	labels = json_object_array_get_idx(s, 0);
	value = json_object_array_get_idx(s, 1);
	if (!json_object_is_type(labels, json_type_object) ||
	    !mfmt_value_ok(type, value))
		return false;
	l = json_object_new_object();
	json_object_object_add(l, "vm", json_object_new_string(vm));
	json_object_object_foreach(labels, k, lv) {
		if (!mfmt_name_ok(k, false) || strcmp(k, "vm") == 0 ||
		    strcmp(k, "le") == 0 || strcmp(k, "quantile") == 0 ||
		    strncmp(k, "__", 2) == 0 ||
		    !json_object_is_type(lv, json_type_string) ||
		    ++nl > MFMT_MAX_LABELS) {
			json_object_put(l);
			return false;
		}
		json_object_object_add(l, k, json_object_get(lv));
	}
	if (json_object_deep_copy(value, &copy, NULL) < 0) {
		json_object_put(l);
		return false;
	}
	s = json_object_new_array();
	json_object_array_add(s, l);
	json_object_array_add(s, copy);
	json_object_array_add(samples, s);
	return true;
}

int
mfmt_add_worker(struct mfmt *f, struct json_object *families,
    const char *vm)
{
	struct json_object *fam, *samples, *ss;
	const char *name, *type, *help;
	size_t i, k, n, left = 0, taken = 0, made = 0;

	if (!json_object_is_type(families, json_type_array))
		return 1;
	for (i = 0; i < json_object_array_length(families); i++) {
		fam = json_object_array_get_idx(families, i);
		name = json_object_get_string(json_object_object_get(fam,
		    "name"));
		type = json_object_get_string(json_object_object_get(fam,
		    "type"));
		help = json_object_get_string(json_object_object_get(fam,
		    "help"));
		ss = json_object_object_get(fam, "samples");
		n = json_object_is_type(ss, json_type_array) ?
		    json_object_array_length(ss) : 0;
		samples = name != NULL && type != NULL &&
		    json_object_is_type(fam, json_type_object) ?
		    mfmt_family(f, name, type, help, false, &made) :
		    NULL;
		if (samples == NULL) {
			left += n > 0 ? n : 1;
			continue;
		}
		/* Past its quota, only this worker's samples are lost. */
		for (k = 0; k < n; k++)
			if (taken >= f->quota ||
			    f->nsamples >= MFMT_MAX_SAMPLES ||
			    !mfmt_take_sample(samples, type,
			    json_object_array_get_idx(ss, k), vm))
				left++;
			else {
				f->nsamples++;
				taken++;
			}
	}
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Rendering ------------------------------------------------------------ */

static void
mfmt_escape(FILE *out, const char *s, bool quote)
{
	for (; *s != '\0'; s++)
		if (*s == '\\')
			fputs("\\\\", out);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (*s == '"' && quote)
			fputs("\\\"", out);
		else
			fputc(*s, out);
}

static void
mfmt_number(FILE *out, struct json_object *v)
{
	double d;

	if (v == NULL) {
		fputs("+Inf", out);
		return;
	}
	if (json_object_is_type(v, json_type_int)) {
		fprintf(out, "%lld", (long long)json_object_get_int64(v));
		return;
	}
	d = json_object_get_double(v);
	if (isnan(d))
		fputs("NaN", out);
	else if (isinf(d))
		fputs(d > 0 ? "+Inf" : "-Inf", out);
	else if (d == floor(d) && fabs(d) < 1e15)
		fprintf(out, "%.0f", d);
	else {
		/* The shortest of 15 and 17 digits that reads back exact. */
		char b[32];

		snprintf(b, sizeof(b), "%.15g", d);
		if (strtod(b, NULL) != d)
			snprintf(b, sizeof(b), "%.17g", d);
		fputs(b, out);
	}
}

/* name{labels[,le="x"]} value */
static void
mfmt_line(FILE *out, const char *name, const char *suffix,
    struct json_object *labels, struct json_object *le, bool has_le,
    struct json_object *value)
{
	bool first = true;

	fprintf(out, "%s%s", name, suffix);
	json_object_object_foreach(labels, k, v) {
		fprintf(out, "%s%s=\"", first ? "{" : ",", k);
		mfmt_escape(out, json_object_get_string(v), true);
		fputc('"', out);
		first = false;
	}
	if (has_le) {
		fprintf(out, "%sle=\"", first ? "{" : ",");
		mfmt_number(out, le);
		fputc('"', out);
		first = false;
	}
	fputs(first ? " " : "} ", out);
	mfmt_number(out, value);
	fputc('\n', out);
}

static void
mfmt_render_family(FILE *out, struct json_object *fam, bool om)
{
	const char *name = json_object_get_string(json_object_object_get(fam,
	    "name"));
	const char *type = json_object_get_string(json_object_object_get(fam,
	    "type"));
	const char *help = json_object_get_string(json_object_object_get(fam,
	    "help"));
	struct json_object *ss = json_object_object_get(fam, "samples");
	bool counter = strcmp(type, "counter") == 0;
	const char *tname = counter && !om ? "_total" : "";
	size_t i, k, n = json_object_array_length(ss);

	if (n == 0)
		return;
	fprintf(out, "# HELP %s%s ", name, tname);
	mfmt_escape(out, help, false);
	fprintf(out, "\n# TYPE %s%s %s\n", name, tname, type);
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(ss, i);
		struct json_object *l = json_object_array_get_idx(s, 0);
		struct json_object *v = json_object_array_get_idx(s, 1);
		struct json_object *b, *e;

		if (counter || strcmp(type, "gauge") == 0) {
			mfmt_line(out, name, counter ? "_total" : "", l, NULL,
			    false, v);
			continue;
		}
		if (strcmp(type, "histogram") == 0) {
			b = json_object_object_get(v, "buckets");
			for (k = 0; k < json_object_array_length(b); k++) {
				e = json_object_array_get_idx(b, k);
				mfmt_line(out, name, "_bucket", l,
				    json_object_array_get_idx(e, 0), true,
				    json_object_array_get_idx(e, 1));
			}
			/* Every histogram has its +Inf bucket. */
			e = json_object_array_get_idx(b, k - 1);
			if (json_object_array_get_idx(e, 0) != NULL)
				mfmt_line(out, name, "_bucket", l, NULL, true,
				    json_object_object_get(v, "count"));
		}
		mfmt_line(out, name, "_count", l, NULL, false,
		    json_object_object_get(v, "count"));
		if (json_object_object_get_ex(v, "sum", &e))
			mfmt_line(out, name, "_sum", l, NULL, false, e);
	}
}

char *
mfmt_render(const struct mfmt *f, bool openmetrics, size_t *len)
{
	char *buf = NULL;
	size_t i, size = 0;
	FILE *out;

	if ((out = open_memstream(&buf, &size)) == NULL)
		return NULL;
	for (i = 0; i < json_object_array_length(f->families); i++)
		mfmt_render_family(out, json_object_array_get_idx(f->families,
		    i), openmetrics);
	if (openmetrics)
		fputs("# EOF\n", out);
	if (fclose(out) != 0) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}
