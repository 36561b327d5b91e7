/* See blk-raw.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "blk-raw.h"

struct blk_raw {
	struct blk_image img;		/* first */
	int fd;
};

/* Segments handed to one call once a short transfer split the vector. */
#define BLK_RAW_WINDOW	64

/*
 * Move the whole of iov[0 .. niov), at off: 0 or -errno.  A call may
 * move less than asked (NFS, FUSE, signals): the next goes on from where
 * it stopped, on a copy of at most BLK_RAW_WINDOW segments of what is
 * left, until every segment is done.  At the end of the file: -EIO, or
 * for a read with zero_eof the rest zeroed.
 */
static int
blk_raw_xfer(int fd, const struct iovec *iov, unsigned int niov,
    uint64_t off, bool write, bool zero_eof)
{
	struct iovec local[BLK_RAW_WINDOW];
	const struct iovec *v;
	size_t skip = 0;		/* bytes of iov[0] already moved */
	unsigned int n;
	ssize_t got;

	for (;;) {
		while (niov > 0 && skip >= iov->iov_len) {
			skip -= iov->iov_len;
			iov++;
			niov--;
		}
		if (niov == 0)
			return 0;
		if (skip == 0 && niov <= IOV_MAX) {
			v = iov;
			n = niov;
		} else {
			n = niov < BLK_RAW_WINDOW ? niov : BLK_RAW_WINDOW;
			memcpy(local, iov, n * sizeof(*iov));
			local[0].iov_base = (uint8_t *)local[0].iov_base +
			    skip;
			local[0].iov_len -= skip;
			v = local;
		}
		got = write ? pwritev(fd, v, (int)n, (off_t)off) :
		    preadv(fd, v, (int)n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0 && zero_eof && !write) {
			memset((uint8_t *)iov->iov_base + skip, 0,
			    iov->iov_len - skip);
			for (unsigned int i = 1; i < niov; i++)
				memset(iov[i].iov_base, 0, iov[i].iov_len);
			return 0;
		}
		if (got == 0)
			return -EIO;
		off += (uint64_t)got;
		skip += (size_t)got;
	}
}

int
blk_raw_rw(int fd, const struct iovec *iov, unsigned int niov, uint64_t off,
    bool write)
{
	return blk_raw_xfer(fd, iov, niov, off, write, false);
}

int
blk_raw_read_or_zero(int fd, const struct iovec *iov, unsigned int niov,
    uint64_t off)
{
	return blk_raw_xfer(fd, iov, niov, off, false, true);
}

int
blk_raw_write_zero_bytes(int fd, uint64_t off, uint64_t len)
{
	static const uint8_t zero[65536];
	struct iovec iov;
	int ret;

	while (len > 0) {
		iov.iov_base = (void *)zero;
		iov.iov_len = len < sizeof(zero) ? len : sizeof(zero);
		if ((ret = blk_raw_rw(fd, &iov, 1, off, true)) < 0)
			return ret;
		off += iov.iov_len;
		len -= iov.iov_len;
	}
	return 0;
}

static int
blk_raw_check(struct blk_image *img, uint64_t off, uint64_t len)
{
	if (off > img->size || len > img->size - off)
		return -EIO;
	return img->readonly ? -EROFS : 0;
}

static int
blk_raw_read(struct blk_image *img, const struct iovec *iov,
    unsigned int niov, uint64_t off)
{
	struct blk_raw *r = (struct blk_raw *)img;

	return blk_raw_rw(r->fd, iov, niov, off, false);
}

static int
blk_raw_write(struct blk_image *img, const struct iovec *iov,
    unsigned int niov, uint64_t off)
{
	struct blk_raw *r = (struct blk_raw *)img;

	if (img->readonly)
		return -EROFS;
	return blk_raw_rw(r->fd, iov, niov, off, true);
}

static int
blk_raw_flush(struct blk_image *img)
{
	struct blk_raw *r = (struct blk_raw *)img;

	return fdatasync(r->fd) < 0 ? -errno : 0;
}

static int
blk_raw_discard(struct blk_image *img, uint64_t off, uint64_t len)
{
	struct blk_raw *r = (struct blk_raw *)img;
	int ret;

	if ((ret = blk_raw_check(img, off, len)) < 0)
		return ret;
	/* Advisory: a file system that cannot punch keeps the data. */
	fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    (off_t)off, (off_t)len);
	return 0;
}

static int
blk_raw_write_zeroes(struct blk_image *img, uint64_t off, uint64_t len,
    bool may_unmap)
{
	struct blk_raw *r = (struct blk_raw *)img;
	int ret;

	if ((ret = blk_raw_check(img, off, len)) < 0)
		return ret;
	if (fallocate(r->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	    (off_t)off, (off_t)len) == 0)
		return 0;
	if (may_unmap && fallocate(r->fd, FALLOC_FL_PUNCH_HOLE |
	    FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	return blk_raw_write_zero_bytes(r->fd, off, len);
}

static void
blk_raw_stats(struct blk_image *img, struct blk_image_stats *st)
{
	struct blk_raw *r = (struct blk_raw *)img;
	struct stat sb;

	memset(st, 0, sizeof(*st));
	st->format = "raw";
	if (fstat(r->fd, &sb) == 0)
		st->allocated = (uint64_t)sb.st_blocks * 512;
}

static void
blk_raw_free(struct blk_image *img)
{
	struct blk_raw *r = (struct blk_raw *)img;

	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

static void
blk_raw_disown(struct blk_image *img)
{
	((struct blk_raw *)img)->fd = -1;
}

static const struct blk_image_ops blk_raw_ops = {
	.read = blk_raw_read,
	.write = blk_raw_write,
	.flush = blk_raw_flush,
	.discard = blk_raw_discard,
	.write_zeroes = blk_raw_write_zeroes,
	.stats = blk_raw_stats,
	.disown = blk_raw_disown,
	.free = blk_raw_free,
};

int
blk_raw_size(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode))
		*size = (uint64_t)st.st_size;
	else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, size) < 0)
			return -errno;
	} else
		return -EINVAL;
	return 0;
}

int
blk_raw_open(int fd, bool readonly, struct blk_image **out)
{
	struct blk_raw *r;
	uint64_t size;
	int ret;

	if ((ret = blk_raw_size(fd, &size)) < 0)
		return ret;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -ENOMEM;
	r->fd = fd;
	r->img.ops = &blk_raw_ops;
	r->img.size = size;
	r->img.readonly = readonly;
	*out = &r->img;
	return 0;
}
