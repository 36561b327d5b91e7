/*
 * Device state sections (devices/dev-state.c): a round trip of every
 * field type, an older section read with the defaults of the fields it
 * lacks, retired fields skipped, and hostile sections refused, each
 * with its own error and the destination untouched.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "tap.h"
#include "unit-util.h"

struct toy {
	void *backend;			/* not state: must survive a load */
	uint8_t a;
	uint16_t b;
	uint32_t idx;			/* < n, and n <= 8 */
	uint32_t n;
	uint64_t c;
	bool on;
	uint8_t raw[5];
	uint16_t w[3];
	uint32_t nv;
	uint64_t v[4];			/* nv of them */
	uint32_t added;			/* version 2 */
	uint8_t gone;
};

static int
toy_check(const void *state, struct dev_state_error *err)
{
	const struct toy *t = state;

	if (t->idx >= t->n)
		return dev_state_fail(err, -ERANGE, "toy: idx %u of %u",
		    t->idx, t->n);
	return 0;
}

#define T(nm, ty, m, ...)						\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct toy, m), __VA_ARGS__ }

static const struct dev_state_field toy_fields_v2[] = {
	T("a", DEV_STATE_U8, a),
	T("b", DEV_STATE_U16, b),
	T("idx", DEV_STATE_U32, idx),
	T("n", DEV_STATE_U32, n, .max = 8),
	T("c", DEV_STATE_U64, c),
	T("on", DEV_STATE_BOOL, on),
	T("raw", DEV_STATE_BYTES, raw),
	T("w", DEV_STATE_ARRAY_U16, w, .max = 1000),
	T("v", DEV_STATE_ARRAY_U64, v, .flags = DEV_STATE_VARLEN,
	    .count_offset = offsetof(struct toy, nv)),
	T("added", DEV_STATE_U32, added, .since = 2, .dflt = 42),
	T("gone", DEV_STATE_U8, gone, .flags = DEV_STATE_RETIRED),
};

/* Version 1: no "added", and "gone" still kept. */
static const struct dev_state_field toy_fields_v1[] = {
	T("a", DEV_STATE_U8, a),
	T("b", DEV_STATE_U16, b),
	T("idx", DEV_STATE_U32, idx),
	T("n", DEV_STATE_U32, n, .max = 8),
	T("c", DEV_STATE_U64, c),
	T("on", DEV_STATE_BOOL, on),
	T("raw", DEV_STATE_BYTES, raw),
	T("w", DEV_STATE_ARRAY_U16, w, .max = 1000),
	T("v", DEV_STATE_ARRAY_U64, v, .flags = DEV_STATE_VARLEN,
	    .count_offset = offsetof(struct toy, nv)),
	T("gone", DEV_STATE_U8, gone),
};

static const struct dev_state_table toy_v2 = {
	DEV_STATE_TABLE("toy", 2, struct toy, toy_fields_v2),
	.check = toy_check,
};
static const struct dev_state_table toy_v1 = {
	DEV_STATE_TABLE("toy", 1, struct toy, toy_fields_v1),
	.check = toy_check,
};

static struct toy
toy_sample(void)
{
	struct toy t = {
		.backend = &t, .a = 0xa5, .b = 0xbeef, .idx = 3, .n = 8,
		.c = 0x0123456789abcdefULL, .on = true,
		.raw = { 1, 2, 3, 4, 5 }, .w = { 7, 8, 999 }, .nv = 2,
		.v = { UINT64_MAX, 17 }, .added = 5, .gone = 9,
	};

	return t;
}

/* A hand-made section: header, then fields appended, then sealed. */
struct sec {
	uint8_t b[512];
	size_t len;
	size_t body;
};

static void
sec_raw(struct sec *s, const void *p, size_t n)
{
	memcpy(s->b + s->len, p, n);
	s->len += n;
}

static void
sec_name(struct sec *s, const char *name)
{
	uint8_t n = strlen(name);

	sec_raw(s, &n, 1);
	sec_raw(s, name, n);
}

