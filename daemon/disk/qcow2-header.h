/*
 * The qcow2 image header: read, validate, describe.
 *
 * The reference is QEMU's format specification, docs/interop/qcow2.txt
 * ("qcow2 image file format"), versions 2 and 3; section names below are
 * that document's.  This file only parses: the supervisor uses it to
 * decide whether an image can be given to a guest (and to find its
 * backing file), the worker to open it (blk-qcow2.c).
 *
 * Pure and stateless: pread() on the caller's fd and nothing else (the
 * descriptor's offset stays where it was), no logging, no globals; safe
 * from any thread.
 */
#ifndef VMMD_QCOW2_HEADER_H
#define VMMD_QCOW2_HEADER_H

#include <stdbool.h>
#include <stdint.h>

/* "Header": the magic, big-endian at offset 0. */
#define QCOW2_MAGIC		0x514649fbU

/* "Header", incompatible_features. */
#define QCOW2_INCOMPAT_DIRTY		(1ULL << 0)
#define QCOW2_INCOMPAT_CORRUPT		(1ULL << 1)
#define QCOW2_INCOMPAT_DATA_FILE	(1ULL << 2)
#define QCOW2_INCOMPAT_COMPRESSION	(1ULL << 3)
#define QCOW2_INCOMPAT_EXTL2		(1ULL << 4)
/* The only incompatible feature an image vmmd opens may have. */
#define QCOW2_INCOMPAT_SUPPORTED	QCOW2_INCOMPAT_COMPRESSION

/* "Header", autoclear_features: none is honoured (see the worker). */
#define QCOW2_AUTOCLEAR_BITMAPS		(1ULL << 0)
#define QCOW2_AUTOCLEAR_RAW_DATA	(1ULL << 1)

/* Byte offsets of fields a writer updates in place. */
#define QCOW2_OFF_L1_SIZE		36
#define QCOW2_OFF_L1_OFFSET		40
#define QCOW2_OFF_REFTABLE_OFFSET	48
#define QCOW2_OFF_REFTABLE_CLUSTERS	56
#define QCOW2_OFF_AUTOCLEAR		88

/* Bounds this implementation holds an image to (QEMU's own limits). */
#define QCOW2_MIN_CLUSTER_BITS		9
#define QCOW2_MAX_CLUSTER_BITS		21
#define QCOW2_MAX_BACKING_NAME		1023	/* the specification's */
#define QCOW2_MAX_FORMAT_NAME		31
#define QCOW2_MAX_L1_BYTES		(32U << 20)
#define QCOW2_MAX_REFTABLE_BYTES	(8U << 20)
/* Host offsets in L1/L2/refcount tables have bits 9-55. */
#define QCOW2_MAX_OFFSET		(1ULL << 56)
/* Virtual sizes beyond this are refused as absurd (64 PiB). */
#define QCOW2_MAX_SIZE			(1ULL << 56)

enum qcow2_compression {
	QCOW2_COMPRESSION_DEFLATE = 0,	/* "zlib" in the specification */
	QCOW2_COMPRESSION_ZSTD = 1,
};

/* Long enough for every reason this file gives. */
#define QCOW2_REASON_MAX	160

struct qcow2_header {
	uint32_t version;		/* 2 or 3 */
	uint64_t size;			/* virtual size, bytes */
	uint32_t cluster_bits;		/* 9 .. 21 */
	uint32_t refcount_order;	/* 0 .. 6; 4 for version 2 */
	uint32_t l1_size;		/* entries */
	uint64_t l1_offset;
	uint64_t refcount_table_offset;
	uint32_t refcount_table_clusters;
	uint64_t incompatible;		/* only QCOW2_INCOMPAT_SUPPORTED bits */
	uint64_t compatible;
	uint64_t autoclear;
	uint32_t header_length;		/* 72 for version 2 */
	enum qcow2_compression compression;
	/* End of the header extension area (its end marker included). */
	uint32_t extensions_end;
	bool has_backing;
	char backing_file[QCOW2_MAX_BACKING_NAME + 1];	/* NUL-terminated */
	/* The backing file format extension; "" when the image has none. */
	char backing_format[QCOW2_MAX_FORMAT_NAME + 1];
	/* Why the image was refused (-EINVAL); "" otherwise. */
	char reason[QCOW2_REASON_MAX];
};

/*
 * Read and validate the header and header extensions of the image open
 * as fd.  0 with *h filled in; -EINVAL with h->reason naming what is
 * wrong or unsupported (internal snapshots, encryption, an incompatible
 * feature, an inconsistent field) when the image is not one vmmd can
 * use; another -errno when it cannot be read.
 */
int	qcow2_header_read(int fd, struct qcow2_header *h);

/* Cluster size in bytes. */
static inline uint64_t
qcow2_cluster_size(const struct qcow2_header *h)
{
	return 1ULL << h->cluster_bits;
}

/* Big-endian field access, for the header and every table. */
static inline uint32_t
qcow2_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t
qcow2_be64(const uint8_t *p)
{
	return (uint64_t)qcow2_be32(p) << 32 | qcow2_be32(p + 4);
}

static inline void
qcow2_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
qcow2_put_be64(uint8_t *p, uint64_t v)
{
	qcow2_put_be32(p, (uint32_t)(v >> 32));
	qcow2_put_be32(p + 4, (uint32_t)v);
}

#endif
