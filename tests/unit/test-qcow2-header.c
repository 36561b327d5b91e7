/*
 * The qcow2 header parser (daemon/disk/qcow2-header.c) on images
 * qemu-img makes, versions 2 and 3 with their options, and on those
 * images with one field set by hand to what vmmd must refuse: each
 * refusal is -EINVAL with a reason that names the thing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qcow2-header.h"
#include "tap.h"
#include "scratch.h"
#include "qemu-img-util.h"

static const char *dir;		/* scratch.h's, for this test's images */

/* Parse the image at dir/name. */
static int
parse(const char *name, struct qcow2_header *h)
{
	char path[512];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	ret = qcow2_header_read(fd, h);
	close(fd);
	return ret;
}

/* Make dir/name with "qemu-img create -f qcow2 OPTS dir/name SIZE". */
static void
create(const char *name, const char *opts, const char *size)
{
	if (qimg_run(NULL, 0, "cd '%s' && qemu-img create -f qcow2 %s %s %s",
	    dir, opts, name, size) != 0)
		tap_bail("qemu-img create %s %s", opts, name);
}

/* Overwrite len bytes of dir/name at off. */
static void
poke(const char *name, uint64_t off, const void *buf, size_t len)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 ||
	    pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		tap_bail("poke %s", path);
	close(fd);
}

static void
poke32(const char *name, uint64_t off, uint32_t v)
{
	uint8_t b[4];

	qcow2_put_be32(b, v);
	poke(name, off, b, sizeof(b));
}

static void
poke64(const char *name, uint64_t off, uint64_t v)
{
	uint8_t b[8];

	qcow2_put_be64(b, v);
	poke(name, off, b, sizeof(b));
}

/* A fresh copy of the plain image, then one field changed by the caller. */
static void
fresh(const char *name)
{
	if (qimg_run(NULL, 0, "cp '%s/plain.qcow2' '%s/%s'", dir, dir,
	    name) != 0)
		tap_bail("cp");
}

/* name must be refused with -EINVAL and a reason containing what. */
static void
refused(const char *name, const char *what, const char *desc)
{
	struct qcow2_header h;
	int ret = parse(name, &h);

	tap_ok(ret == -EINVAL && strstr(h.reason, what) != NULL,
	    "%s: refused (%d) naming \"%s\": %s", desc, ret, what, h.reason);
}

