/* See mig-stream.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <zlib.h>

#include "mig-stream.h"

static void
mig_put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void
mig_put64(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
mig_get32(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	    (uint32_t)b[3] << 24;
}

static uint64_t
mig_get64(const uint8_t *b)
{
	return (uint64_t)mig_get32(b) | (uint64_t)mig_get32(b + 4) << 32;
}

static int
mig_fail(int rc, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
mig_fail(int rc, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

void
mig_header_put(uint8_t *buf)
{
	memcpy(buf, MIG_MAGIC, 8);
	mig_put32(buf + 8, MIG_VERSION);
	mig_put32(buf + 12, 0);
}

int
mig_header_check(const uint8_t *buf, char *err, size_t errlen)
{
	uint32_t v;

	if (memcmp(buf, MIG_MAGIC, 8) != 0)
		return mig_fail(-EPROTO, err, errlen, "not a vmmd migration "
		    "stream");
	v = mig_get32(buf + 8);
	if (v != MIG_VERSION || mig_get32(buf + 12) != 0)
		return mig_fail(-EPROTONOSUPPORT, err, errlen, "a migration "
		    "stream of version %u; this vmmd reads version %u", v,
		    MIG_VERSION);
	return 0;
}

void
mig_frame_put(uint8_t *buf, uint32_t type, const void *p, uint32_t len)
{
	mig_put32(buf, type);
	mig_put32(buf + 4, len);
	mig_put32(buf + 8, (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, len));
}

int
mig_frame_parse(const uint8_t *buf, struct mig_frame *f, char *err,
    size_t errlen)
{
	uint32_t min = 0, max = 0;

	f->type = mig_get32(buf);
	f->len = mig_get32(buf + 4);
	f->crc = mig_get32(buf + 8);
	switch (f->type) {
	case MIG_T_RAM:
		min = MIG_PAGES_HEADER + MIG_PAGE_SIZE;
		max = MIG_PAGES_HEADER + MIG_PAGES_MAX * MIG_PAGE_SIZE;
		break;
	case MIG_T_ZERO:
		min = max = MIG_PAGES_HEADER;
		break;
	case MIG_T_SECTION:
		min = 2;
		max = MIG_FRAME_MAX;
		break;
	case MIG_T_END:
	case MIG_T_RUNNING:
		break;
	case MIG_T_ERROR:
		max = 1024;
		break;
	default:
		return mig_fail(-EPROTO, err, errlen, "a frame of unknown "
		    "type %u", f->type);
	}
	if (f->len < min || f->len > max)
		return mig_fail(-EPROTO, err, errlen, "a frame of type %u with "
		    "%u bytes (%u to %u allowed)", f->type, f->len, min, max);
	return 0;
}

int
mig_frame_verify(const struct mig_frame *f, const void *p, char *err,
    size_t errlen)
{
	uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, f->len);

	if (crc != f->crc)
		return mig_fail(-EBADMSG, err, errlen, "a frame of type %u: "
		    "checksum %08x, %08x expected", f->type, crc, f->crc);
	return 0;
}

void
mig_pages_put(uint8_t *buf, uint64_t gpa, uint32_t pages)
{
	mig_put64(buf, gpa);
	mig_put32(buf + 8, pages);
	mig_put32(buf + 12, 0);
}

int
mig_pages_parse(const struct mig_frame *f, const uint8_t *p,
    const struct mig_region *r, size_t nr, uint8_t **dst, uint32_t *pages,
    char *err, size_t errlen)
{
	uint64_t gpa = mig_get64(p), bytes;
	uint32_t n = mig_get32(p + 8);
	size_t i;

	if (mig_get32(p + 12) != 0 || n == 0 || n > MIG_PAGES_MAX ||
	    (gpa & (MIG_PAGE_SIZE - 1)) != 0)
		return mig_fail(-EPROTO, err, errlen, "pages at %#llx: a bad "
		    "header (%u pages)", (unsigned long long)gpa, n);
	bytes = (uint64_t)n * MIG_PAGE_SIZE;
	if (f->type == MIG_T_RAM && f->len != MIG_PAGES_HEADER + bytes)
		return mig_fail(-EPROTO, err, errlen, "pages at %#llx: %u "
		    "pages in %u bytes", (unsigned long long)gpa, n, f->len);
	for (i = 0; i < nr; i++)
		/* Written so that no sum can wrap. */
		if (gpa >= r[i].gpa && gpa - r[i].gpa < r[i].size &&
		    bytes <= r[i].size - (gpa - r[i].gpa)) {
			*dst = r[i].host + (gpa - r[i].gpa);
			*pages = n;
			return 0;
		}
	return mig_fail(-ERANGE, err, errlen, "%u pages at %#llx: outside "
	    "guest RAM", n, (unsigned long long)gpa);
}

int
mig_section_parse(const struct mig_frame *f, const uint8_t *p, char *name,
    const uint8_t **data, size_t *len, char *err, size_t errlen)
{
	uint32_t n = p[0];

	if (n == 0 || n > MIG_NAME_MAX || 1 + n > f->len)
		return mig_fail(-EPROTO, err, errlen, "a section with a name "
		    "of %u bytes", n);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t c = p[1 + i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '/' ||
		    c == '_' || c == '-'))
			return mig_fail(-EPROTO, err, errlen, "a section name "
			    "with byte %#x", c);
		name[i] = (char)c;
	}
	name[n] = '\0';
	*data = p + 1 + n;
	*len = f->len - 1 - n;
	return 0;
}

bool
mig_page_zero(const uint8_t *p)
{
	const uint64_t *q = (const uint64_t *)(const void *)p;

	for (size_t i = 0; i < MIG_PAGE_SIZE / sizeof(*q); i++)
		if (q[i] != 0)
			return false;
	return true;
}
