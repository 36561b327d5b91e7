/*
 * Device state sections (dev-state.h): writing a table's fields out of
 * a state struct, and reading them back with every byte of the section
 * treated as hostile input.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"

int
dev_state_fail(struct dev_state_error *err, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return rc;
}

void
dev_state_buf_free(struct dev_state_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* The bytes of one element of type, or 0 for a type we do not know. */
static size_t
dev_state_elem_size(unsigned int type)
{
	switch (type) {
	case DEV_STATE_U8:
	case DEV_STATE_BOOL:
	case DEV_STATE_BYTES:
	case DEV_STATE_ARRAY_U8:
		return 1;
	case DEV_STATE_U16:
	case DEV_STATE_ARRAY_U16:
		return 2;
	case DEV_STATE_U32:
	case DEV_STATE_ARRAY_U32:
		return 4;
	case DEV_STATE_U64:
	case DEV_STATE_ARRAY_U64:
		return 8;
	default:
		return 0;
	}
}

static bool
dev_state_scalar(unsigned int type)
{
	return type >= DEV_STATE_U8 && type <= DEV_STATE_BOOL;
}

/* The elements a field holds in src now (its maximum unless VARLEN). */
static size_t
dev_state_count(const struct dev_state_field *f, const void *src)
{
	uint32_t n;

	if (dev_state_scalar(f->type))
		return 1;
	if (f->flags & DEV_STATE_VARLEN) {
		memcpy(&n, (const uint8_t *)src + f->count_offset, sizeof(n));
		return n;
	}
	return f->size / dev_state_elem_size(f->type);
}

