/* Whole transfers between a buffer and a snapshot's file. */
#ifndef VMMD_SNAP_IO_H
#define VMMD_SNAP_IO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/*
 * Moves len bytes between buf and fd at off, all of them: pwrite when
 * write, else pread into buf (which must then be writable; buf is const
 * only so that writers need no cast).  EINTR is retried; 0, or -errno,
 * or -EIO when the file ends (or takes nothing) before len bytes.
 */
static inline int
snap_io_all(int fd, const void *buf, size_t len, uint64_t off, bool write)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) :
		    pread(fd, (void *)p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
