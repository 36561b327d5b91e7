/*
 * qcow2 refcounts and cluster allocation ("Host cluster management" in
 * docs/interop/qcow2.txt), for blk-qcow2.c.  Every function runs under
 * the image's lock and writes each change through before it returns.
 *
 * Allocation appends: clusters are taken at the end of the file, never
 * reused once freed.  That keeps data moved outside the lock safe (a
 * cluster a reader or a rewriter still addresses is never handed to
 * another guest offset) at the price of a file that grows while the
 * guest rewrites what it discarded; freed clusters are punched out, so
 * the disk space comes back.
 *
 * Frees wait for a sync (qcow2_free()): the L2 or header write that
 * stopped using a cluster goes through the page cache, and a crash
 * before it reaches the disk leaves the old entry naming the cluster.
 * Punched or counted free before that, the entry would read a hole (or,
 * were clusters ever reused, another guest offset's data).  Held back,
 * the worst a crash leaves is a leak.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qcow2-priv.h"

/* Entry i of the refcount block b ("Refcount block entry"). */
static uint64_t
qcow2_rb_get(const struct qcow2 *q, const uint8_t *b, uint64_t i)
{
	unsigned int bits = q->refcount_bits;
	uint64_t v = 0;

	if (bits < 8)
		return (uint64_t)(b[i * bits / 8] >> (i * bits % 8)) &
		    ((1U << bits) - 1);
	for (unsigned int k = 0; k < bits / 8; k++)
		v = v << 8 | b[i * (bits / 8) + k];
	return v;
}

static void
qcow2_rb_set(const struct qcow2 *q, uint8_t *b, uint64_t i, uint64_t v)
{
	unsigned int bits = q->refcount_bits;

	if (bits < 8) {
		unsigned int sh = (unsigned int)(i * bits % 8);
		uint8_t m = (uint8_t)(((1U << bits) - 1) << sh);

		b[i * bits / 8] = (uint8_t)((b[i * bits / 8] & ~m) |
		    ((v << sh) & m));
		return;
	}
	for (unsigned int k = bits / 8; k-- > 0; v >>= 8)
		b[i * (bits / 8) + k] = (uint8_t)v;
}

/* Write entries [i, i + n) of the block b at rb to the file. */
static int
qcow2_rb_write(struct qcow2 *q, const uint8_t *b, uint64_t rb, uint64_t i,
    uint64_t n)
{
	uint64_t lo = i * q->refcount_bits / 8;
	uint64_t hi = ((i + n) * q->refcount_bits + 7) / 8;

	return qcow2_pwrite(q, b + lo, hi - lo, rb + lo);
}

/* The refcount block of table index ti: *b NULL when there is none. */
static int
qcow2_rb_load(struct qcow2 *q, uint64_t ti, uint64_t *rb, uint8_t **b)
{
	uint64_t e;
	int ret;

	*b = NULL;
	if (ti >= q->rt_entries || (e = q->rt[ti]) == 0)
		return 0;
	if ((e & QCOW2_RT_RESERVED) != 0 || (e & (q->cs - 1)) != 0 ||
	    e >= QCOW2_MAX_OFFSET || qcow2_overlaps(q, e, q->cs, false))
		return qcow2_damage(q, "a refcount table entry is misaligned "
		    "or points at other metadata");
	if ((ret = qcow2_cache_get(&q->rbc, q->fd, e, b)) < 0) {
		*b = NULL;
		return ret == -EIO ? qcow2_damage(q, "a refcount block lies "
		    "past the end of the file") : ret;
	}
	*rb = e;
	return 0;
}

int
qcow2_refcount_get(struct qcow2 *q, uint64_t host, uint64_t *rc)
{
	uint64_t c = host >> q->cluster_bits, rb;
	uint8_t *b;
	int ret;

	*rc = 0;
	if ((ret = qcow2_rb_load(q, c >> q->rb_bits, &rb, &b)) < 0)
		return ret;
	if (b != NULL)
		*rc = qcow2_rb_get(q, b, c & ((1ULL << q->rb_bits) - 1));
	return 0;
}

