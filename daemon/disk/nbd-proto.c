/* See nbd-proto.h.  The protocol: the NBD project's doc/proto.md. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nbd-proto.h"

#define NBD_MAGIC		0x4e42444d41474943ULL	/* "NBDMAGIC" */
#define NBD_IHAVEOPT		0x49484156454f5054ULL	/* "IHAVEOPT" */
#define NBD_OLDSTYLE_MAGIC	0x0000420281861253ULL
#define NBD_REP_MAGIC		0x0003e889045565a9ULL
#define NBD_REQUEST_MAGIC	0x25609513u
#define NBD_SIMPLE_MAGIC	0x67446698u
#define NBD_STRUCTURED_MAGIC	0x668e33efu

#define NBD_FLAG_FIXED_NEWSTYLE	(1u << 0)
#define NBD_FLAG_NO_ZEROES	(1u << 1)

#define NBD_OPT_GO		7
#define NBD_OPT_STRUCTURED_REPLY 8
#define NBD_REP_ACK		1
#define NBD_REP_INFO		3
#define NBD_REP_FLAG_ERROR	(1u << 31)
#define NBD_REP_ERR_UNSUP	(NBD_REP_FLAG_ERROR | 1)
#define NBD_REP_ERR_POLICY	(NBD_REP_FLAG_ERROR | 2)
#define NBD_REP_ERR_UNKNOWN	(NBD_REP_FLAG_ERROR | 6)
#define NBD_INFO_EXPORT		0
#define NBD_INFO_BLOCK_SIZE	3

#define NBD_REPLY_FLAG_DONE	(1u << 0)
#define NBD_REPLY_TYPE_NONE	0
#define NBD_REPLY_TYPE_OFFSET_DATA 1
#define NBD_REPLY_TYPE_OFFSET_HOLE 2
#define NBD_REPLY_TYPE_ERROR	0x8001
#define NBD_REPLY_TYPE_ERROR_OFFSET 0x8002

/* An option reply's data longer than this is no server's we talk to. */
#define NBD_OPT_REPLY_MAX	(64u << 10)

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static void
put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v & 0xffffffffu);
}

int
nbd_errno(uint32_t err)
{
	switch (err) {
	case 1:
		return -EPERM;
	case 5:
		return -EIO;
	case 12:
		return -ENOMEM;
	case 22:
		return -EINVAL;
	case 28:
		return -ENOSPC;
	case 75:
		return -EOVERFLOW;
	case 95:
		return -ENOTSUP;
	case 108:
		return -ESHUTDOWN;
	}
	return -EIO;
}

/* ---- The handshake ---- */

static int
nbd_send_opt(const struct nbd_io *io, uint32_t opt, const void *data,
    uint32_t len)
{
	uint8_t h[16];
	int ret;

	put64(h, NBD_IHAVEOPT);
	put32(h + 8, opt);
	put32(h + 12, len);
	if ((ret = io->write(io->arg, h, sizeof(h))) < 0)
		return ret;
	return len > 0 ? io->write(io->arg, data, len) : 0;
}

/*
 * One option reply to opt: its type, and its data's first datalen bytes
 * in data (the rest read and dropped); *len the data's length.
 */
static int
nbd_recv_rep(const struct nbd_io *io, uint32_t opt, uint32_t *type,
    uint8_t *data, size_t datalen, uint32_t *len, char *err,
    size_t errlen)
{
	uint8_t h[20], sink[256];
	uint32_t n, left;
	int ret;

	if ((ret = io->read(io->arg, h, sizeof(h))) < 0)
		return ret;
	*type = get32(h + 12);
	*len = n = get32(h + 16);
	if (get64(h) != NBD_REP_MAGIC || get32(h + 8) != opt ||
	    n > NBD_OPT_REPLY_MAX) {
		snprintf(err, errlen, "not an option reply to option %u", opt);
		return -EPROTO;
	}
	left = n;
	if (datalen > 0) {
		uint32_t k = left < datalen ? left : (uint32_t)datalen;

		if ((ret = io->read(io->arg, data, k)) < 0)
			return ret;
		left -= k;
	}
	while (left > 0) {
		uint32_t k = left < sizeof(sink) ? left : sizeof(sink);

		if ((ret = io->read(io->arg, sink, k)) < 0)
			return ret;
		left -= k;
	}
	return 0;
}

