/*
 * The qcow2 format (see blk-qcow2.h), after docs/interop/qcow2.txt:
 * "Cluster mapping" (L1 and L2 tables, cluster descriptors) for reads
 * and writes, opening, and the operations of blk-image.h.  Refcounts and
 * allocation are qcow2-refcount.c's, the table cache qcow2-cache.c's,
 * decompression qcow2-decompress.c's.
 *
 * A request is cut into runs: guest clusters alike in kind (data, zero,
 * unallocated, compressed) and, for data, contiguous in the file.  Runs
 * are found under the lock from cached tables; a run of data is then
 * moved with one preadv or pwritev outside it.  A write that needs new
 * clusters (unallocated, zero, compressed, shared) holds the lock while
 * it allocates, writes the data (old content merged in for partial
 * clusters) and then points the L2 entries at it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blk-qcow2.h"
#include "blk-raw.h"
#include "qcow2-decompress.h"
#include "qcow2-priv.h"

/* Segments one data call is built from (virtio-blk's seg_max and two). */
#define QCOW2_IOV_MAX		130
/* Clusters one allocating step takes at most. */
#define QCOW2_ALLOC_MAX		256

enum qcow2_kind {
	QCOW2_UNALLOC,		/* the backing image's, or zeroes */
	QCOW2_ZEROES,		/* v3 zero flag */
	QCOW2_DATA,		/* a host cluster */
	QCOW2_PACKED,		/* a compressed cluster */
};

/* A run of guest bytes mapped alike. */
struct qcow2_run {
	enum qcow2_kind kind;
	uint64_t len;		/* bytes */
	uint64_t host;		/* QCOW2_DATA: of the run's first byte */
	uint64_t entry;		/* QCOW2_PACKED: the descriptor */
	bool writable;		/* QCOW2_DATA with refcount 1 */
};

/*
 * The L2 table of L1 index l1i in *tab (NULL: none, when !alloc), its
 * offset in *l2off.  alloc: make one if there is none, and make sure it
 * is this image's alone to write.  Under the lock.
 */
static int
qcow2_l2_table(struct qcow2 *q, uint64_t l1i, bool alloc, uint8_t **tab,
    uint64_t *l2off)
{
	uint64_t e, off, got, rc;
	uint8_t be[8];
	int ret;

	*tab = NULL;
	if (l1i >= q->h.l1_size)
		return qcow2_damage(q, "a guest offset beyond the L1 table");
	e = q->l1[l1i];
	off = e & QCOW2_OFFSET_MASK;
	if ((e & QCOW2_L1_RESERVED) != 0 || (off & (q->cs - 1)) != 0)
		return qcow2_damage(q, "an L1 entry is misaligned or has "
		    "reserved bits set");
	if (off == 0) {
		if (!alloc)
			return 0;
		if ((ret = qcow2_alloc(q, 1, &off, &got)) < 0)
			return ret;
		/* Zeroed on disk before the L1 entry names it. */
		if ((*tab = qcow2_cache_fresh(&q->l2c, off)) == NULL)
			return -ENOMEM;		/* a leaked cluster */
		if ((ret = qcow2_pwrite(q, *tab, q->cs, off)) < 0)
			goto fail;
		qcow2_put_be64(be, off | QCOW2_COPIED);
		if ((ret = qcow2_pwrite(q, be, 8, q->h.l1_offset +
		    l1i * 8)) < 0)
			goto fail;
		q->l1[l1i] = off | QCOW2_COPIED;
		*l2off = off;
		return 0;
	}
	if (qcow2_overlaps(q, off, q->cs, false))
		return qcow2_damage(q, "an L2 table overlaps the header, the "
		    "L1 table or the refcount table");
	if (alloc && (e & QCOW2_COPIED) == 0) {
		if ((ret = qcow2_refcount_get(q, off, &rc)) < 0)
			return ret;
		if (rc == 0)
			return qcow2_damage(q, "an L2 table has refcount 0");
		if (rc != 1)
			return -EIO;	/* shared: only with snapshots */
		qcow2_put_be64(be, e | QCOW2_COPIED);
		if ((ret = qcow2_pwrite(q, be, 8, q->h.l1_offset +
		    l1i * 8)) < 0)
			return ret;
		q->l1[l1i] = e | QCOW2_COPIED;
	}
	if ((ret = qcow2_cache_get(&q->l2c, q->fd, off, tab)) < 0) {
		*tab = NULL;
		return ret == -EIO ? qcow2_damage(q, "an L2 table lies past "
		    "the end of the file") : ret;
	}
	*l2off = off;
	return 0;
fail:
	qcow2_cache_drop(&q->l2c, off);
	*tab = NULL;
	return ret;
}

