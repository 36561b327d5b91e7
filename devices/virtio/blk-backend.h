/*
 * What a block device model asks of its storage: asynchronous reads,
 * writes, flushes, discards and zeroing on a byte-addressed image.  The
 * worker implements it (daemon/disk/blk-file.c: a disk image, raw or
 * a qcow2 chain, and a few I/O threads); the backend outlives guest
 * resets.
 */
#ifndef VMMD_BLK_BACKEND_H
#define VMMD_BLK_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

enum blk_op {
	BLK_READ,
	BLK_WRITE,
	BLK_FLUSH,		/* earlier completed writes reach stable storage */
	BLK_DISCARD,		/* the range may read as anything afterwards */
	BLK_WRITE_ZEROES,	/* the range reads as zeroes afterwards */
};

struct blk_io {
	enum blk_op op;
	uint64_t offset;	/* bytes; inside the image */
	uint64_t len;		/* DISCARD, WRITE_ZEROES: bytes */
	const struct iovec *iov;	/* READ, WRITE: the data */
	unsigned int niov;
	bool may_unmap;		/* WRITE_ZEROES may free the blocks */
	/*
	 * Called once from a backend thread when the operation is over,
	 * with 0 or -errno: every byte moved, or failed (one the image's
	 * end cuts short is -EIO).
	 */
	void (*done)(struct blk_io *io, int result);
	struct blk_io *next;	/* the backend's */
};

struct blk_backend_ops {
	/* Queue io; never blocks.  0, or -errno and done is not called. */
	int (*submit)(void *ctx, struct blk_io *io);
	/*
	 * Wait until every io submitted so far is done (their callbacks
	 * returned).  Not under the device's lock.
	 */
	void (*drain)(void *ctx);
};

struct blk_backend {
	const struct blk_backend_ops *ops;
	void *ctx;
	uint64_t size;		/* bytes, a multiple of 512 */
	bool readonly;
	char serial[21];	/* up to 20 bytes, NUL-terminated */
};

#endif
