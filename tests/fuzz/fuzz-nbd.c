/*
 * libFuzzer: what an NBD server sends, as the client parses it
 * (daemon/disk/nbd-proto.c): the handshake, or the replies to requests
 * in flight.
 *
 * Input: a flags byte, then the server's bytes.
 *   flags bit 0: the handshake (nbd_handshake() reading the bytes, what
 *                it writes dropped); else replies (nbd_rx_feed())
 *   flags bit 1: structured replies were negotiated
 *   flags bits 2-7: the replies are fed in pieces of that many bytes
 *                plus one (1 to 64), to cross every state boundary
 * The replies answer four requests in flight, handles 1 to 4 (the first
 * and third reads, the others not): each of 1, 512, 4096 or 0 bytes as
 * the second input byte picks, into a buffer of exactly its length
 * (ASan sees any byte written past it), at an offset the third byte
 * picks.  Besides not crashing: a request is
 * completed at most once, never looked up once done, and the parser,
 * once failed, stays failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nbd-proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_src {
	const uint8_t *p;
	size_t left;
};

static int
fuzz_read(void *arg, void *buf, size_t len)
{
	struct fuzz_src *s = arg;

	if (len > s->left)
		return -ECONNRESET;
	memcpy(buf, s->p, len);
	s->p += len;
	s->left -= len;
	return 0;
}

static int
fuzz_write(void *arg, const void *buf, size_t len)
{
	(void)arg;
	(void)buf;
	(void)len;
	return 0;
}

#define NREQ	4

struct fuzz_reqs {
	struct nbd_rx_req req[NREQ];
	struct iovec iov[NREQ][2];
	uint8_t *buf[NREQ];
	int done[NREQ];
};

static struct nbd_rx_req *
fuzz_lookup(void *arg, uint64_t handle)
{
	struct fuzz_reqs *r = arg;

	if (handle < 1 || handle > NREQ || r->done[handle - 1])
		return NULL;
	return &r->req[handle - 1];
}

static void
fuzz_done(void *arg, uint64_t handle, struct nbd_rx_req *req, int result)
{
	struct fuzz_reqs *r = arg;

	if (handle < 1 || handle > NREQ || req != &r->req[handle - 1] ||
	    r->done[handle - 1]++ != 0 || result > 0)
		abort();
}

static const struct nbd_rx_ops fuzz_ops = {
	.lookup = fuzz_lookup,
	.done = fuzz_done,
};

static void
fuzz_handshake(const uint8_t *data, size_t size)
{
	struct fuzz_src s = { data, size };
	struct nbd_io io = { fuzz_read, fuzz_write, &s };
	struct nbd_export ex;
	char err[256];

	if (nbd_handshake(&io, "export", &ex, err, sizeof(err)) == 0 &&
	    (ex.min_block == 0 || ex.max_payload < ex.min_block ||
	    ex.max_payload > NBD_DEFAULT_MAX_PAYLOAD ||
	    ex.size % ex.min_block != 0))
		abort();
	if (memchr(err, '\0', sizeof(err)) == NULL)
		abort();
}

static void
fuzz_replies(uint8_t flags, const uint8_t *data, size_t size)
{
	static const uint32_t lens[4] = { 1, 512, 4096, 0 };
	struct fuzz_reqs r = { 0 };
	struct nbd_rx rx;
	size_t piece = (flags >> 2) + 1, k;
	uint8_t pick = size > 0 ? data[0] : 0;
	uint8_t at = size > 1 ? data[1] : 0;
	int ret = 0;

	data += size > 2 ? 2 : size;
	size -= size > 2 ? 2 : size;
	for (int i = 0; i < NREQ; i++) {
		uint32_t len = lens[(pick >> (2 * i)) & 3];

		/* Requests 1 and 3 are reads; 2 and 4 writes or flushes. */
		r.buf[i] = malloc(len > 0 ? len : 1);
		if (len > 1) {
			r.iov[i][0] = (struct iovec){ r.buf[i], len / 3 };
			r.iov[i][1] = (struct iovec){ r.buf[i] + len / 3,
			    len - len / 3 };
		} else
			r.iov[i][0] = (struct iovec){ r.buf[i], len };
		r.req[i] = (struct nbd_rx_req){
			.offset = (uint64_t)((at >> (2 * i)) & 3) << 9,
			.len = len, .iov = r.iov[i], .niov = len > 1 ? 2 : 1,
			.read = i % 2 == 0,
		};
	}
	nbd_rx_init(&rx, &fuzz_ops, &r, flags & 2);
	while (size > 0) {
		k = piece < size ? piece : size;
		ret = nbd_rx_feed(&rx, data, k);
		if (ret < 0 && ret != -EPROTO)
			abort();
		if (ret < 0)
			break;
		data += k;
		size -= k;
	}
	/* Once failed, failed. */
	if (ret < 0 && (nbd_rx_feed(&rx, (const uint8_t *)"x", 1) != -EPROTO ||
	    nbd_rx_idle(&rx)))
		abort();
	for (int i = 0; i < NREQ; i++)
		free(r.buf[i]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_handshake(data + 1, size - 1);
	else
		fuzz_replies(data[0], data + 1, size - 1);
	return 0;
}