/* What the L2 entry e says ("L2 table entry"), checked. */
static int
qcow2_classify(struct qcow2 *q, uint64_t e, enum qcow2_kind *kind,
    uint64_t *host)
{
	uint64_t off;

	if ((e & QCOW2_COMPRESSED) != 0) {
		off = e & q->coffset_mask;
		if (off < q->cs || off >= QCOW2_MAX_OFFSET)
			return qcow2_damage(q, "a compressed cluster's "
			    "offset is out of bounds");
		*kind = QCOW2_PACKED;
		*host = off;
		return 0;
	}
	off = e & QCOW2_OFFSET_MASK;
	if ((e & QCOW2_L2_RESERVED) != 0 || (off & (q->cs - 1)) != 0 ||
	    (q->h.version == 2 && (e & QCOW2_ZERO) != 0))
		return qcow2_damage(q, "an L2 entry is misaligned or has "
		    "reserved bits set");
	*host = off;
	if ((e & QCOW2_ZERO) != 0) {
		*kind = QCOW2_ZEROES;
		return 0;
	}
	if (off == 0) {
		if ((e & QCOW2_COPIED) != 0)
			return qcow2_damage(q, "an L2 entry has host offset 0");
		*kind = QCOW2_UNALLOC;
		return 0;
	}
	if (qcow2_overlaps(q, off, q->cs, false))
		return qcow2_damage(q, "a data cluster overlaps the header, "
		    "the L1 table or the refcount table");
	*kind = QCOW2_DATA;
	return 0;
}

/*
 * The run that starts at guest offset off, at most len bytes, within one
 * L2 table.  Under the lock.
 */
static int
qcow2_map(struct qcow2 *q, uint64_t off, uint64_t len, struct qcow2_run *r)
{
	uint64_t gc = off >> q->cluster_bits, in = off & (q->cs - 1);
	uint64_t l2i = gc & ((1ULL << q->l2_bits) - 1), l2off, e, host;
	uint64_t table_left = (((1ULL << q->l2_bits) - l2i) <<
	    q->cluster_bits) - in;
	enum qcow2_kind kind;
	uint8_t *tab;
	int ret;

	if (len > table_left)
		len = table_left;
	memset(r, 0, sizeof(*r));
	if ((ret = qcow2_l2_table(q, gc >> q->l2_bits, false, &tab,
	    &l2off)) < 0)
		return ret;
	if (tab == NULL) {
		r->kind = QCOW2_UNALLOC;
		r->len = len;
		return 0;
	}
	e = qcow2_be64(tab + l2i * 8);
	if ((ret = qcow2_classify(q, e, &r->kind, &host)) < 0)
		return ret;
	r->entry = e;
	r->host = host + in;
	r->writable = r->kind == QCOW2_DATA && (e & QCOW2_COPIED) != 0;
	r->len = q->cs - in < len ? q->cs - in : len;
	if (r->kind == QCOW2_PACKED)
		return 0;		/* one cluster at a time */
	for (uint64_t next = host + q->cs; r->len < len; next += q->cs) {
		e = qcow2_be64(tab + ++l2i * 8);
		if ((ret = qcow2_classify(q, e, &kind, &host)) < 0)
			return ret;
		if (kind != r->kind || (kind == QCOW2_DATA && (host != next ||
		    r->writable != ((e & QCOW2_COPIED) != 0))))
			break;
		r->len += q->cs < len - r->len ? q->cs : len - r->len;
	}
	return 0;
}

/* preadv or pwritev of the vector's [at, at + len) at host, in chunks. */
static int
qcow2_data_rw(struct qcow2 *q, const struct iovec *iov, unsigned int niov,
    size_t at, uint64_t len, uint64_t host, bool write)
{
	struct iovec v[QCOW2_IOV_MAX];
	size_t taken;
	unsigned int n;
	int ret;

	while (len > 0) {
		n = blk_iov_slice(iov, niov, at, len, v, QCOW2_IOV_MAX,
		    &taken);
		ret = write ? blk_raw_rw(q->fd, v, n, host, true) :
		    blk_raw_read_or_zero(q->fd, v, n, host);
		if (ret < 0)
			return ret;
		at += taken;
		host += taken;
		len -= taken;
	}
	return 0;
}

