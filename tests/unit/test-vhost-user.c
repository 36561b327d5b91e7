/*
 * The vhost-user front end (daemon/machine/vhost-user.c) against a
 * backend written here, on the other end of a socket pair, in a thread
 * of its own: the negotiation (only the protocol features the front end
 * knows taken, SET_OWNER acknowledged when REPLY_ACK is in use); a start
 * (SET_FEATURES with the protocol bit, SET_MEM_TABLE whose descriptors
 * map the very memory the front end gave, each ring's NUM, BASE, ADDR,
 * KICK, CALL and ENABLE); a register kick landing on the kick eventfd;
 * a stop whose GET_VRING_BASE answers come back as next_avail; a
 * backend without protocol features (no NEED_REPLY, no ENABLE).  Then
 * backends that answer badly: another request's code, no reply flag,
 * a wrong version or size, another ring's base, a reply never sent
 * (bounded by the timeout), a hang-up, a refusal through REPLY_ACK (the
 * connection stays usable); every other failure breaks the connection
 * for good.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"
#include "vhost-user-msg.h"
#include "vhost-user.h"

#define LONG_MS		60000	/* a reply a busy machine may delay */
#define FEATURES	((1ull << 32) | (1ull << 0))	/* VERSION_1, one */
#define RAM		(2u << 20)

enum how {
	GOOD,
	WRONG_CODE,	/* the reply names another request */
	NO_REPLY_FLAG,
	BAD_VERSION,
	WRONG_SIZE,
	WRONG_INDEX,	/* GET_VRING_BASE of another ring */
	SILENT,		/* never answers */
	HANG_UP,	/* closes its end */
	NACK,		/* REPLY_ACK with a failure status */
};

struct backend {
	int fd;
	bool protocol;		/* offers protocol features */
	uint32_t fail_on;	/* the request answered as `how` says */
	enum how how;
	pthread_t thread;
	/* What it saw. */
	uint32_t reqs[64];
	uint32_t flags[64];
	unsigned int nreqs;
	uint64_t features_set, protocol_set;
	unsigned int mem_nregions, mem_nfds;
	bool mem_same;		/* each region's fd maps the front end's bytes */
	uint64_t region_uaddr[2];
	int kick_fd[2];		/* received, open */
	bool call_nofd[2];
	unsigned int ring_num[2], ring_base[2], enabled[2];
	uint64_t ring_desc[2];
};

static const char *expect_text = "vmmd guest RAM";

static ssize_t
be_recv(struct backend *b, void *buf, size_t len, int *fds, unsigned int *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *c;
	ssize_t n;

	n = recvmsg(b->fd, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC);
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		unsigned int k = (unsigned int)((c->cmsg_len - CMSG_LEN(0)) /
		    sizeof(int));

		if (fds != NULL && k <= 8) {
			memcpy(fds, CMSG_DATA(c), k * sizeof(int));
			*nfds = k;
		}
	}
	return n;
}

static void
be_put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);	/* the test runs little-endian */
}

static void
be_reply(struct backend *b, uint32_t req, const void *payload, uint32_t size)
{
	uint8_t msg[64];
	uint32_t code = req, flags = VHOST_USER_VERSION | VHOST_USER_FLAG_REPLY;

	if (req == b->fail_on) {
		switch (b->how) {
		case WRONG_CODE:
			code = req + 1;
			break;
		case NO_REPLY_FLAG:
			flags = VHOST_USER_VERSION;
			break;
		case BAD_VERSION:
			flags = 2 | VHOST_USER_FLAG_REPLY;
			break;
		case WRONG_SIZE:
			size = 4;
			break;
		case SILENT:
			return;
		case HANG_UP:
			shutdown(b->fd, SHUT_RDWR);
			return;
		default:
			break;
		}
	}
	be_put32(msg, code);
	be_put32(msg + 4, flags);
	be_put32(msg + 8, size);
	memcpy(msg + 12, payload, size);
	(void)!write(b->fd, msg, 12 + size);
}

static void
be_u64(struct backend *b, uint32_t req, uint64_t v)
{
	be_reply(b, req, &v, 8);
}

static void
be_mem(struct backend *b, const uint8_t *p, const int *fds, unsigned int nfds)
{
	uint32_t n;

	memcpy(&n, p, 4);
	b->mem_nregions = n;
	b->mem_nfds = nfds;
	b->mem_same = n == nfds && n <= 2;
	for (unsigned int i = 0; i < n && i < nfds && i < 2; i++) {
		uint64_t r[4];
		uint8_t *m;

		memcpy(r, p + 8 + 32 * i, sizeof(r));
		b->region_uaddr[i] = r[2];
		m = mmap(NULL, r[1], PROT_READ, MAP_SHARED, fds[i],
		    (off_t)r[3]);
		if (m == MAP_FAILED ||
		    memcmp(m, (void *)(uintptr_t)r[2], r[1]) != 0)
			b->mem_same = false;
		if (m != MAP_FAILED)
			munmap(m, r[1]);
	}
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
}

