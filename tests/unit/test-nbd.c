/*
 * The NBD backend (daemon/disk/blk-nbd.c, nbd-proto.c) against servers
 * in this program, each a thread on one end of a socket pair over one
 * shared in-memory disk: the handshake (structured replies or simple
 * ones, refused exports, a peer that is no NBD server), reads, writes,
 * flushes, discards and zeroing pipelined and answered out of order, a
 * server that dies mid-request (the request completes on the next
 * connection), one that never comes back (the request fails after the
 * bounded retry, and the next one succeeds once it is back), one that
 * falls silent, and malformed replies (the connection is dropped, the
 * guest's buffers are never written out of bounds, no request hangs).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "blk-nbd.h"
#include "tap.h"

#define DISK		(1u << 20)
#define WAIT_S		60	/* a busy machine's bound on one request */

static uint8_t disk[DISK];
static pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;

enum bad {
	BAD_NONE,
	BAD_MAGIC,		/* a reply of no known magic */
	BAD_HANDLE,		/* a handle never sent */
	BAD_OFFSET,		/* data past the request's end */
	BAD_LENGTH,		/* a data chunk with no room for its offset */
	BAD_NONE_NOT_DONE,	/* NBD_REPLY_TYPE_NONE without DONE */
	BAD_ERROR_LEN,		/* an error chunk's message overruns it */
	BAD_ERROR_ZERO,		/* an error chunk naming no error */
	BAD_UNKNOWN_TYPE,	/* a chunk type never negotiated */
	BAD_HOLE_PAST,		/* a hole past the request's end */
	BAD_HUGE,		/* a chunk length near 4 GiB */
	BAD_COUNT,
};

struct srv {
	bool structured;	/* agrees to structured replies */
	uint16_t flags;		/* transmission flags beyond HAS_FLAGS */
	int die_at;		/* closes on receiving request n (from 1) */
	enum bad bad;		/* the first read's reply */
	bool silent;		/* reads requests, answers none */
	int reverse;		/* answers its first n in reverse order */
	uint32_t nbd_error;	/* every read fails with it */
	bool not_nbd;		/* greets as something else */
	const char *export;	/* the one name it serves */
	int fd;
};

static int
xread(int fd, void *buf, size_t len)
{
	ssize_t r;

	while (len > 0) {
		r = read(fd, buf, len);
		if (r <= 0)
			return -1;
		buf = (uint8_t *)buf + r;
		len -= (size_t)r;
	}
	return 0;
}

static int
xwrite(int fd, const void *buf, size_t len)
{
	ssize_t r;

	while (len > 0) {
		r = send(fd, buf, len, MSG_NOSIGNAL);
		if (r <= 0)
			return -1;
		buf = (const uint8_t *)buf + r;
		len -= (size_t)r;
	}
	return 0;
}

static void
p16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void
p32(uint8_t *p, uint32_t v)
{
	p16(p, v >> 16);
	p16(p + 2, v);
}

static void
p64(uint8_t *p, uint64_t v)
{
	p32(p, v >> 32);
	p32(p + 4, v);
}

static uint32_t
g32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint64_t
g64(const uint8_t *p)
{
	return (uint64_t)g32(p) << 32 | g32(p + 4);
}

static int
opt_reply(int fd, uint32_t opt, uint32_t type, const void *d, uint32_t len)
{
	uint8_t h[20];

	p64(h, 0x0003e889045565a9ULL);
	p32(h + 8, opt);
	p32(h + 12, type);
	p32(h + 16, len);
	return xwrite(fd, h, sizeof(h)) || (len && xwrite(fd, d, len)) ?
	    -1 : 0;
}

/* The fixed newstyle handshake, server side: 0 once transmitting. */
static int
srv_handshake(struct srv *s)
{
	uint8_t g[18], h[16], d[4200];
	uint32_t opt, len;

	memcpy(g, s->not_nbd ? "SSH-2.0-OpenSSH_" : "NBDMAGICIHAVEOPT", 16);
	p16(g + 16, 3);
	if (xwrite(s->fd, g, sizeof(g)) || xread(s->fd, d, 4))
		return -1;
	for (;;) {
		if (xread(s->fd, h, sizeof(h)))
			return -1;
		opt = g32(h + 8);
		len = g32(h + 12);
		if (len > sizeof(d) || xread(s->fd, d, len))
			return -1;
		if (opt == 8) {
			if (opt_reply(s->fd, 8, s->structured ? 1 :
			    0x80000001u, NULL, 0))
				return -1;
			continue;
		}
		if (opt != 7)
			return -1;
		if (g32(d) != strlen(s->export) ||
		    memcmp(d + 4, s->export, g32(d)) != 0) {
			opt_reply(s->fd, 7, 0x80000006u, "no such export", 14);
			continue;
		}
		p16(d, 0);
		p64(d + 2, DISK);
		p16(d + 10, 1 | s->flags);
		if (opt_reply(s->fd, 7, 3, d, 12))
			return -1;
		p16(d, 3);
		p32(d + 2, 1);
		p32(d + 6, 4096);
		p32(d + 10, 1u << 20);
		if (opt_reply(s->fd, 7, 3, d, 14) || opt_reply(s->fd, 7, 1,
		    NULL, 0))
			return -1;
		return 0;
	}
}

