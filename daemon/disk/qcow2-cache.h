/*
 * A bounded cache of qcow2 metadata tables (L2 tables, refcount
 * blocks), one cluster each, least recently used out first.  Tables are
 * kept as they are on disk (big-endian) and every change is written to
 * the file at once by the caller (write-through): an entry is never
 * dirty, so evicting one costs nothing and a killed process loses
 * nothing.
 *
 * Not thread-safe: the qcow2 image's lock covers it.  A table pointer
 * stays valid until the next qcow2_cache_get or qcow2_cache_fresh on
 * the same cache.
 */
#ifndef VMMD_QCOW2_CACHE_H
#define VMMD_QCOW2_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define QCOW2_CACHE_ENTRIES	32

struct qcow2_cache_entry {
	uint64_t off;		/* in the file; 0: empty */
	uint64_t used;		/* the cache's clock when last used */
	uint8_t *data;		/* one cluster */
};

struct qcow2_cache {
	struct qcow2_cache_entry e[QCOW2_CACHE_ENTRIES];
	size_t cluster_size;
	uint64_t clock;
	uint64_t hits, misses;
};

/* 0; buffers are allocated as entries are first used. */
int	qcow2_cache_init(struct qcow2_cache *c, size_t cluster_size);
void	qcow2_cache_fini(struct qcow2_cache *c);
/*
 * The table at off (non-zero, cluster-aligned) in *tab: from the cache,
 * or read with one pread.  0, -EIO when the file ends before the table
 * does, or -errno.
 */
int	qcow2_cache_get(struct qcow2_cache *c, int fd, uint64_t off,
	    uint8_t **tab);
/*
 * A cache entry for a table the caller is about to write at off, zeroed
 * and not read from the file; NULL when out of memory.
 */
uint8_t *qcow2_cache_fresh(struct qcow2_cache *c, uint64_t off);
/* Forget the table at off (its cluster was freed or its write failed). */
void	qcow2_cache_drop(struct qcow2_cache *c, uint64_t off);

#endif
