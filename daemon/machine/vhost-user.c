/* See vhost-user.h. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vhost-user-msg.h"
#include "vhost-user.h"

/* The protocol features the front end takes when offered. */
#define VHOST_USER_PROTOCOL_KNOWN	(1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK)

/*
 * The counters and the error are read by the loop (vm.info) while a
 * vCPU thread runs a request: each is one atomic word.
 */
struct vhost_user {
	int fd;
	int timeout_ms;
	uint64_t features;		/* GET_FEATURES */
	uint64_t protocol;		/* negotiated; 0 without */
	unsigned int nrings;		/* while running */
	int kick[VHOST_BACKEND_QUEUES];	/* while running */
	bool running;
	uint64_t messages;
	uint64_t starts;
	int error;			/* sticky */
	uint32_t error_request;
	uint32_t last_request;		/* for messages */
};

static int64_t
vhost_user_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on the socket until deadline (ms): 0 or -errno. */
static int
vhost_user_wait(struct vhost_user *vu, short events, int64_t deadline)
{
	struct pollfd p = { .fd = vu->fd, .events = events };
	int64_t left;
	int n;

	for (;;) {
		left = deadline - vhost_user_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n > 0)
			return 0;	/* an error or hang-up shows on I/O */
	}
}

/* The whole message, with fds (SCM_RIGHTS) on its first byte. */
static int
vhost_user_send(struct vhost_user *vu, const uint8_t *buf, size_t len,
    const int *fds, unsigned int nfds, int64_t deadline)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_REGIONS)];
		struct cmsghdr align;
	} cbuf;
	size_t off = 0;
	int ret;

	if (nfds > VHOST_USER_MAX_REGIONS)
		return -EINVAL;
	while (off < len) {
		struct iovec iov = { (void *)(buf + off), len - off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (off == 0 && nfds > 0) {
			struct cmsghdr *c;

			memset(&cbuf, 0, sizeof(cbuf));
			mh.msg_control = cbuf.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		n = sendmsg(vu->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if ((ret = vhost_user_wait(vu, POLLOUT, deadline)) < 0)
				return ret;
			continue;
		}
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/* Descriptors a backend sent with a reply have no place: closed. */
static void
vhost_user_drop_fds(struct msghdr *mh)
{
	struct cmsghdr *c;

	for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			close(fd);
		}
	}
}

/* Exactly len bytes by deadline: 0, -ETIMEDOUT, -ECONNRESET at EOF. */
static int
vhost_user_recv(struct vhost_user *vu, uint8_t *buf, size_t len,
    int64_t deadline)
{
	size_t off = 0;
	int ret;

	while (off < len) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = { buf + off, len - off };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = cbuf.buf,
		    .msg_controllen = sizeof(cbuf.buf) };
		ssize_t n;

		n = recvmsg(vu->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if ((ret = vhost_user_wait(vu, POLLIN, deadline)) < 0)
				return ret;
			continue;
		}
		if (n < 0)
			return -errno;
		vhost_user_drop_fds(&mh);
		if (n == 0)
			return -ECONNRESET;
		off += (size_t)n;
	}
	return 0;
}

static int
vhost_user_break(struct vhost_user *vu, uint32_t req, int err)
{
	__atomic_store_n(&vu->error_request, req, __ATOMIC_RELAXED);
	__atomic_store_n(&vu->error, err, __ATOMIC_RELEASE);
	__atomic_store_n(&vu->running, false, __ATOMIC_RELAXED);
	return err;
}

/*
 * One request (len bytes in msg, already encoded) and its answer: the
 * reply of want bytes into reply (a GET_*), or with REPLY_ACK in use and
 * ack set, the backend's status (nonzero: -EIO).  Any failure breaks the
 * connection.
 */
