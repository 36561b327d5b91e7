/*
 * A Ceph RBD image as a block backend (devices/virtio/blk-backend.h),
 * through librbd's asynchronous calls.
 *
 * submit() hands the request to librbd (rbd_aio_readv, _writev, _flush,
 * _discard, _write_zeroes) and returns: librbd queues it and talks to
 * the cluster on threads of its own, so no vCPU ever waits on the
 * network.  librbd calls back on its completion thread, which completes
 * the request (blk_io.done) as the file and NBD backends' own threads
 * do; that thread is this backend's "backend thread".
 *
 * Flush is rbd_aio_flush: every write completed before it is
 * acknowledged by every replica of its object, stable in the cluster
 * (librbd's cache is turned off, so a completed write is already on
 * the OSDs, and a flush is the ordering point the guest asked for).
 *
 * Nothing here opens a file by name that the caller did not give:
 * the configuration and the keyring are paths the caller chose (the
 * worker gives /proc/self/fd/N, descriptors the supervisor opened with
 * the starting client's rights); the admin socket and log files librados
 * would otherwise make are turned off.
 *
 * A lost cluster (monitors or OSDs unreachable) fails requests with
 * -EIO once librados' operation timeout (timeout_ms) has passed: the
 * guest sees an I/O error after a bounded time, never a hung disk, and
 * carries on once the cluster is back (librados keeps reconnecting).
 *
 * Fencing: with lock set, the image's exclusive lock is taken at open
 * and held until blk_rbd_free() (librbd keeps it across reconnects).
 * Another client then cannot write (its writes fail with -EROFS) nor
 * take the lock; if its holder is a client that died or was cut off,
 * break_lock takes it from it and blocklists it in the cluster, so it
 * can never write again even if it comes back.  Read-only images never
 * lock.
 */
#ifndef VMMD_BLK_RBD_H
#define VMMD_BLK_RBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk-backend.h"

#define BLK_RBD_TIMEOUT_MS	30000
/*
 * The threads one open image runs at most, for a sandbox's task limit:
 * librados' messenger, timers and finishers, librbd's work queues.
 * Measured 15 after the open, 16 after I/O (Ceph 16.2); twice that.
 */
#define BLK_RBD_THREADS		32

struct blk_rbd;

struct blk_rbd_config {
	const char *pool;
	const char *image;
	const char *snap;	/* or NULL: the image's head; read-only */
	const char *id;		/* the cephx user without "client.";
				 * NULL: "admin" */
	const char *conf;	/* a ceph.conf to read; NULL: none */
	const char *keyring;	/* NULL: none (auth none, or a key in
				 * conf's "key") */
	/*
	 * Settings applied after conf ("mon_host", ...): NULL-terminated
	 * pairs of name and value, or NULL.
	 */
	const char *const *set;
	bool readonly;		/* even if the image is writable */
	bool lock;		/* take the exclusive lock (not readonly) */
	bool break_lock;	/* lock: take it from a holder, blocklisted */
	const char *serial;	/* or NULL */
	unsigned int timeout_ms; /* 0: BLK_RBD_TIMEOUT_MS */
};

enum blk_rbd_state {
	BLK_RBD_CONNECTED,
	BLK_RBD_FAILED,		/* a request timed out or the client was
				 * blocklisted; the next one tries again */
};

struct blk_rbd_stats {
	enum blk_rbd_state state;
	uint64_t reads, writes, flushes, discards, zeroes; /* completed */
	uint64_t read_bytes, written_bytes;
	uint64_t errors;	/* requests failed */
	uint64_t inflight;
	uint64_t size;
	bool locked;		/* holds the exclusive lock */
	char client[32];	/* this client's name in the cluster,
				 * "client.4135" */
};

/*
 * Connect to the cluster, open pool/image (at snap), take its lock if
 * asked.  0 and be filled; or -errno with err (errlen bytes) saying why.
 * A lock another client holds is -EBUSY, err naming the holder (its
 * "client.N" and address).  cfg's strings are copied where kept.
 * Blocks for up to timeout_ms a step: before the guest runs.
 */
int blk_rbd_new(struct blk_rbd **out, const struct blk_rbd_config *cfg,
    struct blk_backend *be, char *err, size_t errlen);
/* The state and figures.  Any thread. */
void blk_rbd_stats(struct blk_rbd *r, struct blk_rbd_stats *st);
const char *blk_rbd_state_name(enum blk_rbd_state s);
/*
 * Drains (requests complete or fail), releases the lock, closes the
 * image and the connection.  NULL is fine.
 */
void blk_rbd_free(struct blk_rbd *r);

#endif
