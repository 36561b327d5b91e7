/*
 * Writing a whole buffer to a descriptor: write(2) until every byte is
 * out, again after a signal.  Header only, so that every program and
 * module (the supervisor, the worker, the cloud module) uses the one
 * loop without a library of its own.
 */
#ifndef VMMD_FD_WRITE_H
#define VMMD_FD_WRITE_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* 0, or -errno (-EIO for a write that took nothing). */
static inline int
fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t w;

	while (len > 0) {
		w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

#endif