static void
accepted(void)
{
	struct qcow2_header h;

	create("plain.qcow2", "", "10M");
	TAP_EQ(parse("plain.qcow2", &h), 0, "v3 image: accepted");
	tap_ok(h.version == 3 && h.size == 10 << 20 &&
	    h.cluster_bits == 16 && h.refcount_order == 4 &&
	    h.header_length == 112 && h.l1_size >= 1 &&
	    h.l1_offset % 65536 == 0 && h.refcount_table_offset != 0 &&
	    h.refcount_table_clusters >= 1 &&
	    h.compression == QCOW2_COMPRESSION_DEFLATE && !h.has_backing &&
	    h.reason[0] == '\0',
	    "v3: version %u, size %llu, cluster_bits %u, refcount_order %u, "
	    "header_length %u", h.version, (unsigned long long)h.size,
	    h.cluster_bits, h.refcount_order, h.header_length);

	create("v2.qcow2", "-o compat=0.10", "3G");
	TAP_EQ(parse("v2.qcow2", &h), 0, "v2 image: accepted");
	tap_ok(h.version == 2 && h.header_length == 72 &&
	    h.refcount_order == 4 && h.size == 3ULL << 30 &&
	    h.incompatible == 0, "v2: version %u, header_length %u",
	    h.version, h.header_length);

	create("c512.qcow2", "-o cluster_size=512,refcount_bits=1", "1M");
	TAP_EQ(parse("c512.qcow2", &h), 0, "512-byte clusters, refcount_bits 1");
	tap_ok(h.cluster_bits == 9 && h.refcount_order == 0 &&
	    h.l1_size >= 16, "cluster_bits %u, refcount_order %u, l1_size %u",
	    h.cluster_bits, h.refcount_order, h.l1_size);

	create("c2m.qcow2", "-o cluster_size=2M,refcount_bits=64", "1G");
	TAP_EQ(parse("c2m.qcow2", &h), 0, "2 MiB clusters, refcount_bits 64");
	tap_ok(h.cluster_bits == 21 && h.refcount_order == 6,
	    "cluster_bits %u, refcount_order %u", h.cluster_bits,
	    h.refcount_order);

	create("zstd.qcow2", "-o compression_type=zstd", "1M");
	TAP_EQ(parse("zstd.qcow2", &h), 0, "zstd image: accepted");
	tap_ok(h.compression == QCOW2_COMPRESSION_ZSTD &&
	    h.incompatible == QCOW2_INCOMPAT_COMPRESSION,
	    "zstd: compression type %d", h.compression);

	create("over.qcow2", "-b plain.qcow2 -F qcow2", "");
	TAP_EQ(parse("over.qcow2", &h), 0, "overlay: accepted");
	tap_ok(h.has_backing && strcmp(h.backing_file, "plain.qcow2") == 0 &&
	    strcmp(h.backing_format, "qcow2") == 0 && h.size == 10 << 20,
	    "overlay: backing \"%s\" format \"%s\"", h.backing_file,
	    h.backing_format);

	if (qimg_run(NULL, 0, "cd '%s' && qemu-img create -f raw base.raw 1M "
	    "&& qemu-img create -f qcow2 -b base.raw -F raw over-raw.qcow2",
	    dir) != 0)
		tap_bail("raw overlay");
	TAP_EQ(parse("over-raw.qcow2", &h), 0, "overlay of raw: accepted");
	tap_ok(strcmp(h.backing_file, "base.raw") == 0 &&
	    strcmp(h.backing_format, "raw") == 0 && h.size == 1 << 20,
	    "overlay of raw: backing \"%s\" format \"%s\"", h.backing_file,
	    h.backing_format);

	/*
	 * The backing format extension turned into one of an unknown type:
	 * ignored, as the specification says, and the image has no format.
	 */
	if (qimg_run(NULL, 0, "cp '%s/over.qcow2' '%s/nofmt.qcow2'", dir,
	    dir) != 0)
		tap_bail("cp");
	poke32("nofmt.qcow2", 112, 0x12345678);
	TAP_EQ(parse("nofmt.qcow2", &h), 0, "backing without a format");
	tap_ok(h.has_backing && h.backing_format[0] == '\0',
	    "no backing format: \"%s\"", h.backing_format);
}