/* The backing image's [off, off + len) into the vector at at. */
static int
qcow2_backing_read(struct qcow2 *q, const struct iovec *iov,
    unsigned int niov, size_t at, uint64_t off, uint64_t len)
{
	struct blk_image *b = q->img.backing;
	struct iovec v[QCOW2_IOV_MAX];
	uint64_t have;
	size_t taken;
	unsigned int n;
	int ret;

	have = b == NULL || off >= b->size ? 0 :
	    b->size - off < len ? b->size - off : len;
	/* What lies past a shorter backing image reads as zeroes. */
	blk_iov_memset(iov, niov, at + have, 0, len - have);
	while (have > 0) {
		n = blk_iov_slice(iov, niov, at, have, v, QCOW2_IOV_MAX,
		    &taken);
		if ((ret = b->ops->read(b, v, n, off)) < 0)
			return ret;
		at += taken;
		off += taken;
		have -= taken;
	}
	return 0;
}

/* The compressed cluster e, whole, into out (one cluster). */
static int
qcow2_packed_read(struct qcow2 *q, uint64_t e, uint8_t *out)
{
	uint64_t host = e & q->coffset_mask;
	uint64_t sectors = ((e >> q->csize_shift) & q->csize_mask) + 1;
	uint64_t len = (host & ~511ULL) + sectors * 512 - host;
	struct iovec iov;
	uint8_t *in;
	int ret;

	if ((in = malloc(len)) == NULL)
		return -ENOMEM;
	iov = (struct iovec){ in, len };
	ret = blk_raw_read_or_zero(q->fd, &iov, 1, host);
	if (ret == 0 && qcow2_decompress(q->h.compression, in, len, out,
	    q->cs) < 0)
		ret = qcow2_damage(q, "a compressed cluster does not "
		    "decompress to a whole cluster");
	free(in);
	return ret;
}

/* The run r at guest offset off into the vector at at. */
static int
qcow2_run_read(struct qcow2 *q, const struct iovec *iov, unsigned int niov,
    size_t at, uint64_t off, const struct qcow2_run *r)
{
	uint8_t *buf;
	int ret;

	switch (r->kind) {
	case QCOW2_DATA:
		return qcow2_data_rw(q, iov, niov, at, r->len, r->host,
		    false);
	case QCOW2_ZEROES:
		blk_iov_memset(iov, niov, at, 0, r->len);
		return 0;
	case QCOW2_UNALLOC:
		return qcow2_backing_read(q, iov, niov, at, off, r->len);
	case QCOW2_PACKED:
		if ((buf = malloc(q->cs)) == NULL)
			return -ENOMEM;
		if ((ret = qcow2_packed_read(q, r->entry, buf)) == 0)
			blk_iov_from_buf(iov, niov, at, buf +
			    (off & (q->cs - 1)), r->len);
		free(buf);
		return ret;
	}
	return -EIO;
}

static int
qcow2_check(struct qcow2 *q, uint64_t off, uint64_t len, bool write)
{
	if (off > q->img.size || len > q->img.size - off)
		return -EIO;
	if (write && q->img.readonly)
		return -EROFS;
	if (write && __atomic_load_n(&q->broken, __ATOMIC_ACQUIRE))
		return -EIO;
	return 0;
}

static int
qcow2_read(struct blk_image *img, const struct iovec *iov, unsigned int niov,
    uint64_t off)
{
	struct qcow2 *q = (struct qcow2 *)img;
	size_t total = blk_iov_size(iov, niov), at = 0;
	struct qcow2_run r;
	int ret;

	if ((ret = qcow2_check(q, off, total, false)) < 0)
		return ret;
	while (at < total) {
		pthread_mutex_lock(&q->lock);
		ret = qcow2_map(q, off + at, total - at, &r);
		/*
		 * A compressed cluster is read under the lock: a write
		 * racing it would free and punch it, and a cluster that
		 * does not decompress is taken for damage.
		 */
		if (ret == 0 && r.kind == QCOW2_PACKED)
			ret = qcow2_run_read(q, iov, niov, at, off + at, &r);
		pthread_mutex_unlock(&q->lock);
		if (ret < 0)
			return ret;
		/*
		 * The rest outside it: clusters are never reused (see
		 * qcow2-refcount.c), so what r names stays this offset's
		 * or becomes free (reading as zeroes), never another's.
		 */
		if (r.kind != QCOW2_PACKED && (ret = qcow2_run_read(q, iov,
		    niov, at, off + at, &r)) < 0)
			return ret;
		at += r.len;
	}
	return 0;
}