static void
sec_begin(struct sec *s, const char *name, uint32_t version, uint32_t nf)
{
	s->len = 0;
	put32(s->b, DEV_STATE_MAGIC);
	s->len = 4;
	sec_name(s, name);
	put32(s->b + s->len, version);
	put32(s->b + s->len + 4, nf);
	s->len += 12;
	s->body = s->len;
}

static void
sec_field(struct sec *s, const char *name, uint8_t type, uint32_t count,
    const void *value, size_t vlen)
{
	sec_name(s, name);
	sec_raw(s, &type, 1);
	put32(s->b + s->len, count);
	s->len += 4;
	sec_raw(s, value, vlen);
}

static void
sec_end(struct sec *s)
{
	put32(s->b + s->body - 4, s->len - s->body);
}

static int
load_err(const void *buf, size_t len, struct dev_state_error *e)
{
	struct toy t = toy_sample(), before = t;
	int rc;

	e->msg[0] = '\0';
	rc = dev_state_load(&toy_v2, &t, buf, len, e);
	if (rc < 0 && memcmp(&t, &before, sizeof(t)) != 0)
		return -9999;		/* a failed load changed dst */
	return rc;
}

/* A valid two-field-short section for toy_v2 with one field replaced. */
static void
sec_valid_but(struct sec *s, const char *name, uint8_t type, uint32_t count,
    const void *value, size_t vlen)
{
	struct toy t = toy_sample();
	struct {
		const char *n;
		uint8_t ty;
		uint32_t cnt;
		const void *p;
		size_t len;
	} f[] = {
		{ "a", DEV_STATE_U8, 1, &t.a, 1 },
		{ "b", DEV_STATE_U16, 1, &t.b, 2 },
		{ "idx", DEV_STATE_U32, 1, &t.idx, 4 },
		{ "n", DEV_STATE_U32, 1, &t.n, 4 },
		{ "c", DEV_STATE_U64, 1, &t.c, 8 },
		{ "on", DEV_STATE_BOOL, 1, &t.on, 1 },
		{ "raw", DEV_STATE_BYTES, 5, t.raw, 5 },
		{ "w", DEV_STATE_ARRAY_U16, 3, t.w, 6 },
		{ "v", DEV_STATE_ARRAY_U64, 2, t.v, 16 },
		{ "added", DEV_STATE_U32, 1, &t.added, 4 },
	};
	size_t nf = sizeof(f) / sizeof(f[0]);
	bool found = false;

	for (size_t i = 0; i < nf; i++)
		found |= strcmp(f[i].n, name) == 0;
	/* A name the table lacks comes as one more field, at the end. */
	sec_begin(s, "toy", 2, nf + !found);
	for (size_t i = 0; i < nf; i++) {
		if (strcmp(f[i].n, name) == 0)
			sec_field(s, name, type, count, value, vlen);
		else
			sec_field(s, f[i].n, f[i].ty, f[i].cnt, f[i].p,
			    f[i].len);
	}
	if (!found)
		sec_field(s, name, type, count, value, vlen);
	sec_end(s);
}

static void
test_tables(void)
{
	struct dev_state_error e;

	tap_ok(dev_state_table_check(&toy_v2, &e) == 0, "table v2 is sound");
	tap_ok(dev_state_table_check(&toy_v1, &e) == 0, "table v1 is sound");
	{
		static const struct dev_state_field bad[] = {
			T("a", DEV_STATE_U16, a),
		};
		static const struct dev_state_table tb = {
			DEV_STATE_TABLE("bad", 1, struct toy, bad),
		};

		tap_ok(dev_state_table_check(&tb, &e) == -EINVAL,
		    "a u16 on a one-byte member is refused: %s", e.msg);
	}
}

