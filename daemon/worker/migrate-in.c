/* See migrate-in.h. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "machine.h"
#include "mig-io.h"
#include "mig-recv.h"
#include "mig-stream.h"
#include "migrate-in.h"
#include "ram-log.h"
#include "restore.h"
#include "snap-file.h"
#include "start-params.h"
#include "worker.h"

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

/* Frames into r until END: 0, or -errno with err. */
static int
migrate_in_frames(struct worker *w, struct mig_recv *r, char *err,
    size_t errlen)
{
	int fd = w->migrate_fd, watch = link_fd(w->link);
	uint8_t hdr[MIG_FRAME_HEADER], *p, *q;
	size_t cap = MIG_PAGES_HEADER + MIG_PAGES_MAX * MIG_PAGE_SIZE;
	struct mig_frame f;
	int rc;

	if ((p = malloc(cap)) == NULL)
		return -ENOMEM;
	do {
		if ((rc = mig_io_read(fd, hdr, sizeof(hdr), watch,
		    MIGRATE_IN_IDLE_MS)) < 0 ||
		    (rc = mig_frame_parse(hdr, &f, err, errlen)) < 0)
			break;
		if (f.len > cap) {
			if ((q = realloc(p, f.len)) == NULL) {
				rc = -ENOMEM;
				break;
			}
			p = q;
			cap = f.len;
		}
		if ((rc = mig_io_read(fd, p, f.len, watch,
		    MIGRATE_IN_IDLE_MS)) < 0 ||
		    (rc = mig_frame_verify(&f, p, err, errlen)) < 0)
			break;
		rc = mig_recv_frame(r, &f, p, err, errlen);
	} while (rc == 0);
	if (rc < 0 && err[0] == '\0')
		snprintf(err, errlen, "%s", rc == -ECONNRESET ? "the source "
		    "ended the stream" : rc == -ECONNABORTED ? "vmmd is gone" :
		    rc == -ETIMEDOUT ? "the source sent nothing for 30 s" :
		    strerror(-rc));
	free(p);
	return rc < 0 ? rc : 0;
}

int
migrate_in_apply(struct worker *w, char *err, size_t errlen)
{
	struct snap_msection *secs = NULL;
	struct mig_region regions[2];
	struct mig_recv r;
	struct snap_reader sr;
	uint8_t hdr[MIG_HEADER_SIZE];
	char why[384] = "";
	struct timespec t0, t1, tend;
	size_t nr = ram_log_regions(w->machine), i;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < nr; i++)
		ram_log_region(w->machine, i, &regions[i].gpa,
		    &regions[i].size, &regions[i].host);
	mig_recv_init(&r, regions, nr);
	rc = mig_io_read(w->migrate_fd, hdr, sizeof(hdr), link_fd(w->link),
	    MIGRATE_IN_IDLE_MS);
	if (rc < 0)
		snprintf(why, sizeof(why), "no stream: %s", strerror(-rc));
	else
		rc = mig_header_check(hdr, why, sizeof(why));
	if (rc == 0)
		rc = migrate_in_frames(w, &r, why, sizeof(why));
	clock_gettime(CLOCK_MONOTONIC, &tend);
	w->migrate_end_ns = (int64_t)tend.tv_sec * 1000000000 + tend.tv_nsec;
	if (rc == 0 && r.nsecs > 0 &&
	    (secs = calloc(r.nsecs, sizeof(*secs))) == NULL)
		rc = -ENOMEM;
	if (rc == 0) {
		/* The sections as a snapshot's reader holds them. */
		for (i = 0; i < r.nsecs; i++) {
			snprintf(secs[i].name, sizeof(secs[i].name), "%s",
			    r.secs[i].name);
			secs[i].offset = r.secs[i].off;
			secs[i].size = r.secs[i].len;
		}
		memset(&sr, 0, sizeof(sr));
		sr.memory_fd = -1;
		sr.state = r.state;
		sr.m.sections = secs;
		sr.m.nsections = r.nsecs;
		rc = restore_sections(w, &sr, why, sizeof(why));
	}
	free(secs);
	if (rc < 0) {
		snprintf(err, errlen, "migration: %s", why[0] != '\0' ? why :
		    strerror(-rc));
		mig_recv_free(&r);
		/* Best effort: the source may be gone already. */
		migrate_in_send(w, MIG_T_ERROR, why, strnlen(why, sizeof(why)));
		migrate_in_free(w);
		return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("%s: arrived by migration (%llu pages, %zu sections, "
	    "%lld ms; the state loaded %lld ms after the stream's end)",
	    w->name, (unsigned long long)r.pages, r.nsecs,
	    (long long)((t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000),
	    (long long)((t1.tv_sec - tend.tv_sec) * 1000 +
	    (t1.tv_nsec - tend.tv_nsec) / 1000000));
	mig_recv_free(&r);
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
	else {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		log_info("%s: runs here, %lld ms after the stream's end",
		    w->name, (long long)(((int64_t)t.tv_sec * 1000000000 +
		    t.tv_nsec - w->migrate_end_ns) / 1000000));
	}
	migrate_in_free(w);
	/* The switches learn where its cards are now. */
	if (w->machine != NULL && w->machine->backends.nnics > 0)
		log_info("%s: announced %d of %u network cards", w->name,
		    machine_net_announce(w->machine),
		    w->machine->backends.nnics);
}