/* What guest cluster gc (L2 entry e) holds now, into buf.  Locked. */
static int
qcow2_old_content(struct qcow2 *q, uint64_t e, uint64_t gc, uint8_t *buf)
{
	struct iovec iov = { buf, q->cs };
	enum qcow2_kind kind;
	uint64_t host;
	int ret;

	if ((ret = qcow2_classify(q, e, &kind, &host)) < 0)
		return ret;
	switch (kind) {
	case QCOW2_ZEROES:
		memset(buf, 0, q->cs);
		return 0;
	case QCOW2_DATA:
		return blk_raw_read_or_zero(q->fd, &iov, 1, host);
	case QCOW2_PACKED:
		return qcow2_packed_read(q, e, buf);
	case QCOW2_UNALLOC:
		return qcow2_backing_read(q, &iov, 1, 0, gc << q->cluster_bits,
		    q->cs);
	}
	return -EIO;
}

/* Drop the clusters the L2 entry e pointed at.  Locked. */
static int
qcow2_release(struct qcow2 *q, uint64_t e)
{
	enum qcow2_kind kind;
	uint64_t host;
	int ret;

	if ((ret = qcow2_classify(q, e, &kind, &host)) < 0)
		return ret;
	if (kind == QCOW2_PACKED) {
		uint64_t sectors = ((e >> q->csize_shift) & q->csize_mask) + 1;

		return qcow2_free(q, host & ~511ULL, sectors * 512);
	}
	if (host != 0)
		return qcow2_free(q, host, q->cs);
	return 0;
}

/*
 * Write the L2 entries [l2i, l2i + n) of tab (at l2off) from new, old
 * ones saved in old, then release what the old ones named and the new
 * ones do not.  On a failed write the cache gets the old entries back.
 */
static int
qcow2_l2_update(struct qcow2 *q, uint8_t *tab, uint64_t l2off, uint64_t l2i,
    uint64_t n, const uint64_t *old, const uint64_t *new)
{
	int ret, first = 0;

	for (uint64_t i = 0; i < n; i++)
		qcow2_put_be64(tab + (l2i + i) * 8, new[i]);
	if ((ret = qcow2_pwrite(q, tab + l2i * 8, n * 8,
	    l2off + l2i * 8)) < 0) {
		for (uint64_t i = 0; i < n; i++)
			qcow2_put_be64(tab + (l2i + i) * 8, old[i]);
		return ret;
	}
	for (uint64_t i = 0; i < n; i++) {
		bool kept = (old[i] & QCOW2_COMPRESSED) == 0 &&
		    (old[i] & QCOW2_OFFSET_MASK) != 0 &&
		    (old[i] & QCOW2_OFFSET_MASK) ==
		    (new[i] & QCOW2_OFFSET_MASK) &&
		    (new[i] & QCOW2_COMPRESSED) == 0;

		if (!kept && (ret = qcow2_release(q, old[i])) < 0 &&
		    first == 0)
			first = ret;
	}
	return first;
}

/*
 * Write the vector's [at, at + len) to guest offset off, where the run
 * needs new clusters: allocate up to QCOW2_ALLOC_MAX of them, merge the
 * old content of partial clusters, write the data in one go, then point
 * the L2 entries at it.  *done: the bytes written.  Under the lock.
 */
