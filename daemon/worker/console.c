/*
 * Serial console plumbing; see console.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "bev-drain.h"
#include "console.h"
#include "log.h"
#include "proto.h"

struct console_client {
	TAILQ_ENTRY(console_client) entry;
	struct console *console;
	struct bufferevent *bev;
	/* While input is held back the bev does not read, so it would not
	 * see the client leave: this watches for the hang-up instead. */
	struct event *close_ev;
	/* The client shut its sending side: it gets what is queued for
	 * it (the reply, at least), then the connection is closed. */
	bool closing;
};

/*
 * The ring is single-producer, single-consumer, without a lock: the
 * producer (console_output(), one at a time) writes bytes from wpos up
 * to flushed + CONSOLE_PENDING_MAX and then publishes wpos; the loop
 * reads from flushed up to wpos and then publishes flushed.  Positions
 * count bytes ever taken into the ring and index it modulo its size,
 * so [flushed - CONSOLE_REPLAY_SIZE, flushed), the replay, is never
 * written over while the loop may read it.
 */
struct console {
	struct event_base *base;

	/* Shared with the producer (__atomic). */
	uint8_t *ring;
	uint64_t wpos;		/* written by the producer */
	uint64_t flushed;	/* written by the loop */
	uint64_t dropped;	/* written by the producer */
	bool flush_pending;	/* the loop is woken (or will flush) */

	/* Loop thread only. */
	int log_fd;		/* read-write: rotation copies it */
	int old_fd;		/* PATH.1, open from the start, or -1 */
	bool log_failed;
	char *log_path;		/* for messages */
	uint64_t log_size;	/* bytes in the log now */
	uint64_t log_max;	/* rotate beyond this; 0: never */
	unsigned int nclients;
	int64_t last_flush_ms;
	struct event *flush_ev;
	struct event *input_ev;
	struct evbuffer *input;	/* client bytes the UART has not taken */
	bool reading_paused;
	console_input_fn input_fn;
	void *input_opaque;
	TAILQ_HEAD(, console_client) clients;
	struct console_stats stats;
};

static void console_flush_cb(evutil_socket_t fd, short what, void *arg);
static void console_input_cb(evutil_socket_t fd, short what, void *arg);

/*
 * Open (or create) a log file, read-write with flags: a regular file at
 * path itself, never what a symbolic link there leads to, nor a device
 * or FIFO put in its place (O_NONBLOCK so that opening one cannot
 * block; cleared again for the file).  The descriptor, or -ELOOP for a
 * link, -EINVAL for anything but a regular file, -errno else.
 */
static int
console_open_file(const char *path, int flags)
{
	struct stat st;
	int fd, fl, rc;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
	    O_NOCTTY | O_NONBLOCK | flags, 0640);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		rc = -errno;
	else
		return fd;
	close(fd);
	return rc;
}

/* PATH.1 for rotation; 0 or -errno. */
static int
console_open_old(struct console *c)
{
	char old[PATH_MAX];

	if (snprintf(old, sizeof(old), "%s.1", c->log_path) >=
	    (int)sizeof(old))
		return -ENAMETOOLONG;
	c->old_fd = console_open_file(old, 0);
	return c->old_fd < 0 ? c->old_fd : 0;
}

struct console *
console_new(struct event_base *base, const char *log_path,
    uint64_t log_max, int *errp)
{
	struct console *c;
	struct stat st;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		*errp = -ENOMEM;
		return NULL;
	}
	c->base = base;
	c->log_fd = -1;
	c->old_fd = -1;
	TAILQ_INIT(&c->clients);
	c->ring = malloc(CONSOLE_RING_SIZE);
	c->input = evbuffer_new();
	c->flush_ev = event_new(base, -1, 0, console_flush_cb, c);
	c->input_ev = event_new(base, -1, 0, console_input_cb, c);
	if (c->ring == NULL || c->input == NULL || c->flush_ev == NULL ||
	    c->input_ev == NULL) {
		*errp = -ENOMEM;
		goto fail;
	}
	if (log_path != NULL) {
		c->log_fd = console_open_file(log_path, O_APPEND);
		if (c->log_fd < 0 || (c->log_path = strdup(log_path)) ==
		    NULL) {
			*errp = c->log_fd < 0 ? c->log_fd : -ENOMEM;
			goto fail;
		}
		c->log_size = fstat(c->log_fd, &st) == 0 ?
		    (uint64_t)st.st_size : 0;
		/* Now, while names can still be opened (sandbox.h). */
		if (log_max > 0 && (*errp = console_open_old(c)) < 0)
			goto fail;
		c->log_max = log_max;
	}
	return c;
