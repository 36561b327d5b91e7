/* See mig-recv.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig-recv.h"

void
mig_recv_init(struct mig_recv *r, const struct mig_region *regions,
    size_t nregions)
{
	memset(r, 0, sizeof(*r));
	r->regions = regions;
	r->nregions = nregions;
}

void
mig_recv_free(struct mig_recv *r)
{
	free(r->state);
	free(r->secs);
	r->state = NULL;
	r->secs = NULL;
	r->len = r->cap = r->nsecs = 0;
}

const uint8_t *
mig_recv_section(const struct mig_recv *r, const char *name, size_t *len)
{
	/* An empty section that came before any bytes has no buffer to
	 * point into; it is still there, so not NULL. */
	static const uint8_t empty[1];

	for (size_t i = 0; i < r->nsecs; i++)
		if (strcmp(r->secs[i].name, name) == 0) {
			*len = r->secs[i].len;
			if (r->state == NULL)
				return empty;
			return r->state + r->secs[i].off;
		}
	return NULL;
}

/* A section's bytes kept: 0 or -errno with err. */
static int
mig_recv_keep(struct mig_recv *r, const char *name, const uint8_t *data,
    size_t len, char *err, size_t errlen)
{
	struct mig_section *s;
	size_t cap;
	uint8_t *b;

	if (mig_recv_section(r, name, &cap) != NULL) {
		snprintf(err, errlen, "section \"%s\" twice", name);
		return -EPROTO;
	}
	if (r->nsecs == MIG_SECTIONS_MAX || len > MIG_STATE_MAX - r->len) {
		snprintf(err, errlen, "more state than a machine has");
		return -E2BIG;
	}
	if (r->len + len > r->cap) {
		cap = r->cap == 0 ? 65536 : r->cap;
		while (cap < r->len + len)
			cap *= 2;
		if ((b = realloc(r->state, cap)) == NULL)
			return -ENOMEM;
		r->state = b;
		r->cap = cap;
	}
	if ((r->nsecs & 63) == 0) {
		s = realloc(r->secs, (r->nsecs + 64) * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		r->secs = s;
	}
	s = &r->secs[r->nsecs++];
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->off = r->len;
	s->len = len;
	if (len > 0)
		memcpy(r->state + r->len, data, len);
	r->len += len;
	return 0;
}

int
mig_recv_frame(struct mig_recv *r, const struct mig_frame *f,
    const uint8_t *p, char *err, size_t errlen)
{
	char name[MIG_NAME_MAX + 1];
	const uint8_t *data;
	uint8_t *dst;
	uint32_t pages;
	size_t len;
	int rc;

	if (r->ended) {
		snprintf(err, errlen, "a frame after the end");
		return -EPROTO;
	}
	switch (f->type) {
	case MIG_T_RAM:
	case MIG_T_ZERO:
		if ((rc = mig_pages_parse(f, p, r->regions, r->nregions, &dst,
		    &pages, err, errlen)) < 0)
			return rc;
		if (f->type == MIG_T_RAM)
			memcpy(dst, p + MIG_PAGES_HEADER,
			    (size_t)pages * MIG_PAGE_SIZE);
		else
			memset(dst, 0, (size_t)pages * MIG_PAGE_SIZE);
		r->pages += pages;
		return 0;
	case MIG_T_SECTION:
		if ((rc = mig_section_parse(f, p, name, &data, &len, err,
		    errlen)) < 0)
			return rc;
		return mig_recv_keep(r, name, data, len, err, errlen);
	case MIG_T_END:
		r->ended = true;
		return 1;
	case MIG_T_ERROR:
		snprintf(err, errlen, "the source gave up: %.*s",
		    (int)f->len, (const char *)p);
		return -ECANCELED;
	default:
		snprintf(err, errlen, "a frame of type %u from the source",
		    f->type);
		return -EPROTO;
	}
}