static int
qcow2_write_alloc(struct qcow2 *q, const struct iovec *iov,
    unsigned int niov, size_t at, uint64_t off, uint64_t len, uint64_t *done)
{
	uint64_t gc = off >> q->cluster_bits, in = off & (q->cs - 1);
	uint64_t l2i = gc & ((1ULL << q->l2_bits) - 1), l2off, host, n, tail;
	uint64_t old[QCOW2_ALLOC_MAX], new[QCOW2_ALLOC_MAX];
	uint8_t *tab, *head_buf = NULL, *tail_buf = NULL;
	struct iovec v[QCOW2_IOV_MAX];
	uint64_t mid_at, mid_len, pos;
	int ret;

	n = (in + len + q->cs - 1) >> q->cluster_bits;
	if (n > QCOW2_ALLOC_MAX)
		n = QCOW2_ALLOC_MAX;
	if ((ret = qcow2_l2_table(q, gc >> q->l2_bits, true, &tab,
	    &l2off)) < 0)
		return ret;
	if ((ret = qcow2_alloc(q, n, &host, &n)) < 0)
		return ret;
	if (len > (n << q->cluster_bits) - in)
		len = (n << q->cluster_bits) - in;
	/* The allocation may have loaded other tables: look again. */
	if ((ret = qcow2_l2_table(q, gc >> q->l2_bits, true, &tab,
	    &l2off)) < 0)
		return ret;
	for (uint64_t i = 0; i < n; i++) {
		old[i] = qcow2_be64(tab + (l2i + i) * 8);
		new[i] = (host + (i << q->cluster_bits)) | QCOW2_COPIED;
	}
	tail = (in + len) & (q->cs - 1);
	/* Partial clusters: their old content with the new bytes in. */
	if (in != 0 || len < q->cs) {
		ret = -ENOMEM;
		if ((head_buf = malloc(q->cs)) == NULL ||
		    (ret = qcow2_old_content(q, old[0], gc, head_buf)) < 0)
			goto out;
		blk_iov_to_buf(iov, niov, at, head_buf + in,
		    q->cs - in < len ? q->cs - in : len);
	}
	if (n > 1 && tail != 0) {
		ret = -ENOMEM;
		if ((tail_buf = malloc(q->cs)) == NULL ||
		    (ret = qcow2_old_content(q, old[n - 1], gc + n - 1,
		    tail_buf)) < 0)
			goto out;
		blk_iov_to_buf(iov, niov, at + len - tail, tail_buf, tail);
	}
	/* One pwritev: [head cluster] [whole clusters] [tail cluster]. */
	mid_at = at + (head_buf != NULL ? q->cs - in : 0);
	mid_len = (n << q->cluster_bits) - (head_buf != NULL ? q->cs : 0) -
	    (tail_buf != NULL ? q->cs : 0);
	pos = host;
	for (bool first = true;; first = false) {
		unsigned int k = 0;
		size_t taken = 0;

		if (first && head_buf != NULL)
			v[k++] = (struct iovec){ head_buf, q->cs };
		if (mid_len > 0) {
			k += blk_iov_slice(iov, niov, mid_at, mid_len, v + k,
			    QCOW2_IOV_MAX - 1 - k, &taken);
			mid_at += taken;
			mid_len -= taken;
		}
		if (mid_len == 0 && tail_buf != NULL)
			v[k++] = (struct iovec){ tail_buf, q->cs };
		if ((ret = blk_raw_rw(q->fd, v, k, pos, true)) < 0)
			goto out;
		pos += blk_iov_size(v, k);
		if (mid_len == 0)
			break;
	}
	ret = qcow2_l2_update(q, tab, l2off, l2i, n, old, new);
	*done = len;
out:
	free(head_buf);
	free(tail_buf);
	return ret;
}

static int
qcow2_write(struct blk_image *img, const struct iovec *iov,
    unsigned int niov, uint64_t off)
{
	struct qcow2 *q = (struct qcow2 *)img;
	size_t total = blk_iov_size(iov, niov), at = 0;
	struct qcow2_run r;
	uint64_t done;
	int ret;

	if ((ret = qcow2_check(q, off, total, true)) < 0)
		return ret;
	while (at < total) {
		pthread_mutex_lock(&q->lock);
		if ((ret = qcow2_map(q, off + at, total - at, &r)) < 0) {
			pthread_mutex_unlock(&q->lock);
			return ret;
		}
		if (r.writable) {
			/* Allocated and ours alone: rewritten in place. */
			pthread_mutex_unlock(&q->lock);
			ret = qcow2_data_rw(q, iov, niov, at, r.len, r.host,
			    true);
			done = r.len;
		} else {
			ret = qcow2_write_alloc(q, iov, niov, at, off + at,
			    r.len, &done);
			pthread_mutex_unlock(&q->lock);
		}
		if (ret < 0)
			return ret;
		at += done;
	}
	return 0;
}

/*
 * fdatasync outside the lock, as ever; the frees queued before it began
 * (their metadata written before they were queued) are released after
 * it, under the lock again (qcow2-priv.h).
 */