static int
simple(int fd, uint64_t handle, uint32_t err, const void *data, size_t len)
{
	uint8_t h[16];

	p32(h, 0x67446698);
	p32(h + 4, err);
	p64(h + 8, handle);
	return xwrite(fd, h, 16) || (len && xwrite(fd, data, len)) ? -1 : 0;
}

/* A structured chunk's header saying len, then the first n of d. */
static int
chunk_part(int fd, uint16_t flags, uint16_t type, uint64_t handle,
    const void *d, uint32_t len, uint32_t n)
{
	uint8_t h[20];

	p32(h, 0x668e33ef);
	p16(h + 4, flags);
	p16(h + 6, type);
	p64(h + 8, handle);
	p32(h + 16, len);
	return xwrite(fd, h, 20) || (n && xwrite(fd, d, n)) ? -1 : 0;
}

static int
chunk(int fd, uint16_t flags, uint16_t type, uint64_t handle,
    const void *d, uint32_t len)
{
	return chunk_part(fd, flags, type, handle, d, len, len);
}

/* A malformed reply to the read (handle, off, len). */
static int
srv_bad(struct srv *s, uint64_t handle, uint64_t off, uint32_t len)
{
	uint8_t d[64] = { 0 };

	switch (s->bad) {
	case BAD_MAGIC:
		p32(d, 0x12345678);
		return xwrite(s->fd, d, 16);
	case BAD_HANDLE:
		return chunk(s->fd, 1, 0, handle ^ 0x5a5a00, NULL, 0);
	case BAD_OFFSET:
		p64(d, off + len - 4);
		return chunk(s->fd, 1, 1, handle, d, 8 + 16);
	case BAD_LENGTH:
		return chunk(s->fd, 1, 1, handle, d, 5);
	case BAD_NONE_NOT_DONE:
		return chunk(s->fd, 0, 0, handle, NULL, 0);
	case BAD_ERROR_LEN:
		p32(d, 5);
		p16(d + 4, 40);
		return chunk(s->fd, 1, 0x8001, handle, d, 10);
	case BAD_ERROR_ZERO:
		return chunk(s->fd, 1, 0x8001, handle, d, 6);
	case BAD_UNKNOWN_TYPE:
		return chunk(s->fd, 1, 5, handle, d, 12);
	case BAD_HOLE_PAST:
		p64(d, off);
		p32(d + 8, len + 512);
		return chunk(s->fd, 1, 2, handle, d, 12);
	case BAD_HUGE:
		p64(d, off);
		return chunk_part(s->fd, 1, 1, handle, d, 0xfffffff0u, 8);
	default:
		return -1;
	}
}

/* One data chunk (or hole, if asked and the range is zeroes). */
static int
srv_piece(struct srv *s, uint64_t handle, uint64_t off, uint32_t len,
    bool may_hole, uint8_t *buf)
{
	bool zero = true;

	pthread_mutex_lock(&disk_lock);
	memcpy(buf + 8, disk + off, len);
	pthread_mutex_unlock(&disk_lock);
	for (uint32_t i = 0; i < len; i++)
		zero &= buf[8 + i] == 0;
	p64(buf, off);
	if (may_hole && zero) {
		p32(buf + 8, len);
		return chunk(s->fd, 0, 2, handle, buf, 12);
	}
	return chunk(s->fd, 0, 1, handle, buf, 8 + len);
}

/*
 * A read answered: structured (the tail, the head, then the middle as a
 * hole if it is zeroes: the order is the server's to choose), or simple.
 */