static bool
pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* An NBD_REP_INFO's data (len bytes): what it says of the export. */
static int
nbd_info(const uint8_t *d, uint32_t len, struct nbd_export *ex,
    bool *have_export, char *err, size_t errlen)
{
	if (len < 2)
		goto bad;
	switch (get16(d)) {
	case NBD_INFO_EXPORT:
		if (len != 12)
			goto bad;
		ex->size = get64(d + 2);
		ex->flags = get16(d + 10);
		*have_export = true;
		return 0;
	case NBD_INFO_BLOCK_SIZE:
		if (len != 14)
			goto bad;
		ex->min_block = get32(d + 2);
		ex->pref_block = get32(d + 6);
		ex->max_payload = get32(d + 10);
		/* The protocol's own limits on the three. */
		if (!pow2(ex->min_block) || ex->min_block > 65536 ||
		    !pow2(ex->pref_block) || ex->pref_block < ex->min_block ||
		    ex->max_payload < ex->min_block) {
			snprintf(err, errlen, "block sizes %u/%u/%u out of "
			    "bounds", ex->min_block, ex->pref_block,
			    ex->max_payload);
			return -EPROTO;
		}
		if (ex->max_payload > NBD_DEFAULT_MAX_PAYLOAD)
			ex->max_payload = NBD_DEFAULT_MAX_PAYLOAD;
		return 0;
	}
	return 0;		/* an information we did not ask for */
bad:
	snprintf(err, errlen, "a malformed NBD_REP_INFO");
	return -EPROTO;
}

int
nbd_handshake(const struct nbd_io *io, const char *export,
    struct nbd_export *ex, char *err, size_t errlen)
{
	uint8_t g[18], d[NBD_EXPORT_MAX + 8], cf[4];
	bool have_export = false;
	uint32_t type, len, flags;
	size_t nlen = strlen(export);
	int ret;

	snprintf(err, errlen, "the connection failed");
	if (nlen > NBD_EXPORT_MAX) {
		snprintf(err, errlen, "export name too long");
		return -ENAMETOOLONG;
	}
	memset(ex, 0, sizeof(*ex));
	ex->min_block = 1;
	ex->pref_block = 4096;
	ex->max_payload = NBD_DEFAULT_MAX_PAYLOAD;
	if ((ret = io->read(io->arg, g, 16)) < 0)
		return ret;
	if (get64(g) != NBD_MAGIC) {
		snprintf(err, errlen, "not an NBD server");
		return -EPROTO;
	}
	if (get64(g + 8) != NBD_IHAVEOPT) {
		snprintf(err, errlen, get64(g + 8) == NBD_OLDSTYLE_MAGIC ?
		    "an oldstyle NBD server" : "not an NBD server");
		return get64(g + 8) == NBD_OLDSTYLE_MAGIC ? -ENOTSUP : -EPROTO;
	}
	if ((ret = io->read(io->arg, g + 16, 2)) < 0)
		return ret;
	flags = get16(g + 16);
	if (!(flags & NBD_FLAG_FIXED_NEWSTYLE)) {
		snprintf(err, errlen, "not a fixed newstyle NBD server");
		return -ENOTSUP;
	}
	put32(cf, NBD_FLAG_FIXED_NEWSTYLE | (flags & NBD_FLAG_NO_ZEROES));
	if ((ret = io->write(io->arg, cf, sizeof(cf))) < 0)
		return ret;

