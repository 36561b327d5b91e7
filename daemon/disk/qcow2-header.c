/*
 * Parsing the qcow2 header (see qcow2-header.h).  Every check cites the
 * part of docs/interop/qcow2.txt it comes from: "Header", "Header
 * extensions", "Feature name table", "Full disk encryption header
 * pointer".  An image is refused rather than half understood: whatever
 * this file lets through, the worker's qcow2 layer can read and write
 * without corrupting it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qcow2-header.h"

/* "Header": version 3 fields up to compression_type, padded to 8. */
#define QCOW2_V2_LENGTH		72
#define QCOW2_V3_MIN_LENGTH	104
#define QCOW2_FIXED_READ	112

/* "Header extensions": the types this file knows. */
#define QCOW2_EXT_END		0x00000000U
#define QCOW2_EXT_BACKING_FMT	0xe2792acaU
#define QCOW2_EXT_FEATURES	0x6803f857U
#define QCOW2_EXT_BITMAPS	0x23852875U
#define QCOW2_EXT_CRYPTO	0x0537be77U
#define QCOW2_EXT_DATA_FILE	0x44415441U

/* "Feature name table": one entry. */
#define QCOW2_FEATURE_ENTRY	48
#define QCOW2_FEATURE_NAME	46

static int __attribute__((format(printf, 2, 3)))
qcow2_refuse(struct qcow2_header *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(h->reason, sizeof(h->reason), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* len bytes at off; what lies past the end of the file reads as zero. */
static int
qcow2_header_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(fd, (uint8_t *)buf + got, len - got,
		    (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	memset((uint8_t *)buf + got, 0, len - got);
	return (int)(got > (size_t)INT32_MAX ? INT32_MAX : got);
}

/* The name the feature name table gives a feature, or NULL. */
static const char *
qcow2_feature_name(const uint8_t *tab, uint32_t len, unsigned int type,
    unsigned int bit, char *out, size_t outlen)
{
	for (uint32_t i = 0; i + QCOW2_FEATURE_ENTRY <= len;
	    i += QCOW2_FEATURE_ENTRY) {
		const uint8_t *e = tab + i;
		size_t n;

		if (e[0] != type || e[1] != bit)
			continue;
		n = strnlen((const char *)e + 2, QCOW2_FEATURE_NAME);
		if (n == 0)
			return NULL;
		if (n >= outlen)
			n = outlen - 1;
		/* Printable only: the name ends up in a log line. */
		for (size_t k = 0; k < n; k++)
			out[k] = e[2 + k] >= 0x20 && e[2 + k] < 0x7f ?
			    (char)e[2 + k] : '?';
		out[n] = '\0';
		return out;
	}
	return NULL;
}

/* "Header", incompatible_features: each bit this file refuses, named. */
static int
qcow2_check_incompatible(struct qcow2_header *h, const uint8_t *features,
    uint32_t features_len)
{
	static const char *const known[] = {
		[0] = "the dirty bit (refcounts need repair: run qemu-img check -r all)",
		[1] = "the corrupt bit (run qemu-img check -r all)",
		[2] = "an external data file",
		[4] = "extended L2 entries (subclusters)",
	};
	uint64_t bad = h->incompatible & ~QCOW2_INCOMPAT_SUPPORTED;
	char name[QCOW2_FEATURE_NAME + 1];
	unsigned int bit;

	if (bad == 0)
		return 0;
	bit = (unsigned int)__builtin_ctzll(bad);
	if (bit < sizeof(known) / sizeof(known[0]) && known[bit] != NULL)
		return qcow2_refuse(h, "qcow2: unsupported incompatible "
		    "feature: %s", known[bit]);
	if (qcow2_feature_name(features, features_len, 0, bit, name,
	    sizeof(name)) != NULL)
		return qcow2_refuse(h, "qcow2: unknown incompatible feature "
		    "bit %u (\"%s\")", bit, name);
	return qcow2_refuse(h, "qcow2: unknown incompatible feature bit %u",
	    bit);
}

/* "Header": the fixed fields, before any extension is looked at. */
static int
qcow2_parse_fixed(struct qcow2_header *h, const uint8_t *p, int got)
{
	uint64_t cs, l2_entries, need, rt_bytes;
	uint32_t crypt, nb_snapshots;

	if (got < QCOW2_V2_LENGTH || qcow2_be32(p) != QCOW2_MAGIC)
		return qcow2_refuse(h, "qcow2: no qcow2 header");
	h->version = qcow2_be32(p + 4);
	if (h->version != 2 && h->version != 3)
		return qcow2_refuse(h, "qcow2: version %u (2 and 3 are "
		    "supported)", h->version);
	h->cluster_bits = qcow2_be32(p + 20);
	if (h->cluster_bits < QCOW2_MIN_CLUSTER_BITS ||
	    h->cluster_bits > QCOW2_MAX_CLUSTER_BITS)
		return qcow2_refuse(h, "qcow2: cluster_bits %u (9 to 21 are "
		    "supported)", h->cluster_bits);
	cs = 1ULL << h->cluster_bits;
	h->size = qcow2_be64(p + 24);
	crypt = qcow2_be32(p + 32);
	h->l1_size = qcow2_be32(p + 36);
	h->l1_offset = qcow2_be64(p + 40);
	h->refcount_table_offset = qcow2_be64(p + 48);
	h->refcount_table_clusters = qcow2_be32(p + 56);
	nb_snapshots = qcow2_be32(p + 60);

	if (crypt != 0)
		return qcow2_refuse(h, "qcow2: encryption (%s) is not "
		    "supported", crypt == 1 ? "AES" : crypt == 2 ? "LUKS" :
		    "an unknown method");
	if (nb_snapshots != 0)
		return qcow2_refuse(h, "qcow2: the image has %u internal "
		    "snapshot%s: not supported", nb_snapshots,
		    nb_snapshots == 1 ? "" : "s");

	if (h->version == 2) {
		h->header_length = QCOW2_V2_LENGTH;
		h->refcount_order = 4;
	} else {
		h->incompatible = qcow2_be64(p + 72);
		h->compatible = qcow2_be64(p + 80);
		h->autoclear = qcow2_be64(p + 88);
		h->refcount_order = qcow2_be32(p + 96);
		h->header_length = qcow2_be32(p + 100);
		if (h->header_length < QCOW2_V3_MIN_LENGTH ||
		    h->header_length % 8 != 0 || h->header_length > cs)
			return qcow2_refuse(h, "qcow2: header_length %u (at "
			    "least 104, a multiple of 8, within the first "
			    "cluster)", h->header_length);
		if (h->refcount_order > 6)
			return qcow2_refuse(h, "qcow2: refcount_order %u "
			    "(at most 6)", h->refcount_order);
	}

	/* "Additional fields": compression_type, bound to its bit. */
	h->compression = QCOW2_COMPRESSION_DEFLATE;
	if (h->header_length > 104) {
		uint8_t type = p[104];

		if ((h->incompatible & QCOW2_INCOMPAT_COMPRESSION) != 0 &&
		    type == QCOW2_COMPRESSION_ZSTD)
			h->compression = QCOW2_COMPRESSION_ZSTD;
		else if ((h->incompatible & QCOW2_INCOMPAT_COMPRESSION) != 0)
			return qcow2_refuse(h, "qcow2: compression type %u "
			    "(zlib and zstd are supported)", type);
		else if (type != 0)
			return qcow2_refuse(h, "qcow2: compression type %u "
			    "without the compression type feature bit", type);
	} else if ((h->incompatible & QCOW2_INCOMPAT_COMPRESSION) != 0) {
		return qcow2_refuse(h, "qcow2: the compression type feature "
		    "bit without a compression_type field");
	}

	/* Sizes: the tables must fit QEMU's limits and the offsets. */
	if (h->size > QCOW2_MAX_SIZE)
		return qcow2_refuse(h, "qcow2: virtual size %llu is absurd",
		    (unsigned long long)h->size);
	l2_entries = cs / 8;
	need = (h->size + cs * l2_entries - 1) / (cs * l2_entries);
	if (h->l1_size < need)
		return qcow2_refuse(h, "qcow2: L1 table of %u entries for a "
		    "disk that needs %llu", h->l1_size,
		    (unsigned long long)need);
	if ((uint64_t)h->l1_size * 8 > QCOW2_MAX_L1_BYTES)
		return qcow2_refuse(h, "qcow2: L1 table of %u entries is "
		    "absurd", h->l1_size);
	if (h->l1_size > 0 && (h->l1_offset == 0 ||
	    h->l1_offset % cs != 0 || h->l1_offset >= QCOW2_MAX_OFFSET))
		return qcow2_refuse(h, "qcow2: L1 table offset %#llx is not "
		    "a cluster in the file",
		    (unsigned long long)h->l1_offset);
	rt_bytes = (uint64_t)h->refcount_table_clusters << h->cluster_bits;
	if (h->refcount_table_clusters == 0 ||
	    rt_bytes > QCOW2_MAX_REFTABLE_BYTES)
		return qcow2_refuse(h, "qcow2: refcount table of %u "
		    "clusters", h->refcount_table_clusters);
	if (h->refcount_table_offset == 0 ||
	    h->refcount_table_offset % cs != 0 ||
	    h->refcount_table_offset >= QCOW2_MAX_OFFSET)
		return qcow2_refuse(h, "qcow2: refcount table offset %#llx "
		    "is not a cluster in the file",
		    (unsigned long long)h->refcount_table_offset);
	return 0;
}

/* "Header extensions", from header_length to the end marker. */
static int
qcow2_parse_extensions(struct qcow2_header *h, const uint8_t *c,
    uint64_t cs, const uint8_t **features, uint32_t *features_len)
{
	uint64_t off = h->header_length;
	uint32_t seen = 0;	/* one bit per known type */

	for (;;) {
		uint32_t type, len;
		unsigned int which;

		if (off + 8 > cs)
			return qcow2_refuse(h, "qcow2: header extensions run "
			    "past the first cluster");
		type = qcow2_be32(c + off);
		len = qcow2_be32(c + off + 4);
		if (type == QCOW2_EXT_END) {
			h->extensions_end = (uint32_t)(off + 8);
			return 0;
		}
		if (len > cs - off - 8)
			return qcow2_refuse(h, "qcow2: header extension %#x of "
			    "%u bytes runs past the first cluster", type,
			    len);
		switch (type) {
		case QCOW2_EXT_BACKING_FMT:
			which = 0;
			if (len == 0 || len > QCOW2_MAX_FORMAT_NAME ||
			    memchr(c + off + 8, '\0', len) != NULL)
				return qcow2_refuse(h, "qcow2: backing format "
				    "name of %u bytes", len);
			memcpy(h->backing_format, c + off + 8, len);
			h->backing_format[len] = '\0';
			break;
		case QCOW2_EXT_FEATURES:
			which = 1;
			*features = c + off + 8;
			*features_len = len;
			break;
		case QCOW2_EXT_CRYPTO:
			return qcow2_refuse(h, "qcow2: encryption (a full disk "
			    "encryption header) is not supported");
		case QCOW2_EXT_DATA_FILE:
			which = 2;
			break;
		case QCOW2_EXT_BITMAPS:
			which = 3;
			break;
		default:
			which = 32;	/* unknown: ignored */
			break;
		}
		if (which < 32) {
			if ((seen & 1U << which) != 0)
				return qcow2_refuse(h, "qcow2: header "
				    "extension %#x appears twice", type);
			seen |= 1U << which;
		}
		off += 8 + (((uint64_t)len + 7) & ~7ULL);
	}
}

/* "Header": backing_file_offset and backing_file_size. */
static int
qcow2_parse_backing(struct qcow2_header *h, const uint8_t *fixed, int fd,
    uint64_t cs)
{
	uint64_t off = qcow2_be64(fixed + 8);
	uint32_t len = qcow2_be32(fixed + 16);
	int ret;

	if (off == 0) {
		if (h->backing_format[0] != '\0')
			return qcow2_refuse(h, "qcow2: a backing format "
			    "without a backing file");
		return 0;
	}
	if (len == 0 || len > QCOW2_MAX_BACKING_NAME)
		return qcow2_refuse(h, "qcow2: backing file name of %u bytes "
		    "(1 to %u)", len, QCOW2_MAX_BACKING_NAME);
	if (off < h->extensions_end || off + len > cs)
		return qcow2_refuse(h, "qcow2: backing file name at %#llx "
		    "is not between the header extensions and the end of "
		    "the first cluster", (unsigned long long)off);
	if ((ret = qcow2_header_pread(fd, h->backing_file, len, off)) < 0)
		return ret;
	if ((uint32_t)ret < len)
		return qcow2_refuse(h, "qcow2: the backing file name is "
		    "cut short by the end of the file");
	if (memchr(h->backing_file, '\0', len) != NULL)
		return qcow2_refuse(h, "qcow2: the backing file name "
		    "contains a NUL byte");
	h->backing_file[len] = '\0';
	h->has_backing = true;
	return 0;
}

int
qcow2_header_read(int fd, struct qcow2_header *h)
{
	uint8_t fixed[QCOW2_FIXED_READ];
	const uint8_t *features = NULL;
	uint32_t features_len = 0;
	uint8_t *cluster;
	uint64_t cs;
	int got, ret;

	memset(h, 0, sizeof(*h));
	if ((got = qcow2_header_pread(fd, fixed, sizeof(fixed), 0)) < 0)
		return got;
	if ((ret = qcow2_parse_fixed(h, fixed, got)) < 0)
		return ret;
	/* The whole first cluster: extensions and backing name live there. */
	cs = qcow2_cluster_size(h);
	if ((cluster = malloc(cs)) == NULL)
		return -ENOMEM;
	if ((ret = qcow2_header_pread(fd, cluster, cs, 0)) < 0)
		goto out;
	if ((ret = qcow2_parse_extensions(h, cluster, cs, &features,
	    &features_len)) < 0)
		goto out;
	if ((ret = qcow2_check_incompatible(h, features, features_len)) < 0)
		goto out;
	ret = qcow2_parse_backing(h, fixed, fd, cs);
out:
	free(cluster);
	if (ret == 0)
		h->reason[0] = '\0';
	return ret;
}