static int
srv_read(struct srv *s, uint64_t handle, uint64_t off, uint32_t len)
{
	uint8_t *buf = malloc(len + 16);
	uint32_t a = len / 4 & ~511u, c = len - 2 * a;
	int ret = 0;

	if (s->nbd_error != 0) {
		uint8_t d[6 + 5];

		free(buf);
		if (!s->structured)
			return simple(s->fd, handle, s->nbd_error, NULL, 0);
		p32(d, s->nbd_error);
		p16(d + 4, 5);
		memcpy(d + 6, "nope!", 5);
		return chunk(s->fd, 1, 0x8001, handle, d, sizeof(d));
	}
	if (!s->structured) {
		pthread_mutex_lock(&disk_lock);
		memcpy(buf, disk + off, len);
		pthread_mutex_unlock(&disk_lock);
		ret = simple(s->fd, handle, 0, buf, len);
		free(buf);
		return ret;
	}
	if (c > 0)
		ret = srv_piece(s, handle, off + 2 * a, c, false, buf);
	if (ret == 0 && a > 0)
		ret = srv_piece(s, handle, off, a, false, buf);
	if (ret == 0 && a > 0)
		ret = srv_piece(s, handle, off + a, a, true, buf);
	if (ret == 0)
		ret = chunk(s->fd, 1, 0, handle, NULL, 0);
	free(buf);
	return ret;
}

struct pend {
	uint64_t handle, off;
	uint32_t len;
	uint16_t type;
};

static int
srv_answer(struct srv *s, const struct pend *p)
{
	if (p->type == 0)
		return srv_read(s, p->handle, p->off, p->len);
	if (p->type == 6 || p->type == 4) {
		pthread_mutex_lock(&disk_lock);
		memset(disk + p->off, 0, p->len);
		pthread_mutex_unlock(&disk_lock);
	}
	return s->structured ? chunk(s->fd, 1, 0, p->handle, NULL, 0) :
	    simple(s->fd, p->handle, 0, NULL, 0);
}

static void *
srv_thread(void *arg)
{
	struct srv *s = arg;
	struct pend p[64];
	uint8_t h[28], *w = malloc(DISK);
	int n = 0, np = 0;

	if (srv_handshake(s) != 0)
		goto out;
	for (;;) {
		if (xread(s->fd, h, sizeof(h)))
			break;
		n++;
		struct pend q = { g64(h + 8), g64(h + 16), g32(h + 24),
		    (uint16_t)(h[6] << 8 | h[7]) };

		if (g32(h) != 0x25609513 || q.type == 2 || q.off + q.len > DISK)
			break;
		if (q.type == 1) {
			if (xread(s->fd, w, q.len))
				break;
			/* Dies with the write's data read, unanswered. */
			if (n == s->die_at)
				break;
			pthread_mutex_lock(&disk_lock);
			memcpy(disk + q.off, w, q.len);
			pthread_mutex_unlock(&disk_lock);
		}
		if (n == s->die_at)
			break;
		if (s->silent)
			continue;
		if (q.type == 0 && s->bad != BAD_NONE) {
			srv_bad(s, q.handle, q.off, q.len);
			/* What a client may read next: nothing that helps. */
			continue;
		}
		if (s->reverse > 0) {
			p[np++] = q;
			if (np < s->reverse)
				continue;
			while (np > 0)
				if (srv_answer(s, &p[--np]))
					goto out;
			s->reverse = 0;
			continue;
		}
		if (srv_answer(s, &q))
			break;
	}
out:
	close(s->fd);
	free(w);
	free(s);
	return NULL;
}

/* A server from tmpl on a new socket pair: the client's end. */
static int
srv_start(const struct srv *tmpl)
{
	struct srv *s = malloc(sizeof(*s));
	pthread_t t;
	int sv[2];

	*s = *tmpl;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		tap_bail("socketpair: %s", strerror(errno));
	s->fd = sv[1];
	if (pthread_create(&t, NULL, srv_thread, s) != 0)
		tap_bail("pthread_create");
	pthread_detach(t);
	return sv[0];
}

/* The backend's connect(): a good server while allowed. */
struct redial {
	struct srv tmpl;
	bool allowed;
	int calls;
};

static int
redial(void *arg)
{
	struct redial *r = arg;

	__atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&r->allowed, __ATOMIC_SEQ_CST))
		return -ECONNREFUSED;
	return srv_start(&r->tmpl);
}

/* A request and its wait. */
struct req {
	struct blk_io io;
	struct iovec v[2];
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done;
	int result;
};

static void
req_done(struct blk_io *io, int result)
{
	struct req *r = (struct req *)io;

	pthread_mutex_lock(&r->m);
	r->done = true;
	r->result = result;
	pthread_cond_signal(&r->c);
	pthread_mutex_unlock(&r->m);
}

