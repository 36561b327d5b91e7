/*
 * See bev-drain.h.
 *
 * A socket bufferevent keeps the front of its output buffer frozen:
 * only the bufferevent itself may take data from it, so evbuffer_write()
 * on it fails.  The bytes are therefore copied out and sent directly;
 * the buffer itself is left for bufferevent_free().
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "bev-drain.h"

int64_t
bev_drain_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns 0 once everything is sent, -errno otherwise. */
int
bev_drain(struct bufferevent *bev, int64_t deadline_ms)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	struct pollfd pfd = { .fd = bufferevent_getfd(bev), .events = POLLOUT };
	size_t len = evbuffer_get_length(out), off = 0;
	const unsigned char *data;

	if (len == 0)
		return 0;
	if (pfd.fd < 0)
		return -EBADF;
	if ((data = evbuffer_pullup(out, -1)) == NULL)
		return -ENOMEM;
	while (off < len) {
		ssize_t n = send(pfd.fd, data + off, len - off,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		int64_t left;

		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		left = deadline_ms - bev_drain_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}
