/* See migrate-out.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "dev-state.h"
#include "guest-display.h"
#include "guest.h"
#include "link.h"
#include "log.h"
#include "machine.h"
#include "mig-io.h"
#include "mig-stream.h"
#include "migrate-out.h"
#include "proto.h"
#include "ram-log.h"
#include "snap-file.h"
#include "snapshot.h"
#include "test-hook.h"
#include "worker-msg.h"
#include "worker.h"

/* A device's in-flight work is waited for this often, this long. */
#define MIGRATE_OUT_BUSY_TRIES	500
#define MIGRATE_OUT_BUSY_USEC	10000

/*
 * One migration.  The thread and the loop share what lock guards: the
 * thread asks (progress to report, the pause, its end) and waits on
 * cond for the pause's answer; the loop answers from ev's callback.
 */
struct migrate_out {
	struct worker *w;
	struct machine *m;
	struct json_object *id;
	int fd;
	unsigned int downtime_ms;
	pthread_t thread;
	struct event *ev;	/* made active by the thread */
	struct event *retry;	/* a busy device, asked again */
	unsigned int tries;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool want_progress, want_pause, paused, done;
	bool cancel;		/* the thread gives up at its next frame */
	bool stopped;		/* asked to (migrate_out_stop()) */
	bool committed;		/* END sent: too late to stop */
	bool paused_here;	/* the loop paused a running guest */
	int pause_rc;
	struct dev_state_buf *bufs;
	char (*names)[16];
	struct snap_section *secs;
	size_t nbufs, nsecs;

	/* Figures: the thread's until done, then the loop's. */
	unsigned int rounds;
	uint64_t bytes, pages, zero_pages, dirty, expected_ms;
	double rate;		/* bytes per ms, the last round's */
	bool converged;
	/* The downtime's steps: the pause asked, the guest paused with
	 * its sections saved, END written, the target's answer read. */
	int64_t t0_ns, pause_ns, paused_ns, sent_ns, end_ns;
	int rc;
	char err[256];
};

static int64_t
migrate_out_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The thread asks the loop for something (a want_* set under lock). */
static void
migrate_out_ask(struct migrate_out *mo)
{
	event_active(mo->ev, 0, 0);
}

/* One frame (header, payload of len bytes): 0 or -errno. */
static int
migrate_out_frame(struct migrate_out *mo, uint32_t type, const void *p,
    size_t len)
{
	uint8_t hdr[MIG_FRAME_HEADER];
	int rc;

	mig_frame_put(hdr, type, p, (uint32_t)len);
	if ((rc = mig_io_write(mo->fd, hdr, sizeof(hdr), -1,
	    MIGRATE_OUT_IDLE_MS)) < 0)
		return rc;
	if (len > 0 && (rc = mig_io_write(mo->fd, p, len, -1,
	    MIGRATE_OUT_IDLE_MS)) < 0)
		return rc;
	mo->bytes += MIG_FRAME_HEADER + len;
	return 0;
}

/*
 * The pages of [first, first + n) of the region at gpa (host) whose bit
 * is set in bits (NULL: every page), in runs of at most MIG_PAGES_MAX:
 * RAM frames, and ZERO frames for zero pages unless skip_zero (the
 * first pass: the target's RAM is zero already).  0 or -errno.
 */