static void *
be_run(void *arg)
{
	struct backend *b = arg;

	for (;;) {
		uint8_t h[12], p[VHOST_USER_MAX_PAYLOAD];
		uint32_t req, flags, size, idx;
		int fds[8];
		unsigned int nfds = 0;
		uint64_t v;

		if (be_recv(b, h, sizeof(h), fds, &nfds) != sizeof(h))
			break;
		memcpy(&req, h, 4);
		memcpy(&flags, h + 4, 4);
		memcpy(&size, h + 8, 4);
		if (size > sizeof(p) || (size > 0 &&
		    be_recv(b, p, size, NULL, NULL) != (ssize_t)size))
			break;
		if (b->nreqs < 64) {
			b->reqs[b->nreqs] = req;
			b->flags[b->nreqs++] = flags;
		}
		memcpy(&v, p, 8);
		idx = (uint32_t)v & 0xff;
		switch (req) {
		case VHOST_USER_GET_FEATURES:
			be_u64(b, req, FEATURES | (b->protocol ?
			    1ull << VHOST_USER_F_PROTOCOL_FEATURES : 0));
			continue;
		case VHOST_USER_GET_PROTOCOL_FEATURES:
			/* MQ, REPLY_ACK, CONFIG and an unknown one. */
			be_u64(b, req, 1 | 1 << 3 | 1 << 9 | 1ull << 40);
			continue;
		case VHOST_USER_GET_VRING_BASE: {
			uint32_t st[2] = { idx, 7 + idx };

			if (b->fail_on == req && b->how == WRONG_INDEX)
				st[0] = idx + 1;
			be_reply(b, req, st, 8);
			continue;
		}
		case VHOST_USER_SET_FEATURES:
			b->features_set = v;
			break;
		case VHOST_USER_SET_PROTOCOL_FEATURES:
			b->protocol_set = v;
			break;
		case VHOST_USER_SET_MEM_TABLE:
			be_mem(b, p, fds, nfds);
			nfds = 0;
			break;
		case VHOST_USER_SET_VRING_NUM:
		case VHOST_USER_SET_VRING_BASE:
		case VHOST_USER_SET_VRING_ENABLE: {
			uint32_t st[2];

			memcpy(st, p, 8);
			if (st[0] < 2) {
				if (req == VHOST_USER_SET_VRING_NUM)
					b->ring_num[st[0]] = st[1];
				else if (req == VHOST_USER_SET_VRING_BASE)
					b->ring_base[st[0]] = st[1];
				else
					b->enabled[st[0]] = st[1];
			}
			break;
		}
		case VHOST_USER_SET_VRING_ADDR: {
			uint32_t i;

			memcpy(&i, p, 4);
			if (i < 2)
				memcpy(&b->ring_desc[i], p + 8, 8);
			break;
		}
		case VHOST_USER_SET_VRING_KICK:
			if (idx < 2 && nfds == 1) {
				b->kick_fd[idx] = fds[0];
				nfds = 0;
			}
			break;
		case VHOST_USER_SET_VRING_CALL:
			if (idx < 2)
				b->call_nofd[idx] = (v & VHOST_USER_VRING_NOFD) &&
				    nfds == 0;
			break;
		default:
			break;
		}
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
		if (flags & VHOST_USER_FLAG_NEED_REPLY)
			be_u64(b, req, b->fail_on == req && b->how == NACK);
		else if (b->fail_on == req && b->how == HANG_UP)
			shutdown(b->fd, SHUT_RDWR);
	}
	return NULL;
}

static int
be_start(struct backend *b, bool protocol, uint32_t fail_on, enum how how)
{
	int sv[2];

	memset(b, 0, sizeof(*b));
	b->kick_fd[0] = b->kick_fd[1] = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		tap_bail("socketpair: %s", strerror(errno));
	b->fd = sv[1];
	b->protocol = protocol;
	b->fail_on = fail_on;
	b->how = how;
	if (pthread_create(&b->thread, NULL, be_run, b) != 0)
		tap_bail("pthread_create");
	return sv[0];
}