fail:
	console_free(c);
	return NULL;
}

static void
console_client_free(struct console_client *cl)
{
	cl->console->nclients--;
	TAILQ_REMOVE(&cl->console->clients, cl, entry);
	if (cl->close_ev != NULL)
		event_free(cl->close_ev);
	bufferevent_free(cl->bev);
	free(cl);
}

void
console_free(struct console *c)
{
	struct console_client *cl;

	if (c == NULL)
		return;
	while ((cl = TAILQ_FIRST(&c->clients)) != NULL)
		console_client_free(cl);
	if (c->flush_ev != NULL)
		event_free(c->flush_ev);
	if (c->input_ev != NULL)
		event_free(c->input_ev);
	if (c->input != NULL)
		evbuffer_free(c->input);
	if (c->log_fd >= 0)
		close(c->log_fd);
	if (c->old_fd >= 0)
		close(c->old_fd);
	free(c->log_path);
	free(c->ring);
	free(c);
}

void
console_set_input(struct console *c, console_input_fn fn, void *opaque)
{
	c->input_fn = fn;
	c->input_opaque = opaque;
	if (fn != NULL && evbuffer_get_length(c->input) > 0)
		event_active(c->input_ev, 0, 0);
}

/*
 * Copy the log's first len bytes over the old log; 0 or -errno.
 * copy_file_range() where the file system can, read and write else.
 */
static int
console_log_copy(struct console *c, uint64_t len)
{
	char buf[65536];
	off_t in = 0, out = 0;
	ssize_t n, w;

	if (ftruncate(c->old_fd, 0) < 0)
		return -errno;
	while ((uint64_t)in < len) {
		n = copy_file_range(c->log_fd, &in, c->old_fd, &out,
		    (size_t)(len - (uint64_t)in), 0);
		if (n > 0)
			continue;
		if (n == 0)
			return 0;	/* shorter than we thought */
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP)
			return -errno;
		/* The slow way, from where it stopped. */
		n = pread(c->log_fd, buf, sizeof(buf), in);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		w = pwrite(c->old_fd, buf, (size_t)n, out);
		if (w != n)
			return w < 0 ? -errno : -EIO;
		in += n;
		out += n;
	}
	return 0;
}

/*
 * Move the full log aside to PATH.1 (one old file kept) and begin a new
 * one, through the two descriptors opened at the start: a sandboxed
 * worker can name no file (sandbox.h), so there is no rename().  The
 * old log gets a copy and the log is truncated, with O_APPEND writing
 * on from its new end: a copy of log_max bytes, in the kernel where it
 * can, on the loop like every write to the log.  A crash between copy
 * and truncation leaves the lines in both files, never in neither.
 * Should the copy fail, logging goes on where it is (once warned).
 */
static void
console_log_rotate(struct console *c)
{
	int ret;

	ret = console_log_copy(c, c->log_size);
	if (ret == 0 && ftruncate(c->log_fd, 0) < 0)
		ret = -errno;
	if (ret < 0) {
		log_warn("console log %s: cannot rotate: %s", c->log_path,
		    strerror(-ret));
		c->log_max = 0;		/* keep writing where we are */
		return;
	}
	c->log_size = 0;
}

/*
 * Append to the log (loop thread).  A log that is full is rotated
 * before the next byte, so that every file holds log_max bytes at most
 * and the old one exactly log_max.
 */