static void
req_init(struct req *r, enum blk_op op, uint64_t off, void *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->m, NULL);
	pthread_cond_init(&r->c, NULL);
	r->io.op = op;
	r->io.offset = off;
	r->io.done = req_done;
	if (op == BLK_READ || op == BLK_WRITE) {
		/* Two segments, the first an odd size. */
		size_t a = len > 700 ? 700 : len;

		r->v[0] = (struct iovec){ buf, a };
		r->v[1] = (struct iovec){ (uint8_t *)buf + a, len - a };
		r->io.iov = r->v;
		r->io.niov = len > a ? 2 : 1;
	} else
		r->io.len = len;
}

/* Its result; -ETIME if it did not complete in WAIT_S. */
static int
req_wait(struct req *r)
{
	struct timespec ts;
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_S;
	pthread_mutex_lock(&r->m);
	while (!r->done)
		if (pthread_cond_timedwait(&r->c, &r->m, &ts) == ETIMEDOUT)
			break;
	ret = r->done ? r->result : -ETIME;
	pthread_mutex_unlock(&r->m);
	return ret;
}

static int
do_io(struct blk_backend *be, enum blk_op op, uint64_t off, void *buf,
    size_t len)
{
	struct req r;
	int ret;

	req_init(&r, op, off, buf, len);
	if ((ret = be->ops->submit(be->ctx, &r.io)) < 0)
		return ret;
	return req_wait(&r);
}

static void
fill(uint8_t *b, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 9));
}

static const struct srv good = {
	.structured = true, .flags = 4 | 32 | 64, .die_at = -1, .export = "d",
};

static struct blk_nbd *
open_nbd(const struct srv *s, struct redial *r, unsigned int retry_ms,
    unsigned int timeout_ms, struct blk_backend *be)
{
	struct blk_nbd_config cfg = {
		.export = "d", .serial = "nbd0", .retry_ms = retry_ms,
		.timeout_ms = timeout_ms, .connect = r ? redial : NULL,
		.connect_arg = r,
	};
	struct blk_nbd *n = NULL;
	char err[256];
	int ret;

	ret = blk_nbd_new(&n, srv_start(s), &cfg, be, err, sizeof(err));
	if (ret < 0)
		tap_diag("blk_nbd_new: %s (%s)", strerror(-ret), err);
	return ret < 0 ? NULL : n;
}

static void
test_io(bool structured)
{
	struct srv s = good;
	struct blk_backend be;
	struct blk_nbd_stats st;
	struct blk_nbd *n;
	struct req r[16];
	static uint8_t w[16][8192], rd[16][8192];
	const char *k = structured ? "structured" : "simple";
	bool same = true;
	int bad = 0;

	s.structured = structured;
	s.reverse = 16;
	if ((n = open_nbd(&s, NULL, 0, 0, &be)) == NULL) {
		tap_ok(0, "%s: handshake", k);
		return;
	}
	blk_nbd_stats(n, &st);
	tap_ok(be.size == DISK && !be.readonly && st.structured == structured &&
	    strcmp(be.serial, "nbd0") == 0, "%s: handshake: size %llu, "
	    "structured %d", k, (unsigned long long)be.size, st.structured);
	/* 16 writes at once, answered last first. */
	for (int i = 0; i < 16; i++) {
		fill(w[i], sizeof(w[i]), i + structured * 100);
		req_init(&r[i], BLK_WRITE, i * 8192u + 4096, w[i], 8192);
		be.ops->submit(be.ctx, &r[i].io);
	}
	for (int i = 0; i < 16; i++)
		bad += req_wait(&r[i]) != 0;
	tap_ok(bad == 0, "%s: 16 pipelined writes answered in reverse", k);
	/* Then 16 reads of them; some of the data are zeroes (a hole). */
	memset(w[3] + 2048, 0, 4096);
	TAP_EQ(do_io(&be, BLK_WRITE, 3 * 8192u + 4096, w[3], 8192), 0,
	    "%s: a write with zeroes in it", k);
	for (int i = 0; i < 16; i++) {
		memset(rd[i], 0xee, sizeof(rd[i]));
		req_init(&r[i], BLK_READ, i * 8192u + 4096, rd[i], 8192);
		be.ops->submit(be.ctx, &r[i].io);
	}
	bad = 0;
	for (int i = 0; i < 16; i++) {
		bad += req_wait(&r[i]) != 0;
		same &= memcmp(rd[i], w[i], 8192) == 0;
	}
	tap_ok(bad == 0 && same, "%s: 16 pipelined reads read the writes", k);
	TAP_EQ(do_io(&be, BLK_FLUSH, 0, NULL, 0), 0, "%s: flush", k);
	TAP_EQ(do_io(&be, BLK_WRITE_ZEROES, 4096, NULL, 8192), 0,
	    "%s: write zeroes", k);
	TAP_EQ(do_io(&be, BLK_DISCARD, 8192 + 4096, NULL, 8192), 0,
	    "%s: discard", k);
	TAP_EQ(do_io(&be, BLK_READ, 4096, rd[0], 8192 * 2), 0, "%s: read", k);
	tap_ok(memcmp(rd[0], (uint8_t[16384]){ 0 }, 16384) == 0,
	    "%s: zeroed and discarded ranges read as zeroes", k);
	TAP_EQ(do_io(&be, BLK_READ, DISK - 512, rd[0], 1024), -EIO,
	    "%s: a read past the end fails", k);
	blk_nbd_stats(n, &st);
	tap_ok(st.reads == 17 && st.writes == 17 && st.flushes == 1 &&
	    st.zeroes == 1 && st.discards == 1 && st.errors == 1 &&
	    st.read_bytes == 17 * 8192 + 8192 && st.disconnects == 0,
	    "%s: figures: %llu reads, %llu writes, %llu errors", k,
	    (unsigned long long)st.reads, (unsigned long long)st.writes,
	    (unsigned long long)st.errors);
	blk_nbd_free(n);
}

