/* See vnc-http.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "vnc-http.h"

#define VNC_HTTP_REQUEST_MAX	4096	/* request line and headers */
#define VNC_HTTP_PATH_MAX	1024
#define VNC_HTTP_CHUNK		(16u << 10)
/* What one write event sends at most, so that one fast reader does not
 * keep the loop from everything else. */
#define VNC_HTTP_TURN		(256u << 10)

struct vnc_http_conn;

struct vnc_http {
	struct event_base *base;
	int listen_fd;			/* the caller's */
	int dir_fd;
	struct event *listen_ev;	/* pending while active < max_conns */
	unsigned int timeout_ms;
	unsigned int max_conns;
	struct vnc_http_conn *conns;
	struct vnc_http_stats stats;
};

/* One connection, from accept to close; owned by h->conns. */
struct vnc_http_conn {
	struct vnc_http *h;
	int fd;
	struct event *ev;		/* EV_READ, then EV_WRITE */
	struct event *deadline;
	bool responding;
	char request[VNC_HTTP_REQUEST_MAX];
	size_t request_len;
	char head[512];			/* the status line and headers */
	size_t head_len, head_sent;
	int file;			/* -1: no body, or the body in head */
	off_t offset, size;
	bool ok;			/* a 200 */
	struct vnc_http_conn *next;
};

static struct timeval
vnc_http_ms(unsigned int ms)
{
	return (struct timeval){ .tv_sec = ms / 1000,
	    .tv_usec = (ms % 1000) * 1000 };
}

static void
vnc_http_watch_listen(struct vnc_http *h)
{
	if (h->stats.active < h->max_conns)
		event_add(h->listen_ev, NULL);
	else
		event_del(h->listen_ev);
}

static void
vnc_http_close(struct vnc_http_conn *c)
{
	struct vnc_http *h = c->h;
	struct vnc_http_conn **pp;

	for (pp = &h->conns; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->ev != NULL)
		event_free(c->ev);
	if (c->deadline != NULL)
		event_free(c->deadline);
	if (c->file >= 0)
		close(c->file);
	close(c->fd);
	h->stats.active--;
	free(c);
	if (h->listen_ev != NULL)
		vnc_http_watch_listen(h);
}

static const char *
vnc_http_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".json", "application/json" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".ico", "image/x-icon" },
		{ ".woff", "font/woff" },
		{ ".woff2", "font/woff2" },
		{ ".ttf", "font/ttf" },
		{ ".mp3", "audio/mpeg" },
		{ ".oga", "audio/ogg" },
		{ ".wasm", "application/wasm" },
		{ ".txt", "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(path, '.');

	if (dot != NULL && strchr(dot, '/') == NULL)
		for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (strcasecmp(dot, types[i].ext) == 0)
				return types[i].type;
	return "application/octet-stream";
}

static int
vnc_http_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * The request target (len bytes, not terminated) as a path relative to
 * the directory, in out: query and fragment dropped, %XX decoded, empty
 * segments skipped; "." and ".." segments, NUL and backslashes refused;
 * a directory's path ends in index.html.  0 or -EINVAL.
 */