	if ((ret = nbd_send_opt(io, NBD_OPT_STRUCTURED_REPLY, NULL, 0)) < 0 ||
	    (ret = nbd_recv_rep(io, NBD_OPT_STRUCTURED_REPLY, &type, NULL, 0,
	    &len, err, errlen)) < 0)
		return ret;
	if (type == NBD_REP_ACK && len == 0)
		ex->structured = true;
	else if (!(type & NBD_REP_FLAG_ERROR)) {
		snprintf(err, errlen, "reply %#x to NBD_OPT_STRUCTURED_REPLY",
		    type);
		return -EPROTO;
	}

	/* NBD_OPT_GO: the name, then one information asked for. */
	put32(d, (uint32_t)nlen);
	memcpy(d + 4, export, nlen);
	put16(d + 4 + nlen, 1);
	put16(d + 6 + nlen, NBD_INFO_BLOCK_SIZE);
	if ((ret = nbd_send_opt(io, NBD_OPT_GO, d, (uint32_t)nlen + 8)) < 0)
		return ret;
	for (;;) {
		if ((ret = nbd_recv_rep(io, NBD_OPT_GO, &type, d,
		    sizeof(d) - 1, &len, err, errlen)) < 0)
			return ret;
		if (type == NBD_REP_INFO) {
			if (len > sizeof(d) - 1)
				len = sizeof(d) - 1;
			if ((ret = nbd_info(d, len, ex, &have_export, err,
			    errlen)) < 0)
				return ret;
			continue;
		}
		if (type == NBD_REP_ACK)
			break;
		if (!(type & NBD_REP_FLAG_ERROR)) {
			snprintf(err, errlen, "reply %#x to NBD_OPT_GO", type);
			return -EPROTO;
		}
		/* The server's message, if printable enough to quote. */
		d[len < sizeof(d) - 1 ? len : sizeof(d) - 1] = '\0';
		for (uint32_t i = 0; d[i] != '\0'; i++)
			if (d[i] < 0x20 || d[i] > 0x7e)
				d[i] = '?';
		snprintf(err, errlen, "the server refused export \"%.64s\"%s%.200s",
		    export, d[0] != '\0' ? ": " : "", (char *)d);
		return type == NBD_REP_ERR_UNKNOWN ? -ENOENT :
		    type == NBD_REP_ERR_POLICY ? -EACCES :
		    type == NBD_REP_ERR_UNSUP ? -ENOTSUP : -EIO;
	}
	if (!have_export) {
		snprintf(err, errlen, "NBD_OPT_GO ended without the export's "
		    "size");
		return -EPROTO;
	}
	if (ex->size % ex->min_block != 0 ||
	    ex->size > (uint64_t)INT64_MAX) {
		snprintf(err, errlen, "export size %llu out of bounds",
		    (unsigned long long)ex->size);
		return -EPROTO;
	}
	snprintf(err, errlen, "connected");
	return 0;
}

/* ---- Transmission ---- */

void
nbd_encode_request(uint8_t buf[NBD_REQUEST_SIZE], uint16_t flags,
    uint16_t type, uint64_t handle, uint64_t offset, uint32_t len)
{
	put32(buf, NBD_REQUEST_MAGIC);
	put16(buf + 4, flags);
	put16(buf + 6, type);
	put64(buf + 8, handle);
	put64(buf + 16, offset);
	put32(buf + 24, len);
}

enum {
	RX_MAGIC,	/* reading a reply's first 4 bytes */
	RX_HEADER,	/* the rest of its header */
	RX_FIXED,	/* a structured chunk's fixed fields */
	RX_DATA,	/* a read's data, into its request */
	RX_SKIP,	/* bytes to drop (an error chunk's message) */
	RX_FAILED,
};

void
nbd_rx_init(struct nbd_rx *rx, const struct nbd_rx_ops *ops, void *arg,
    bool structured)
{
	memset(rx, 0, sizeof(*rx));
	rx->ops = ops;
	rx->arg = arg;
	rx->structured = structured;
	rx->state = RX_MAGIC;
	rx->need = 4;
}