static uint64_t
dev_state_get(const uint8_t *p, size_t esize)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (esize) {
	case 1:
		return *p;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

static void
dev_state_put(uint8_t *p, size_t esize, uint64_t v)
{
	uint16_t v16 = v;
	uint32_t v32 = v;

	switch (esize) {
	case 1:
		*p = v;
		break;
	case 2:
		memcpy(p, &v16, 2);
		break;
	case 4:
		memcpy(p, &v32, 4);
		break;
	default:
		memcpy(p, &v, 8);
		break;
	}
}

/* Little endian on the wire, whatever the host. */
static void
dev_state_put_le(uint8_t *p, size_t esize, uint64_t v)
{
	for (size_t i = 0; i < esize; i++)
		p[i] = v >> (8 * i);
}

static uint64_t
dev_state_get_le(const uint8_t *p, size_t esize)
{
	uint64_t v = 0;

	for (size_t i = 0; i < esize; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int
dev_state_table_check(const struct dev_state_table *t,
    struct dev_state_error *err)
{
	size_t len = t->name != NULL ? strlen(t->name) : 0;

	if (len == 0 || len > DEV_STATE_NAME_MAX || t->version == 0 ||
	    t->nfields > DEV_STATE_FIELDS_MAX)
		return dev_state_fail(err, -EINVAL, "bad table header");
	for (size_t i = 0; i < t->nfields; i++) {
		const struct dev_state_field *f = &t->fields[i];
		size_t es = dev_state_elem_size(f->type);

		len = f->name != NULL ? strlen(f->name) : 0;
		if (len == 0 || len > DEV_STATE_NAME_MAX || es == 0)
			return dev_state_fail(err, -EINVAL,
			    "%s: field %zu: bad name or type", t->name, i);
		if (f->offset + f->size > t->struct_size ||
		    f->size > DEV_STATE_VALUE_MAX || f->size == 0 ||
		    f->size % es != 0 ||
		    (dev_state_scalar(f->type) && f->size != es))
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: size %zu does not fit", t->name, f->name,
			    f->size);
		if ((f->flags & DEV_STATE_VARLEN) &&
		    (dev_state_scalar(f->type) ||
		    f->count_offset + 4 > t->struct_size))
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: bad count", t->name, f->name);
		if (f->since > t->version)
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: newer than the table", t->name, f->name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->fields[j].name, f->name) == 0)
				return dev_state_fail(err, -EINVAL,
				    "%s: %s: declared twice", t->name,
				    f->name);
	}
	return 0;
}

static int
dev_state_reserve(struct dev_state_buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->data, cap);
	if (p == NULL)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

static void
dev_state_emit(struct dev_state_buf *b, const void *p, size_t n)
{
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void
dev_state_emit_le(struct dev_state_buf *b, size_t esize, uint64_t v)
{
	dev_state_put_le(b->data + b->len, esize, v);
	b->len += esize;
}

static void
dev_state_emit_name(struct dev_state_buf *b, const char *name)
{
	size_t n = strlen(name);

	dev_state_emit_le(b, 1, n);
	dev_state_emit(b, name, n);
}

int
dev_state_save(const struct dev_state_table *t, const void *src,
    struct dev_state_buf *out)
{
	const uint8_t *s = src;
	size_t body, need;
	uint32_t nf = 0;
	int rc;

	/* The size first, so that the writes below cannot fail. */
	need = 4 + 1 + strlen(t->name) + 4 + 4 + 4;
	for (size_t i = 0; i < t->nfields; i++) {
		const struct dev_state_field *f = &t->fields[i];
		size_t es = dev_state_elem_size(f->type);

		if (f->flags & DEV_STATE_RETIRED)
			continue;
		if (dev_state_count(f, src) * es > f->size)
			return -E2BIG;
		need += 1 + strlen(f->name) + 1 + 4 +
		    dev_state_count(f, src) * es;
		nf++;
	}
	rc = dev_state_reserve(out, need);
	if (rc < 0)
		return rc;

	dev_state_emit_le(out, 4, DEV_STATE_MAGIC);
	dev_state_emit_name(out, t->name);
	dev_state_emit_le(out, 4, t->version);
	dev_state_emit_le(out, 4, nf);
	body = out->len;
	dev_state_emit_le(out, 4, 0);		/* the body's length, below */
	for (size_t i = 0; i < t->nfields; i++) {
		const struct dev_state_field *f = &t->fields[i];
		size_t es = dev_state_elem_size(f->type);
		size_t n = dev_state_count(f, src);

		if (f->flags & DEV_STATE_RETIRED)
			continue;
		dev_state_emit_name(out, f->name);
		dev_state_emit_le(out, 1, f->type);
		dev_state_emit_le(out, 4, n);
		if (f->type == DEV_STATE_BOOL) {
			bool v;

			memcpy(&v, s + f->offset, sizeof(v));
			dev_state_emit_le(out, 1, v ? 1 : 0);
		} else if (es == 1) {
			dev_state_emit(out, s + f->offset, n);
		} else {
			for (size_t j = 0; j < n; j++)
				dev_state_emit_le(out, es, dev_state_get(
				    s + f->offset + j * es, es));
		}
	}
	dev_state_put_le(out->data + body, 4, out->len - body - 4);
	return 0;
}

/* A cursor over hostile bytes. */
struct dev_state_rd {
	const uint8_t *p;
	size_t left;
};

static bool
dev_state_take(struct dev_state_rd *r, size_t n, const uint8_t **out)
{
	if (n > r->left)
		return false;
	*out = r->p;
	r->p += n;
	r->left -= n;
	return true;
}

static bool
dev_state_take_le(struct dev_state_rd *r, size_t n, uint64_t *v)
{
	const uint8_t *p;

	if (!dev_state_take(r, n, &p))
		return false;
	*v = dev_state_get_le(p, n);
	return true;
}

/* A name: 1 to DEV_STATE_NAME_MAX bytes, no NUL; into buf as a string. */
static int
dev_state_take_name(struct dev_state_rd *r, char *buf,
    struct dev_state_error *err)
{
	const uint8_t *p;
	uint64_t n;

	if (!dev_state_take_le(r, 1, &n) || !dev_state_take(r, n, &p))
		return dev_state_fail(err, -EBADMSG, "truncated in a name");
	if (n == 0 || n > DEV_STATE_NAME_MAX || memchr(p, 0, n) != NULL)
		return dev_state_fail(err, -EINVAL, "bad name of %u bytes",
		    (unsigned int)n);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

long
dev_state_section_len(const void *buf, size_t len)
{
	struct dev_state_rd r = { buf, len };
	const uint8_t *p;
	uint64_t v, n, body;

	if (!dev_state_take_le(&r, 4, &v) || v != DEV_STATE_MAGIC ||
	    !dev_state_take_le(&r, 1, &n) || !dev_state_take(&r, n, &p) ||
	    !dev_state_take_le(&r, 4, &v) || !dev_state_take_le(&r, 4, &v) ||
	    !dev_state_take_le(&r, 4, &body) || body > r.left)
		return -EBADMSG;
	return (long)(len - r.left + body);
}

static const struct dev_state_field *
dev_state_find(const struct dev_state_table *t, const char *name, size_t *idx)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (strcmp(t->fields[i].name, name) == 0) {
			*idx = i;
			return &t->fields[i];
		}
	return NULL;
}

static uint64_t
dev_state_type_max(const struct dev_state_field *f, size_t es)
{
	if (f->type == DEV_STATE_BOOL)
		return 1;
	if (f->max != 0)
		return f->max;
	return es == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * es)) - 1;
}

/* One field's value, count elements at p, into the copy d. */
static int
dev_state_decode(const struct dev_state_table *t,
    const struct dev_state_field *f, uint8_t *d, const uint8_t *p,
    size_t count, struct dev_state_error *err)
{
	size_t es = dev_state_elem_size(f->type);
	uint64_t max = dev_state_type_max(f, es);

	if (f->flags & DEV_STATE_VARLEN) {
		uint32_t n = count;

		memcpy(d + f->count_offset, &n, sizeof(n));
	}
	if (f->type == DEV_STATE_BYTES) {
		memcpy(d + f->offset, p, count);
		return 0;
	}
	for (size_t j = 0; j < count; j++) {
		uint64_t v = dev_state_get_le(p + j * es, es);

		if (v > max)
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: %llu is beyond %llu", t->name, f->name,
			    (unsigned long long)v, (unsigned long long)max);
		if (f->type == DEV_STATE_BOOL) {
			bool b = v;

			memcpy(d + f->offset, &b, sizeof(b));
		} else {
			dev_state_put(d + f->offset + j * es, es, v);
		}
	}
	return 0;
}