static int
vnc_http_path(const char *target, size_t len, char *out, size_t outlen)
{
	size_t o = 0, seg = 0;
	bool dir = true;

	if (len == 0 || target[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < len && target[i] != '?' && target[i] != '#';
	    i++) {
		int ch = (unsigned char)target[i];

		if (ch == '%') {
			int hi, lo;

			if (i + 2 >= len ||
			    (hi = vnc_http_hex(target[i + 1])) < 0 ||
			    (lo = vnc_http_hex(target[i + 2])) < 0)
				return -EINVAL;
			ch = hi << 4 | lo;
			i += 2;
		}
		if (ch == '\0' || ch == '\\')
			return -EINVAL;
		if (ch == '/') {
			dir = true;
			continue;
		}
		if (dir) {
			/* A segment ends: was it "." or ".."? */
			if ((o - seg == 1 && out[seg] == '.') ||
			    (o - seg == 2 && out[seg] == '.' &&
			    out[seg + 1] == '.'))
				return -EINVAL;
			if (o > 0) {
				if (o + 1 >= outlen)
					return -EINVAL;
				out[o++] = '/';
			}
			seg = o;
			dir = false;
		}
		if (o + 1 >= outlen)
			return -EINVAL;
		out[o++] = (char)ch;
	}
	if ((o - seg == 1 && out[seg] == '.') ||
	    (o - seg == 2 && out[seg] == '.' && out[seg + 1] == '.'))
		return -EINVAL;
	if (dir) {
		static const char index[] = "index.html";

		if (o > 0)
			out[o++] = '/';
		if (o + sizeof(index) > outlen)
			return -EINVAL;
		memcpy(out + o, index, sizeof(index));
		return 0;
	}
	out[o] = '\0';
	return 0;
}

static void
vnc_http_error(struct vnc_http_conn *c, int status, const char *reason,
    const char *extra)
{
	int n;

	n = snprintf(c->head, sizeof(c->head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s\n",
	    status, reason, strlen(reason) + 1, extra, reason);
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
}

/* A whole request is in c->request: the response, in c->head/c->file. */
static void
vnc_http_respond(struct vnc_http_conn *c)
{
	char path[VNC_HTTP_PATH_MAX];
	const char *sp1, *sp2, *eol;
	struct stat st;
	bool head;
	int n;

	eol = memchr(c->request, '\n', c->request_len);
	sp1 = memchr(c->request, ' ', (size_t)(eol - c->request));
	sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) :
	    NULL;
	if (sp1 == NULL || sp2 == NULL || eol - sp2 < 9 ||
	    strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		vnc_http_error(c, 400, "Bad Request", "");
		return;
	}
	head = sp1 - c->request == 4 && memcmp(c->request, "HEAD", 4) == 0;
	if (!head && !(sp1 - c->request == 3 &&
	    memcmp(c->request, "GET", 3) == 0)) {
		vnc_http_error(c, 405, "Method Not Allowed",
		    "Allow: GET, HEAD\r\n");
		return;
	}
	if (vnc_http_path(sp1 + 1, (size_t)(sp2 - sp1 - 1), path,
	    sizeof(path)) < 0) {
		vnc_http_error(c, 400, "Bad Request", "");
		return;
	}
	c->file = openat(c->h->dir_fd, path, O_RDONLY | O_CLOEXEC |
	    O_NOCTTY | O_NONBLOCK);
	if (c->file >= 0 && (fstat(c->file, &st) < 0 ||
	    !S_ISREG(st.st_mode))) {
		close(c->file);
		c->file = -1;
	}
	if (c->file < 0) {
		vnc_http_error(c, 404, "Not Found", "");
		return;
	}
	n = snprintf(c->head, sizeof(c->head), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: %s\r\nContent-Length: %lld\r\n"
	    "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n"
	    "Connection: close\r\n\r\n", vnc_http_type(path),
	    (long long)st.st_size);
	c->head_len = n > 0 && (size_t)n < sizeof(c->head) ? (size_t)n : 0;
	c->size = head ? 0 : st.st_size;
	c->ok = true;
}

static void vnc_http_write_cb(evutil_socket_t fd, short what, void *arg);

static void
vnc_http_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_http_conn *c = arg;
	struct timeval tv = vnc_http_ms(c->h->timeout_ms);
	ssize_t n;

	c->h->stats.wakeups++;
	n = recv(c->fd, c->request + c->request_len,
	    sizeof(c->request) - 1 - c->request_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		vnc_http_close(c);
		return;
	}
	c->request_len += (size_t)n;
	c->request[c->request_len] = '\0';
	if (strstr(c->request, "\r\n\r\n") != NULL ||
	    strstr(c->request, "\n\n") != NULL)
		vnc_http_respond(c);
	else if (c->request_len == sizeof(c->request) - 1)
		vnc_http_error(c, 431, "Request Header Fields Too Large", "");
	else
		return;
	/* Whatever else it sends is not read: one request per connection. */
	event_free(c->ev);
	c->responding = true;
	c->ev = event_new(c->h->base, c->fd, EV_WRITE | EV_PERSIST,
	    vnc_http_write_cb, c);
	if (c->head_len == 0 || c->ev == NULL || event_add(c->ev, NULL) < 0) {
		vnc_http_close(c);
		return;
	}
	/* From now on the deadline is for progress. */
	evtimer_add(c->deadline, &tv);
}