bool
nbd_rx_idle(const struct nbd_rx *rx)
{
	return rx->state == RX_MAGIC && rx->have == 0;
}

/* n bytes of src (NULL: zeroes) into req's buffers at pos. */
static void
nbd_rx_copy(const struct nbd_rx_req *req, uint64_t pos, const uint8_t *src,
    size_t n)
{
	for (unsigned int i = 0; i < req->niov && n > 0; i++) {
		size_t l = req->iov[i].iov_len, k;

		if (pos >= l) {
			pos -= l;
			continue;
		}
		k = l - pos < n ? l - pos : n;
		if (src != NULL) {
			memcpy((uint8_t *)req->iov[i].iov_base + pos, src, k);
			src += k;
		} else
			memset((uint8_t *)req->iov[i].iov_base + pos, 0, k);
		n -= k;
		pos = 0;
	}
}

/* The request's replies are over. */
static void
nbd_rx_finish(struct nbd_rx *rx)
{
	struct nbd_rx_req *req = rx->req;
	int result = req->error;

	/* A read without error covers its whole range (non-overlapping). */
	if (result == 0 && req->read && rx->structured && req->got != req->len)
		result = -EIO;
	rx->req = NULL;
	rx->ops->done(rx->arg, rx->handle, req, result);
}

/* Back to waiting for a reply; the request done if the chunk said so. */
static void
nbd_rx_next(struct nbd_rx *rx, bool done)
{
	if (done)
		nbd_rx_finish(rx);
	rx->req = NULL;
	rx->state = RX_MAGIC;
	rx->have = 0;
	rx->need = 4;
}

static int
nbd_rx_fail(struct nbd_rx *rx)
{
	rx->state = RX_FAILED;
	return -EPROTO;
}

/* A range [off, off + n) of a reply inside its request's, as pos. */
static int
nbd_rx_range(const struct nbd_rx_req *req, uint64_t off, uint64_t n,
    uint64_t *pos)
{
	if (off < req->offset || off - req->offset > req->len ||
	    n > req->len - (off - req->offset))
		return -EPROTO;
	*pos = off - req->offset;
	return 0;
}

