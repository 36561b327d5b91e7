/*
 * A raw disk image file as a blk_image (blk-image.h): the guest's bytes
 * are the file's bytes.  Also the plain file I/O the other formats do
 * their data transfers with.
 */
#ifndef VMMD_BLK_RAW_H
#define VMMD_BLK_RAW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "blk-image.h"

/*
 * Take fd (a regular file or block device, O_RDWR unless readonly);
 * the image's size is the file's, in bytes.  0 with *out, which then
 * owns fd; or -errno, fd still the caller's.
 */
int	blk_raw_open(int fd, bool readonly, struct blk_image **out);

/* The bytes of a regular file or block device: 0, or -EINVAL for others. */
int	blk_raw_size(int fd, uint64_t *size);

/*
 * Move the whole of iov[0 .. niov) at off with preadv/pwritev: 0 or
 * -errno, -EIO at the end of the file.  Short transfers (NFS, FUSE,
 * signals) are resumed where they stopped.  Any thread.
 */
int	blk_raw_rw(int fd, const struct iovec *iov, unsigned int niov,
	    uint64_t off, bool write);
/* A read the same way, where what lies past the end reads as zero. */
int	blk_raw_read_or_zero(int fd, const struct iovec *iov,
	    unsigned int niov, uint64_t off);
/* Write len zero bytes at off (no fallocate). */
int	blk_raw_write_zero_bytes(int fd, uint64_t off, uint64_t len);

#endif