/* After the front end closed its end: the thread ends on EOF. */
static void
be_join(struct backend *b)
{
	pthread_join(b->thread, NULL);
	close(b->fd);
	for (unsigned int i = 0; i < 2; i++)
		if (b->kick_fd[i] >= 0)
			close(b->kick_fd[i]);
}

static bool
be_saw(const struct backend *b, uint32_t req)
{
	for (unsigned int i = 0; i < b->nreqs; i++)
		if (b->reqs[i] == req)
			return true;
	return false;
}

/* Guest RAM as the machine makes it shareable: one memfd, two ranges. */
static uint8_t *ram;
static int ram_fd;
static int kick[2], call0;

static void
make_start(struct vhost_backend_start *s)
{
	memset(s, 0, sizeof(*s));
	s->features = FEATURES;
	s->nmem = 2;
	s->mem[0] = (struct device_mem_region){ 0, RAM / 2, ram, ram_fd, 0 };
	s->mem[1] = (struct device_mem_region){ 1ull << 32, RAM / 2,
	    ram + RAM / 2, ram_fd, RAM / 2 };
	s->nrings = 2;
	for (unsigned int q = 0; q < 2; q++)
		s->ring[q] = (struct vhost_backend_ring){
			.size = 128,
			.desc = ram + 0x1000 * (q + 1),
			.avail = ram + 0x1000 * (q + 1) + 0x800,
			.used = ram + 0x1000 * (q + 3),
			.next_avail = (uint16_t)(3 + q),
			.kick = kick[q],
			.call = q == 0 ? call0 : -1,
		};
}

static void
test_good(bool protocol)
{
	struct backend b;
	struct vhost_user *vu;
	struct vhost_backend be;
	struct vhost_backend_start s;
	struct vhost_user_info info;
	uint16_t next[VHOST_BACKEND_QUEUES] = { 0 };
	char err[256] = "";
	const char *what = protocol ? "with protocol features" :
	    "without protocol features";
	uint64_t n = 0;
	int ret;

	ret = vhost_user_new(&vu, be_start(&b, protocol, 0, GOOD), LONG_MS,
	    &be, err, sizeof(err));
	tap_ok(ret == 0, "%s: negotiated (%s)", what, err);
	if (ret < 0)
		tap_bail("cannot go on");
	TAP_EQ(be.ops->features(be.ctx), FEATURES,
	    "%s: the backend's features without the protocol bit", what);
	TAP_EQ(b.protocol_set, protocol ? 1ull << 3 : 0,
	    "%s: only REPLY_ACK taken of the protocol features", what);
	tap_ok(be_saw(&b, VHOST_USER_GET_PROTOCOL_FEATURES) == protocol,
	    "%s: GET_PROTOCOL_FEATURES asked when offered", what);
	make_start(&s);
	ret = be.ops->start(be.ctx, &s);
	TAP_EQ(ret, 0, "%s: started", what);
	/* Without REPLY_ACK nothing the start sends is answered: the
	 * stop's GET_VRING_BASE replies say the backend has seen it all. */
	be.ops->kick(be.ctx, 1);
	tap_ok(read(kick[1], &n, sizeof(n)) == sizeof(n) && n == 1,
	    "%s: a register kick lands on the ring's kick eventfd", what);
	ret = be.ops->stop(be.ctx, next);
	tap_ok(ret == 0 && next[0] == 7 && next[1] == 8,
	    "%s: stopped; GET_VRING_BASE's answers are next_avail (%d, %u, "
	    "%u)", what, ret, next[0], next[1]);
	TAP_EQ(b.features_set, FEATURES | (protocol ?
	    1ull << VHOST_USER_F_PROTOCOL_FEATURES : 0),
	    "%s: SET_FEATURES: the driver's, plus the protocol bit if offered",
	    what);
	tap_ok(b.mem_nregions == 2 && b.mem_nfds == 2,
	    "%s: SET_MEM_TABLE: two regions, a descriptor each", what);
	tap_ok(b.mem_same, "%s: each descriptor maps the front end's bytes",
	    what);
	TAP_EQ(b.region_uaddr[1], (uint64_t)(uintptr_t)(ram + RAM / 2),
	    "%s: the second region's front end address", what);
	tap_ok(b.ring_num[0] == 128 && b.ring_num[1] == 128 &&
	    b.ring_base[0] == 3 && b.ring_base[1] == 4,
	    "%s: each ring's size and base", what);
	TAP_EQ(b.ring_desc[1], (uint64_t)(uintptr_t)(ram + 0x2000),
	    "%s: ring 1's descriptor table", what);
	tap_ok(b.kick_fd[0] >= 0 && b.kick_fd[1] >= 0,
	    "%s: each ring's kick eventfd passed", what);
	tap_ok(!b.call_nofd[0] && b.call_nofd[1],
	    "%s: ring 0's call eventfd passed, ring 1 without one", what);
	tap_ok(b.enabled[0] == protocol && b.enabled[1] == protocol,
	    "%s: rings enabled exactly when protocol features are on", what);
	tap_ok(protocol == ((b.flags[3] & VHOST_USER_FLAG_NEED_REPLY) != 0),
	    "%s: NEED_REPLY set exactly with REPLY_ACK", what);

	TAP_EQ(be.ops->set_call(be.ctx, 1, call0), 0,
	    "%s: a new call eventfd", what);
	vhost_user_info(vu, &info);
	tap_ok(!info.running && info.error == 0 && info.starts == 1,
	    "%s: not running, no error", what);
	vhost_user_free(vu);
	be_join(&b);
}