static int
migrate_out_pages(struct migrate_out *mo, uint8_t *buf, uint64_t gpa,
    const uint8_t *host, uint64_t npages, const uint64_t *bits,
    bool skip_zero)
{
	uint64_t i = 0, start, n;
	bool zero;
	int rc;

	while (i < npages) {
		if (__atomic_load_n(&mo->cancel, __ATOMIC_RELAXED))
			return -ECANCELED;
		if (bits != NULL && (bits[i / 64] >> (i % 64) & 1) == 0) {
			i++;
			continue;
		}
		start = i;
		zero = mig_page_zero(host + i * MIG_PAGE_SIZE);
		/* A run: pages to send, all zero or none. */
		while (i < npages && i - start < MIG_PAGES_MAX &&
		    (bits == NULL || (bits[i / 64] >> (i % 64) & 1) != 0) &&
		    mig_page_zero(host + i * MIG_PAGE_SIZE) == zero)
			i++;
		n = i - start;
		if (zero) {
			mo->zero_pages += n;
			if (skip_zero)
				continue;
			mig_pages_put(buf, gpa + start * MIG_PAGE_SIZE,
			    (uint32_t)n);
			rc = migrate_out_frame(mo, MIG_T_ZERO, buf,
			    MIG_PAGES_HEADER);
		} else {
			test_hook_migrate_frame();
			mig_pages_put(buf, gpa + start * MIG_PAGE_SIZE,
			    (uint32_t)n);
			/* A copy: the bytes the checksum covers are sent. */
			memcpy(buf + MIG_PAGES_HEADER, host + start *
			    MIG_PAGE_SIZE, n * MIG_PAGE_SIZE);
			rc = migrate_out_frame(mo, MIG_T_RAM, buf,
			    MIG_PAGES_HEADER + n * MIG_PAGE_SIZE);
			mo->pages += n;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Bits set in words of bitmap. */
static uint64_t
migrate_out_count(const uint64_t *bits, size_t words)
{
	uint64_t n = 0;

	for (size_t i = 0; i < words; i++)
		n += (uint64_t)__builtin_popcountll(bits[i]);
	return n;
}

/*
 * The pages region i dirtied since the last call, added to its bitmap
 * bits of words words: kept there until sent, as the log forgets them
 * once read.  0/-errno.
 */
static int
migrate_out_collect(struct migrate_out *mo, size_t i, uint64_t *bits,
    size_t words)
{
	uint64_t *tmp;
	int rc;

	if ((tmp = calloc(words, sizeof(*tmp))) == NULL)
		return -ENOMEM;
	if ((rc = ram_log_get(mo->m, i, tmp)) < 0) {
		free(tmp);
		return rc;
	}
	for (size_t k = 0; k < words; k++)
		bits[k] |= tmp[k];
	free(tmp);
	return 0;
}

/* The RAM: the whole, then the rounds; paused at the end.  0/-errno. */
static int
migrate_out_precopy(struct migrate_out *mo, uint8_t *buf, uint64_t **bits,
    size_t *words)
{
	size_t nr = ram_log_regions(mo->m), i;
	uint64_t gpa, size, dirty, sent = mo->bytes;
	uint8_t *host;
	int64_t t;
	int rc;

	/* The rate is the last pass's: bytes it sent over its time. */
	t = migrate_out_now();
	for (i = 0; i < nr; i++) {
		ram_log_region(mo->m, i, &gpa, &size, &host);
		if ((rc = migrate_out_pages(mo, buf, gpa, host,
		    size / MIG_PAGE_SIZE, NULL, true)) < 0)
			return rc;
	}
	for (;;) {
		t = migrate_out_now() - t;
		pthread_mutex_lock(&mo->lock);
		mo->rate = (double)(mo->bytes - sent) * 1e6 /
		    (double)(t > 1000 ? t : 1000);
		pthread_mutex_unlock(&mo->lock);
		dirty = 0;
		for (i = 0; i < nr; i++) {
			if ((rc = migrate_out_collect(mo, i, bits[i],
			    words[i])) < 0)
				return rc;
			dirty += migrate_out_count(bits[i], words[i]);
		}
		pthread_mutex_lock(&mo->lock);
		mo->rounds++;
		mo->dirty = dirty;
		mo->expected_ms = (uint64_t)((double)(dirty * MIG_PAGE_SIZE) /
		    (mo->rate > 1 ? mo->rate : 1));
		mo->converged = mo->expected_ms <= mo->downtime_ms;
		mo->want_progress = true;
		pthread_mutex_unlock(&mo->lock);
		migrate_out_ask(mo);
		if (mo->converged || mo->rounds >= MIGRATE_OUT_ROUNDS)
			return 0;
		t = migrate_out_now();
		sent = mo->bytes;
		for (i = 0; i < nr; i++) {
			ram_log_region(mo->m, i, &gpa, &size, &host);
			rc = migrate_out_pages(mo, buf, gpa, host,
			    size / MIG_PAGE_SIZE, bits[i], false);
			if (rc < 0)
				return rc;
			memset(bits[i], 0, words[i] * sizeof(*bits[i]));
		}
	}
}

/* The guest paused by the loop, its last pages and sections: 0/-errno. */
static int
migrate_out_last(struct migrate_out *mo, uint8_t *buf, uint64_t **bits,
    size_t *words)
{
	size_t nr = ram_log_regions(mo->m), i;
	uint64_t gpa, size;
	uint8_t *host, *sec;
	size_t len, nl;
	int rc;

	pthread_mutex_lock(&mo->lock);
	mo->want_pause = true;
	pthread_mutex_unlock(&mo->lock);
	migrate_out_ask(mo);
	pthread_mutex_lock(&mo->lock);
	while (!mo->paused && !mo->cancel)
		pthread_cond_wait(&mo->cond, &mo->lock);
	rc = mo->cancel ? -ECANCELED : mo->pause_rc;
	pthread_mutex_unlock(&mo->lock);
	if (rc < 0)
		return rc;
	for (i = 0; i < nr; i++) {
		if ((rc = migrate_out_collect(mo, i, bits[i], words[i])) < 0)
			return rc;
		ram_log_region(mo->m, i, &gpa, &size, &host);
		if ((rc = migrate_out_pages(mo, buf, gpa, host,
		    size / MIG_PAGE_SIZE, bits[i], false)) < 0)
			return rc;
	}
	for (i = 0; i < mo->nsecs; i++) {
		nl = strlen(mo->secs[i].name);
		len = 1 + nl + mo->secs[i].size;
		if (nl > MIG_NAME_MAX || len > MIG_FRAME_MAX)
			return -E2BIG;
		if ((sec = malloc(len)) == NULL)
			return -ENOMEM;
		sec[0] = (uint8_t)nl;
		memcpy(sec + 1, mo->secs[i].name, nl);
		memcpy(sec + 1 + nl, mo->secs[i].data, mo->secs[i].size);
		rc = migrate_out_frame(mo, MIG_T_SECTION, sec, len);
		free(sec);
		if (rc < 0)
			return rc;
	}
	/* From END on the target may run the guest: no stopping it. */
	pthread_mutex_lock(&mo->lock);
	rc = mo->cancel ? -ECANCELED : 0;
	mo->committed = rc == 0;
	pthread_mutex_unlock(&mo->lock);
	if (rc < 0)
		return rc;
	rc = migrate_out_frame(mo, MIG_T_END, NULL, 0);
	pthread_mutex_lock(&mo->lock);
	mo->sent_ns = migrate_out_now();
	pthread_mutex_unlock(&mo->lock);
	return rc;
}

/* The target's word: 0 for "running", -errno with mo->err otherwise. */
static int
migrate_out_answer(struct migrate_out *mo)
{
	uint8_t hdr[MIG_FRAME_HEADER];
	char text[1025];
	struct mig_frame f;
	int rc;

	if ((rc = mig_io_read(mo->fd, hdr, sizeof(hdr), -1,
	    MIGRATE_OUT_IDLE_MS)) < 0)
		return rc;
	if ((rc = mig_frame_parse(hdr, &f, mo->err, sizeof(mo->err))) < 0)
		return rc;
	if (f.type != MIG_T_RUNNING && f.type != MIG_T_ERROR) {
		snprintf(mo->err, sizeof(mo->err), "the target answered with "
		    "a frame of type %u", f.type);
		return -EPROTO;
	}
	if ((rc = mig_io_read(mo->fd, text, f.len, -1,
	    MIGRATE_OUT_IDLE_MS)) < 0 ||
	    (rc = mig_frame_verify(&f, text, mo->err, sizeof(mo->err))) < 0)
		return rc;
	if (f.type == MIG_T_RUNNING)
		return 0;
	text[f.len] = '\0';
	snprintf(mo->err, sizeof(mo->err), "the target refused: %.200s", text);
	return -ECANCELED;
}

static void *
migrate_out_thread(void *arg)
{
	struct migrate_out *mo = arg;
	size_t nr = ram_log_regions(mo->m), i;
	uint64_t *bits[2] = { NULL, NULL }, gpa, size;
	size_t words[2] = { 0, 0 };
	uint8_t hdr[MIG_HEADER_SIZE], *host, *buf;
	bool stopped;
	int rc = -ENOMEM;

	buf = malloc(MIG_PAGES_HEADER + MIG_PAGES_MAX * MIG_PAGE_SIZE);
	for (i = 0; i < nr; i++) {
		ram_log_region(mo->m, i, &gpa, &size, &host);
		words[i] = (size / MIG_PAGE_SIZE + 63) / 64;
		if ((bits[i] = calloc(words[i], sizeof(*bits[i]))) == NULL)
			goto out;
	}
	if (buf == NULL)
		goto out;
	mig_header_put(hdr);
	if ((rc = mig_io_write(mo->fd, hdr, sizeof(hdr), -1,
	    MIGRATE_OUT_IDLE_MS)) < 0)
		goto out;
	mo->bytes += sizeof(hdr);
	if ((rc = migrate_out_precopy(mo, buf, bits, words)) < 0 ||
	    (rc = migrate_out_last(mo, buf, bits, words)) < 0)
		goto out;
	rc = migrate_out_answer(mo);
out:
	/*
	 * Stopped by request: between two frames, so the target can be
	 * told why (best effort: it drops its half-made guest anyway).
	 */
	pthread_mutex_lock(&mo->lock);
	stopped = mo->stopped;
	pthread_mutex_unlock(&mo->lock);
	if (rc == -ECANCELED && stopped) {
		static const char why[] = "cancelled at the source";

		mig_frame_put(hdr, MIG_T_ERROR, why, sizeof(why) - 1);
		if (mig_io_write(mo->fd, hdr, MIG_FRAME_HEADER, -1,
		    MIGRATE_OUT_STOP_MS) == 0)
			mig_io_write(mo->fd, why, sizeof(why) - 1, -1,
			    MIGRATE_OUT_STOP_MS);
	}
	for (i = 0; i < nr; i++)
		free(bits[i]);
	free(buf);
	pthread_mutex_lock(&mo->lock);
	mo->rc = rc;
	if (rc < 0 && mo->err[0] == '\0')
		snprintf(mo->err, sizeof(mo->err), "%s", rc == -EPIPE ||
		    rc == -ECONNRESET ? "the target ended the stream" :
		    rc == -ETIMEDOUT ? "the stream stalled for 30 s" :
		    rc == -ECANCELED ? "cancelled" : strerror(-rc));
	mo->end_ns = migrate_out_now();
	mo->done = true;
	pthread_mutex_unlock(&mo->lock);
	migrate_out_ask(mo);
	return NULL;
}

/* The figures, for an event (final false) or the answer. */
static struct json_object *
migrate_out_figures(struct migrate_out *mo, bool final)
{
	struct json_object *o = json_object_new_object();
	int64_t now = final ? mo->end_ns : migrate_out_now();

	if (o == NULL)
		return NULL;
	json_object_object_add(o, "phase", json_object_new_string(final ?
	    "done" : "round"));
	json_object_object_add(o, "round", json_object_new_int64(mo->rounds));
	json_object_object_add(o, "pages_sent",
	    json_object_new_int64((int64_t)mo->pages));
	json_object_object_add(o, "zero_pages",
	    json_object_new_int64((int64_t)mo->zero_pages));
	json_object_object_add(o, "dirty_pages",
	    json_object_new_int64((int64_t)mo->dirty));
	json_object_object_add(o, "bytes",
	    json_object_new_int64((int64_t)mo->bytes));
	json_object_object_add(o, "rate_mib_s", json_object_new_double(
	    mo->rate * 1000.0 / (1024.0 * 1024.0)));
	json_object_object_add(o, "expected_downtime_ms",
	    json_object_new_int64((int64_t)mo->expected_ms));
	json_object_object_add(o, "total_ms", json_object_new_int64(
	    (now - mo->t0_ns) / 1000000));
	if (final) {
		json_object_object_add(o, "downtime_ms",
		    json_object_new_int64(mo->pause_ns > 0 ?
		    (mo->end_ns - mo->pause_ns) / 1000000 : 0));
		json_object_object_add(o, "converged",
		    json_object_new_boolean(mo->converged));
		/* Where the downtime went: pausing the guest and saving
		 * its devices, the last pages and the sections written,
		 * the target loading them and answering (through the
		 * relay). */
		if (mo->paused_ns > 0 && mo->sent_ns > 0) {
			json_object_object_add(o, "pause_ms",
			    json_object_new_int64((mo->paused_ns -
			    mo->pause_ns) / 1000000));
			json_object_object_add(o, "send_ms",
			    json_object_new_int64((mo->sent_ns -
			    mo->paused_ns) / 1000000));
			json_object_object_add(o, "answer_ms",
			    json_object_new_int64((mo->end_ns -
			    mo->sent_ns) / 1000000));
		}
	}
	return o;
}

static void
migrate_out_free(struct migrate_out *mo)
{
	for (size_t i = 0; mo->bufs != NULL && i < mo->nbufs; i++)
		dev_state_buf_free(&mo->bufs[i]);
	free(mo->bufs);
	free(mo->names);
	free(mo->secs);
	if (mo->ev != NULL)
		event_free(mo->ev);
	if (mo->retry != NULL)
		event_free(mo->retry);
	if (mo->fd >= 0)
		close(mo->fd);
	json_object_put(mo->id);
	pthread_cond_destroy(&mo->cond);
	pthread_mutex_destroy(&mo->lock);
	free(mo);
}

/* The thread is done: the answer, and the guest ours or the target's. */
static void
migrate_out_end(struct migrate_out *mo)
{
	struct worker *w = mo->w;
	struct json_object *reply;

	pthread_join(mo->thread, NULL);
	w->migrate_out = NULL;
	w->teardown_hook = NULL;
	if (w->machine != NULL)
		ram_log_set(w->machine, false);
	if (mo->rc == 0) {
		/* The target runs it: it never runs here again. */
		w->migrated = true;
		log_info("%s: migrated (%u rounds, %llu pages, %llu bytes)",
		    w->name, mo->rounds, (unsigned long long)mo->pages,
		    (unsigned long long)mo->bytes);
		reply = proto_reply(mo->id, migrate_out_figures(mo, true));
	} else {
		log_info("%s: migration %s: %s; the guest stays here",
		    w->name, mo->stopped ? "stopped" : "failed", mo->err);
		if (w->machine != NULL && mo->paused_here) {
			machine_resume(w->machine);
			display_resume(w->display);
			guest_state_event(w, "running");
		}
		reply = proto_error(mo->id, mo->rc == -ECANCELED ||
		    mo->rc == -EPROTO ? PROTO_ERR_BAD_STATE :
		    PROTO_ERR_INTERNAL, "migration: %s", mo->err);
	}
	link_send(w->link, reply);
	migrate_out_free(mo);
}

/* The sections of the paused guest, for the thread: 0 or -EBUSY. */
static int
migrate_out_sections(struct migrate_out *mo)
{
	char err[256] = "";
	int rc;

	/* Empty again: a try that found a device busy kept what it saved
	 * before that device, and saving appends. */
	for (size_t i = 0; i < mo->nbufs; i++)
		mo->bufs[i].len = 0;
	rc = snapshot_sections(mo->m, mo->w->nvram, mo->bufs, mo->names,
	    mo->secs, &mo->nsecs, err, sizeof(err));
	if (rc == -EBUSY && ++mo->tries < MIGRATE_OUT_BUSY_TRIES)
		return rc;
	pthread_mutex_lock(&mo->lock);
	if (rc < 0)
		snprintf(mo->err, sizeof(mo->err), "%s", rc == -EBUSY ? "a "
		    "device's work in flight did not end" : err);
	mo->pause_rc = rc;
	mo->paused = true;
	mo->paused_ns = migrate_out_now();
	pthread_cond_signal(&mo->cond);
	pthread_mutex_unlock(&mo->lock);
	return 0;
}

static void
migrate_out_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct migrate_out *mo = arg;
	struct timeval tv = { 0, MIGRATE_OUT_BUSY_USEC };

	if (migrate_out_sections(mo) == -EBUSY)
		event_add(mo->retry, &tv);
}

/* The guest paused as a snapshot pauses it. */
static void
migrate_out_pause(struct migrate_out *mo)
{
	struct worker *w = mo->w;
	struct timeval tv = { 0, MIGRATE_OUT_BUSY_USEC };

	mo->pause_ns = migrate_out_now();
	if (!w->paused) {
		display_quiesce(w->display);
		machine_pause(w->machine);
		mo->paused_here = true;
		guest_state_event(w, "paused");
	}
	if (migrate_out_sections(mo) == -EBUSY)
		event_add(mo->retry, &tv);
}

static void
migrate_out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct migrate_out *mo = arg;
	struct json_object *ev = NULL;
	bool pause, done;

	pthread_mutex_lock(&mo->lock);
	if (mo->want_progress)
		ev = migrate_out_figures(mo, false);
	mo->want_progress = false;
	pause = mo->want_pause && mo->pause_ns == 0;
	done = mo->done;
	pthread_mutex_unlock(&mo->lock);
	if (ev != NULL)
		guest_event(mo->w, WMSG_EV_MIGRATION, ev);
	if (done) {
		migrate_out_end(mo);
		return;
	}
	if (pause)
		migrate_out_pause(mo);
}

void
migrate_out_start(struct worker *w, struct json_object *id, int fd,
    unsigned int downtime_ms)
{
	struct migrate_out *mo;
	const char *why = "out of memory";
	int rc;

	if (w->migrate_out != NULL) {
		link_send(w->link, proto_error(id, PROTO_ERR_BAD_STATE,
		    "a migration is under way already"));
		close(fd);
		return;
	}
	if ((mo = calloc(1, sizeof(*mo))) == NULL) {
		link_send(w->link, proto_error(id, PROTO_ERR_INTERNAL, "%s",
		    why));
		close(fd);
		return;
	}
	mo->w = w;
	mo->m = w->machine;
	mo->id = json_object_get(id);
	mo->fd = fd;
	mo->downtime_ms = downtime_ms;
	mo->t0_ns = migrate_out_now();
	pthread_mutex_init(&mo->lock, NULL);
	pthread_cond_init(&mo->cond, NULL);
	mo->nbufs = SNAPSHOT_SECTIONS(mo->m);
	mo->bufs = calloc(mo->nbufs, sizeof(*mo->bufs));
	mo->names = calloc(mo->nbufs, sizeof(*mo->names));
	mo->secs = calloc(mo->nbufs, sizeof(*mo->secs));
	mo->ev = event_new(w->base, -1, 0, migrate_out_cb, mo);
	mo->retry = evtimer_new(w->base, migrate_out_retry_cb, mo);
	if (mo->bufs == NULL || mo->names == NULL || mo->secs == NULL ||
	    mo->ev == NULL || mo->retry == NULL)
		goto fail;
	/* Only now, and only for this: a guest never migrated pays no
	 * dirty logging. */
	if ((rc = ram_log_set(mo->m, true)) < 0) {
		why = "KVM would not log the guest's writes";
		goto fail;
	}
	if ((rc = pthread_create(&mo->thread, NULL, migrate_out_thread,
	    mo)) != 0) {
		ram_log_set(mo->m, false);
		why = "cannot start its thread";
		goto fail;
	}
	w->migrate_out = mo;
	w->teardown_hook = migrate_out_cancel;
	log_info("%s: migrating out (downtime at most %u ms)", w->name,
	    downtime_ms);
	return;
fail:
	link_send(w->link, proto_error(id, PROTO_ERR_INTERNAL,
	    "migration: %s", why));
	migrate_out_free(mo);
}

bool
migrate_out_holds(const struct worker *w)
{
	return w->migrated || (w->migrate_out != NULL &&
	    w->migrate_out->pause_ns != 0);
}

bool
migrate_out_busy(const struct worker *w)
{
	return w->migrated || w->migrate_out != NULL;
}

int
migrate_out_stop(struct worker *w)
{
	struct migrate_out *mo = w->migrate_out;
	int rc = 0;

	if (mo == NULL)
		return w->migrated ? -EALREADY : -ENOENT;
	pthread_mutex_lock(&mo->lock);
	if (mo->committed || mo->done)
		rc = mo->committed ? -EBUSY : -EALREADY;
	else if (!mo->stopped) {
		mo->stopped = true;
		__atomic_store_n(&mo->cancel, true, __ATOMIC_RELAXED);
		snprintf(mo->err, sizeof(mo->err), "cancelled");
		pthread_cond_signal(&mo->cond);
	}
	pthread_mutex_unlock(&mo->lock);
	if (rc == 0)
		log_info("%s: migration: stopping on request", w->name);
	return rc;
}

void
migrate_out_cancel(struct worker *w)
{
	struct migrate_out *mo = w->migrate_out;

	if (mo == NULL)
		return;
	pthread_mutex_lock(&mo->lock);
	__atomic_store_n(&mo->cancel, true, __ATOMIC_RELAXED);
	snprintf(mo->err, sizeof(mo->err), "the guest reset or stopped");
	pthread_cond_signal(&mo->cond);
	pthread_mutex_unlock(&mo->lock);
	/* Whatever the thread waits for on the stream ends now. */
	shutdown(mo->fd, SHUT_RDWR);
	mo->paused_here = false;
	migrate_out_end(mo);
}