static int
vhost_user_call(struct vhost_user *vu, uint8_t *msg, int len,
    const int *fds, unsigned int nfds, uint8_t *reply, bool ack)
{
	uint32_t req = (uint32_t)msg[0] | (uint32_t)msg[1] << 8 |
	    (uint32_t)msg[2] << 16 | (uint32_t)msg[3] << 24;
	uint32_t want = vhost_user_msg_reply_size(req);
	int64_t deadline;
	uint64_t status;
	uint8_t ackbuf[VHOST_USER_HDR_SIZE + 8];
	struct vhost_user_hdr h;
	int ret;

	if ((ret = __atomic_load_n(&vu->error, __ATOMIC_ACQUIRE)) < 0)
		return ret;
	if (len < 0)
		return len;
	vu->last_request = req;
	ack = ack && want == 0 &&
	    (vu->protocol & (1ull << VHOST_USER_PROTOCOL_F_REPLY_ACK));
	if (ack) {
		msg[4] |= VHOST_USER_FLAG_NEED_REPLY;
		want = 8;
		reply = ackbuf;
	}
	__atomic_fetch_add(&vu->messages, 1, __ATOMIC_RELAXED);
	deadline = vhost_user_now_ms() + vu->timeout_ms;
	if ((ret = vhost_user_send(vu, msg, (size_t)len, fds, nfds,
	    deadline)) < 0)
		return vhost_user_break(vu, req, ret);
	if (want == 0)
		return 0;
	if ((ret = vhost_user_recv(vu, reply, VHOST_USER_HDR_SIZE,
	    deadline)) < 0)
		return vhost_user_break(vu, req, ret);
	if (vhost_user_msg_reply_hdr(reply, req, want, &h) < 0)
		return vhost_user_break(vu, req, -EPROTO);
	if ((ret = vhost_user_recv(vu, reply + VHOST_USER_HDR_SIZE, want,
	    deadline)) < 0)
		return vhost_user_break(vu, req, ret);
	if (!ack)
		return 0;
	if (vhost_user_msg_reply_u64(ackbuf, sizeof(ackbuf), req,
	    &status) < 0)
		return vhost_user_break(vu, req, -EPROTO);
	/* The backend refused one request: the stream is still in step. */
	return status == 0 ? 0 : -EIO;
}

static int
vhost_user_get_u64(struct vhost_user *vu, uint32_t req, uint64_t *v)
{
	uint8_t msg[VHOST_USER_HDR_SIZE], reply[VHOST_USER_HDR_SIZE + 8];
	int ret;

	ret = vhost_user_call(vu, msg, vhost_user_msg_plain(msg, req, 0),
	    NULL, 0, reply, false);
	if (ret < 0)
		return ret;
	return vhost_user_msg_reply_u64(reply, sizeof(reply), req, v);
}

static int
vhost_user_set_u64(struct vhost_user *vu, uint32_t req, uint64_t v,
    const int *fds, unsigned int nfds)
{
	uint8_t msg[VHOST_USER_HDR_SIZE + 8];

	return vhost_user_call(vu, msg, vhost_user_msg_u64(msg, req, 0, v),
	    fds, nfds, NULL, true);
}

static int
vhost_user_set_state(struct vhost_user *vu, uint32_t req, uint32_t index,
    uint32_t num)
{
	uint8_t msg[VHOST_USER_HDR_SIZE + 8];

	return vhost_user_call(vu, msg,
	    vhost_user_msg_state(msg, req, 0, index, num), NULL, 0, NULL,
	    true);
}

/* SET_VRING_KICK or _CALL: the ring's eventfd, or none (fd < 0). */
static int
vhost_user_set_vring_fd(struct vhost_user *vu, uint32_t req, unsigned int q,
    int fd)
{
	return vhost_user_set_u64(vu, req,
	    q | (fd < 0 ? VHOST_USER_VRING_NOFD : 0), &fd, fd < 0 ? 0 : 1);
}

static uint64_t
vhost_user_features(void *ctx)
{
	return ((struct vhost_user *)ctx)->features &
	    ~(1ull << VHOST_USER_F_PROTOCOL_FEATURES);
}

static int
vhost_user_set_call(void *ctx, unsigned int q, int fd)
{
	struct vhost_user *vu = ctx;

	if (q >= VHOST_BACKEND_QUEUES)
		return -EINVAL;
	return vhost_user_set_vring_fd(vu, VHOST_USER_SET_VRING_CALL, q, fd);
}

static void
vhost_user_kick(void *ctx, unsigned int q)
{
	struct vhost_user *vu = ctx;
	uint64_t one = 1;

	if (q < vu->nrings && vu->running && vu->kick[q] >= 0)
		(void)!write(vu->kick[q], &one, sizeof(one));
}