static void
test_handshake(void)
{
	struct blk_nbd_config cfg = { .export = "d", .timeout_ms = 20000 };
	struct srv s = good;
	struct blk_backend be;
	struct blk_nbd *n = NULL;
	char err[256];
	int ret;

	cfg.export = "other";
	ret = blk_nbd_new(&n, srv_start(&s), &cfg, &be, err, sizeof(err));
	tap_ok(ret == -ENOENT && strstr(err, "no such export") != NULL,
	    "an export the server does not have: %s (%s)", strerror(-ret),
	    err);
	s.not_nbd = true;
	cfg.export = "d";
	ret = blk_nbd_new(&n, srv_start(&s), &cfg, &be, err, sizeof(err));
	tap_ok(ret == -EPROTO, "a peer that is no NBD server: %s (%s)",
	    strerror(-ret), err);
	s = good;
	s.flags |= 2;
	ret = blk_nbd_new(&n, srv_start(&s), &cfg, &be, err, sizeof(err));
	tap_ok(ret == 0 && be.readonly, "a read-only export is a read-only "
	    "disk");
	if (ret == 0) {
		uint8_t b[512] = { 0 };

		TAP_EQ(do_io(&be, BLK_WRITE, 0, b, 512), -EROFS,
		    "a write to a read-only export fails");
		blk_nbd_free(n);
	}
}

static void
test_error_replies(void)
{
	struct srv s = good;
	struct blk_backend be;
	struct blk_nbd_stats st;
	struct blk_nbd *n;
	uint8_t b[4096];

	for (int structured = 0; structured < 2; structured++) {
		s.structured = structured;
		s.nbd_error = 28;
		if ((n = open_nbd(&s, NULL, 0, 0, &be)) == NULL)
			continue;
		TAP_EQ(do_io(&be, BLK_READ, 0, b, sizeof(b)), -ENOSPC,
		    "%s error reply: the request fails with its error",
		    structured ? "a structured" : "a simple");
		TAP_EQ(do_io(&be, BLK_FLUSH, 0, NULL, 0), 0,
		    "and the connection serves the next one");
		blk_nbd_stats(n, &st);
		TAP_EQ(st.disconnects, 0, "an error reply is no lost "
		    "connection");
		blk_nbd_free(n);
	}
}