static void
console_log_write(struct console *c, const uint8_t *buf, size_t len)
{
	ssize_t n;
	size_t max;

	while (c->log_fd >= 0 && len > 0) {
		if (c->log_max > 0 && c->log_size >= c->log_max) {
			console_log_rotate(c);
			continue;	/* log_size is 0 now, or log_max */
		}
		max = len;
		if (c->log_max > 0 && max > c->log_max - c->log_size)
			max = (size_t)(c->log_max - c->log_size);
		n = write(c->log_fd, buf, max);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!c->log_failed)
				log_warn("console log: %s",
				    n < 0 ? strerror(errno) : "short write");
			c->log_failed = true;
			return;
		}
		buf += n;
		len -= n;
		c->log_size += (uint64_t)n;
	}
}

/*
 * The producer: copy what fits, publish it, and wake the loop unless it
 * is woken already (one wake-up per batch: it takes everything at
 * once).  The seq_cst store of wpos and exchange of flush_pending pair
 * with console_flush()'s clearing the flag and then reading wpos: one
 * of the two sides sees the other, so no output is left unflushed.
 */
void
console_output(struct console *c, const uint8_t *buf, size_t len)
{
	uint64_t w = __atomic_load_n(&c->wpos, __ATOMIC_RELAXED);
	/* Acquire: the loop is done reading what it released. */
	uint64_t f = __atomic_load_n(&c->flushed, __ATOMIC_ACQUIRE);
	size_t room = CONSOLE_PENDING_MAX - (size_t)(w - f);

	if (len > room) {
		__atomic_add_fetch(&c->dropped, len - room, __ATOMIC_RELAXED);
		len = room;
	}
	if (len == 0)
		return;
	while (len > 0) {
		size_t off = w % CONSOLE_RING_SIZE;
		size_t n = CONSOLE_RING_SIZE - off;

		if (n > len)
			n = len;
		memcpy(c->ring + off, buf, n);
		w += n;
		buf += n;
		len -= n;
	}
	__atomic_store_n(&c->wpos, w, __ATOMIC_SEQ_CST);
	if (!__atomic_exchange_n(&c->flush_pending, true, __ATOMIC_SEQ_CST))
		event_active(c->flush_ev, 0, 0);
}

void
console_rx_space(struct console *c)
{
	event_active(c->input_ev, 0, 0);
}

static void
console_broadcast(struct console *c, const uint8_t *buf, size_t len)
{
	struct console_client *cl, *next;

	for (cl = TAILQ_FIRST(&c->clients); cl != NULL; cl = next) {
		struct evbuffer *out = bufferevent_get_output(cl->bev);

		next = TAILQ_NEXT(cl, entry);
		if (cl->closing)
			continue;
		if (evbuffer_get_length(out) + len > CONSOLE_CLIENT_BACKLOG) {
			log_info("console client not reading; dropping it");
			c->stats.clients_dropped++;
			console_client_free(cl);
			continue;
		}
		evbuffer_add(out, buf, len);
	}
}