static void
dev_state_default(const struct dev_state_field *f, uint8_t *d)
{
	size_t es = dev_state_elem_size(f->type);

	if (f->flags & DEV_STATE_VARLEN) {
		uint32_t n = 0;

		memcpy(d + f->count_offset, &n, sizeof(n));
		return;
	}
	if (f->type == DEV_STATE_BYTES) {
		memset(d + f->offset, (int)(uint8_t)f->dflt, f->size);
	} else if (f->type == DEV_STATE_BOOL) {
		bool b = f->dflt != 0;

		memcpy(d + f->offset, &b, sizeof(b));
	} else {
		for (size_t j = 0; j < f->size / es; j++)
			dev_state_put(d + f->offset + j * es, es, f->dflt);
	}
}

/* The fields of the body in r, into the copy d; seen[] marks them. */
static int
dev_state_read_fields(const struct dev_state_table *t, uint8_t *d,
    struct dev_state_rd *r, uint32_t version, uint64_t nfields, bool *seen,
    struct dev_state_error *err)
{
	char name[DEV_STATE_NAME_MAX + 1];
	const struct dev_state_field *f;
	const uint8_t *p;
	uint64_t type, count;
	size_t i, es, maxn;
	int rc;

	for (uint64_t k = 0; k < nfields; k++) {
		rc = dev_state_take_name(r, name, err);
		if (rc < 0)
			return rc;
		if (!dev_state_take_le(r, 1, &type) ||
		    !dev_state_take_le(r, 4, &count))
			return dev_state_fail(err, -EBADMSG,
			    "%s: %s: truncated", t->name, name);
		f = dev_state_find(t, name, &i);
		if (f == NULL)
			return dev_state_fail(err, -EINVAL,
			    "%s: unknown field %s", t->name, name);
		if (seen[i])
			return dev_state_fail(err, -EINVAL,
			    "%s: %s appears twice", t->name, name);
		seen[i] = true;
		if (type != f->type)
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: type %u, expected %u", t->name, name,
			    (unsigned int)type, (unsigned int)f->type);
		if ((f->since > 1 ? f->since : 1) > version)
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: not in version %u", t->name, name,
			    (unsigned int)version);
		es = dev_state_elem_size(f->type);
		maxn = f->size / es;
		if (count * es > DEV_STATE_VALUE_MAX)
			return dev_state_fail(err, -E2BIG,
			    "%s: %s: %llu elements", t->name, name,
			    (unsigned long long)count);
		if (!(f->flags & DEV_STATE_RETIRED) &&
		    ((f->flags & DEV_STATE_VARLEN) ? count > maxn :
		    count != maxn))
			return dev_state_fail(err, -EINVAL,
			    "%s: %s: %llu elements, expected %s%zu", t->name,
			    name, (unsigned long long)count,
			    (f->flags & DEV_STATE_VARLEN) ? "at most " : "",
			    maxn);
		if (!dev_state_take(r, count * es, &p))
			return dev_state_fail(err, -EBADMSG,
			    "%s: %s: truncated value", t->name, name);
		if (f->flags & DEV_STATE_RETIRED)
			continue;
		rc = dev_state_decode(t, f, d, p, count, err);
		if (rc < 0)
			return rc;
	}
	if (r->left != 0)
		return dev_state_fail(err, -EBADMSG,
		    "%s: %zu bytes after the last field", t->name, r->left);
	return 0;
}

