/*
 * The raw image backend (blk-file.c) on a file system that moves less
 * than asked, as NFS and FUSE may: every preadv and pwritev the backend
 * makes comes through here (interposed) and moves at most a few hundred
 * bytes, sometimes nothing but EINTR.  Requests of more segments than one
 * call takes after a short transfer still move every byte; a read past
 * the end of the file and an error from the file system fail the
 * request.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "blk-file.h"
#include "tap.h"

/* virtio-blk's seg_max: more than one call takes after a short one. */
#define SEGS		126
#define SEG		512
#define IMAGE		(SEGS * SEG * 2)

/* What the interposed calls do; changed by the test only while idle. */
static struct {
	size_t chunk;		/* most bytes one call moves */
	unsigned int eintr;	/* every n-th call fails with EINTR; 0: never */
	int error;		/* non-zero: every call fails with it */
	unsigned long calls;
} fs = { .chunk = 300 };

/* At most fs.chunk bytes of iov, segment by segment, with pread/pwrite. */
static ssize_t
short_xfer(int fd, const struct iovec *iov, int n, off_t off, bool write)
{
	unsigned long call = __atomic_add_fetch(&fs.calls, 1,
	    __ATOMIC_RELAXED);
	size_t left = fs.chunk, moved = 0;
	ssize_t got;

	if (fs.error != 0) {
		errno = fs.error;
		return -1;
	}
	if (fs.eintr != 0 && call % fs.eintr == 0) {
		errno = EINTR;
		return -1;
	}
	for (int i = 0; i < n && left > 0; i++) {
		size_t len = iov[i].iov_len < left ? iov[i].iov_len : left;

		got = write ? pwrite(fd, iov[i].iov_base, len, off) :
		    pread(fd, iov[i].iov_base, len, off);
		if (got < 0)
			return moved > 0 ? (ssize_t)moved : -1;
		moved += (size_t)got;
		left -= (size_t)got;
		off += got;
		if ((size_t)got < len)
			break;
	}
	return (ssize_t)moved;
}

ssize_t
preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	return short_xfer(fd, iov, n, off, false);
}

ssize_t
pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	return short_xfer(fd, iov, n, off, true);
}

/* One request, waited for through the backend's drain. */
struct req {
	struct blk_io io;		/* first */
	int result;
	bool done;
};

static void
req_done(struct blk_io *io, int result)
{
	struct req *r = (struct req *)io;

	r->result = result;
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
}

static int
run(struct blk_backend *be, enum blk_op op, uint64_t off,
    const struct iovec *iov, unsigned int niov)
{
	struct req r = { .io = { .op = op, .offset = off, .iov = iov,
	    .niov = niov, .done = req_done } };
	int ret;

	if ((ret = be->ops->submit(be->ctx, &r.io)) < 0)
		return ret;
	be->ops->drain(be->ctx);
	return __atomic_load_n(&r.done, __ATOMIC_ACQUIRE) ? r.result : -999;
}

/* SEGS segments of SEG bytes, each at its own place in buf. */
static void
segments(struct iovec *iov, uint8_t *buf)
{
	for (unsigned int i = 0; i < SEGS; i++)
		iov[i] = (struct iovec){ buf + (size_t)i * SEG, SEG };
}

static uint8_t
pattern(size_t i)
{
	return (uint8_t)(i * 13 + i / 251 + 1);
}

int
main(void)
{
	static uint8_t src[SEGS * SEG], dst[SEGS * SEG], back[SEGS * SEG];
	char path[] = "/tmp/vmmd-blk-file-XXXXXX";
	struct iovec iov[SEGS];
	struct blk_backend be;
	struct blk_file *f;
	unsigned long calls;
	size_t bad;
	int fd;

	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, IMAGE) < 0)
		tap_bail("image: %s", path);
	unlink(path);
	TAP_EQ(blk_file_new(&f, dup(fd), false, NULL, &be), 0,
	    "backend on the image");

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = pattern(i);
	segments(iov, src);
	fs.calls = 0;
	TAP_EQ(run(&be, BLK_WRITE, SEG, iov, SEGS), 0,
	    "a write of %u segments, %zu bytes a call", SEGS, fs.chunk);
	calls = fs.calls;
	tap_ok(calls >= sizeof(src) / fs.chunk, "in %lu short calls", calls);
	TAP_EQ(pread(fd, back, sizeof(back), SEG), (ssize_t)sizeof(back),
	    "the image read back");
	for (bad = 0; bad < sizeof(back) && back[bad] == src[bad]; bad++)
		;
	tap_ok(bad == sizeof(back), "every byte written");
	if (bad != sizeof(back))
		tap_diag("first wrong byte: %zu", bad);

	segments(iov, dst);
	TAP_EQ(run(&be, BLK_READ, SEG, iov, SEGS), 0,
	    "a read of %u segments in short calls", SEGS);
	for (bad = 0; bad < sizeof(dst) && dst[bad] == src[bad]; bad++)
		;
	tap_ok(bad == sizeof(dst), "every byte read");
	if (bad != sizeof(dst))
		tap_diag("first wrong byte: %zu", bad);

	/* Transfers that end on segment boundaries, and EINTR between. */
	fs.chunk = SEG * 3;
	fs.eintr = 3;
	memset(dst, 0, sizeof(dst));
	TAP_EQ(run(&be, BLK_READ, SEG, iov, SEGS), 0,
	    "whole segments a call, EINTR every third: read");
	tap_ok(memcmp(dst, src, sizeof(dst)) == 0, "every byte read");
	fs.eintr = 0;

	fs.error = ENOSPC;
	TAP_EQ(run(&be, BLK_WRITE, 0, iov, SEGS), -ENOSPC,
	    "an error from the file system fails the request");
	fs.error = 0;

	/* The file shrinks under the backend: the end comes early. */
	fs.chunk = 300;
	TAP_EQ(ftruncate(fd, SEG * 4 + 100), 0, "image cut short");
	memset(dst, 0xee, sizeof(dst));
	TAP_EQ(run(&be, BLK_READ, SEG, iov, SEGS), -EIO,
	    "a read past the end of the file is an I/O error");
	TAP_EQ(dst[SEG * 3 + 99], src[SEG * 3 + 99],
	    "what was there was read first");

	blk_file_free(f);
	close(fd);
	return tap_done();
}
