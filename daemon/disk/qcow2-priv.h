/*
 * What the qcow2 layer's files share (blk-qcow2.c: mapping, reads and
 * writes; qcow2-refcount.c: refcounts and cluster allocation;
 * qcow2-meta.c: metadata writes and damage, for both).  Not for
 * other users: see blk-qcow2.h.
 *
 * Locking: every field below lock is read and written under it, except
 * those marked constant (set at open).
 */
#ifndef VMMD_QCOW2_PRIV_H
#define VMMD_QCOW2_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "blk-image.h"
#include "qcow2-cache.h"
#include "qcow2-header.h"

/* "Cluster mapping": L1 and L2 entries. */
#define QCOW2_COPIED		(1ULL << 63)	/* refcount is exactly 1 */
#define QCOW2_COMPRESSED	(1ULL << 62)
#define QCOW2_ZERO		1ULL		/* v3: reads as zeroes */
#define QCOW2_OFFSET_MASK	0x00fffffffffffe00ULL	/* bits 9-55 */
#define QCOW2_L1_RESERVED	0x7f000000000001ffULL
#define QCOW2_L2_RESERVED	0x3f000000000001feULL
/* "Host cluster management": refcount table entries. */
#define QCOW2_RT_RESERVED	0x00000000000001ffULL

/* A free waiting for the sync that makes it safe (see qcow2_free()). */
struct qcow2_freed {
	uint64_t host, len;
};

/* Frees queued at most; one more syncs the file and releases them. */
#define QCOW2_FREED_MAX		1024

struct qcow2 {
	struct blk_image img;		/* first; constant */
	int fd;				/* constant */
	struct qcow2_header h;		/* constant but the refcount table's */
	unsigned int cluster_bits;	/* constant, and the next four */
	uint64_t cs;			/* cluster size */
	unsigned int l2_bits;		/* log2 of entries per L2 table */
	unsigned int rb_bits;		/* log2 of entries per refcount block */
	unsigned int refcount_bits;
	unsigned int csize_shift;	/* compressed descriptors, constant */
	uint64_t csize_mask, coffset_mask;
	uint8_t *zero;			/* one cluster of zeroes, constant */

	pthread_mutex_t lock;
	uint64_t *l1;			/* host order; h.l1_size entries */
	uint64_t *rt;			/* the refcount table, host order */
	uint64_t rt_entries;
	uint64_t rt_offset;
	uint32_t rt_clusters;
	uint64_t file_end;		/* where the next cluster goes */
	/* Highest end of any table found at open: allocations below it
	 * are checked against every table. */
	uint64_t meta_end;
	struct qcow2_cache l2c, rbc;
	/*
	 * Frees queued, oldest first, numbered from freed_base on (the
	 * number of frees released so far); those numbered below
	 * freed_sealed are a sync's under way, which it releases, and
	 * nothing is merged into them.
	 */
	struct qcow2_freed *freed;
	size_t nfreed, freed_cap;
	uint64_t freed_base, freed_sealed;
	bool broken;			/* atomic: read outside the lock too */
	const char *damage;		/* what broke it */
};

/* qcow2-meta.c.  Mark the image broken: what was found, for the stats.
 * -EIO. */
int	qcow2_damage(struct qcow2 *q, const char *what);
/* Write all of buf at off: 0 or -errno.  Metadata failing marks broken. */
int	qcow2_pwrite(struct qcow2 *q, const void *buf, size_t len,
	    uint64_t off);

/* qcow2-refcount.c.  Under the lock, all of them. */
int	qcow2_refcount_get(struct qcow2 *q, uint64_t host, uint64_t *rc);
/*
 * Allocate up to want contiguous clusters (at least one) at the end of
 * the file with refcount 1, written: *off and *got.
 */
int	qcow2_alloc(struct qcow2 *q, uint64_t want, uint64_t *off,
	    uint64_t *got);
/*
 * Drop one reference from every cluster [host, host + len) touches,
 * once the metadata write that stopped using them (already made, by
 * the caller) is on disk: queued until the next sync, which
 * qcow2_freed_mark() and qcow2_freed_release() bracket; the queue full,
 * this syncs the file itself.  Until then the clusters keep their data
 * and refcount, so a crash before that metadata is stable finds them
 * as they were (after it, a leak at worst: the refcount drop is written
 * after the sync).  Released, clusters left unused are punched out.  A
 * refcount already 0 (here, or at the release): damage.
 */
int	qcow2_free(struct qcow2 *q, uint64_t host, uint64_t len);
/*
 * Before a sync: the frees queued so far, which a sync starting now
 * makes safe, are sealed; the number to give qcow2_freed_release()
 * once it returned.  The lock may be let go in between.
 */
uint64_t qcow2_freed_mark(struct qcow2 *q);
/*
 * After a sync that began after qcow2_freed_mark() returned upto:
 * release the frees numbered below upto that are still queued.  0, or
 * the first error (damage); each is released or dropped either way.
 */
int	qcow2_freed_release(struct qcow2 *q, uint64_t upto);
/* Whether [off, off + len) would overlap the header or a table in use. */
bool	qcow2_overlaps(struct qcow2 *q, uint64_t off, uint64_t len,
	    bool all_tables);

#endif