static void
test_round_trip(void)
{
	struct dev_state_buf b1 = { 0 }, b2 = { 0 };
	struct dev_state_error e = { "" };
	struct toy src = toy_sample(), dst;
	int rc;

	tap_ok(dev_state_save(&toy_v2, &src, &b1) == 0, "save");
	tap_ok(dev_state_section_len(b1.data, b1.len) == (long)b1.len,
	    "the section's length is what was written");
	memset(&dst, 0, sizeof(dst));
	dst.backend = &dst;
	rc = dev_state_load(&toy_v2, &dst, b1.data, b1.len, &e);
	tap_ok(rc == 0, "load: %d %s", rc, e.msg);
	tap_ok(dst.backend == &dst, "a member the table does not name stays");
	tap_ok(dst.a == src.a && dst.b == src.b && dst.idx == src.idx &&
	    dst.n == src.n && dst.c == src.c && dst.on == src.on &&
	    memcmp(dst.raw, src.raw, 5) == 0 &&
	    memcmp(dst.w, src.w, sizeof(dst.w)) == 0 && dst.nv == 2 &&
	    dst.v[0] == src.v[0] && dst.v[1] == src.v[1] &&
	    dst.added == src.added, "every field comes back");
	tap_ok(dst.gone == 0, "a retired field is neither written nor read");
	tap_ok(dev_state_save(&toy_v2, &dst, &b2) == 0 && b1.len == b2.len &&
	    memcmp(b1.data, b2.data, b1.len) == 0,
	    "saved again: the same bytes");
	/* Little endian on the wire: the u16 0xbeef right after its count. */
	{
		const uint8_t *p = memmem(b1.data, b1.len, "\001b\002", 3);

		tap_ok(p != NULL && get32(p + 3) == 1 && p[7] == 0xef &&
		    p[8] == 0xbe, "values are little endian");
	}
	dev_state_buf_free(&b1);
	dev_state_buf_free(&b2);
}

static void
test_older(void)
{
	struct dev_state_buf b = { 0 };
	struct dev_state_error e = { "" };
	struct toy src = toy_sample(), dst = toy_sample();
	int rc;

	src.added = 77;
	tap_ok(dev_state_save(&toy_v1, &src, &b) == 0, "save as version 1");
	dst.added = 1;
	rc = dev_state_load(&toy_v2, &dst, b.data, b.len, &e);
	tap_ok(rc == 0, "version 1 loads into version 2: %d %s", rc, e.msg);
	tap_ok(dst.added == 42, "the field version 2 added has its default");
	tap_ok(dst.gone == 9, "the retired field was skipped, not stored");
	dev_state_buf_free(&b);

	/* Version 2 into version 1: refused. */
	src = toy_sample();
	tap_ok(dev_state_save(&toy_v2, &src, &b) == 0, "save as version 2");
	rc = dev_state_load(&toy_v1, &dst, b.data, b.len, &e);
	tap_ok(rc == -EPROTONOSUPPORT, "a newer section is refused: %s",
	    e.msg);
	dev_state_buf_free(&b);
}

