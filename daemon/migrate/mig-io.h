/*
 * Whole reads and writes of a migration stream on a descriptor that
 * may be non-blocking, each bounded: no byte moving for timeout_ms is
 * -ETIMEDOUT, and a hang-up on watch_fd (>= 0: the link to the
 * supervisor, whose end means nobody owns the migration any more) is
 * -ECONNABORTED.  The peer's end is -EPIPE (writes) or -ECONNRESET
 * (reads, EOF).  Blocks the calling thread: a worker's migration
 * thread, or its boot before any vCPU runs.
 */
#ifndef VMMD_MIG_IO_H
#define VMMD_MIG_IO_H

#include <stddef.h>

int	mig_io_write(int fd, const void *buf, size_t len, int watch_fd,
	    int timeout_ms);
int	mig_io_read(int fd, void *buf, size_t len, int watch_fd,
	    int timeout_ms);

#endif