static void
refusals(void)
{
	uint8_t zero[8] = { 0 };

	fresh("snap.qcow2");
	if (qimg_run(NULL, 0, "qemu-img snapshot -c s1 '%s/snap.qcow2'",
	    dir) != 0)
		tap_bail("snapshot");
	refused("snap.qcow2", "snapshot", "an internal snapshot");

	if (qimg_make_luks(dir, "luks.qcow2") != 0)
		tap_bail("luks");
	refused("luks.qcow2", "encryption (LUKS)", "LUKS encryption");
	/* The method cleared by hand: the FDE extension still says it. */
	poke32("luks.qcow2", 32, 0);
	refused("luks.qcow2", "full disk encryption", "FDE extension");
	fresh("aes.qcow2");
	poke32("aes.qcow2", 32, 1);
	refused("aes.qcow2", "encryption (AES)", "AES encryption");

	fresh("dirty.qcow2");
	poke64("dirty.qcow2", 72, QCOW2_INCOMPAT_DIRTY);
	refused("dirty.qcow2", "dirty bit", "the dirty bit");
	fresh("corrupt.qcow2");
	poke64("corrupt.qcow2", 72, QCOW2_INCOMPAT_CORRUPT);
	refused("corrupt.qcow2", "corrupt bit", "the corrupt bit");
	fresh("data.qcow2");
	poke64("data.qcow2", 72, QCOW2_INCOMPAT_DATA_FILE);
	refused("data.qcow2", "external data file", "an external data file");
	create("extl2.qcow2", "-o extended_l2=on", "1M");
	refused("extl2.qcow2", "extended L2", "extended L2 entries");
	fresh("bit5.qcow2");
	poke64("bit5.qcow2", 72, 1ULL << 5);
	refused("bit5.qcow2", "unknown incompatible feature bit 5",
	    "an unknown incompatible bit");
	fresh("bit63.qcow2");
	poke64("bit63.qcow2", 72, 1ULL << 63);
	refused("bit63.qcow2", "bit 63", "the top incompatible bit");
	fresh("zbit.qcow2");
	poke64("zbit.qcow2", 72, QCOW2_INCOMPAT_COMPRESSION);
	refused("zbit.qcow2", "compression type 0", "compression bit, zlib");
	fresh("ztype.qcow2");
	poke("ztype.qcow2", 104, "\x07", 1);
	refused("ztype.qcow2", "compression type 7", "a compression type "
	    "without its bit");

	fresh("cb8.qcow2");
	poke32("cb8.qcow2", 20, 8);
	refused("cb8.qcow2", "cluster_bits 8", "cluster_bits 8");
	fresh("cb22.qcow2");
	poke32("cb22.qcow2", 20, 22);
	refused("cb22.qcow2", "cluster_bits 22", "cluster_bits 22");
	fresh("huge.qcow2");
	poke64("huge.qcow2", 24, 1ULL << 62);
	refused("huge.qcow2", "virtual size", "an absurd size");
	fresh("l1short.qcow2");
	poke64("l1short.qcow2", 24, 1ULL << 40);
	refused("l1short.qcow2", "L1 table of", "an L1 table too small");
	fresh("l1off.qcow2");
	poke64("l1off.qcow2", 40, 12345);
	refused("l1off.qcow2", "L1 table offset", "an unaligned L1 table");
	fresh("rt.qcow2");
	poke32("rt.qcow2", 56, 0);
	refused("rt.qcow2", "refcount table of 0", "an empty refcount table");
	fresh("rto.qcow2");
	poke64("rto.qcow2", 48, 0);
	refused("rto.qcow2", "refcount table offset", "no refcount table");
	fresh("ro.qcow2");
	poke32("ro.qcow2", 96, 7);
	refused("ro.qcow2", "refcount_order 7", "refcount_order 7");
	fresh("hl.qcow2");
	poke32("hl.qcow2", 100, 100);
	refused("hl.qcow2", "header_length 100", "header_length 100");
	fresh("hl2.qcow2");
	poke32("hl2.qcow2", 100, 108);
	refused("hl2.qcow2", "header_length 108", "header_length not a "
	    "multiple of 8");
	fresh("hl3.qcow2");
	poke32("hl3.qcow2", 100, 1 << 17);
	refused("hl3.qcow2", "header_length", "header_length past the "
	    "cluster");
	fresh("ver.qcow2");
	poke32("ver.qcow2", 4, 4);
	refused("ver.qcow2", "version 4", "version 4");
	fresh("ver1.qcow2");
	poke32("ver1.qcow2", 4, 1);
	refused("ver1.qcow2", "version 1", "version 1 (qcow)");
	if (qimg_run(NULL, 0, "cd '%s' && qemu-img create -f raw raw.img 1M",
	    dir) != 0)
		tap_bail("raw");
	refused("raw.img", "no qcow2 header", "a raw image");

	/* Extensions: one running past the cluster, end marker missing. */
	fresh("ext.qcow2");
	poke32("ext.qcow2", 116, 1 << 20);
	refused("ext.qcow2", "runs past the first cluster", "an extension "
	    "too long");

	/* The backing name: too long, with a NUL, outside its place. */
	if (qimg_run(NULL, 0, "cd '%s' && cp over.qcow2 blong.qcow2 && "
	    "cp over.qcow2 bnul.qcow2 && cp over.qcow2 boff.qcow2 && "
	    "cp over.qcow2 bfmt.qcow2", dir) != 0)
		tap_bail("cp");
	poke32("blong.qcow2", 16, 1024);
	refused("blong.qcow2", "backing file name of 1024 bytes",
	    "a backing name of 1024 bytes");
	{
		struct qcow2_header h;
		uint64_t off;

		if (parse("bnul.qcow2", &h) != 0)
			tap_bail("over.qcow2");
		off = h.extensions_end;
		poke("bnul.qcow2", off + 3, zero, 1);
		refused("bnul.qcow2", "NUL", "a NUL in the backing name");
		poke64("boff.qcow2", 8, 64);
		refused("boff.qcow2", "backing file name at",
		    "a backing name over the header");
		/* The backing format's length: 0. */
		poke32("bfmt.qcow2", 116, 0);
		refused("bfmt.qcow2", "backing format name of 0 bytes",
		    "an empty backing format");
	}
}

int
main(void)
{
	if (!qimg_present())
		tap_skip_all("qemu-img is not installed");
	dir = scratch_new("qcow2-header");
	accepted();
	refusals();
	return tap_done();
}