static void
test_hostile(void)
{
	struct dev_state_buf b = { 0 };
	struct dev_state_error e;
	struct toy src = toy_sample();
	struct sec s;
	uint8_t v8[64] = { 0 };
	uint32_t big = 9, two = 2, idx = 8;
	size_t cut;
	bool all = true;
	int rc;

	if (dev_state_save(&toy_v2, &src, &b) != 0)
		tap_bail("save");
	for (cut = 0; cut < b.len; cut++) {
		rc = load_err(b.data, cut, &e);
		if (rc != -EBADMSG && rc != -EINVAL) {
			tap_diag("cut at %zu: %d", cut, rc);
			all = false;
		}
	}
	tap_ok(all, "every truncation is refused, dst untouched");
	{
		uint8_t *p = malloc(b.len + 1);

		memcpy(p, b.data, b.len);
		p[b.len] = 0;
		tap_ok(load_err(p, b.len + 1, &e) == -EBADMSG,
		    "a byte after the section: %s", e.msg);
		p[0] ^= 1;
		tap_ok(load_err(p, b.len, &e) == -EBADMSG, "bad magic: %s",
		    e.msg);
		free(p);
	}
	dev_state_buf_free(&b);

	sec_begin(&s, "uart", 1, 0);
	sec_end(&s);
	tap_ok(load_err(s.b, s.len, &e) == -ENOENT, "another section: %s",
	    e.msg);
	sec_begin(&s, "toy", 0, 0);
	sec_end(&s);
	tap_ok(load_err(s.b, s.len, &e) == -EBADMSG, "version 0: %s", e.msg);
	sec_begin(&s, "toy", 2, 5000);
	sec_end(&s);
	tap_ok(load_err(s.b, s.len, &e) == -E2BIG, "too many fields: %s",
	    e.msg);
	sec_begin(&s, "toy", 2, 0);
	sec_end(&s);
	tap_ok(load_err(s.b, s.len, &e) == -ENOENT, "fields missing: %s",
	    e.msg);

	sec_valid_but(&s, "a", DEV_STATE_U8, 1, v8, 1);
	tap_ok(load_err(s.b, s.len, &e) == 0, "the hand-made section loads: %s",
	    e.msg);
	sec_valid_but(&s, "a", DEV_STATE_U16, 1, v8, 2);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "another type: %s",
	    e.msg);
	sec_valid_but(&s, "a", DEV_STATE_U8, 2, v8, 2);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "a scalar of two: %s",
	    e.msg);
	sec_valid_but(&s, "raw", DEV_STATE_BYTES, 6, v8, 6);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "bytes too long: %s",
	    e.msg);
	sec_valid_but(&s, "n", DEV_STATE_U32, 1, &big, 4);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "beyond max: %s", e.msg);
	v8[0] = 2;
	sec_valid_but(&s, "on", DEV_STATE_BOOL, 1, v8, 1);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "a bool of 2: %s", e.msg);
	v8[0] = 0;
	{
		uint16_t w[3] = { 1, 1001, 1 };

		sec_valid_but(&s, "w", DEV_STATE_ARRAY_U16, 3, w, 6);
		tap_ok(load_err(s.b, s.len, &e) == -EINVAL,
		    "an element beyond max: %s", e.msg);
	}
	sec_valid_but(&s, "v", DEV_STATE_ARRAY_U64, 5, v8, 40);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL,
	    "a variable array beyond its room: %s", e.msg);
	sec_valid_but(&s, "v", DEV_STATE_ARRAY_U64, 0x10000000, v8, 0);
	tap_ok(load_err(s.b, s.len, &e) == -E2BIG, "a huge count: %s", e.msg);
	sec_valid_but(&s, "zz", DEV_STATE_U8, 1, v8, 1);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "an unknown field: %s",
	    e.msg);
	sec_valid_but(&s, "b", DEV_STATE_U8, 1, v8, 1);
	memcpy((uint8_t *)memmem(s.b + s.body, s.len - s.body, "\001b", 2) +
	    1, "a", 1);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "a field twice: %s",
	    e.msg);
	sec_valid_but(&s, "idx", DEV_STATE_U32, 1, &idx, 4);
	rc = load_err(s.b, s.len, &e);
	tap_ok(rc == -ERANGE && strstr(e.msg, "idx 8 of 8") != NULL,
	    "check() refuses an index beyond its ring: %s", e.msg);
	sec_valid_but(&s, "idx", DEV_STATE_U32, 1, &two, 4);
	s.b[s.body + 1] = 0;		/* the first field's name: "\0" */
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL, "a NUL in a name: %s",
	    e.msg);
	/* A version 1 section that has the field version 2 added. */
	sec_valid_but(&s, "a", DEV_STATE_U8, 1, v8, 1);
	put32(s.b + 4 + 1 + 3, 1);
	tap_ok(load_err(s.b, s.len, &e) == -EINVAL,
	    "a field newer than its section: %s", e.msg);
}

int
main(void)
{
	test_tables();
	test_round_trip();
	test_older();
	test_hostile();
	return tap_done();
}
