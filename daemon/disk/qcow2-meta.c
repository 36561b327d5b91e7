/*
 * How the qcow2 layer's files write metadata and mark damage (see
 * qcow2-priv.h): below both the mapping (blk-qcow2.c) and the refcounts
 * (qcow2-refcount.c, which the mapping calls and which calls nothing of
 * it back).
 */
#include <errno.h>
#include <sys/uio.h>

#include "blk-raw.h"
#include "qcow2-priv.h"

int
qcow2_damage(struct qcow2 *q, const char *what)
{
	const char *none = NULL;

	__atomic_compare_exchange_n(&q->damage, &none, what, false,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	__atomic_store_n(&q->broken, true, __ATOMIC_RELEASE);
	return -EIO;
}

int
qcow2_pwrite(struct qcow2 *q, const void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { (void *)buf, len };
	int ret;

	if ((ret = blk_raw_rw(q->fd, &iov, 1, off, true)) < 0)
		qcow2_damage(q, "a metadata write failed");
	return ret;
}
