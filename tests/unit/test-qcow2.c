/*
 * The qcow2 layer (daemon/disk/blk-qcow2.c) against qemu-img, the
 * format's reference implementation.  Images qemu-img makes (versions 2
 * and 3, cluster sizes 512 bytes to 2 MiB, refcount widths 1 to 64
 * bits, zlib and zstd compression, overlays over qcow2 and raw) read
 * byte for byte as qemu-img's own conversion to raw; after vmmd writes
 * (fresh clusters, rewrites, partial clusters over backing and
 * compressed data, zeroes, discards, refcount table growth) qemu-img
 * check finds them clean and qemu-img compare finds them equal to a raw
 * file that took the same writes; a discarded cluster is punched out only
 * after the flush that made its L2 entry stable.  Damage fails I/O with -EIO; a process
 * killed at any write leaves an image qemu-img check accepts, with every
 * write flushed before the kill read back.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blk-file.h"
#include "blk-chain.h"
#include "blk-image.h"
#include "qcow2-header.h"
#include "tap.h"
#include "scratch.h"
#include "qemu-img-util.h"

#define MiB	(1ULL << 20)

static const char *dir;		/* scratch.h's, for the images */

/*
 * Every write the layer makes goes through pwritev (blk-raw.c): the
 * crash test's child dies at the chosen call.  0: never.
 */
static unsigned long crash_at, pwritev_calls, preadv_calls;

ssize_t
preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	preadv_calls++;
	return syscall(SYS_preadv, fd, iov, n, (long)off,
	    (long)((uint64_t)off >> 32));
}

ssize_t
pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	if (++pwritev_calls == crash_at && crash_at != 0)
		_exit(0);
	/* The kernel's own pwritev, through the system call. */
	return syscall(SYS_pwritev, fd, iov, n, (long)off,
	    (long)((uint64_t)off >> 32));
}

static const char *
path(const char *name)
{
	static char p[4][512];
	static unsigned int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
	return p[k];
}

#define SH(...) do {							\
	if (qimg_run(NULL, 0, __VA_ARGS__) != 0)			\
		tap_bail("command failed");				\
} while (0)

/* Bytes of a "disk" with texture: runs of zeroes, text, noise. */
static uint8_t
pattern(uint64_t seed, uint64_t i)
{
	uint64_t block = i / 4096;

	switch ((block * 7 + seed) % 5) {
	case 0:
		return 0;
	case 1:
		return (uint8_t)("qcow2 reference text "[i % 21]);
	default:
		return (uint8_t)((i * 2654435761ULL + seed * 977 + block) >> 7);
	}
}

static void
make_raw(const char *name, uint64_t size, uint64_t seed)
{
	uint8_t *buf = malloc(size);
	int fd = open(path(name), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644);

	if (buf == NULL || fd < 0)
		tap_bail("make_raw %s", name);
	for (uint64_t i = 0; i < size; i++)
		buf[i] = pattern(seed, i);
	if (pwrite(fd, buf, size, 0) != (ssize_t)size)
		tap_bail("write %s", name);
	close(fd);
	free(buf);
}

/*
 * Open a chain of images: names[0] is the top, each with its format
 * ('q' qcow2, 'r' raw).  0 or -errno; the fds are closed on failure.
 */