int
dev_state_load(const struct dev_state_table *t, void *dst, const void *buf,
    size_t len, struct dev_state_error *err)
{
	char name[DEV_STATE_NAME_MAX + 1];
	struct dev_state_rd r = { buf, len };
	uint64_t magic, version, nfields, body;
	uint8_t *copy = NULL;
	bool *seen = NULL;
	int rc;

	if (!dev_state_take_le(&r, 4, &magic) || magic != DEV_STATE_MAGIC)
		return dev_state_fail(err, -EBADMSG,
		    "%s: not a state section", t->name);
	rc = dev_state_take_name(&r, name, err);
	if (rc < 0)
		return rc;
	if (strcmp(name, t->name) != 0)
		return dev_state_fail(err, -ENOENT,
		    "section %s where %s was expected", name, t->name);
	if (!dev_state_take_le(&r, 4, &version) ||
	    !dev_state_take_le(&r, 4, &nfields) ||
	    !dev_state_take_le(&r, 4, &body))
		return dev_state_fail(err, -EBADMSG, "%s: truncated header",
		    t->name);
	if (version == 0)
		return dev_state_fail(err, -EBADMSG, "%s: version 0", t->name);
	if (version > t->version)
		return dev_state_fail(err, -EPROTONOSUPPORT,
		    "%s: version %u is newer than %u", t->name,
		    (unsigned int)version, t->version);
	if (nfields > DEV_STATE_FIELDS_MAX)
		return dev_state_fail(err, -E2BIG, "%s: %llu fields", t->name,
		    (unsigned long long)nfields);
	if (body != r.left)
		return dev_state_fail(err, -EBADMSG,
		    "%s: %llu bytes of fields, %zu given", t->name,
		    (unsigned long long)body, r.left);

	copy = malloc(t->struct_size);
	seen = calloc(t->nfields ? t->nfields : 1, sizeof(*seen));
	if (copy == NULL || seen == NULL) {
		rc = dev_state_fail(err, -ENOMEM, "%s: out of memory",
		    t->name);
		goto out;
	}
	memcpy(copy, dst, t->struct_size);
	rc = dev_state_read_fields(t, copy, &r, version, nfields, seen, err);
	if (rc < 0)
		goto out;
	for (size_t i = 0; i < t->nfields; i++) {
		const struct dev_state_field *f = &t->fields[i];

		if (seen[i] || (f->flags & DEV_STATE_RETIRED))
			continue;
		if ((f->since > 1 ? f->since : 1) <= version) {
			rc = dev_state_fail(err, -ENOENT, "%s: %s is missing",
			    t->name, f->name);
			goto out;
		}
		dev_state_default(f, copy);
	}
	if (t->check != NULL) {
		if (err != NULL)
			err->msg[0] = '\0';
		rc = t->check(copy, err);
		if (rc < 0) {
			if (err != NULL && err->msg[0] == '\0')
				dev_state_fail(err, rc, "%s: inconsistent",
				    t->name);
			goto out;
		}
	}
	memcpy(dst, copy, t->struct_size);
	rc = 0;
out:
	free(seen);
	free(copy);
	return rc;
}