/* The server dies with the request in flight; the next one serves it. */
static void
test_dies(void)
{
	struct redial r = { .tmpl = good, .allowed = true };
	struct srv s = good;
	struct blk_backend be;
	struct blk_nbd_stats st;
	struct blk_nbd *n;
	uint8_t w[4096], rd[4096];

	s.die_at = 2;		/* the write's data read, then gone */
	if ((n = open_nbd(&s, &r, 20000, 0, &be)) == NULL)
		return;
	fill(w, sizeof(w), 77);
	TAP_EQ(do_io(&be, BLK_FLUSH, 0, NULL, 0), 0, "dies: a first request");
	TAP_EQ(do_io(&be, BLK_WRITE, 65536, w, sizeof(w)), 0,
	    "dies: a write in flight when the server died completes on the "
	    "next connection");
	TAP_EQ(do_io(&be, BLK_READ, 65536, rd, sizeof(rd)), 0,
	    "dies: and reads back");
	tap_ok(memcmp(w, rd, sizeof(w)) == 0, "dies: what was written");
	blk_nbd_stats(n, &st);
	tap_ok(st.disconnects == 1 && st.reconnects == 1 &&
	    st.state == BLK_NBD_CONNECTED && st.errors == 0,
	    "dies: one disconnect, one reconnect, %s", blk_nbd_state_name(
	    st.state));
	blk_nbd_free(n);

	/* Gone for good: bounded retry, an error; then back. */
	r.allowed = false;
	r.calls = 0;
	s.die_at = 1;
	if ((n = open_nbd(&s, &r, 400, 0, &be)) == NULL)
		return;
	TAP_EQ(do_io(&be, BLK_READ, 0, rd, sizeof(rd)), -EIO,
	    "gone: the request fails after the bounded retry");
	blk_nbd_stats(n, &st);
	tap_ok(st.state == BLK_NBD_FAILED && r.calls >= 2, "gone: failed "
	    "after %d tries", r.calls);
	__atomic_store_n(&r.allowed, true, __ATOMIC_SEQ_CST);
	TAP_EQ(do_io(&be, BLK_READ, 65536, rd, sizeof(rd)), 0,
	    "back: the next request reconnects and succeeds");
	tap_ok(memcmp(w, rd, sizeof(w)) == 0, "back: and reads the disk");
	blk_nbd_stats(n, &st);
	tap_ok(st.state == BLK_NBD_CONNECTED && st.errors == 1,
	    "back: connected, one error");
	blk_nbd_free(n);

	/* A server that reads requests and never answers. */
	s = good;
	s.silent = true;
	if ((n = open_nbd(&s, &r, 20000, 500, &be)) == NULL)
		return;
	TAP_EQ(do_io(&be, BLK_READ, 65536, rd, sizeof(rd)), 0,
	    "silent: the request completes on a new connection");
	blk_nbd_stats(n, &st);
	TAP_EQ(st.disconnects, 1, "silent: a silent server is a lost one");
	blk_nbd_free(n);
}

static void
test_malformed(void)
{
	static const char *const names[BAD_COUNT] = {
		[BAD_MAGIC] = "unknown magic",
		[BAD_HANDLE] = "unknown handle",
		[BAD_OFFSET] = "data past the request",
		[BAD_LENGTH] = "data chunk too short for its offset",
		[BAD_NONE_NOT_DONE] = "NONE chunk without DONE",
		[BAD_ERROR_LEN] = "error message overruns its chunk",
		[BAD_ERROR_ZERO] = "error chunk with error 0",
		[BAD_UNKNOWN_TYPE] = "unnegotiated chunk type",
		[BAD_HOLE_PAST] = "hole past the request",
		[BAD_HUGE] = "a 4 GiB chunk",
	};
	struct redial r = { .tmpl = good, .allowed = true };
	struct blk_backend be;
	struct blk_nbd_stats st;
	struct blk_nbd *n;
	uint8_t buf[4096 + 64];

	for (int b = BAD_MAGIC; b < BAD_COUNT; b++) {
		struct srv s = good;

		s.bad = b;
		if ((n = open_nbd(&s, &r, 20000, 0, &be)) == NULL)
			continue;
		memset(buf, 0xa5, sizeof(buf));
		pthread_mutex_lock(&disk_lock);
		fill(disk + 8192, 4096, b);
		pthread_mutex_unlock(&disk_lock);
		TAP_EQ(do_io(&be, BLK_READ, 8192, buf, 4096), 0,
		    "malformed (%s): the read completes on a new connection",
		    names[b]);
		blk_nbd_stats(n, &st);
		pthread_mutex_lock(&disk_lock);
		tap_ok(st.disconnects == 1 && memcmp(buf, disk + 8192,
		    4096) == 0 && buf[4096] == 0xa5 && buf[4096 + 63] == 0xa5,
		    "malformed (%s): dropped, read right, nothing written "
		    "past the buffer", names[b]);
		pthread_mutex_unlock(&disk_lock);
		blk_nbd_free(n);
	}
}

int
main(void)
{
	test_handshake();
	test_io(true);
	test_io(false);
	test_error_replies();
	test_dies();
	test_malformed();
	return tap_done();
}