void
console_flush(struct console *c)
{
	uint64_t f = __atomic_load_n(&c->flushed, __ATOMIC_RELAXED);
	uint64_t end = __atomic_load_n(&c->wpos, __ATOMIC_ACQUIRE);

	if (f != end && c->stats.first_output_ns == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		c->stats.first_output_ns = (int64_t)ts.tv_sec * 1000000000 +
		    ts.tv_nsec;
	}
	while (f != end) {
		size_t off = f % CONSOLE_RING_SIZE;
		size_t n = CONSOLE_RING_SIZE - off;

		if (n > end - f)
			n = (size_t)(end - f);
		/* The log first: a client that saw a line finds it there. */
		console_log_write(c, c->ring + off, n);
		console_broadcast(c, c->ring + off, n);
		f += n;
		/* Release: the producer may write over it now. */
		__atomic_store_n(&c->flushed, f, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&c->flush_pending, false, __ATOMIC_SEQ_CST);
	/* Output that came meanwhile: its producer saw the flag still set
	 * and did not wake us, so we do (the timer paces it). */
	if (__atomic_load_n(&c->wpos, __ATOMIC_SEQ_CST) != f &&
	    !__atomic_exchange_n(&c->flush_pending, true, __ATOMIC_SEQ_CST))
		event_active(c->flush_ev, 0, 0);
}

void
console_drain(struct console *c, int timeout_ms)
{
	int64_t deadline = bev_drain_now_ms() + timeout_ms;
	struct console_client *cl;
	int ret;

	console_flush(c);
	TAILQ_FOREACH(cl, &c->clients, entry) {
		if ((ret = bev_drain(cl->bev, deadline)) < 0)
			log_info("console client: last output not sent: %s",
			    strerror(-ret));
	}
}

/*
 * Woken by a vCPU (or by the timer below).  While output keeps coming,
 * the log and the clients get it at most every CONSOLE_FLUSH_INTERVAL_MS:
 * a guest printing at full speed then costs the loop a bounded number of
 * wake-ups instead of one per byte, and an interactive echo still comes
 * back at once after a quiet spell.  flush_pending stays set while the
 * timer waits, so vCPUs do not wake the loop in between; with no output
 * no timer exists.
 */
static void
console_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	struct console *c = arg;
	int64_t now = bev_drain_now_ms();
	int64_t wait = CONSOLE_FLUSH_INTERVAL_MS - (now - c->last_flush_ms);

	if (!(what & EV_TIMEOUT) && wait > 0) {
		struct timeval tv = { 0, (suseconds_t)wait * 1000 };

		event_add(c->flush_ev, &tv);
		return;
	}
	c->last_flush_ms = now;
	console_flush(c);
}

static void
console_set_reading(struct console *c, bool on)
{
	struct console_client *cl;

	if (c->reading_paused == !on)
		return;
	c->reading_paused = !on;
	TAILQ_FOREACH(cl, &c->clients, entry) {
		if (cl->closing)
			continue;
		if (on) {
			bufferevent_enable(cl->bev, EV_READ);
			event_del(cl->close_ev);
		} else {
			bufferevent_disable(cl->bev, EV_READ);
			event_add(cl->close_ev, NULL);
		}
	}
}

/* Offer pending input to the UART; it takes what its FIFO can hold. */
static void
console_push_input(struct console *c)
{
	while (c->input_fn != NULL && evbuffer_get_length(c->input) > 0) {
		size_t len = evbuffer_get_contiguous_space(c->input);
		const uint8_t *p = evbuffer_pullup(c->input, len);
		size_t n = c->input_fn(c->input_opaque, p, len);

		if (n == 0)
			break;
		evbuffer_drain(c->input, n);
		c->stats.bytes_in += n;
	}
	console_set_reading(c,
	    evbuffer_get_length(c->input) < CONSOLE_INPUT_BACKLOG);
}

static void
console_input_cb(evutil_socket_t fd, short what, void *arg)
{
	console_push_input(arg);
}

static void
console_client_read(struct bufferevent *bev, void *arg)
{
	struct console_client *cl = arg;

	evbuffer_add_buffer(cl->console->input, bufferevent_get_input(bev));
	console_push_input(cl->console);
}

/* The client sends no more: let its queued output go, then close. */
static void
console_client_eof(struct console_client *cl)
{
	if (evbuffer_get_length(bufferevent_get_output(cl->bev)) == 0) {
		console_client_free(cl);
		return;
	}
	cl->closing = true;
	event_del(cl->close_ev);
	bufferevent_disable(cl->bev, EV_READ);
	bufferevent_enable(cl->bev, EV_WRITE);
}

static void
console_client_closed(evutil_socket_t fd, short what, void *arg)
{
	console_client_eof(arg);
}

/* Everything queued has been written. */
static void
console_client_written(struct bufferevent *bev, void *arg)
{
	struct console_client *cl = arg;

	if (cl->closing)
		console_client_free(cl);
}

static void
console_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct console_client *cl = arg;

	if (what & BEV_EVENT_ERROR)
		console_client_free(cl);
	else if (what & BEV_EVENT_EOF)
		console_client_eof(cl);
}