static int
qcow2_flush(struct blk_image *img)
{
	struct qcow2 *q = (struct qcow2 *)img;
	uint64_t upto;
	int ret;

	pthread_mutex_lock(&q->lock);
	upto = qcow2_freed_mark(q);
	pthread_mutex_unlock(&q->lock);
	if (fdatasync(q->fd) < 0)
		return -errno;
	pthread_mutex_lock(&q->lock);
	ret = qcow2_freed_release(q, upto);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

enum qcow2_unmap {
	QCOW2_DISCARD,		/* backing data must not come back */
	QCOW2_ZERO_UNMAP,	/* reads as zeroes, space freed */
	QCOW2_ZERO_KEEP,	/* reads as zeroes, allocation kept */
};

/*
 * Whole guest clusters [off, off + len) made unallocated or zero by
 * their L2 entries alone: one pwrite per L2 table, then the clusters
 * no longer named are released.  Under the lock.
 */
static int
qcow2_unmap_clusters(struct qcow2 *q, uint64_t off, uint64_t len,
    enum qcow2_unmap how)
{
	uint64_t old[QCOW2_ALLOC_MAX], new[QCOW2_ALLOC_MAX];
	bool backing = q->img.backing != NULL;
	int ret;

	while (len > 0) {
		uint64_t gc = off >> q->cluster_bits, l2off, host;
		uint64_t l2i = gc & ((1ULL << q->l2_bits) - 1), n, lo, hi;
		enum qcow2_kind kind;
		uint8_t *tab;

		n = len >> q->cluster_bits;
		if (n > (1ULL << q->l2_bits) - l2i)
			n = (1ULL << q->l2_bits) - l2i;
		if (n > QCOW2_ALLOC_MAX)
			n = QCOW2_ALLOC_MAX;
		/* No table: unallocated already, fine without a backing. */
		if ((ret = qcow2_l2_table(q, gc >> q->l2_bits, backing, &tab,
		    &l2off)) < 0)
			return ret;
		lo = n;
		hi = 0;
		for (uint64_t i = 0; tab != NULL && i < n; i++) {
			old[i] = qcow2_be64(tab + (l2i + i) * 8);
			if ((ret = qcow2_classify(q, old[i], &kind,
			    &host)) < 0)
				return ret;
			if (how == QCOW2_ZERO_KEEP && kind == QCOW2_DATA &&
			    (old[i] & QCOW2_COPIED) != 0)
				new[i] = old[i] | QCOW2_ZERO;
			else if (q->h.version == 3 && backing)
				new[i] = QCOW2_ZERO;
			else
				new[i] = 0;
			if (new[i] == old[i])
				continue;
			lo = i < lo ? i : lo;
			hi = i + 1;
		}
		if (tab != NULL && lo < hi && (ret = qcow2_l2_update(q, tab,
		    l2off, l2i + lo, hi - lo, old + lo, new + lo)) < 0)
			return ret;
		off += n << q->cluster_bits;
		len -= n << q->cluster_bits;
	}
	return 0;
}

/* The whole clusters of [off, off + len): *first and *end, guest bytes. */
static void
qcow2_whole(struct qcow2 *q, uint64_t off, uint64_t len, uint64_t *first,
    uint64_t *end)
{
	uint64_t e = off + len;

	*first = (off + q->cs - 1) & ~(q->cs - 1);
	/* The image's last cluster may be partial: its end counts as whole. */
	*end = e == q->img.size ? (e + q->cs - 1) & ~(q->cs - 1) :
	    e & ~(q->cs - 1);
	if (*end < *first)
		*end = *first;
}

static int
qcow2_discard(struct blk_image *img, uint64_t off, uint64_t len)
{
	struct qcow2 *q = (struct qcow2 *)img;
	uint64_t first, end;
	int ret;

	if ((ret = qcow2_check(q, off, len, true)) < 0)
		return ret;
	/* Version 2 cannot hide a backing image's data: keep ours. */
	if (q->h.version == 2 && q->img.backing != NULL)
		return 0;
	qcow2_whole(q, off, len, &first, &end);
	if (first >= end)
		return 0;
	pthread_mutex_lock(&q->lock);
	ret = qcow2_unmap_clusters(q, first, end - first, QCOW2_DISCARD);
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/* Zero bytes written through the write path. */
static int
qcow2_zero_bytes(struct qcow2 *q, uint64_t off, uint64_t len)
{
	struct iovec v[64];
	unsigned int n;
	uint64_t got;
	int ret;

	while (len > 0) {
		for (n = 0, got = 0; n < 64 && got < len; n++) {
			v[n].iov_base = q->zero;
			v[n].iov_len = len - got < q->cs ? len - got : q->cs;
			got += v[n].iov_len;
		}
		if ((ret = qcow2_write(&q->img, v, n, off)) < 0)
			return ret;
		off += got;
		len -= got;
	}
	return 0;
}

static int
qcow2_write_zeroes(struct blk_image *img, uint64_t off, uint64_t len,
    bool may_unmap)
{
	struct qcow2 *q = (struct qcow2 *)img;
	uint64_t first, end, stop = off + len;
	int ret;

	if ((ret = qcow2_check(q, off, len, true)) < 0)
		return ret;
	qcow2_whole(q, off, len, &first, &end);
	/* Version 2 has no zero flag: zeroes written, or clusters freed. */
	if (first >= end || (q->h.version == 2 && (q->img.backing != NULL ||
	    !may_unmap)))
		return qcow2_zero_bytes(q, off, len);
	if (first > off && (ret = qcow2_zero_bytes(q, off, first - off)) < 0)
		return ret;
	pthread_mutex_lock(&q->lock);
	ret = qcow2_unmap_clusters(q, first, end - first, may_unmap ?
	    QCOW2_ZERO_UNMAP : QCOW2_ZERO_KEEP);
	pthread_mutex_unlock(&q->lock);
	if (ret < 0)
		return ret;
	if (end < stop)
		return qcow2_zero_bytes(q, end, stop - end);
	return 0;
}

static void
qcow2_stats(struct blk_image *img, struct blk_image_stats *st)
{
	struct qcow2 *q = (struct qcow2 *)img;
	struct stat sb;

	memset(st, 0, sizeof(*st));
	st->format = "qcow2";
	if (fstat(q->fd, &sb) == 0)
		st->allocated = (uint64_t)sb.st_blocks * 512;
	pthread_mutex_lock(&q->lock);
	st->cache_hits = q->l2c.hits + q->rbc.hits;
	st->cache_misses = q->l2c.misses + q->rbc.misses;
	pthread_mutex_unlock(&q->lock);
	st->broken = __atomic_load_n(&q->broken, __ATOMIC_ACQUIRE);
	for (struct blk_image *b = img->backing; b != NULL; b = b->backing)
		st->chain++;
}

static void
qcow2_destroy(struct qcow2 *q)
{
	qcow2_cache_fini(&q->l2c);
	qcow2_cache_fini(&q->rbc);
	pthread_mutex_destroy(&q->lock);
	free(q->l1);
	free(q->rt);
	free(q->zero);
	free(q->freed);
	free(q);
}

static void
qcow2_free_image(struct blk_image *img)
{
	struct qcow2 *q = (struct qcow2 *)img;

	blk_image_free(img->backing);
	/* Frees still queued are released, not leaked: one last sync. */
	if (q->fd >= 0 && q->nfreed > 0)
		(void)qcow2_flush(img);
	if (q->fd >= 0)
		close(q->fd);
	qcow2_destroy(q);
}

static void
qcow2_disown(struct blk_image *img)
{
	((struct qcow2 *)img)->fd = -1;
}

static const struct blk_image_ops qcow2_ops = {
	.read = qcow2_read,
	.write = qcow2_write,
	.flush = qcow2_flush,
	.discard = qcow2_discard,
	.write_zeroes = qcow2_write_zeroes,
	.stats = qcow2_stats,
	.disown = qcow2_disown,
	.free = qcow2_free_image,
};

/* n big-endian 64-bit entries at off into host order: 0, -EINVAL. */
static int
qcow2_load_table(int fd, uint64_t off, uint64_t n, uint64_t **out)
{
	struct iovec iov;
	uint64_t *t;
	int ret;

	if ((t = calloc(n > 0 ? n : 1, 8)) == NULL)
		return -ENOMEM;
	iov = (struct iovec){ t, n * 8 };
	if (n > 0 && (ret = blk_raw_rw(fd, &iov, 1, off, false)) < 0) {
		free(t);
		return ret == -EIO ? -EINVAL : ret;
	}
	for (uint64_t i = 0; i < n; i++)
		t[i] = qcow2_be64((const uint8_t *)&t[i]);
	*out = t;
	return 0;
}

/*
 * The tables of the image as opened, and where allocation starts: past
 * the end of the file and of every table.  A table the image places
 * past the end of the file is damage (qemu-img never writes one short):
 * allocation must not hand out its cluster, so the image is broken from
 * the start and only reads go on.
 */
static int
qcow2_open_tables(struct qcow2 *q)
{
	uint64_t l1_bytes = (uint64_t)q->h.l1_size * 8, end, fsize;
	bool beyond = false;
	int ret;

	q->rt_offset = q->h.refcount_table_offset;
	q->rt_clusters = q->h.refcount_table_clusters;
	q->rt_entries = ((uint64_t)q->rt_clusters << q->cluster_bits) / 8;
	if (l1_bytes > 0 && q->h.l1_offset < q->rt_offset +
	    ((uint64_t)q->rt_clusters << q->cluster_bits) &&
	    q->rt_offset < q->h.l1_offset + l1_bytes)
		return -EINVAL;		/* L1 and refcount table overlap */
	if ((ret = qcow2_load_table(q->fd, q->h.l1_offset, q->h.l1_size,
	    &q->l1)) < 0)
		return ret;
	if ((ret = qcow2_load_table(q->fd, q->rt_offset, q->rt_entries,
	    &q->rt)) < 0)
		return ret;
	if ((ret = blk_raw_size(q->fd, &fsize)) < 0)
		return ret;
	end = q->rt_offset + ((uint64_t)q->rt_clusters << q->cluster_bits);
	if (q->h.l1_offset + l1_bytes > end)
		end = q->h.l1_offset + l1_bytes;
	for (uint32_t i = 0; i < q->h.l1_size; i++) {
		uint64_t t = q->l1[i] & QCOW2_OFFSET_MASK;

		if (t != 0 && t + q->cs > end)
			end = t + q->cs;
		beyond |= t != 0 && t + q->cs > fsize;
	}
	for (uint64_t i = 0; i < q->rt_entries; i++) {
		uint64_t t = q->rt[i] & ~QCOW2_RT_RESERVED;

		if (t != 0 && t < QCOW2_MAX_OFFSET && t + q->cs > end)
			end = t + q->cs;
		beyond |= t != 0 && t + q->cs > fsize;
	}
	if (beyond)
		qcow2_damage(q, "a table lies past the end of the file");
	q->meta_end = (end + q->cs - 1) & ~(q->cs - 1);
	q->file_end = (fsize + q->cs - 1) & ~(q->cs - 1);
	if (q->file_end < q->meta_end)
		q->file_end = q->meta_end;
	return 0;
}

int
blk_qcow2_open(int fd, bool readonly, struct blk_image *backing,
    enum blk_image_format backing_format, struct blk_image **out)
{
	struct qcow2 *q;
	uint8_t zero[8] = { 0 };
	int ret;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return -ENOMEM;
	q->fd = -1;
	pthread_mutex_init(&q->lock, NULL);
	if ((ret = qcow2_header_read(fd, &q->h)) < 0)
		goto fail;
	ret = -EINVAL;
	if (q->h.has_backing != (backing != NULL))
		goto fail;
	if (backing != NULL && q->h.backing_format[0] != '\0' &&
	    strcmp(q->h.backing_format, backing_format == BLK_IMAGE_QCOW2 ?
	    "qcow2" : "raw") != 0)
		goto fail;
	q->fd = fd;
	q->cluster_bits = q->h.cluster_bits;
	q->cs = 1ULL << q->cluster_bits;
	q->l2_bits = q->cluster_bits - 3;
	q->refcount_bits = 1U << q->h.refcount_order;
	q->rb_bits = q->cluster_bits + 3 - q->h.refcount_order;
	q->csize_shift = 62 - (q->cluster_bits - 8);
	q->csize_mask = (1ULL << (q->cluster_bits - 8)) - 1;
	q->coffset_mask = (1ULL << q->csize_shift) - 1;
	if ((ret = qcow2_cache_init(&q->l2c, q->cs)) < 0 ||
	    (ret = qcow2_cache_init(&q->rbc, q->cs)) < 0)
		goto fail;
	ret = -ENOMEM;
	if ((q->zero = calloc(1, q->cs)) == NULL)
		goto fail;
	if ((ret = qcow2_open_tables(q)) < 0)
		goto fail;
	/* "autoclear_features": cleared before the first write. */
	if (!readonly && q->h.version == 3 && q->h.autoclear != 0) {
		if ((ret = qcow2_pwrite(q, zero, sizeof(zero),
		    QCOW2_OFF_AUTOCLEAR)) < 0)
			goto fail;
		q->h.autoclear = 0;
	}
	q->img.ops = &qcow2_ops;
	q->img.size = q->h.size;
	q->img.readonly = readonly;
	q->img.backing = backing;
	*out = &q->img;
	return 0;
fail:
	qcow2_destroy(q);
	return ret;
}