static bool
qcow2_ranges_meet(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

bool
qcow2_overlaps(struct qcow2 *q, uint64_t off, uint64_t len, bool all_tables)
{
	if (off < q->cs)
		return true;		/* the header's cluster */
	if (qcow2_ranges_meet(off, len, q->h.l1_offset,
	    (uint64_t)q->h.l1_size * 8))
		return true;
	if (qcow2_ranges_meet(off, len, q->rt_offset,
	    (uint64_t)q->rt_clusters << q->cluster_bits))
		return true;
	/*
	 * Every table this process made lies below the end of the file it
	 * allocates at; only those of the image as opened can be above.
	 */
	if (!all_tables || off >= q->meta_end)
		return false;
	for (uint32_t i = 0; i < q->h.l1_size; i++) {
		uint64_t t = q->l1[i] & QCOW2_OFFSET_MASK;

		if (t != 0 && qcow2_ranges_meet(off, len, t, q->cs))
			return true;
	}
	for (uint64_t i = 0; i < q->rt_entries; i++) {
		uint64_t t = q->rt[i] & ~QCOW2_RT_RESERVED;

		if (t != 0 && qcow2_ranges_meet(off, len, t, q->cs))
			return true;
	}
	return false;
}

/*
 * A refcount block for table index ti at X, the first free cluster,
 * which it covers: it counts itself.  Written before the table entry
 * that makes it live.
 */
static int
qcow2_rb_create(struct qcow2 *q, uint64_t ti, uint64_t x)
{
	uint8_t *b = qcow2_cache_fresh(&q->rbc, x), be[8];
	int ret;

	if (b == NULL)
		return -ENOMEM;
	qcow2_rb_set(q, b, (x >> q->cluster_bits) &
	    ((1ULL << q->rb_bits) - 1), 1);
	if ((ret = qcow2_pwrite(q, b, q->cs, x)) < 0) {
		qcow2_cache_drop(&q->rbc, x);
		return ret;
	}
	qcow2_put_be64(be, x);
	if ((ret = qcow2_pwrite(q, be, 8, q->rt_offset + ti * 8)) < 0) {
		qcow2_cache_drop(&q->rbc, x);
		return ret;
	}
	q->rt[ti] = x;
	q->file_end = x + q->cs;
	return 0;
}

/*
 * The refcount table is full: write a larger one at the end of the
 * file, followed by the refcount blocks that count it and themselves,
 * then switch the header to it (one pwrite of offset and size) and free
 * the old one.  Until the header moves, the new clusters are beyond
 * what the old table covers: a crash leaves them unreferenced.
 */
static int
qcow2_rt_grow(struct qcow2 *q)
{
	unsigned int cov = q->cluster_bits + q->rb_bits;	/* log2 bytes */
	uint64_t t = q->file_end, nclus = (uint64_t)q->rt_clusters * 2;
	uint64_t first = t >> cov, last, nb, end, blocks, nent, *rt;
	uint64_t old_off = q->rt_offset, old_clusters = q->rt_clusters;
	uint8_t *tab, hdr[12];
	int ret;

	if (first < q->rt_entries)
		return qcow2_damage(q, "refcount table growth below its end");
	for (;;) {
		if ((nclus << q->cluster_bits) > QCOW2_MAX_REFTABLE_BYTES)
			return -EFBIG;
		for (nb = 1;; nb = last - first + 1) {
			end = t + ((nclus + nb) << q->cluster_bits);
			last = (end - 1) >> cov;
			if (last - first + 1 == nb)
				break;
		}
		if (last + 1 <= (nclus << q->cluster_bits) / 8)
			break;
		nclus *= 2;
	}
	nent = (nclus << q->cluster_bits) / 8;
	blocks = t + (nclus << q->cluster_bits);
	if ((tab = calloc(1, nclus << q->cluster_bits)) == NULL)
		return -ENOMEM;
	if ((rt = calloc(nent, sizeof(*rt))) == NULL) {
		free(tab);
		return -ENOMEM;
	}
	memcpy(rt, q->rt, q->rt_entries * sizeof(*rt));
	/* The new blocks: each counts what of [t, end) it covers. */
	for (uint64_t j = 0; j < nb; j++) {
		uint64_t boff = blocks + (j << q->cluster_bits);
		uint8_t *b = qcow2_cache_fresh(&q->rbc, boff);

		if (b == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		for (uint64_t c = t; c < end; c += q->cs)
			if ((c >> cov) == first + j)
				qcow2_rb_set(q, b, (c >> q->cluster_bits) &
				    ((1ULL << q->rb_bits) - 1), 1);
		if ((ret = qcow2_pwrite(q, b, q->cs, boff)) < 0) {
			qcow2_cache_drop(&q->rbc, boff);
			goto out;
		}
		rt[first + j] = boff;
	}
	for (uint64_t i = 0; i < nent; i++)
		qcow2_put_be64(tab + i * 8, rt[i]);
	if ((ret = qcow2_pwrite(q, tab, nclus << q->cluster_bits, t)) < 0)
		goto out;
	/* The table is on disk before the header names it. */
	if (fdatasync(q->fd) < 0) {
		ret = qcow2_damage(q, "fdatasync failed");
		goto out;
	}
	qcow2_put_be64(hdr, t);
	qcow2_put_be32(hdr + 8, (uint32_t)nclus);
	if ((ret = qcow2_pwrite(q, hdr, sizeof(hdr),
	    QCOW2_OFF_REFTABLE_OFFSET)) < 0)
		goto out;
	free(q->rt);
	q->rt = rt;
	rt = NULL;
	q->rt_entries = nent;
	q->rt_offset = t;
	q->rt_clusters = (uint32_t)nclus;
	q->file_end = end;
	ret = qcow2_free(q, old_off, old_clusters << q->cluster_bits);
out:
	free(rt);
	free(tab);
	return ret;
}

int
qcow2_alloc(struct qcow2 *q, uint64_t want, uint64_t *off, uint64_t *got)
{
	uint64_t mask = (1ULL << q->rb_bits) - 1, rb, x, first, k;
	uint8_t *b;
	int ret;

	for (;;) {
		x = q->file_end;
		if (x + q->cs > QCOW2_MAX_OFFSET)
			return -EFBIG;
		if (qcow2_overlaps(q, x, q->cs, true)) {
			q->file_end += q->cs;
			continue;
		}
		if ((x >> (q->cluster_bits + q->rb_bits)) >= q->rt_entries) {
			if ((ret = qcow2_rt_grow(q)) < 0)
				return ret;
			continue;
		}
		if ((ret = qcow2_rb_load(q, x >> (q->cluster_bits +
		    q->rb_bits), &rb, &b)) < 0)
			return ret;
		if (b == NULL) {
			if ((ret = qcow2_rb_create(q, x >> (q->cluster_bits +
			    q->rb_bits), x)) < 0)
				return ret;
			continue;
		}
		first = (x >> q->cluster_bits) & mask;
		/* Clusters past the end the image counts as used: skipped. */
		if (qcow2_rb_get(q, b, first) != 0) {
			while (first <= mask && qcow2_rb_get(q, b, first) != 0) {
				first++;
				x += q->cs;
			}
			q->file_end = x;
			continue;
		}
		for (k = 0; k < want && first + k <= mask &&
		    qcow2_rb_get(q, b, first + k) == 0 &&
		    !qcow2_overlaps(q, x + (k << q->cluster_bits), q->cs,
		    true); k++)
			qcow2_rb_set(q, b, first + k, 1);
		if (k == 0) {
			q->file_end += q->cs;	/* overlaps a table */
			continue;
		}
		if ((ret = qcow2_rb_write(q, b, rb, first, k)) < 0) {
			qcow2_cache_drop(&q->rbc, rb);
			return ret;
		}
		q->file_end = x + (k << q->cluster_bits);
		*off = x;
		*got = k;
		return 0;
	}
}

/* Punch out clusters [c, c + n) now unused: advisory. */
static void
qcow2_punch(struct qcow2 *q, uint64_t c, uint64_t n)
{
	if (n == 0)
		return;
	fallocate(q->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    (off_t)(c << q->cluster_bits), (off_t)(n << q->cluster_bits));
}

static int
qcow2_free_now(struct qcow2 *q, uint64_t host, uint64_t len)
{
	uint64_t mask = (1ULL << q->rb_bits) - 1, rb, v;
	uint64_t c = host >> q->cluster_bits;
	uint64_t last = (host + len - 1) >> q->cluster_bits;
	uint8_t *b;
	int ret;

	if (len == 0)
		return 0;
	while (c <= last) {
		uint64_t i = c & mask, n = mask - i + 1, hole = 0, hc = c;

		if (n > last - c + 1)
			n = last - c + 1;
		if ((ret = qcow2_rb_load(q, c >> q->rb_bits, &rb, &b)) < 0)
			return ret;
		if (b == NULL)
			return qcow2_damage(q, "a used cluster has no "
			    "refcount block");
		for (uint64_t k = 0; k < n; k++)
			if (qcow2_rb_get(q, b, i + k) == 0)
				return qcow2_damage(q, "a used cluster has "
				    "refcount 0");
		for (uint64_t k = 0; k < n; k++) {
			v = qcow2_rb_get(q, b, i + k) - 1;
			qcow2_rb_set(q, b, i + k, v);
		}
		if ((ret = qcow2_rb_write(q, b, rb, i, n)) < 0) {
			qcow2_cache_drop(&q->rbc, rb);
			return ret;
		}
		/* Clusters now free: out of the caches, out of the file. */
		for (uint64_t k = 0; k < n; k++) {
			if (qcow2_rb_get(q, b, i + k) != 0) {
				qcow2_punch(q, hc, hole);
				hole = 0;
				hc = c + k + 1;
				continue;
			}
			qcow2_cache_drop(&q->l2c, (c + k) << q->cluster_bits);
			hole++;
		}
		qcow2_punch(q, hc, hole);
		c += n;
	}
	return 0;
}

uint64_t
qcow2_freed_mark(struct qcow2 *q)
{
	q->freed_sealed = q->freed_base + q->nfreed;
	return q->freed_sealed;
}

int
qcow2_freed_release(struct qcow2 *q, uint64_t upto)
{
	size_t n;
	int ret, first = 0;

	if (upto <= q->freed_base)
		return 0;	/* another sync released them */
	n = (size_t)(upto - q->freed_base);
	if (n > q->nfreed)
		n = q->nfreed;
	for (size_t i = 0; i < n; i++)
		if ((ret = qcow2_free_now(q, q->freed[i].host,
		    q->freed[i].len)) < 0 && first == 0)
			first = ret;
	memmove(q->freed, q->freed + n, (q->nfreed - n) * sizeof(*q->freed));
	q->nfreed -= n;
	q->freed_base += n;
	return first;
}

/* Sync the file, then release every queued free: 0 or -errno. */
static int
qcow2_freed_sync(struct qcow2 *q)
{
	uint64_t upto = qcow2_freed_mark(q);

	if (fdatasync(q->fd) < 0)
		return qcow2_damage(q, "fdatasync failed");
	return qcow2_freed_release(q, upto);
}

int
qcow2_free(struct qcow2 *q, uint64_t host, uint64_t len)
{
	struct qcow2_freed *last, *grown;
	size_t cap;
	int ret;

	if (len == 0)
		return 0;
	/* Damage shows now, to the write that met it, not at the sync. */
	for (uint64_t c = host >> q->cluster_bits;
	    c <= (host + len - 1) >> q->cluster_bits; c++) {
		uint64_t rc;

		if ((ret = qcow2_refcount_get(q, c << q->cluster_bits,
		    &rc)) < 0)
			return ret;
		if (rc == 0)
			return qcow2_damage(q, "a used cluster has "
			    "refcount 0");
	}
	/* Whole clusters right after the last queued, unsealed, free: one
	 * range (a compressed cluster's sectors are not: two of them may
	 * share a host cluster, and each drops a reference of its own). */
	last = q->nfreed > 0 ? &q->freed[q->nfreed - 1] : NULL;
	if (last != NULL && q->freed_base + q->nfreed - 1 >= q->freed_sealed &&
	    ((host | len | last->host | last->len) & (q->cs - 1)) == 0 &&
	    last->host + last->len == host) {
		last->len += len;
		return 0;
	}
	if (q->nfreed == q->freed_cap && q->freed_cap < QCOW2_FREED_MAX) {
		cap = q->freed_cap == 0 ? 16 : q->freed_cap * 2;
		if ((grown = realloc(q->freed, cap * sizeof(*grown))) != NULL) {
			q->freed = grown;
			q->freed_cap = cap;
		}
	}
	if (q->nfreed == q->freed_cap) {
		/* Full (or no memory for more): make them all safe now. */
		if ((ret = qcow2_freed_sync(q)) < 0)
			return ret;
		if (q->freed_cap == 0)
			return qcow2_free_now(q, host, len);	/* synced */
	}
	q->freed[q->nfreed].host = host;
	q->freed[q->nfreed].len = len;
	q->nfreed++;
	return 0;
}