int
console_attach(struct console *c, int fd, struct json_object *reply_id)
{
	struct console_client *cl;
	struct json_object *reply;
	size_t replay_len, off, first;
	uint64_t f;
	char *line;
	size_t len;

	if (evutil_make_socket_nonblocking(fd) < 0) {
		close(fd);
		return -EBADF;
	}
	if (c->nclients >= CONSOLE_CLIENTS_MAX) {
		close(fd);
		return -EUSERS;
	}
	cl = calloc(1, sizeof(*cl));
	if (cl == NULL) {
		close(fd);
		return -ENOMEM;
	}
	cl->console = c;
	cl->close_ev = event_new(c->base, fd, EV_CLOSED | EV_PERSIST,
	    console_client_closed, cl);
	if (cl->close_ev == NULL) {
		free(cl);
		close(fd);
		return -ENOMEM;
	}
	cl->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (cl->bev == NULL) {
		event_free(cl->close_ev);
		free(cl);
		close(fd);
		return -ENOMEM;
	}

	reply = proto_reply(reply_id, NULL);
	line = reply == NULL ? NULL : proto_serialize(reply, &len);
	json_object_put(reply);
	if (line == NULL) {
		event_free(cl->close_ev);
		bufferevent_free(cl->bev);
		free(cl);
		return -ENOMEM;
	}
	bufferevent_write(cl->bev, line, len);
	free(line);

	/*
	 * Deliver what is pending to the log and the clients already
	 * attached, then replay what was delivered to this one, from the
	 * part of the ring no vCPU writes to; the rest comes live.
	 */
	console_flush(c);
	c->nclients++;
	f = __atomic_load_n(&c->flushed, __ATOMIC_RELAXED);
	replay_len = f < CONSOLE_REPLAY_SIZE ? (size_t)f : CONSOLE_REPLAY_SIZE;
	off = (f - replay_len) % CONSOLE_RING_SIZE;
	first = CONSOLE_RING_SIZE - off;
	if (first > replay_len)
		first = replay_len;
	bufferevent_write(cl->bev, c->ring + off, first);
	bufferevent_write(cl->bev, c->ring, replay_len - first);

	bufferevent_setcb(cl->bev, console_client_read,
	    console_client_written, console_client_event, cl);
	bufferevent_enable(cl->bev, c->reading_paused ? EV_WRITE :
	    EV_READ | EV_WRITE);
	if (c->reading_paused)
		event_add(cl->close_ev, NULL);
	TAILQ_INSERT_TAIL(&c->clients, cl, entry);
	return 0;
}

#define CONSOLE_FIGURE(key, metric, kind, unit, help, member)		\
	{ key, metric, kind, unit, help,				\
	    FIGURE_AT(struct console_stats, member) }

static const struct figure console_figure_rows[] = {
	CONSOLE_FIGURE("clients", "vmmd_console_clients", FIGURE_GAUGE,
	    FIGURE_UNIT_NONE, "Clients attached to the serial console",
	    clients),
	CONSOLE_FIGURE("bytes_out", "vmmd_console_output_bytes",
	    FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Bytes the guest wrote to its console", bytes_out),
	CONSOLE_FIGURE("bytes_in", NULL, FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Bytes clients sent to the guest's console", bytes_in),
	CONSOLE_FIGURE("bytes_dropped", "vmmd_console_dropped_bytes",
	    FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Console bytes neither logged nor sent", bytes_dropped),
	CONSOLE_FIGURE("clients_dropped", NULL, FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Console clients cut off", clients_dropped),
};

const struct figure_table console_figures =
    FIGURE_TABLE(console_figure_rows);

void
console_get_stats(struct console *c, struct console_stats *st)
{
	struct console_client *cl;

	*st = c->stats;
	/* The producer's counts: what it took, what it dropped. */
	st->bytes_dropped = __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
	st->bytes_out = __atomic_load_n(&c->wpos, __ATOMIC_RELAXED) +
	    st->bytes_dropped;
	st->clients = 0;
	TAILQ_FOREACH(cl, &c->clients, entry)
		st->clients++;
}
