/*
 * libFuzzer: the qcow2 layer (daemon/disk/blk-qcow2.c and the header
 * parser) on images built from the input, in memory files: a top image,
 * optionally over a backing image (qcow2 or raw), then reads, writes,
 * discards, zeroing, flushes and reopenings.  Whatever the images hold,
 * no crash, no hang, no leak; I/O may fail, never more.
 *
 * Input: a flags byte (bit 0: a backing image; bit 1: it is qcow2, not
 * raw; bit 2: read-only), then the top image as a 16-bit little-endian
 * length and its bytes, the backing image the same way when there is
 * one, then operations of 7 bytes each: kind, a 32-bit offset in
 * 512-byte units (modulo the disk), a 16-bit length in 16-byte units.
 * The seed corpus (corpus/qcow2) holds small qemu-img images so made.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "blk-chain.h"
#include "blk-image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_OPS	48
#define FUZZ_MAX_LEN	(256 * 1024)

struct fuzz_in {
	const uint8_t *p;
	size_t left;
};

static int
fuzz_take(struct fuzz_in *in, void *out, size_t n)
{
	if (in->left < n)
		return -1;
	memcpy(out, in->p, n);
	in->p += n;
	in->left -= n;
	return 0;
}

/* An image from the input: a 16-bit length, then its bytes. */
static int
fuzz_image(struct fuzz_in *in)
{
	uint8_t l[2];
	size_t len;
	int fd;

	if (fuzz_take(in, l, 2) < 0)
		return -1;
	len = (size_t)(l[0] | l[1] << 8);
	if (len > in->left)
		len = in->left;
	if ((fd = memfd_create("qcow2", MFD_CLOEXEC)) < 0)
		abort();
	if (len > 0 && pwrite(fd, in->p, len, 0) != (ssize_t)len)
		abort();
	in->p += len;
	in->left -= len;
	return fd;
}

/* Open the chain on fresh descriptors of the memory files. */
static int
fuzz_open(const int *fds, const enum blk_image_format *fmt, unsigned int n,
    bool readonly, struct blk_image **img)
{
	int d[2];
	int ret;

	for (unsigned int i = 0; i < n; i++)
		if ((d[i] = dup(fds[i])) < 0)
			abort();
	ret = blk_image_open_chain(d, fmt, n, readonly, img);
	if (ret < 0)
		for (unsigned int i = 0; i < n; i++)
			close(d[i]);
	return ret;
}

static void
fuzz_ops(struct fuzz_in *in, const int *fds,
    const enum blk_image_format *fmt, unsigned int n, bool readonly,
    struct blk_image *img, uint8_t *buf)
{
	for (unsigned int k = 0; k < FUZZ_MAX_OPS; k++) {
		uint8_t op[7];
		uint64_t off, len;
		struct iovec iov[2];

		if (fuzz_take(in, op, sizeof(op)) < 0)
			break;
		if (img->size == 0)
			break;
		off = ((uint64_t)op[1] | (uint64_t)op[2] << 8 |
		    (uint64_t)op[3] << 16 | (uint64_t)op[4] << 24) * 512 %
		    img->size;
		len = ((uint64_t)op[5] | (uint64_t)op[6] << 8) * 16 %
		    FUZZ_MAX_LEN;
		if (len > img->size - off)
			len = img->size - off;
		/* Two segments, split where the length's low bits say. */
		iov[0] = (struct iovec){ buf, len / 2 & ~(uint64_t)op[0] };
		iov[1] = (struct iovec){ buf + iov[0].iov_len,
		    len - iov[0].iov_len };
		switch (op[0] % 8) {
		case 0:
		case 1:
			img->ops->read(img, iov, 2, off);
			break;
		case 2:
		case 3:
			memset(buf, op[0] ^ op[6], len);
			img->ops->write(img, iov, 2, off);
			break;
		case 4:
			img->ops->discard(img, off, len);
			break;
		case 5:
			img->ops->write_zeroes(img, off, len, op[6] & 1);
			break;
		case 6:
			img->ops->flush(img);
			break;
		case 7: {
			/* What was written must open again. */
			struct blk_image_stats st;

			img->ops->stats(img, &st);
			blk_image_free(img);
			if (fuzz_open(fds, fmt, n, readonly, &img) < 0)
				return;
			break;
		}
		}
	}
	blk_image_free(img);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[FUZZ_MAX_LEN];
	struct fuzz_in in = { data, size };
	enum blk_image_format fmt[2] = { BLK_IMAGE_QCOW2, BLK_IMAGE_RAW };
	int fds[2] = { -1, -1 };
	struct blk_image *img;
	unsigned int n = 1;
	uint8_t flags;

	if (fuzz_take(&in, &flags, 1) < 0)
		return 0;
	if ((fds[0] = fuzz_image(&in)) < 0)
		return 0;
	if ((flags & 1) != 0) {
		if ((fds[1] = fuzz_image(&in)) < 0)
			goto out;
		fmt[1] = (flags & 2) != 0 ? BLK_IMAGE_QCOW2 : BLK_IMAGE_RAW;
		n = 2;
	}
	if (fuzz_open(fds, fmt, n, (flags & 4) != 0, &img) == 0)
		fuzz_ops(&in, fds, fmt, n, (flags & 4) != 0, img, buf);
out:
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return 0;
}
