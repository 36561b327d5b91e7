/* See mig-io.h. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mig-io.h"

/* Until fd is ready for events: 0, or -errno as mig-io.h says. */
static int
mig_io_wait(int fd, short events, int watch_fd, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = events },
		{ .fd = watch_fd, .events = POLLRDHUP },
	};
	int n;

	for (;;) {
		n = poll(p, watch_fd >= 0 ? 2 : 1, timeout_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		if (watch_fd >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP |
		    POLLERR)) != 0)
			return -ECONNABORTED;
		if (p[0].revents != 0)
			return 0;
	}
}

int
mig_io_write(int fd, const void *buf, size_t len, int watch_fd,
    int timeout_ms)
{
	const uint8_t *p = buf;
	ssize_t n;
	int rc;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		/* Not a socket (a pipe SSH gave): write, SIGPIPE ignored. */
		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return errno == ECONNRESET ? -EPIPE : -errno;
		if (n < 0) {
			if ((rc = mig_io_wait(fd, POLLOUT, watch_fd,
			    timeout_ms)) < 0)
				return rc;
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
mig_io_read(int fd, void *buf, size_t len, int watch_fd, int timeout_ms)
{
	uint8_t *p = buf;
	ssize_t n;
	int rc;

	while (len > 0) {
		if ((rc = mig_io_wait(fd, POLLIN, watch_fd, timeout_ms)) < 0)
			return rc;
		n = read(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
