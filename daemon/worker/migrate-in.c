/* See migrate-in.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "mig-io.h"
#include "mig-stream.h"
#include "migrate-in.h"
#include "ram-log.h"
#include "restore.h"
#include "snap-file.h"
#include "start-params.h"
#include "worker.h"

/* What arrived: the sections, in order, in one buffer. */
struct migrate_in_state {
	uint8_t *buf;
	size_t len, cap;
	struct snap_msection *secs;
	size_t nsecs;
	uint64_t pages;		/* RAM pages received */
};

int
migrate_in_take(struct worker *w, const struct start_params *sp, char *err,
    size_t errlen)
{
	if (sp->migrate_fd < 0)
		return 0;
	if (w->booted || sp->snap_fd[0] >= 0) {
		snprintf(err, errlen, "migration: %s", w->booted ?
		    "only at the start" : "not with a snapshot");
		return -EINVAL;
	}
	w->migrate_fd = sp->migrate_fd;
	return 0;
}

bool
migrate_in_pending(const struct worker *w)
{
	return w->migrate_fd >= 0;
}

void
migrate_in_free(struct worker *w)
{
	if (w->migrate_fd >= 0)
		close(w->migrate_fd);
	w->migrate_fd = -1;
}

/* A frame of type with payload p (len bytes) on the stream: 0/-errno. */
static int
migrate_in_send(struct worker *w, uint32_t type, const void *p, size_t len)
{
	uint8_t hdr[MIG_FRAME_HEADER];
	int rc;

	mig_frame_put(hdr, type, p, (uint32_t)len);
	rc = mig_io_write(w->migrate_fd, hdr, sizeof(hdr), -1,
	    MIGRATE_IN_IDLE_MS);
	if (rc == 0 && len > 0)
		rc = mig_io_write(w->migrate_fd, p, len, -1,
		    MIGRATE_IN_IDLE_MS);
	return rc;
}

/* A section's bytes kept (data, len; name checked): 0 or -errno. */
static int
migrate_in_section(struct migrate_in_state *st, const char *name,
    const uint8_t *data, size_t len, char *err, size_t errlen)
{
	struct snap_msection *s;
	size_t i;

	for (i = 0; i < st->nsecs; i++)
		if (strcmp(st->secs[i].name, name) == 0) {
			snprintf(err, errlen, "section \"%s\" twice", name);
			return -EPROTO;
		}
	if (st->nsecs == MIG_SECTIONS_MAX || len > MIG_STATE_MAX - st->len) {
		snprintf(err, errlen, "more state than a machine has");
		return -E2BIG;
	}
	if (st->len + len > st->cap) {
		size_t cap = st->cap == 0 ? 65536 : st->cap;
		uint8_t *b;

		while (cap < st->len + len)
			cap *= 2;
		if ((b = realloc(st->buf, cap)) == NULL)
			return -ENOMEM;
		st->buf = b;
		st->cap = cap;
	}
	if ((st->nsecs & 63) == 0) {
		s = realloc(st->secs, (st->nsecs + 64) * sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		st->secs = s;
	}
	s = &st->secs[st->nsecs++];
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->offset = st->len;
	s->size = len;
	memcpy(st->buf + st->len, data, len);
	st->len += len;
	return 0;
}

/* Frames until END: 0, or -errno with err. */
static int
migrate_in_frames(struct worker *w, const struct mig_region *r, size_t nr,
    struct migrate_in_state *st, char *err, size_t errlen)
{
	int fd = w->migrate_fd, watch = link_fd(w->link);
	uint8_t hdr[MIG_FRAME_HEADER], *p = NULL, *dst;
	struct mig_frame f;
	char name[MIG_NAME_MAX + 1];
	const uint8_t *data;
	uint32_t pages;
	size_t len;
	int rc;

	if ((p = malloc(MIG_PAGES_HEADER + MIG_PAGES_MAX *
	    MIG_PAGE_SIZE)) == NULL)
		return -ENOMEM;
	for (;;) {
		if ((rc = mig_io_read(fd, hdr, sizeof(hdr), watch,
		    MIGRATE_IN_IDLE_MS)) < 0 ||
		    (rc = mig_frame_parse(hdr, &f, err, errlen)) < 0)
			break;
		if (f.type == MIG_T_SECTION && f.len > MIG_PAGES_HEADER +
		    MIG_PAGES_MAX * MIG_PAGE_SIZE) {
			uint8_t *q = realloc(p, f.len);

			if (q == NULL) {
				rc = -ENOMEM;
				break;
			}
			p = q;
		}
		if ((rc = mig_io_read(fd, p, f.len, watch,
		    MIGRATE_IN_IDLE_MS)) < 0 ||
		    (rc = mig_frame_verify(&f, p, err, errlen)) < 0)
			break;
		switch (f.type) {
		case MIG_T_RAM:
		case MIG_T_ZERO:
			if ((rc = mig_pages_parse(&f, p, r, nr, &dst, &pages,
			    err, errlen)) < 0)
				goto out;
			if (f.type == MIG_T_RAM)
				memcpy(dst, p + MIG_PAGES_HEADER,
				    (size_t)pages * MIG_PAGE_SIZE);
			else
				memset(dst, 0, (size_t)pages * MIG_PAGE_SIZE);
			st->pages += pages;
			break;
		case MIG_T_SECTION:
			if ((rc = mig_section_parse(&f, p, name, &data, &len,
			    err, errlen)) < 0 ||
			    (rc = migrate_in_section(st, name, data, len, err,
			    errlen)) < 0)
				goto out;
			break;
		case MIG_T_END:
			rc = 0;
			goto out;
		case MIG_T_ERROR:
			snprintf(err, errlen, "the source gave up: %.*s",
			    (int)f.len, (const char *)p);
			rc = -ECANCELED;
			goto out;
		default:
			snprintf(err, errlen, "a frame of type %u from the "
			    "source", f.type);
			rc = -EPROTO;
			goto out;
		}
	}
out:
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "%s", rc == -ECONNRESET ? "the source "
		    "ended the stream" : rc == -ECONNABORTED ? "vmmd is gone" :
		    rc == -ETIMEDOUT ? "the source sent nothing for 30 s" :
		    strerror(-rc));
	free(p);
	return rc;
}

