/*
 * Serial console plumbing; see console.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
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

struct console {
	struct event_base *base;

	/* Shared with vCPU threads, under lock. */
	pthread_mutex_t lock;
	int log_fd;		/* read-write: rotation copies it */
	int old_fd;		/* PATH.1, open from the start, or -1 */
	bool log_failed;
	char *log_path;		/* for messages */
	uint64_t log_size;	/* bytes in the log now */
	uint64_t log_max;	/* rotate beyond this; 0: never */
	uint8_t *ring;
	uint64_t wpos;		/* bytes ever written */
	bool flush_pending;
	unsigned int nclients;	/* the loop is woken only for clients */

	/* Loop thread only. */
	uint64_t flushed;	/* bytes handed to log and clients */
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
	pthread_mutex_init(&c->lock, NULL);
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
	pthread_mutex_lock(&cl->console->lock);
	cl->console->nclients--;
	pthread_mutex_unlock(&cl->console->lock);
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
	pthread_mutex_destroy(&c->lock);
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
 * on from its new end.  Rare, so done where the bytes come, on the vCPU
 * thread (a copy of log_max bytes, in the kernel where it can).  A crash
 * between copy and truncation leaves the lines in both files, never in
 * neither.  Should the copy fail, logging goes on where it is (once
 * warned).  Caller holds c->lock.
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

/* Caller holds c->lock. */
static void
console_log_write(struct console *c, const uint8_t *buf, size_t len)
{
	ssize_t n;

	if (c->log_fd >= 0 && c->log_max > 0 && c->log_size > 0 &&
	    c->log_size + len > c->log_max)
		console_log_rotate(c);
	while (c->log_fd >= 0 && len > 0) {
		n = write(c->log_fd, buf, len);
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
 * The log is written here, on the vCPU thread, as the guest transmits:
 * a regular file takes the bytes at once, and the event loop then only
 * wakes when a client is attached to see them.  A guest that prints
 * with nobody watching costs one write() per burst and no wake-ups.
 */
void
console_output(struct console *c, const uint8_t *buf, size_t len)
{
	bool wake;

	pthread_mutex_lock(&c->lock);
	console_log_write(c, buf, len);
	c->stats.bytes_out += len;
	while (len > 0) {
		size_t off = c->wpos % CONSOLE_RING_SIZE;
		size_t n = CONSOLE_RING_SIZE - off;

		if (n > len)
			n = len;
		memcpy(c->ring + off, buf, n);
		c->wpos += n;
		buf += n;
		len -= n;
	}
	/* One wake-up per batch: the loop drains everything at once. */
	wake = c->nclients > 0 && !c->flush_pending;
	if (wake)
		c->flush_pending = true;
	pthread_mutex_unlock(&c->lock);
	if (wake)
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
	uint8_t chunk[16384];
	uint64_t end;

	for (;;) {
		size_t off, n;

		pthread_mutex_lock(&c->lock);
		end = c->wpos;
		if (c->nclients == 0)
			c->flushed = end;	/* the log has it all */
		if (end - c->flushed > CONSOLE_RING_SIZE) {
			c->stats.bytes_lost += end - c->flushed -
			    CONSOLE_RING_SIZE;
			c->flushed = end - CONSOLE_RING_SIZE;
		}
		if (c->flushed == end) {
			c->flush_pending = false;
			pthread_mutex_unlock(&c->lock);
			return;
		}
		off = c->flushed % CONSOLE_RING_SIZE;
		n = end - c->flushed;
		if (n > sizeof(chunk))
			n = sizeof(chunk);
		if (n > CONSOLE_RING_SIZE - off)
			n = CONSOLE_RING_SIZE - off;
		memcpy(chunk, c->ring + off, n);
		c->flushed += n;
		pthread_mutex_unlock(&c->lock);
		console_broadcast(c, chunk, n);
	}
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
 * clients get it at most every CONSOLE_FLUSH_INTERVAL_MS: a guest
 * printing at full speed then costs the loop a bounded number of
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
	uint8_t *replay = NULL;
	size_t replay_len = 0, off, first;
	char *line;
	size_t len;
	bool full;

	if (evutil_make_socket_nonblocking(fd) < 0) {
		close(fd);
		return -EBADF;
	}
	pthread_mutex_lock(&c->lock);
	full = c->nclients >= CONSOLE_CLIENTS_MAX;
	pthread_mutex_unlock(&c->lock);
	if (full) {
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
	 * Deliver what is pending to the clients already attached, then
	 * replay what was delivered to this one; the rest comes live.
	 */
	console_flush(c);
	pthread_mutex_lock(&c->lock);
	/* Without clients the vCPUs did not wake us for what they wrote
	 * since: the log has it, and the replay below takes it too. */
	if (c->nclients == 0)
		c->flushed = c->wpos;
	c->nclients++;
	replay_len = c->flushed < CONSOLE_REPLAY_SIZE ? c->flushed :
	    CONSOLE_REPLAY_SIZE;
	replay = malloc(replay_len ? replay_len : 1);
	if (replay != NULL) {
		off = (c->flushed - replay_len) % CONSOLE_RING_SIZE;
		first = CONSOLE_RING_SIZE - off;
		if (first > replay_len)
			first = replay_len;
		memcpy(replay, c->ring + off, first);
		memcpy(replay + first, c->ring, replay_len - first);
	}
	pthread_mutex_unlock(&c->lock);
	if (replay != NULL)
		bufferevent_write(cl->bev, replay, replay_len);
	free(replay);

	bufferevent_setcb(cl->bev, console_client_read,
	    console_client_written, console_client_event, cl);
	bufferevent_enable(cl->bev, c->reading_paused ? EV_WRITE :
	    EV_READ | EV_WRITE);
	if (c->reading_paused)
		event_add(cl->close_ev, NULL);
	TAILQ_INSERT_TAIL(&c->clients, cl, entry);
	return 0;
}

void
console_get_stats(struct console *c, struct console_stats *st)
{
	struct console_client *cl;

	/* bytes_out and bytes_lost change on vCPU threads. */
	pthread_mutex_lock(&c->lock);
	*st = c->stats;
	pthread_mutex_unlock(&c->lock);
	st->clients = 0;
	TAILQ_FOREACH(cl, &c->clients, entry)
		st->clients++;
}
