/*
 * The NBD protocol's client side, without a socket of its own: the
 * fixed newstyle handshake over caller-given read and write functions,
 * the encoding of transmission requests, and the parser of the
 * server's replies (simple and structured) as a byte-fed state machine.
 * Everything a server sends is taken as hostile: every length, offset
 * and handle is checked before it moves a byte.
 *
 * Written here rather than taken from a library: Debian 12's one C
 * client, libnbd (1.14), would bring GnuTLS and libxml2 into the
 * sandboxed worker and a handle state machine of its own to drive,
 * where the worker needs few of its features (the fixed newstyle
 * handshake, five commands, the reply parser) on a descriptor the
 * supervisor connected, its own I/O thread deciding every system call
 * the sandbox must allow and when to ask for a new connection.
 *
 * Pure: no threads, no logging, no globals; errors as -errno.
 */
#ifndef VMMD_NBD_PROTO_H
#define VMMD_NBD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define NBD_DEFAULT_PORT	10809
#define NBD_EXPORT_MAX		4096	/* the protocol's limit on a name */

/* Transmission flags (the export's, from NBD_INFO_EXPORT). */
#define NBD_FLAG_HAS_FLAGS		(1u << 0)
#define NBD_FLAG_READ_ONLY		(1u << 1)
#define NBD_FLAG_SEND_FLUSH		(1u << 2)
#define NBD_FLAG_SEND_FUA		(1u << 3)
#define NBD_FLAG_SEND_TRIM		(1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES	(1u << 6)

/* Commands and their flags. */
#define NBD_CMD_READ		0
#define NBD_CMD_WRITE		1
#define NBD_CMD_DISC		2
#define NBD_CMD_FLUSH		3
#define NBD_CMD_TRIM		4
#define NBD_CMD_WRITE_ZEROES	6
#define NBD_CMD_FLAG_NO_HOLE	(1u << 1)

#define NBD_REQUEST_SIZE	28
/* The most one request moves when the server names no maximum. */
#define NBD_DEFAULT_MAX_PAYLOAD	(32u << 20)

/* What the handshake learned of the export. */
struct nbd_export {
	uint64_t size;		/* bytes */
	uint16_t flags;		/* NBD_FLAG_* */
	bool structured;	/* structured replies negotiated */
	uint32_t min_block;	/* 1 when the server names none */
	uint32_t pref_block;
	uint32_t max_payload;	/* NBD_DEFAULT_MAX_PAYLOAD when none named */
};

/*
 * The handshake's transport: read exactly len bytes, or write them,
 * returning 0 or -errno (-ECONNRESET at end of stream).  The caller
 * bounds the time either takes.
 */
struct nbd_io {
	int (*read)(void *arg, void *buf, size_t len);
	int (*write)(void *arg, const void *buf, size_t len);
	void *arg;
};

/*
 * The fixed newstyle handshake for export (NUL-terminated, "" for the
 * server's default): structured replies asked for, then NBD_OPT_GO with
 * NBD_INFO_BLOCK_SIZE.  0 and *ex filled; -EPROTO for a server that
 * breaks the protocol, -ENOENT for an export it refuses, -ENOTSUP for
 * one that is not fixed newstyle or lacks NBD_OPT_GO, or the transport's
 * error.  err (errlen bytes) says why in words.
 */
int nbd_handshake(const struct nbd_io *io, const char *export,
    struct nbd_export *ex, char *err, size_t errlen);

/* A transmission request's 28 bytes. */
void nbd_encode_request(uint8_t buf[NBD_REQUEST_SIZE], uint16_t flags,
    uint16_t type, uint64_t handle, uint64_t offset, uint32_t len);

/*
 * One request as the reply parser sees it, owned by the caller: where
 * a read's data go, and what its replies brought so far.
 */
struct nbd_rx_req {
	uint64_t offset, len;
	const struct iovec *iov;	/* a read's destination, len bytes */
	unsigned int niov;
	bool read;
	uint64_t got;		/* data and hole bytes so far */
	int error;		/* the first error a reply named, -errno */
};

struct nbd_rx_ops {
	/* The request in flight under handle, or NULL: not one of ours. */
	struct nbd_rx_req *(*lookup)(void *arg, uint64_t handle);
	/*
	 * The request's last reply arrived: result 0 or -errno.  The
	 * parser forgets the request before the call.
	 */
	void (*done)(void *arg, uint64_t handle, struct nbd_rx_req *req,
	    int result);
};

/* The reply parser's state: see nbd_rx_feed(). */
struct nbd_rx {
	const struct nbd_rx_ops *ops;
	void *arg;		/* the ops' */
	bool structured;	/* structured replies were negotiated */
	int state;
	uint8_t hdr[32];	/* a header, then a chunk's fixed fields */
	size_t have, need;
	struct nbd_rx_req *req;	/* the request being replied to */
	uint64_t handle;
	uint16_t flags, type;
	uint32_t length;	/* the chunk's payload left */
	uint64_t pos;		/* where in req the data being read go */
	uint64_t left;		/* data bytes left to read */
	uint32_t skip;		/* bytes to read and drop */
};

void nbd_rx_init(struct nbd_rx *rx, const struct nbd_rx_ops *ops, void *arg,
    bool structured);
/*
 * len bytes the server sent, in order: parsed, a read's data copied to
 * its request, requests completed through ops->done.  0, or -EPROTO
 * once the server broke the protocol (an unknown magic, handle or
 * chunk type, a length or offset outside its request): the connection
 * is then worthless, and the parser stays failed.
 */
int nbd_rx_feed(struct nbd_rx *rx, const uint8_t *buf, size_t len);
/* True between replies: no header or payload half read. */
bool nbd_rx_idle(const struct nbd_rx *rx);

/* An NBD error number as -errno; anything unknown is -EIO. */
int nbd_errno(uint32_t err);

#endif