static void
vnc_http_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_http_conn *c = arg;
	struct vnc_http *h = c->h;
	struct timeval tv = vnc_http_ms(h->timeout_ms);
	char chunk[VNC_HTTP_CHUNK];
	size_t turn = 0;
	ssize_t n;

	h->stats.wakeups++;
	while (c->head_sent < c->head_len) {
		n = send(c->fd, c->head + c->head_sent,
		    c->head_len - c->head_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			goto progress;
		if (n <= 0)
			goto close;
		c->head_sent += (size_t)n;
		turn += (size_t)n;
	}
	while (c->offset < c->size && turn < VNC_HTTP_TURN) {
		size_t want = sizeof(chunk);
		ssize_t got;

		if ((off_t)want > c->size - c->offset)
			want = (size_t)(c->size - c->offset);
		got = pread(c->file, chunk, want, c->offset);
		if (got <= 0)
			goto close;	/* shrunk or failing: cut short */
		n = send(c->fd, chunk, (size_t)got, MSG_DONTWAIT |
		    MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			goto close;
		c->offset += n;
		turn += (size_t)n;
	}
	if (c->offset >= c->size) {
		if (c->ok)
			h->stats.served++;
		(void)shutdown(c->fd, SHUT_WR);
		goto close;
	}
progress:
	if (turn > 0)
		evtimer_add(c->deadline, &tv);
	return;
close:
	vnc_http_close(c);
}

static void
vnc_http_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_http_conn *c = arg;

	c->h->stats.wakeups++;
	c->h->stats.timed_out++;
	vnc_http_close(c);
}

static void
vnc_http_listen_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct vnc_http *h = arg;
	struct timeval tv = vnc_http_ms(h->timeout_ms);
	struct vnc_http_conn *c;
	int fd;

	h->stats.wakeups++;
	fd = accept4((int)lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	h->stats.connections++;
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return;
	}
	c->h = h;
	c->fd = fd;
	c->file = -1;
	c->ev = event_new(h->base, fd, EV_READ | EV_PERSIST,
	    vnc_http_read_cb, c);
	c->deadline = evtimer_new(h->base, vnc_http_deadline_cb, c);
	c->next = h->conns;
	h->conns = c;
	h->stats.active++;
	if (c->ev == NULL || c->deadline == NULL ||
	    event_add(c->ev, NULL) < 0 || evtimer_add(c->deadline, &tv) < 0) {
		vnc_http_close(c);
		return;
	}
	vnc_http_watch_listen(h);
}

int
vnc_http_new(struct event_base *base, int listen_fd, const char *dir,
    unsigned int timeout_ms, unsigned int max_conns, struct vnc_http **out)
{
	struct vnc_http *h;
	int r;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->base = base;
	h->listen_fd = listen_fd;
	h->timeout_ms = timeout_ms;
	h->max_conns = max_conns > 0 ? max_conns : 1;
	h->dir_fd = openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (h->dir_fd < 0) {
		r = -errno;
		free(h);
		return r;
	}
	h->listen_ev = event_new(base, listen_fd, EV_READ | EV_PERSIST,
	    vnc_http_listen_cb, h);
	if (h->listen_ev == NULL || event_add(h->listen_ev, NULL) < 0) {
		vnc_http_free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void
vnc_http_free(struct vnc_http *h)
{
	if (h == NULL)
		return;
	if (h->listen_ev != NULL)
		event_free(h->listen_ev);
	h->listen_ev = NULL;
	while (h->conns != NULL)
		vnc_http_close(h->conns);
	close(h->dir_fd);
	free(h);
}

void
vnc_http_stats(const struct vnc_http *h, struct vnc_http_stats *st)
{
	*st = h->stats;
}