/* The header (or a chunk's fixed fields) is complete: what next. */
static int
nbd_rx_parsed(struct nbd_rx *rx)
{
	const uint8_t *h = rx->hdr;
	uint32_t magic, err, n;
	uint16_t mlen;
	bool done;

	switch (rx->state) {
	case RX_MAGIC:
		magic = get32(h);
		if (magic == NBD_SIMPLE_MAGIC)
			rx->need = 16;
		else if (magic == NBD_STRUCTURED_MAGIC && rx->structured)
			rx->need = 20;
		else
			return nbd_rx_fail(rx);
		rx->state = RX_HEADER;
		return 0;
	case RX_HEADER:
		rx->handle = get64(h + 8);
		rx->req = rx->ops->lookup(rx->arg, rx->handle);
		if (rx->req == NULL)
			return nbd_rx_fail(rx);
		if (rx->need == 16) {
			/* A simple reply: the error, then a read's data. */
			err = get32(h + 4);
			if (err != 0) {
				rx->req->error = nbd_errno(err);
				nbd_rx_next(rx, true);
			} else if (rx->req->read && rx->req->len > 0) {
				rx->state = RX_DATA;
				rx->pos = 0;
				rx->left = rx->req->len;
				rx->length = 0;
				rx->flags = NBD_REPLY_FLAG_DONE;
				rx->req->got = rx->req->len;
			} else
				nbd_rx_next(rx, true);
			return 0;
		}
		rx->flags = get16(h + 4);
		rx->type = get16(h + 6);
		rx->length = get32(h + 16);
		done = rx->flags & NBD_REPLY_FLAG_DONE;
		switch (rx->type) {
		case NBD_REPLY_TYPE_NONE:
			if (rx->length != 0 || !done)
				return nbd_rx_fail(rx);
			nbd_rx_next(rx, true);
			return 0;
		case NBD_REPLY_TYPE_OFFSET_DATA:
			if (!rx->req->read || rx->length <= 8)
				return nbd_rx_fail(rx);
			rx->need = 8;
			break;
		case NBD_REPLY_TYPE_OFFSET_HOLE:
			if (!rx->req->read || rx->length != 12)
				return nbd_rx_fail(rx);
			rx->need = 12;
			break;
		default:
			/* Errors, known or not, carry a code and message. */
			if (!(rx->type & 0x8000) || rx->length < 6)
				return nbd_rx_fail(rx);
			rx->need = 6;
			break;
		}
		rx->state = RX_FIXED;
		rx->have = 0;
		return 0;
	case RX_FIXED:
		done = rx->flags & NBD_REPLY_FLAG_DONE;
		switch (rx->type) {
		case NBD_REPLY_TYPE_OFFSET_DATA:
			rx->left = rx->length - 8;
			if (nbd_rx_range(rx->req, get64(h), rx->left,
			    &rx->pos) < 0)
				return nbd_rx_fail(rx);
			rx->req->got += rx->left;
			rx->length = 0;
			rx->state = RX_DATA;
			return 0;
		case NBD_REPLY_TYPE_OFFSET_HOLE:
			n = get32(h + 8);
			if (n == 0 || nbd_rx_range(rx->req, get64(h), n,
			    &rx->pos) < 0)
				return nbd_rx_fail(rx);
			nbd_rx_copy(rx->req, rx->pos, NULL, n);
			rx->req->got += n;
			nbd_rx_next(rx, done);
			return 0;
		}
		err = get32(h);
		mlen = get16(h + 4);
		if (err == 0)
			return nbd_rx_fail(rx);
		if (rx->type == NBD_REPLY_TYPE_ERROR &&
		    rx->length != 6u + mlen)
			return nbd_rx_fail(rx);
		if (rx->type == NBD_REPLY_TYPE_ERROR_OFFSET &&
		    rx->length != 14u + mlen)
			return nbd_rx_fail(rx);
		if (rx->req->error == 0)
			rx->req->error = nbd_errno(err);
		rx->skip = rx->length - 6;
		if (rx->skip == 0)
			nbd_rx_next(rx, done);
		else
			rx->state = RX_SKIP;
		return 0;
	}
	return nbd_rx_fail(rx);
}

int
nbd_rx_feed(struct nbd_rx *rx, const uint8_t *buf, size_t len)
{
	size_t k;
	int ret;

	while (len > 0) {
		switch (rx->state) {
		case RX_FAILED:
			return -EPROTO;
		case RX_DATA:
			k = rx->left < len ? (size_t)rx->left : len;
			nbd_rx_copy(rx->req, rx->pos, buf, k);
			rx->pos += k;
			rx->left -= k;
			buf += k;
			len -= k;
			if (rx->left == 0)
				nbd_rx_next(rx, rx->flags & NBD_REPLY_FLAG_DONE);
			continue;
		case RX_SKIP:
			k = rx->skip < len ? rx->skip : len;
			rx->skip -= (uint32_t)k;
			buf += k;
			len -= k;
			if (rx->skip == 0)
				nbd_rx_next(rx, rx->flags & NBD_REPLY_FLAG_DONE);
			continue;
		}
		/* RX_MAGIC, RX_HEADER, RX_FIXED: fill hdr up to need. */
		k = rx->need - rx->have < len ? rx->need - rx->have : len;
		memcpy(rx->hdr + rx->have, buf, k);
		rx->have += k;
		buf += k;
		len -= k;
		if (rx->have < rx->need)
			continue;
		if ((ret = nbd_rx_parsed(rx)) < 0)
			return ret;
	}
	return rx->state == RX_FAILED ? -EPROTO : 0;
}