static int
vhost_user_stop(void *ctx, uint16_t next_avail[VHOST_BACKEND_QUEUES])
{
	struct vhost_user *vu = ctx;
	int ret = 0;

	/* GET_VRING_BASE stops the ring and says where it stopped. */
	for (unsigned int q = 0; q < vu->nrings; q++) {
		uint8_t msg[VHOST_USER_HDR_SIZE + 8];
		uint8_t reply[VHOST_USER_HDR_SIZE + 8];
		uint32_t num;
		int r;

		vu->kick[q] = -1;
		r = vhost_user_call(vu, msg, vhost_user_msg_state(msg,
		    VHOST_USER_GET_VRING_BASE, 0, q, 0), NULL, 0, reply, false);
		if (r == 0 && vhost_user_msg_reply_state(reply, sizeof(reply),
		    VHOST_USER_GET_VRING_BASE, q, &num) < 0)
			r = vhost_user_break(vu, VHOST_USER_GET_VRING_BASE,
			    -EPROTO);
		if (r == 0 && next_avail != NULL)
			next_avail[q] = (uint16_t)num;
		if (r < 0 && ret == 0)
			ret = r;
	}
	vu->nrings = 0;
	__atomic_store_n(&vu->running, false, __ATOMIC_RELAXED);
	return ret;
}

static int
vhost_user_ring(struct vhost_user *vu, unsigned int q,
    const struct vhost_backend_ring *r)
{
	uint8_t msg[VHOST_USER_HDR_SIZE + 40];
	struct vhost_user_vring_addr a = {
		.index = q,
		.desc = (uintptr_t)r->desc,
		.used = (uintptr_t)r->used,
		.avail = (uintptr_t)r->avail,
	};
	int ret;

	if ((ret = vhost_user_set_state(vu, VHOST_USER_SET_VRING_NUM, q,
	    r->size)) < 0 ||
	    (ret = vhost_user_set_state(vu, VHOST_USER_SET_VRING_BASE, q,
	    r->next_avail)) < 0 ||
	    (ret = vhost_user_call(vu, msg, vhost_user_msg_addr(msg, 0, &a),
	    NULL, 0, NULL, true)) < 0 ||
	    (ret = vhost_user_set_vring_fd(vu, VHOST_USER_SET_VRING_KICK, q,
	    r->kick)) < 0 ||
	    (ret = vhost_user_set_vring_fd(vu, VHOST_USER_SET_VRING_CALL, q,
	    r->call)) < 0)
		return ret;
	vu->kick[q] = r->kick;
	/* With protocol features a ring starts disabled. */
	if (vu->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
		ret = vhost_user_set_state(vu, VHOST_USER_SET_VRING_ENABLE, q,
		    1);
	return ret;
}

static int
vhost_user_start(void *ctx, const struct vhost_backend_start *s)
{
	struct vhost_user *vu = ctx;
	struct vhost_user_region reg[VHOST_BACKEND_REGIONS];
	int fds[VHOST_BACKEND_REGIONS];
	uint8_t msg[VHOST_USER_MAX_MSG];
	uint64_t features = s->features;
	int ret;

	if ((features & ~vhost_user_features(vu)) != 0 ||
	    s->nmem == 0 || s->nmem > VHOST_BACKEND_REGIONS ||
	    s->nrings == 0 || s->nrings > VHOST_BACKEND_QUEUES)
		return -ENOTSUP;
	for (unsigned int i = 0; i < s->nmem; i++) {
		/* Memory another process cannot map is of no use to it. */
		if (s->mem[i].fd < 0)
			return -ENOTSUP;
		reg[i] = (struct vhost_user_region){
			.gpa = s->mem[i].gpa,
			.size = s->mem[i].size,
			.uaddr = (uintptr_t)s->mem[i].hva,
			.mmap_offset = s->mem[i].fd_offset,
		};
		fds[i] = s->mem[i].fd;
	}
	if (vu->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES))
		features |= 1ull << VHOST_USER_F_PROTOCOL_FEATURES;
	__atomic_fetch_add(&vu->starts, 1, __ATOMIC_RELAXED);
	if ((ret = vhost_user_set_u64(vu, VHOST_USER_SET_FEATURES, features,
	    NULL, 0)) < 0 ||
	    (ret = vhost_user_call(vu, msg, vhost_user_msg_mem(msg, 0, reg,
	    s->nmem), fds, s->nmem, NULL, true)) < 0)
		return ret;
	vu->nrings = s->nrings;
	for (unsigned int q = 0; q < s->nrings; q++)
		if ((ret = vhost_user_ring(vu, q, &s->ring[q])) < 0)
			goto stop;
	__atomic_store_n(&vu->running, true, __ATOMIC_RELAXED);
	return 0;
stop:
	(void)vhost_user_stop(vu, NULL);
	return ret;
}