int
migrate_in_apply(struct worker *w, char *err, size_t errlen)
{
	struct migrate_in_state st = { 0 };
	struct mig_region r[2];
	struct snap_reader sr;
	uint8_t hdr[MIG_HEADER_SIZE];
	char why[384] = "";
	struct timespec t0, t1;
	size_t nr = ram_log_regions(w->machine), i;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nr; i++)
		ram_log_region(w->machine, i, &r[i].gpa, &r[i].size,
		    &r[i].host);
	rc = mig_io_read(w->migrate_fd, hdr, sizeof(hdr), link_fd(w->link),
	    MIGRATE_IN_IDLE_MS);
	if (rc < 0)
		snprintf(why, sizeof(why), "no stream: %s", strerror(-rc));
	else
		rc = mig_header_check(hdr, why, sizeof(why));
	if (rc == 0)
		rc = migrate_in_frames(w, r, nr, &st, why, sizeof(why));
	if (rc == 0) {
		/* The sections as a snapshot's reader holds them. */
		memset(&sr, 0, sizeof(sr));
		sr.memory_fd = -1;
		sr.state = st.buf;
		sr.m.sections = st.secs;
		sr.m.nsections = st.nsecs;
		rc = restore_sections(w, &sr, why, sizeof(why));
	}
	free(st.buf);
	free(st.secs);
	if (rc < 0) {
		snprintf(err, errlen, "migration: %s", why);
		/* Best effort: the source may be gone already. */
		migrate_in_send(w, MIG_T_ERROR, why, strnlen(why, sizeof(why)));
		migrate_in_free(w);
		return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("%s: arrived by migration (%llu pages, %zu sections, "
	    "%lld ms)", w->name, (unsigned long long)st.pages, st.nsecs,
	    (long long)((t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000));
	return 0;
}

void
migrate_in_running(struct worker *w)
{
	int rc;

	if (w->migrate_fd < 0)
		return;
	if ((rc = migrate_in_send(w, MIG_T_RUNNING, NULL, 0)) < 0)
		log_warn("%s: telling the source the guest runs: %s", w->name,
		    strerror(-rc));
	migrate_in_free(w);
}
