/*
 * An NBD export as a block backend (devices/virtio/blk-backend.h): any
 * NBD server (qemu-storage-daemon, nbdkit, qemu-nbd) over a connected
 * stream socket that someone else opened (the supervisor, with the
 * rights of the client who started the VM).
 *
 * One I/O thread per disk owns the socket: requests the device submits
 * are queued (submit never touches the network, so no vCPU ever waits
 * on it), sent pipelined with a handle each, and completed as their
 * replies arrive, in any order.  The thread sleeps in poll() while
 * nothing is in flight: an idle disk costs no wake-ups.
 *
 * A lost connection (end of stream, a socket error, a protocol error,
 * or a server silent for timeout_ms with requests in flight) is retried
 * through the config's connect(): every request in flight is sent
 * again on the new connection.  Requests that wait longer than retry_ms
 * for one fail with -EIO; the backend then stays failed, costing
 * nothing, until the next request tries again.  So the guest sees an
 * I/O error after a bounded time, never a hung disk, and carries on
 * once the server is back.
 */
#ifndef VMMD_BLK_NBD_H
#define VMMD_BLK_NBD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blk-backend.h"
#include "nbd-proto.h"

#define BLK_NBD_SLOTS		64	/* requests in flight at most */
#define BLK_NBD_RETRY_MS	10000
#define BLK_NBD_TIMEOUT_MS	30000

struct blk_nbd;

struct blk_nbd_config {
	const char *export;	/* "" for the server's default */
	bool readonly;		/* even if the export is writable */
	const char *serial;	/* or NULL */
	unsigned int retry_ms;	/* 0: BLK_NBD_RETRY_MS */
	unsigned int timeout_ms; /* 0: BLK_NBD_TIMEOUT_MS; also bounds a
				  * handshake */
	/*
	 * A new connected stream to the same server: a descriptor
	 * (CLOEXEC) or -errno.  Called on the I/O thread; it may block,
	 * for a bounded time of its own.  NULL: a lost connection is
	 * not retried.
	 */
	int (*connect)(void *arg);
	void *connect_arg;
};

enum blk_nbd_state {
	BLK_NBD_CONNECTED,
	BLK_NBD_RECONNECTING,	/* lost; requests wait for a new one */
	BLK_NBD_FAILED,		/* gave up; the next request retries */
};

struct blk_nbd_stats {
	enum blk_nbd_state state;
	uint64_t reads, writes, flushes, discards, zeroes; /* completed */
	uint64_t read_bytes, written_bytes;
	uint64_t errors;	/* requests failed */
	uint64_t disconnects;	/* connections lost */
	uint64_t reconnects;	/* connections made again */
	uint64_t size;
	uint16_t flags;		/* the export's NBD_FLAG_* */
	bool structured;
};

/*
 * The handshake on fd (a connected stream socket; the backend owns it
 * from now on, whatever the result), bounded by cfg's timeout_ms, then
 * the I/O thread started.  0 and be filled; or -errno with err (errlen
 * bytes) saying why.  cfg's strings are copied.
 */
int blk_nbd_new(struct blk_nbd **out, int fd, const struct blk_nbd_config *cfg,
    struct blk_backend *be, char *err, size_t errlen);
/* The state and figures.  Any thread. */
void blk_nbd_stats(struct blk_nbd *n, struct blk_nbd_stats *st);
const char *blk_nbd_state_name(enum blk_nbd_state s);
/* Drains (requests complete or fail), stops the thread.  NULL is fine. */
void blk_nbd_free(struct blk_nbd *n);

#endif