/* A backend that fails `req` as `how` says: what the front end makes
 * of it. */
static void
test_bad(uint32_t req, enum how how, int want, const char *what)
{
	struct backend b;
	struct vhost_user *vu = NULL;
	struct vhost_backend be;
	struct vhost_backend_start s;
	uint16_t next[VHOST_BACKEND_QUEUES];
	char err[256] = "";
	int ret, timeout = how == SILENT ? 200 : LONG_MS;

	ret = vhost_user_new(&vu, be_start(&b, true, req, how), timeout,
	    &be, err, sizeof(err));
	if (ret == 0) {
		make_start(&s);
		ret = be.ops->start(be.ctx, &s);
		if (ret == 0)
			ret = be.ops->stop(be.ctx, next);
	} else {
		tap_diag("%s: %s", what, err);
	}
	tap_ok(ret == want, "%s: %s (%s)", what, strerror(-want),
	    strerror(-ret));
	if (vu != NULL && want != -EIO) {
		TAP_EQ(vhost_user_error(vu), want,
		    "%s: the connection stays broken", what);
		TAP_EQ(be.ops->set_call(be.ctx, 0, -1), want,
		    "%s: a later request fails at once", what);
	} else if (vu != NULL) {
		TAP_EQ(be.ops->set_call(be.ctx, 0, -1), 0,
		    "%s: the connection is still good", what);
	}
	vhost_user_free(vu);
	be_join(&b);
}

int
main(void)
{
	ram_fd = memfd_create("test-ram", MFD_CLOEXEC);
	if (ram_fd < 0 || ftruncate(ram_fd, RAM) < 0)
		tap_bail("memfd: %s", strerror(errno));
	ram = mmap(NULL, RAM, PROT_READ | PROT_WRITE, MAP_SHARED, ram_fd, 0);
	if (ram == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memcpy(ram + RAM / 2 + 100, expect_text, strlen(expect_text));
	kick[0] = eventfd(0, EFD_CLOEXEC);
	kick[1] = eventfd(0, EFD_CLOEXEC);
	call0 = eventfd(0, EFD_CLOEXEC);

	test_good(true);
	test_good(false);
	test_bad(VHOST_USER_GET_FEATURES, WRONG_CODE, -EPROTO,
	    "GET_FEATURES answered as another request");
	test_bad(VHOST_USER_GET_PROTOCOL_FEATURES, NO_REPLY_FLAG, -EPROTO,
	    "a reply without the reply flag");
	test_bad(VHOST_USER_GET_FEATURES, BAD_VERSION, -EPROTO,
	    "a reply of another version");
	test_bad(VHOST_USER_GET_FEATURES, WRONG_SIZE, -EPROTO,
	    "a reply of the wrong size");
	test_bad(VHOST_USER_SET_OWNER, WRONG_SIZE, -EPROTO,
	    "an acknowledgement of the wrong size");
	test_bad(VHOST_USER_GET_VRING_BASE, WRONG_INDEX, -EPROTO,
	    "GET_VRING_BASE naming another ring");
	test_bad(VHOST_USER_GET_FEATURES, SILENT, -ETIMEDOUT,
	    "a backend that never answers");
	test_bad(VHOST_USER_SET_MEM_TABLE, SILENT, -ETIMEDOUT,
	    "a backend that never acknowledges the memory table");
	test_bad(VHOST_USER_SET_VRING_ADDR, HANG_UP, -ECONNRESET,
	    "a backend that hangs up");
	test_bad(VHOST_USER_SET_MEM_TABLE, NACK, -EIO,
	    "a backend that refuses the memory table");
	return tap_done();
}
