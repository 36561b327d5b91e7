/* See link.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "bev-drain.h"
#include "link.h"
#include "log.h"
#include "proto.h"
#include "test-hook.h"

struct link {
	struct event_base *base;
	struct link_handlers h;
	int fd;
	struct event *read_ev;
	struct bufferevent *out;
	struct proto_lines *lines;
	int fds[LINK_MAX_FDS];
	unsigned int nfds;
};

int
link_fd(const struct link *l)
{
	return l != NULL ? l->fd : -1;
}

void
link_send(struct link *l, struct json_object *msg)
{
	char *line;
	size_t len;

	if (msg == NULL)
		return;
	if (l == NULL) {
		/* No supervisor linked: nobody to tell. */
		json_object_put(msg);
		return;
	}
	test_hook_sending(msg);
	line = proto_serialize(msg, &len);
	json_object_put(msg);
	if (line == NULL)
		return;
	bufferevent_write(l->out, line, len);
	free(line);
}

int
link_take_fd(struct link *l)
{
	int fd;

	if (l == NULL || l->nfds == 0)
		return -1;
	fd = l->fds[0];
	memmove(&l->fds[0], &l->fds[1], --l->nfds * sizeof(int));
	return fd;
}

static void
link_stash_fds(struct link *l, struct msghdr *msg)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		int *fds = (int *)CMSG_DATA(cm);
		size_t n, i;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			if (l->nfds < LINK_MAX_FDS)
				l->fds[l->nfds++] = fds[i];
			else
				close(fds[i]);
		}
	}
}

/*
 * One recvmsg() without waiting: the bytes go to the framer, passed
 * descriptors to the stash.  The number of bytes, 0 at EOF, or -errno.
 */
static ssize_t
link_recv(struct link *l)
{
	char buf[16384];
	union {
		char buf[CMSG_SPACE(LINK_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	ssize_t n;

	n = recvmsg(l->fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	if (n > 0) {
		link_stash_fds(l, &msg);
		proto_lines_feed(l->lines, buf, (size_t)n);
	}
	return n;
}

/*
 * Handle every complete request line read so far.  On the loop, stop
 * once a request ended it; after the loop (after_loop), go on.
 */
static void
link_handle_lines(struct link *l, bool after_loop)
{
	const char *line;
	size_t len;
	int ret;

	while ((ret = proto_lines_next(l->lines, &line, &len)) != 0) {
		if (ret < 0) {
			link_send(l, proto_error(NULL, PROTO_ERR_TOO_LARGE,
			    "request longer than %d bytes", PROTO_MAX_LINE));
			continue;
		}
		l->h.request(l->h.opaque, line, len);
		if (!after_loop && event_base_got_exit(l->base))
			break;
	}
}

static void
link_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct link *l = arg;
	ssize_t n;

	n = link_recv(l);
	if (n == -EINTR || n == -EAGAIN)
		return;
	if (n <= 0) {
		l->h.closed(l->h.opaque);
		return;
	}
	link_handle_lines(l, false);
}

void
link_serve_queued(struct link *l)
{
	size_t left;
	ssize_t n;
	int avail = 0;

	if (l == NULL)
		return;
	/* What came in the same read as the request that ended the loop. */
	link_handle_lines(l, true);
	/* Then what the socket holds now, and no more: nothing waits. */
	if (ioctl(l->fd, FIONREAD, &avail) < 0 || avail <= 0)
		return;
	left = (size_t)avail;
	while (left > 0) {
		n = link_recv(l);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			break;		/* drained, closed or failed */
		left -= (size_t)n < left ? (size_t)n : left;
		link_handle_lines(l, true);
	}
}

static void
link_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct link *l = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		l->h.closed(l->h.opaque);
}

struct link *
link_new(struct event_base *base, int fd, const struct link_handlers *h,
    int *errp)
{
	struct link *l;

	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		*errp = -ENOMEM;
		close(fd);
		return NULL;
	}
	l->base = base;
	l->h = *h;
	l->fd = fd;
	if (evutil_make_socket_nonblocking(fd) < 0 ||
	    evutil_make_socket_closeonexec(fd) < 0) {
		*errp = -errno;
		goto fail;
	}
	l->lines = proto_lines_new(PROTO_MAX_LINE);
	l->read_ev = event_new(base, fd, EV_READ | EV_PERSIST, link_read_cb,
	    l);
	l->out = bufferevent_socket_new(base, fd, 0);
	if (l->lines == NULL || l->read_ev == NULL || l->out == NULL) {
		*errp = -ENOMEM;
		goto fail;
	}
	bufferevent_setcb(l->out, NULL, NULL, link_event_cb, l);
	bufferevent_enable(l->out, EV_WRITE);
	event_add(l->read_ev, NULL);
	return l;

fail:
	link_free(l, 0);
	return NULL;
}

void
link_free(struct link *l, int drain_ms)
{
	int ret;

	if (l == NULL)
		return;
	/* Best effort: let queued events reach the supervisor. */
	if (l->out != NULL && drain_ms > 0 && (ret = bev_drain(l->out,
	    bev_drain_now_ms() + drain_ms)) < 0)
		log_info("last events to vmmd not sent: %s", strerror(-ret));
	if (l->out != NULL)
		bufferevent_free(l->out);
	if (l->read_ev != NULL)
		event_free(l->read_ev);
	proto_lines_free(l->lines);
	while (l->nfds > 0)
		close(link_take_fd(l));
	close(l->fd);
	free(l);
}