static const struct vhost_backend_ops vhost_user_ops = {
	.features = vhost_user_features,
	.start = vhost_user_start,
	.set_call = vhost_user_set_call,
	.kick = vhost_user_kick,
	.stop = vhost_user_stop,
};

static int
vhost_user_negotiate(struct vhost_user *vu, char *err, size_t errlen)
{
	uint8_t msg[VHOST_USER_HDR_SIZE];
	uint64_t proto = 0;
	int ret;

	if ((ret = vhost_user_get_u64(vu, VHOST_USER_GET_FEATURES,
	    &vu->features)) < 0)
		goto fail;
	if (vu->features & (1ull << VHOST_USER_F_PROTOCOL_FEATURES)) {
		if ((ret = vhost_user_get_u64(vu,
		    VHOST_USER_GET_PROTOCOL_FEATURES, &proto)) < 0)
			goto fail;
		proto &= VHOST_USER_PROTOCOL_KNOWN;
		/* REPLY_ACK starts with the next request. */
		if ((ret = vhost_user_set_u64(vu,
		    VHOST_USER_SET_PROTOCOL_FEATURES, proto, NULL, 0)) < 0)
			goto fail;
		vu->protocol = proto;
	}
	if ((ret = vhost_user_call(vu, msg, vhost_user_msg_plain(msg,
	    VHOST_USER_SET_OWNER, 0), NULL, 0, NULL, true)) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, "vhost-user: %s: %s",
	    vhost_user_msg_name(vu->last_request), ret == -EPROTO ?
	    "the backend's reply is not one" : ret == -ETIMEDOUT ?
	    "the backend did not answer in time" : strerror(-ret));
	return ret;
}

int
vhost_user_new(struct vhost_user **out, int fd, int timeout_ms,
    struct vhost_backend *be, char *err, size_t errlen)
{
	struct vhost_user *vu;
	int ret;

	if ((vu = calloc(1, sizeof(*vu))) == NULL) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return -ENOMEM;
	}
	vu->fd = fd;
	vu->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
	for (unsigned int q = 0; q < VHOST_BACKEND_QUEUES; q++)
		vu->kick[q] = -1;
	if ((ret = vhost_user_negotiate(vu, err, errlen)) < 0) {
		vhost_user_free(vu);
		return ret;
	}
	*be = (struct vhost_backend){ &vhost_user_ops, vu };
	*out = vu;
	return 0;
}

void
vhost_user_free(struct vhost_user *vu)
{
	if (vu == NULL)
		return;
	if (vu->running)
		(void)vhost_user_stop(vu, NULL);
	close(vu->fd);
	free(vu);
}

int
vhost_user_error(const struct vhost_user *vu)
{
	return __atomic_load_n(&vu->error, __ATOMIC_ACQUIRE);
}

int
vhost_user_fd(const struct vhost_user *vu)
{
	return vu->fd;
}

void
vhost_user_info(const struct vhost_user *vu, struct vhost_user_info *out)
{
	*out = (struct vhost_user_info){
		.features = vu->features,
		.protocol = vu->protocol,
		.running = __atomic_load_n(&vu->running, __ATOMIC_RELAXED),
		.messages = __atomic_load_n(&vu->messages, __ATOMIC_RELAXED),
		.starts = __atomic_load_n(&vu->starts, __ATOMIC_RELAXED),
		.error = __atomic_load_n(&vu->error, __ATOMIC_ACQUIRE),
		.error_request = __atomic_load_n(&vu->error_request,
		    __ATOMIC_RELAXED),
	};
}