static int
open_chain(const char *const *names, const char *fmts, unsigned int n,
    bool readonly, struct blk_image **img)
{
	enum blk_image_format f[BLK_IMAGE_MAX_CHAIN];
	int fds[BLK_IMAGE_MAX_CHAIN], ret;

	for (unsigned int i = 0; i < n; i++) {
		fds[i] = open(path(names[i]), (i == 0 && !readonly ?
		    O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (fds[i] < 0)
			tap_bail("open %s", names[i]);
		f[i] = fmts[i] == 'q' ? BLK_IMAGE_QCOW2 : BLK_IMAGE_RAW;
	}
	ret = blk_image_open_chain(fds, f, n, readonly, img);
	if (ret < 0)
		for (unsigned int i = 0; i < n; i++)
			close(fds[i]);
	return ret;
}

static int
open1(const char *name, bool readonly, struct blk_image **img)
{
	const char *names[] = { name };

	return open_chain(names, "q", 1, readonly, img);
}

/* Read len bytes at off in oddly sized segments. */
static int
img_read(struct blk_image *img, uint64_t off, uint8_t *buf, size_t len)
{
	struct iovec iov[5];
	size_t cut[5] = { 512, 1536, 3072, 7168, 0 }, at = 0;
	unsigned int n = 0;

	for (; n < 4 && at + cut[n] < len; n++) {
		iov[n] = (struct iovec){ buf + at, cut[n] };
		at += cut[n];
	}
	iov[n++] = (struct iovec){ buf + at, len - at };
	return img->ops->read(img, iov, n, off);
}

static int
img_write(struct blk_image *img, uint64_t off, const uint8_t *buf,
    size_t len)
{
	struct iovec iov[3];
	unsigned int n = 0;
	size_t a = len / 3 & ~511ULL;

	if (a > 0)
		iov[n++] = (struct iovec){ (void *)buf, a };
	iov[n++] = (struct iovec){ (void *)(buf + a), len - a };
	return img->ops->write(img, iov, n, off);
}

/* The whole image read by vmmd equals the file raw (a raw image). */
static bool
same_as_raw(struct blk_image *img, const char *raw, const char *what)
{
	size_t chunk = 3 * MiB + 4096;
	uint8_t *a = malloc(chunk), *b = malloc(chunk);
	int fd = open(path(raw), O_RDONLY | O_CLOEXEC);
	bool same = fd >= 0 && a != NULL && b != NULL;
	uint64_t off;

	for (off = 0; same && off < img->size; off += chunk) {
		size_t len = img->size - off < chunk ? img->size - off : chunk;
		int ret = img_read(img, off, a, len);

		if (ret != 0 || pread(fd, b, len, (off_t)off) != (ssize_t)len) {
			tap_diag("%s: read at %llu: %d", what,
			    (unsigned long long)off, ret);
			same = false;
			break;
		}
		for (size_t i = 0; i < len; i++) {
			if (a[i] != b[i]) {
				tap_diag("%s: byte %llu is %#x, not %#x", what,
				    (unsigned long long)(off + i), a[i], b[i]);
				same = false;
				break;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	return same;
}

/* qemu-img check's verdict: 0 clean, 3 leaks only, 2 corruption. */
static int
check_quiet(const char *name, bool leaks_ok)
{
	char out[4096];
	int st = qimg_run(out, sizeof(out), "qemu-img check -f qcow2 '%s'",
	    path(name));

	if (st != 0 && !(leaks_ok && st == 3))
		tap_diag("qemu-img check %s: %d\n%s", name, st, out);
	return st;
}

static int
check(const char *name)
{
	return check_quiet(name, false);
}

static bool
compare(const char *raw, const char *img)
{
	char out[4096];
	int st = qimg_run(out, sizeof(out), "qemu-img compare -f raw "
	    "-F qcow2 '%s' '%s'", path(raw), path(img));

	if (st != 0)
		tap_diag("qemu-img compare: %d\n%s", st, out);
	return st == 0;
}

/* Reads of images qemu-img made, against its conversion to raw. */
static void
test_reads(void)
{
	static const struct {
		const char *opts;
		const char *what;
	} conv[] = {
		{ "", "v3, 64 KiB clusters" },
		{ "-o compat=0.10", "v2" },
		{ "-o cluster_size=512", "512-byte clusters" },
		{ "-o cluster_size=4096,refcount_bits=1", "4 KiB, refcount_bits 1" },
		{ "-o cluster_size=2M,refcount_bits=64", "2 MiB, refcount_bits 64" },
		{ "-c", "zlib-compressed" },
		{ "-c -o cluster_size=4096", "zlib-compressed, 4 KiB clusters" },
		{ "-c -o compression_type=zstd", "zstd-compressed" },
		{ "-c -o compression_type=zstd,cluster_size=2M", "zstd, 2 MiB" },
		{ "-c -o compat=0.10,cluster_size=512", "v2 compressed, 512 B" },
	};
	struct blk_image *img;

	make_raw("src.raw", 5 * MiB + 3 * 4096, 1);
	for (size_t i = 0; i < sizeof(conv) / sizeof(conv[0]); i++) {
		SH("qemu-img convert -f raw -O qcow2 %s '%s' '%s' && "
		    "qemu-img convert -f qcow2 -O raw '%s' '%s'", conv[i].opts,
		    path("src.raw"), path("r.qcow2"), path("r.qcow2"),
		    path("back.raw"));
		if (open1("r.qcow2", true, &img) != 0) {
			tap_ok(0, "%s: opens", conv[i].what);
			continue;
		}
		tap_ok(img->size == 5 * MiB + 3 * 4096 &&
		    same_as_raw(img, "back.raw", conv[i].what) &&
		    same_as_raw(img, "src.raw", conv[i].what),
		    "%s: reads as qemu-img converts it", conv[i].what);
		blk_image_free(img);
	}
}

/* Overlays: data in several layers, a shorter backing image. */
static void
test_overlays(void)
{
	const char *chain3[] = { "top.qcow2", "mid.qcow2", "base.raw" };
	const char *two[] = { "over.qcow2", "base.qcow2" };
	struct blk_image *img;

	make_raw("base.raw", 3 * MiB, 2);
	SH("qemu-img convert -f raw -O qcow2 -c '%s' '%s'", path("base.raw"),
	    path("base.qcow2"));
	SH("qemu-img create -f qcow2 -b base.qcow2 -F qcow2 '%s' 6M",
	    path("over.qcow2"));
	SH("qemu-io -f qcow2 -c 'write -P 0x5a 1M 100k' -c 'write -P 0xa5 "
	    "4M 64k' -c 'write -z 2M 128k' '%s'", path("over.qcow2"));
	SH("qemu-img convert -O raw '%s' '%s'", path("over.qcow2"),
	    path("over.raw"));
	TAP_EQ(open_chain(two, "qq", 2, true, &img), 0,
	    "overlay over compressed qcow2: opens");
	tap_ok(img->size == 6 * MiB && same_as_raw(img, "over.raw",
	    "overlay"), "overlay: reads as qemu-img converts it, zeroes "
	    "past the shorter backing image");
	blk_image_free(img);

	SH("qemu-img create -f qcow2 -b base.raw -F raw '%s' 4M",
	    path("mid.qcow2"));
	SH("qemu-io -f qcow2 -c 'write -P 0x11 100k 300k' '%s'",
	    path("mid.qcow2"));
	SH("qemu-img create -f qcow2 -o cluster_size=4096 -b mid.qcow2 "
	    "-F qcow2 '%s'", path("top.qcow2"));
	SH("qemu-io -f qcow2 -c 'write -P 0x22 200k 10k' -c 'write -P 0x33 "
	    "3580k 100k' '%s'", path("top.qcow2"));
	SH("qemu-img convert -O raw '%s' '%s'", path("top.qcow2"),
	    path("top.raw"));
	TAP_EQ(open_chain(chain3, "qqr", 3, true, &img), 0,
	    "a chain of three: opens");
	tap_ok(same_as_raw(img, "top.raw", "chain of three"),
	    "a chain of three: reads as qemu-img converts it");
	{
		struct blk_image_stats st;

		img->ops->stats(img, &st);
		tap_ok(strcmp(st.format, "qcow2") == 0 && st.chain == 2 &&
		    st.cache_misses > 0 && st.cache_hits > 0 && !st.broken,
		    "stats: %s, chain %u, %llu hits, %llu misses", st.format,
		    st.chain, (unsigned long long)st.cache_hits,
		    (unsigned long long)st.cache_misses);
	}
	blk_image_free(img);

	/* The chain must be what the headers say. */
	TAP_EQ(open_chain(two, "q", 1, true, &img), -EINVAL,
	    "an overlay without its backing image: -EINVAL");
	TAP_EQ(open_chain(two, "qr", 2, true, &img), -EINVAL,
	    "a backing image in another format than the header's: -EINVAL");
	{
		const char *extra[] = { "base.qcow2", "base.raw" };

		TAP_EQ(open_chain(extra, "qr", 2, true, &img), -EINVAL,
		    "a backing image for an image without one: -EINVAL");
	}
}

/* A write, zeroing or discard, applied to the image and to a raw mirror. */
enum op_kind { OP_WRITE, OP_ZERO, OP_ZERO_KEEP, OP_DISCARD, OP_FLUSH };

struct op {
	enum op_kind kind;
	uint64_t off, len;
};

/*
 * Run ops on img and mirror the result into the raw file mirror.
 * Discards free whole clusters (cs bytes), which read as zeroes
 * afterwards, except in version 2 images over a backing image (nothing
 * changes); the partial clusters at their ends keep their data.
 */
static int
apply(struct blk_image *img, const char *mirror, const struct op *ops,
    size_t nops, bool discard_keeps, uint64_t cs)
{
	int fd = mirror != NULL ? open(path(mirror), O_WRONLY | O_CLOEXEC) :
	    -1;
	int ret = 0;

	for (size_t i = 0; i < nops && ret == 0; i++) {
		const struct op *o = &ops[i];
		uint8_t *buf = calloc(1, o->len + 1);

		if (buf == NULL)
			tap_bail("calloc");
		switch (o->kind) {
		case OP_WRITE:
			for (uint64_t k = 0; k < o->len; k++)
				buf[k] = pattern(100 + i, o->off + k) ^
				    (uint8_t)(i + 1);
			ret = img_write(img, o->off, buf, o->len);
			break;
		case OP_ZERO:
		case OP_ZERO_KEEP:
			ret = img->ops->write_zeroes(img, o->off, o->len,
			    o->kind == OP_ZERO);
			break;
		case OP_DISCARD:
			ret = img->ops->discard(img, o->off, o->len);
			break;
		case OP_FLUSH:
			ret = img->ops->flush(img);
			break;
		}
		if (ret != 0)
			tap_diag("op %zu (%d at %llu, %llu): %d", i, o->kind,
			    (unsigned long long)o->off,
			    (unsigned long long)o->len, ret);
		if (o->kind == OP_DISCARD) {
			/* Whole clusters only: the rest keeps its data. */
			uint64_t a = (o->off + cs - 1) & ~(cs - 1);
			uint64_t b = (o->off + o->len) & ~(cs - 1);

			if (fd >= 0 && !discard_keeps && a < b &&
			    pwrite(fd, buf, b - a, (off_t)a) != (ssize_t)(b - a))
				tap_bail("mirror");
		} else if (fd >= 0 && o->kind != OP_FLUSH &&
		    pwrite(fd, buf, o->len, (off_t)o->off) != (ssize_t)o->len)
			tap_bail("mirror");
		free(buf);
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * The write workload: new clusters, rewrites, partial clusters,
 * unaligned bytes, zeroes and discards, on an 8 MiB disk.
 */
static const struct op workload[] = {
	{ OP_WRITE, 0, 4096 },
	{ OP_WRITE, 1 * MiB + 512, 200 * 1024 },	/* partial ends */
	{ OP_WRITE, 1 * MiB + 4096, 8192 },		/* rewrite */
	{ OP_WRITE, 2 * MiB - 1000, 3000 },		/* unaligned */
	{ OP_WRITE, 3 * MiB, 2 * MiB },			/* many clusters */
	{ OP_FLUSH, 0, 0 },
	{ OP_WRITE, 3 * MiB + 100, 777 },		/* rewrite, bytes */
	{ OP_ZERO, 3 * MiB + 64 * 1024, 128 * 1024 },
	{ OP_ZERO_KEEP, 3 * MiB + 256 * 1024, 64 * 1024 },
	{ OP_ZERO, 3 * MiB + 512 * 1024 + 300, 70000 },	/* partial */
	{ OP_DISCARD, 4 * MiB, 192 * 1024 },
	{ OP_WRITE, 4 * MiB + 64 * 1024, 1000 },	/* after discard */
	{ OP_WRITE, 3 * MiB + 256 * 1024 + 512, 512 },	/* into a zero */
	{ OP_ZERO, 6 * MiB, 64 * 1024 },		/* unallocated */
	{ OP_DISCARD, 7 * MiB, 64 * 1024 },
	{ OP_WRITE, 8 * MiB - 4096, 4096 },		/* the last bytes */
	{ OP_WRITE, 5 * MiB + 65536 * 3 - 10, 20 },	/* over a seam */
	{ OP_FLUSH, 0, 0 },
};
#define NWORK	(sizeof(workload) / sizeof(workload[0]))

/*
 * img (made by the shell command make, over the chain names/fmts) takes
 * the workload; qemu-img check and compare judge the result.
 */
static void
write_case(const char *what, const char *make, const char *const *names,
    const char *fmts, unsigned int n, bool discard_keeps)
{
	struct blk_image *img;
	int ret;

	SH("%s", make);
	SH("qemu-img convert -O raw '%s' '%s'", path(names[0]),
	    path("mirror.raw"));
	if ((ret = open_chain(names, fmts, n, false, &img)) != 0) {
		tap_ok(0, "%s: opens read-write (%d)", what, ret);
		return;
	}
	{
		struct qcow2_header h;
		int fd = open(path(names[0]), O_RDONLY | O_CLOEXEC);

		if (fd < 0 || qcow2_header_read(fd, &h) != 0)
			tap_bail("header of %s", names[0]);
		close(fd);
		ret = apply(img, "mirror.raw", workload, NWORK, discard_keeps,
		    qcow2_cluster_size(&h));
	}
	TAP_EQ(ret, 0, "%s: the workload runs", what);
	tap_ok(same_as_raw(img, "mirror.raw", what), "%s: vmmd reads back "
	    "what it wrote", what);
	blk_image_free(img);
	TAP_EQ(check(names[0]), 0, "%s: qemu-img check is clean", what);
	tap_ok(compare("mirror.raw", names[0]), "%s: qemu-img compare: "
	    "identical to the raw mirror", what);
}

static void
test_writes(void)
{
	const char *one[] = { "w.qcow2" };
	const char *over[] = { "w.qcow2", "wb.qcow2" };
	const char *over_raw[] = { "w.qcow2", "wb.raw" };
	char cmd[2048];

	make_raw("wsrc.raw", 8 * MiB, 3);
#define CASE(what, fmts, n, keeps, names, ...) do {			\
	snprintf(cmd, sizeof(cmd), __VA_ARGS__);			\
	write_case(what, cmd, names, fmts, n, keeps);			\
} while (0)
	CASE("fresh v3", "q", 1, false, one,
	    "cd '%s' && rm -f w.qcow2 && qemu-img create -q -f qcow2 "
	    "w.qcow2 8M", dir);
	CASE("fresh v2", "q", 1, false, one,
	    "cd '%s' && rm -f w.qcow2 && qemu-img create -q -f qcow2 "
	    "-o compat=0.10 w.qcow2 8M", dir);
	CASE("full v3 image, 4 KiB clusters, refcount_bits 8", "q", 1,
	    false, one, "cd '%s' && rm -f w.qcow2 && qemu-img convert -O "
	    "qcow2 -o cluster_size=4096,refcount_bits=8 wsrc.raw w.qcow2",
	    dir);
	CASE("512-byte clusters, refcount_bits 16", "q", 1, false, one,
	    "cd '%s' && rm -f w.qcow2 && qemu-img create -q -f qcow2 -o "
	    "cluster_size=512 w.qcow2 8M", dir);
	CASE("refcount_bits 2, 2 MiB clusters", "q", 1, false, one,
	    "cd '%s' && rm -f w.qcow2 && qemu-img convert -O qcow2 -o "
	    "cluster_size=2M,refcount_bits=2 wsrc.raw w.qcow2", dir);
	CASE("zlib-compressed image", "q", 1, false, one,
	    "cd '%s' && rm -f w.qcow2 && qemu-img convert -c -O qcow2 "
	    "wsrc.raw w.qcow2", dir);
	CASE("zstd-compressed image, 4 KiB", "q", 1, false, one,
	    "cd '%s' && rm -f w.qcow2 && qemu-img convert -c -O qcow2 -o "
	    "compression_type=zstd,cluster_size=4096 wsrc.raw w.qcow2", dir);
	CASE("overlay over compressed qcow2", "qq", 2, false, over,
	    "cd '%s' && rm -f w.qcow2 wb.qcow2 && qemu-img convert -c -O "
	    "qcow2 wsrc.raw wb.qcow2 && qemu-img create -q -f qcow2 -b "
	    "wb.qcow2 -F qcow2 w.qcow2", dir);
	CASE("v2 overlay over raw", "qr", 2, true, over_raw,
	    "cd '%s' && rm -f w.qcow2 && cp wsrc.raw wb.raw && "
	    "qemu-img create -q -f qcow2 -o compat=0.10,cluster_size=4096 "
	    "-b wb.raw -F raw w.qcow2", dir);
	CASE("v3 overlay over a shorter raw image", "qr", 2, false, over_raw,
	    "cd '%s' && rm -f w.qcow2 && head -c 5M wsrc.raw > wb.raw && "
	    "qemu-img create -q -f qcow2 -b wb.raw -F raw w.qcow2 8M", dir);
#undef CASE
}

/* The refcount table outgrows its cluster: moved, still consistent. */
static void
test_growth(void)
{
	static uint8_t buf[64 * 1024];
	struct qcow2_header h0, h1;
	struct blk_image *img;
	int fd, ret = 0;

	SH("cd '%s' && rm -f g.qcow2 && qemu-img create -q -f qcow2 -o "
	    "cluster_size=512,refcount_bits=64 g.qcow2 12M && "
	    "qemu-img create -q -f raw mirror.raw 12M", dir);
	fd = open(path("g.qcow2"), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || qcow2_header_read(fd, &h0) != 0)
		tap_bail("g.qcow2");
	close(fd);
	TAP_EQ(open1("g.qcow2", false, &img), 0, "512-byte clusters, "
	    "refcount_bits 64: opens");
	fd = open(path("mirror.raw"), O_WRONLY | O_CLOEXEC);
	for (uint64_t off = 0; off < 12 * MiB && ret == 0;
	    off += sizeof(buf)) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(9, off + i);
		ret = img_write(img, off, buf, sizeof(buf));
		if (pwrite(fd, buf, sizeof(buf), (off_t)off) != sizeof(buf))
			tap_bail("mirror");
	}
	close(fd);
	TAP_EQ(ret, 0, "12 MiB written in 64 KiB requests");
	blk_image_free(img);
	fd = open(path("g.qcow2"), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || qcow2_header_read(fd, &h1) != 0)
		tap_bail("g.qcow2");
	close(fd);
	tap_ok(h1.refcount_table_clusters > h0.refcount_table_clusters &&
	    h1.refcount_table_offset != h0.refcount_table_offset,
	    "the refcount table grew from %u to %u clusters and moved",
	    h0.refcount_table_clusters, h1.refcount_table_clusters);
	TAP_EQ(check("g.qcow2"), 0, "grown image: qemu-img check is clean");
	tap_ok(compare("mirror.raw", "g.qcow2"), "grown image: identical "
	    "to the raw mirror");
}

/*
 * The system calls of a rewrite: one pwritev per request over clusters
 * contiguous in the file, no metadata read once the tables are cached.
 */
static void
test_economy(void)
{
	static uint8_t buf[64 * 1024];
	struct blk_image *img;
	int ret = 0;

	SH("cd '%s' && rm -f e.qcow2 && qemu-img convert -O qcow2 wsrc.raw "
	    "e.qcow2", dir);
	TAP_EQ(open1("e.qcow2", false, &img), 0, "an allocated image");
	memset(buf, 0x77, sizeof(buf));
	/* A first pass loads the L2 table. */
	ret = img_write(img, 0, buf, sizeof(buf));
	pwritev_calls = preadv_calls = 0;
	for (uint64_t off = 0; off < 8 * MiB && ret == 0; off += sizeof(buf))
		ret = img_write(img, off, buf, sizeof(buf));
	tap_ok(ret == 0 && pwritev_calls == 128 && preadv_calls == 0,
	    "8 MiB rewritten in 128 requests: %lu pwritev, %lu preadv",
	    pwritev_calls, preadv_calls);
	{
		uint8_t *big = malloc(MiB);
		struct iovec one = { big, MiB };

		pwritev_calls = preadv_calls = 0;
		ret = big == NULL ? -ENOMEM : img->ops->read(img, &one, 1,
		    2 * MiB);
		tap_ok(ret == 0 && preadv_calls == 1, "a 1 MiB read over "
		    "contiguous clusters: %lu preadv", preadv_calls);
		free(big);
	}
	blk_image_free(img);
}

/* Images the header parser refuses, refused by the layer too. */
static void
test_refusals(void)
{
	struct blk_image *img;
	uint8_t bit[8] = { 0, 0, 0, 0, 0, 0, 0, 0x20 };
	int fd;

	SH("cd '%s' && qemu-img create -q -f qcow2 s.qcow2 1M && "
	    "qemu-img snapshot -c s1 s.qcow2", dir);
	TAP_EQ(open1("s.qcow2", true, &img), -EINVAL,
	    "an image with an internal snapshot: -EINVAL");
	if (qimg_make_luks(dir, "e.qcow2") != 0)
		tap_bail("e.qcow2");
	TAP_EQ(open1("e.qcow2", true, &img), -EINVAL,
	    "an encrypted image: -EINVAL");
	SH("cd '%s' && qemu-img create -q -f qcow2 b.qcow2 1M", dir);
	fd = open(path("b.qcow2"), O_RDWR | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, bit, 8, 72) != 8)
		tap_bail("b.qcow2");
	close(fd);
	TAP_EQ(open1("b.qcow2", false, &img), -EINVAL,
	    "an unknown incompatible feature bit: -EINVAL");
}

/* Autoclear bits are cleared on a read-write open, kept read-only. */
static void
test_autoclear(void)
{
	struct qcow2_header h;
	struct blk_image *img;
	int fd;

	SH("cd '%s' && qemu-img create -q -f qcow2 a.qcow2 1M && "
	    "qemu-img bitmap --add a.qcow2 b0", dir);
	TAP_EQ(open1("a.qcow2", true, &img), 0, "an image with a bitmap");
	blk_image_free(img);
	fd = open(path("a.qcow2"), O_RDONLY | O_CLOEXEC);
	tap_ok(fd >= 0 && qcow2_header_read(fd, &h) == 0 &&
	    (h.autoclear & QCOW2_AUTOCLEAR_BITMAPS) != 0,
	    "read-only: the bitmaps bit stays");
	close(fd);
	TAP_EQ(open1("a.qcow2", false, &img), 0, "opens read-write");
	blk_image_free(img);
	fd = open(path("a.qcow2"), O_RDONLY | O_CLOEXEC);
	tap_ok(fd >= 0 && qcow2_header_read(fd, &h) == 0 && h.autoclear == 0,
	    "read-write: autoclear bits cleared");
	close(fd);
	/* The bitmap, no longer trusted, leaves its clusters leaked. */
	{
		int st = check_quiet("a.qcow2", true);

		tap_ok(st == 0 || st == 3, "qemu-img check finds no "
		    "corruption (%d)", st);
	}
}

/* Overwrite 8 bytes of name at off with v, big-endian. */
static void
poke64(const char *name, uint64_t off, uint64_t v)
{
	uint8_t b[8];
	int fd = open(path(name), O_RDWR | O_CLOEXEC);

	qcow2_put_be64(b, v);
	if (fd < 0 || pwrite(fd, b, 8, (off_t)off) != 8)
		tap_bail("poke %s", name);
	close(fd);
}

static uint64_t
peek64(const char *name, uint64_t off)
{
	uint8_t b[8];
	int fd = open(path(name), O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, b, 8, (off_t)off) != 8)
		tap_bail("peek %s", name);
	close(fd);
	return qcow2_be64(b);
}

/* Damage met at run time: -EIO, the image broken, no crash. */
static void
test_damage(void)
{
	static uint8_t buf[65536];
	struct blk_image_stats st;
	struct qcow2_header h;
	struct blk_image *img;
	uint64_t l2, e;
	int fd;

	/* An L1 entry pointing at an unaligned L2 table. */
	SH("cd '%s' && rm -f d.qcow2 && qemu-img convert -O qcow2 "
	    "wsrc.raw d.qcow2", dir);
	fd = open(path("d.qcow2"), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || qcow2_header_read(fd, &h) != 0)
		tap_bail("d.qcow2");
	close(fd);
	poke64("d.qcow2", h.l1_offset, peek64("d.qcow2", h.l1_offset) | 0x100);
	TAP_EQ(open1("d.qcow2", false, &img), 0, "damaged L1 entry: opens");
	TAP_EQ(img_read(img, 0, buf, 4096), -EIO, "a read through it: -EIO");
	img->ops->stats(img, &st);
	tap_ok(st.broken, "the image is marked broken");
	TAP_EQ(img_write(img, 4 * MiB, buf, 4096), -EIO,
	    "later writes elsewhere: -EIO");
	blk_image_free(img);

	/* An L1 entry pointing past the end of the file. */
	poke64("d.qcow2", h.l1_offset, (peek64("d.qcow2", h.l1_offset) &
	    ~0x100ULL) + (1ULL << 40));
	TAP_EQ(open1("d.qcow2", false, &img), 0, "an L2 table past the end: "
	    "opens");
	img->ops->stats(img, &st);
	tap_ok(st.broken, "broken from the start");
	TAP_EQ(img_read(img, 0, buf, 4096), -EIO, "a read through it: -EIO");
	TAP_EQ(img_write(img, 4 * MiB, buf, 4096), -EIO, "writes: -EIO");
	blk_image_free(img);

	/* An L2 entry pointing past any sane offset (reserved bits). */
	poke64("d.qcow2", h.l1_offset, peek64("d.qcow2", h.l1_offset) -
	    (1ULL << 40));
	l2 = peek64("d.qcow2", h.l1_offset) & 0x00fffffffffffe00ULL;
	e = peek64("d.qcow2", l2);
	poke64("d.qcow2", l2, e | (1ULL << 60));
	TAP_EQ(open1("d.qcow2", false, &img), 0, "damaged L2 entry: opens");
	TAP_EQ(img_read(img, 0, buf, 512), -EIO, "reading it: -EIO");
	TAP_EQ(img_read(img, 65536, buf, 512), 0, "the next cluster reads");
	blk_image_free(img);
	poke64("d.qcow2", l2, e);

	/* A used cluster whose refcount was zeroed: its discard fails. */
	{
		uint64_t rb = peek64("d.qcow2", h.refcount_table_offset);
		uint64_t data = e & 0x00fffffffffffe00ULL;
		int rfd = open(path("d.qcow2"), O_RDWR | O_CLOEXEC);
		uint8_t z[2] = { 0, 0 };

		if (rfd < 0 || pwrite(rfd, z, 2, (off_t)(rb + (data >> 16) *
		    2)) != 2)
			tap_bail("refcount");
		close(rfd);
		TAP_EQ(open1("d.qcow2", false, &img), 0, "refcount 0 under "
		    "a used cluster: opens");
		TAP_EQ(img->ops->discard(img, 0, 65536), -EIO,
		    "its discard: -EIO");
		TAP_EQ(img_write(img, 0, buf, 512), -EIO,
		    "then writes: -EIO");
		blk_image_free(img);
	}

	/* A compressed cluster of garbage. */
	SH("cd '%s' && rm -f c.qcow2 && qemu-img convert -c -O qcow2 "
	    "wsrc.raw c.qcow2", dir);
	fd = open(path("c.qcow2"), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || qcow2_header_read(fd, &h) != 0)
		tap_bail("c.qcow2");
	close(fd);
	l2 = peek64("c.qcow2", h.l1_offset) & 0x00fffffffffffe00ULL;
	e = peek64("c.qcow2", l2 + 8 * 2);	/* a pattern cluster */
	tap_ok((e & (1ULL << 62)) != 0, "cluster 2 is compressed");
	{
		uint64_t host = e & ((1ULL << 54) - 1);
		int cfd = open(path("c.qcow2"), O_RDWR | O_CLOEXEC);

		memset(buf, 0xff, 64);
		if (cfd < 0 || pwrite(cfd, buf, 64, (off_t)host) != 64)
			tap_bail("garbage");
		close(cfd);
	}
	TAP_EQ(open1("c.qcow2", false, &img), 0, "garbage compressed: opens");
	TAP_EQ(img_read(img, 2 * 65536, buf, 4096), -EIO,
	    "its read: -EIO");
	TAP_EQ(img_write(img, 2 * 65536 + 512, buf, 512), -EIO,
	    "a partial write over it: -EIO");
	blk_image_free(img);
}

/* Four threads of blk-file over one image, allocating and rewriting. */
struct req {
	struct blk_io io;
	struct iovec iov;
	int result;
};

static void
req_done(struct blk_io *io, int result)
{
	((struct req *)io)->result = result;
}

static void
test_threads(void)
{
	enum { N = 256, LEN = 12 * 1024 };
	static struct req r[N];
	static uint8_t data[N][LEN];
	enum blk_image_format f = BLK_IMAGE_QCOW2;
	struct blk_backend be;
	struct blk_file *bf;
	int fd, mfd, bad = 0;

	SH("cd '%s' && rm -f t.qcow2 && qemu-img create -q -f qcow2 -o "
	    "cluster_size=4096 t.qcow2 16M && qemu-img create -q -f raw "
	    "mirror.raw 16M", dir);
	fd = open(path("t.qcow2"), O_RDWR | O_CLOEXEC);
	TAP_EQ(blk_file_new_chain(&bf, &fd, &f, 1, false, "q", &be), 0,
	    "a backend over a qcow2 chain");
	TAP_EQ(be.size, 16 * MiB, "its size is the virtual size");
	mfd = open(path("mirror.raw"), O_WRONLY | O_CLOEXEC);
	/* Rounds: fresh clusters, then rewrites, in parallel. */
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			uint64_t off = (uint64_t)((i * 37) % N) * LEN + 512 *
			    (uint64_t)round;

			for (int k = 0; k < LEN; k++)
				data[i][k] = (uint8_t)(i + k * 3 + round);
			r[i] = (struct req){ .io = { .op = BLK_WRITE,
			    .offset = off, .iov = &r[i].iov, .niov = 1,
			    .done = req_done }, .iov = { data[i], LEN },
			    .result = 1 };
			if (be.ops->submit(be.ctx, &r[i].io) != 0)
				tap_bail("submit");
		}
		be.ops->drain(be.ctx);
		for (int i = 0; i < N; i++) {
			bad += r[i].result != 0;
			if (pwrite(mfd, data[i], LEN, (off_t)r[i].io.offset) !=
			    LEN)
				tap_bail("mirror");
		}
	}
	close(mfd);
	TAP_EQ(bad, 0, "%d writes from four threads, twice", N);
	{
		struct blk_image_stats st;

		blk_file_stats(bf, &st);
		tap_diag("stats: %llu hits, %llu misses, %llu bytes",
		    (unsigned long long)st.cache_hits,
		    (unsigned long long)st.cache_misses,
		    (unsigned long long)st.allocated);
	}
	blk_file_free(bf);
	TAP_EQ(check("t.qcow2"), 0, "qemu-img check is clean");
	tap_ok(compare("mirror.raw", "t.qcow2"), "identical to the mirror");
}

/*
 * The crash workload: writes to disjoint regions on 512-byte clusters
 * with 64-bit refcounts (new L2 tables, refcount blocks, a refcount
 * table that grows), flushed every few; a partial write over a
 * compressed cluster too.  pipe: each index whose flush completed.
 */
#define CRASH_REGIONS	12
#define CRASH_LEN	(200 * 1024)
#define CRASH_STRIDE	(250 * 1024)

static void
crash_fill(uint8_t *buf, int i)
{
	for (int k = 0; k < CRASH_LEN; k++)
		buf[k] = (uint8_t)(i * 7 + k / 512 + 1);
}

static int
crash_workload(const char *name, int pipe_fd)
{
	static uint8_t buf[CRASH_LEN];
	struct blk_image *img;
	int ret;

	if ((ret = open1(name, false, &img)) != 0)
		return ret;
	for (int i = 0; i < CRASH_REGIONS; i++) {
		crash_fill(buf, i);
		if ((ret = img_write(img, (uint64_t)i * CRASH_STRIDE, buf,
		    CRASH_LEN)) != 0)
			break;
		if (i % 3 == 2) {
			if ((ret = img->ops->flush(img)) != 0)
				break;
			if (pipe_fd >= 0 && write(pipe_fd, &i, sizeof(i)) !=
			    sizeof(i))
				_exit(2);
		}
	}
	blk_image_free(img);
	return ret;
}

static void
test_crash(void)
{
	static uint8_t buf[CRASH_LEN], want[CRASH_LEN];
	unsigned long total, n;
	int bad_check = 0, bad_data = 0, runs = 0;

	SH("cd '%s' && rm -f k0.qcow2 && qemu-img create -q -f qcow2 -o "
	    "cluster_size=512,refcount_bits=64 k0.qcow2 3M", dir);
	SH("cp '%s' '%s'", path("k0.qcow2"), path("k.qcow2"));
	pwritev_calls = 0;
	TAP_EQ(crash_workload("k.qcow2", -1), 0, "the crash workload runs");
	total = pwritev_calls;
	TAP_EQ(check("k.qcow2"), 0, "and leaves a clean image (%lu writes)",
	    total);
	{
		struct qcow2_header h0, h1;
		int fd0 = open(path("k0.qcow2"), O_RDONLY | O_CLOEXEC);
		int fd1 = open(path("k.qcow2"), O_RDONLY | O_CLOEXEC);

		tap_ok(qcow2_header_read(fd0, &h0) == 0 &&
		    qcow2_header_read(fd1, &h1) == 0 &&
		    h1.refcount_table_offset != h0.refcount_table_offset,
		    "the workload moves the refcount table");
		close(fd0);
		close(fd1);
	}
	for (n = 1; n <= total; n++) {
		int p[2], st, last = -1, got;
		struct blk_image *img;
		pid_t pid;

		SH("cp '%s' '%s'", path("k0.qcow2"), path("k.qcow2"));
		if (pipe(p) < 0)
			tap_bail("pipe");
		fflush(stdout);
		if ((pid = fork()) == 0) {
			close(p[0]);
			pwritev_calls = 0;
			crash_at = n;
			crash_workload("k.qcow2", p[1]);
			_exit(1);	/* not killed: counted wrong */
		}
		close(p[1]);
		while (read(p[0], &got, sizeof(got)) == sizeof(got))
			last = got;
		close(p[0]);
		waitpid(pid, &st, 0);
		runs++;
		st = check_quiet("k.qcow2", true);
		if (st != 0 && st != 3) {
			tap_diag("killed at write %lu: check says %d", n, st);
			bad_check++;
			continue;
		}
		if (open1("k.qcow2", true, &img) != 0) {
			bad_check++;
			continue;
		}
		for (int i = 0; i <= last; i++) {
			crash_fill(want, i);
			if (img_read(img, (uint64_t)i * CRASH_STRIDE, buf,
			    CRASH_LEN) != 0 || memcmp(buf, want,
			    CRASH_LEN) != 0) {
				tap_diag("killed at write %lu: region %d "
				    "flushed but lost", n, i);
				bad_data++;
				break;
			}
		}
		blk_image_free(img);
	}
	tap_ok(bad_check == 0, "killed at each of %d writes: qemu-img check "
	    "finds no corruption", runs);
	tap_ok(bad_data == 0, "killed at each write: every flushed write "
	    "reads back");
}

/* Cluster host's 16-bit refcount in name (one refcount block). */
static unsigned int
refcount16(const char *name, const struct qcow2_header *h, uint64_t host)
{
	uint64_t rb = peek64(name, h->refcount_table_offset);
	uint8_t b[2];
	int fd = open(path(name), O_RDONLY | O_CLOEXEC);

	if (fd < 0 || pread(fd, b, 2, (off_t)(rb + (host >> 16) * 2)) != 2)
		tap_bail("refcount %s", name);
	close(fd);
	return (unsigned int)b[0] << 8 | b[1];
}

/* Whether name holds len bytes of byte v at off, read from the file. */
static bool
file_holds(const char *name, uint64_t off, size_t len, uint8_t v)
{
	uint8_t *b = malloc(len);
	int fd = open(path(name), O_RDONLY | O_CLOEXEC);
	bool same = b != NULL && fd >= 0 &&
	    pread(fd, b, len, (off_t)off) == (ssize_t)len;

	for (size_t i = 0; same && i < len; i++)
		same = b[i] == v;
	if (fd >= 0)
		close(fd);
	free(b);
	return same;
}

/*
 * A discarded cluster is freed only once a flush made the L2 entry
 * that dropped it stable: until then its data and refcount stay, and
 * it is not handed out again; after the flush it is punched out and
 * counted free, and qemu-img check finds the image clean either way
 * (a leak at worst before the flush, had the process died there).
 */
static void
test_deferred_free(void)
{
	static uint8_t buf[65536];
	struct qcow2_header h;
	struct blk_image *img;
	uint64_t l2, host, host2;
	int fd, st;

	SH("cd '%s' && rm -f f.qcow2 && qemu-img create -q -f qcow2 -o "
	    "cluster_size=65536 f.qcow2 4M", dir);
	if (open1("f.qcow2", false, &img) != 0)
		tap_bail("open f.qcow2");
	memset(buf, 0xab, sizeof(buf));
	TAP_EQ(img_write(img, 0, buf, sizeof(buf)) == 0 &&
	    img->ops->flush(img) == 0, 1, "a cluster written and flushed");
	fd = open(path("f.qcow2"), O_RDONLY | O_CLOEXEC);
	if (fd < 0 || qcow2_header_read(fd, &h) != 0)
		tap_bail("header f.qcow2");
	close(fd);
	l2 = peek64("f.qcow2", h.l1_offset) & 0x00fffffffffffe00ULL;
	host = peek64("f.qcow2", l2) & 0x00fffffffffffe00ULL;
	tap_ok(host != 0 && file_holds("f.qcow2", host, 65536, 0xab) &&
	    refcount16("f.qcow2", &h, host) == 1,
	    "it lies at %#llx, refcount 1", (unsigned long long)host);

	TAP_EQ(img->ops->discard(img, 0, 65536), 0, "discarded");
	tap_ok((peek64("f.qcow2", l2) & 0x00fffffffffffe00ULL) == 0,
	    "its L2 entry is written");
	tap_ok(file_holds("f.qcow2", host, 65536, 0xab),
	    "before a flush its data is still in the file");
	TAP_EQ(refcount16("f.qcow2", &h, host), 1,
	    "and its refcount still 1");
	memset(buf, 0xcd, sizeof(buf));
	TAP_EQ(img_write(img, MiB, buf, sizeof(buf)), 0, "another cluster "
	    "written");
	host2 = peek64("f.qcow2", l2 + (MiB >> 16) * 8) &
	    0x00fffffffffffe00ULL;
	tap_ok(host2 != 0 && host2 != host && file_holds("f.qcow2", host,
	    65536, 0xab), "at %#llx: the discarded one is not reused",
	    (unsigned long long)host2);
	st = check_quiet("f.qcow2", true);
	tap_ok(st == 0 || st == 3, "qemu-img check before the flush: no "
	    "corruption (a leak, had it died here): %d", st);

	TAP_EQ(img->ops->flush(img), 0, "flushed");
	tap_ok(file_holds("f.qcow2", host, 65536, 0),
	    "after the flush the cluster is punched out");
	TAP_EQ(refcount16("f.qcow2", &h, host), 0, "and counted free");
	TAP_EQ(check("f.qcow2"), 0, "qemu-img check: clean");
	memset(buf, 0, sizeof(buf));
	TAP_EQ(img_read(img, 0, buf, 512), 0, "the discarded range reads");
	tap_ok(buf[0] == 0 && buf[511] == 0, "as zeroes");

	/* Discarded and never flushed: the last close releases it. */
	TAP_EQ(img->ops->discard(img, MiB, 65536), 0, "the other discarded");
	blk_image_free(img);
	tap_ok(file_holds("f.qcow2", host2, 65536, 0) &&
	    refcount16("f.qcow2", &h, host2) == 0,
	    "and released when the image is closed");
	TAP_EQ(check("f.qcow2"), 0, "qemu-img check: clean, no leak");
}

int
main(void)
{
	if (!qimg_present())
		tap_skip_all("qemu-img is not installed");
	signal(SIGPIPE, SIG_IGN);
	dir = scratch_new("qcow2");
	test_reads();
	test_overlays();
	test_writes();
	test_growth();
	test_economy();
	test_refusals();
	test_autoclear();
	test_damage();
	test_threads();
	test_crash();
	test_deferred_free();
	return tap_done();
}
