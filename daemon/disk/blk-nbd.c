/* See blk-nbd.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "blk-nbd.h"

#define BLK_NBD_RXBUF		(128u << 10)
#define BLK_NBD_TX_IOV		128	/* iovecs one sendmsg takes from us */
#define BLK_NBD_BACKOFF_MIN_MS	50
#define BLK_NBD_BACKOFF_MAX_MS	1000

/* A request in flight: sent, or waiting in the send ring. */
struct blk_nbd_slot {
	struct blk_io *io;		/* NULL: free */
	uint64_t handle;
	uint8_t hdr[NBD_REQUEST_SIZE];
	uint64_t payload;		/* bytes following hdr (a write's) */
	struct nbd_rx_req rx;
};

struct blk_nbd {
	/* Set up before the thread starts, then constant. */
	char *export;
	bool readonly;
	unsigned int retry_ms, timeout_ms;
	int (*connect)(void *arg);
	void *connect_arg;
	uint64_t size;
	int efd;			/* wakes the thread: submit, stop */
	pthread_t thread;

	pthread_mutex_t lock;		/* the queue, pending, stop, st */
	pthread_cond_t idle;		/* pending reached 0 */
	struct blk_io *head, **tail;	/* submitted, not yet taken */
	unsigned int pending;		/* submitted, not yet done */
	bool kicked;			/* efd written since last taken */
	bool stop;
	struct blk_nbd_stats st;

	/* The thread's alone. */
	int fd;				/* -1 while disconnected */
	struct nbd_export ex;
	struct nbd_rx rx;
	struct blk_io *backlog, **btail; /* taken, waiting for a slot */
	struct blk_nbd_slot slots[BLK_NBD_SLOTS];
	unsigned int inflight;
	unsigned int ring[BLK_NBD_SLOTS];	/* slots to send, in order */
	unsigned int ring_head, ring_len;
	uint64_t tx_off;		/* bytes of ring[ring_head] sent */
	uint64_t gen;			/* makes handles unique */
	uint64_t progress_ms;		/* last bytes from the server */
	uint8_t *rxbuf;
};

static uint64_t
blk_nbd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *
blk_nbd_state_name(enum blk_nbd_state s)
{
	switch (s) {
	case BLK_NBD_CONNECTED:
		return "connected";
	case BLK_NBD_RECONNECTING:
		return "reconnecting";
	case BLK_NBD_FAILED:
		return "failed";
	}
	return "?";
}

/* ---- The handshake's transport: the socket, bounded in time ---- */

struct blk_nbd_hs {
	int fd;
	uint64_t deadline_ms;
};

static int
blk_nbd_hs_wait(struct blk_nbd_hs *h, short events)
{
	struct pollfd p = { .fd = h->fd, .events = events };
	uint64_t now = blk_nbd_now_ms();
	int r;

	if (now >= h->deadline_ms)
		return -ETIMEDOUT;
	r = poll(&p, 1, (int)(h->deadline_ms - now));
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

static int
blk_nbd_hs_read(void *arg, void *buf, size_t len)
{
	struct blk_nbd_hs *h = arg;
	ssize_t r;
	int ret;

	while (len > 0) {
		r = read(h->fd, buf, len);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			if ((ret = blk_nbd_hs_wait(h, POLLIN)) < 0)
				return ret;
			continue;
		}
		buf = (uint8_t *)buf + r;
		len -= (size_t)r;
	}
	return 0;
}

static int
blk_nbd_hs_write(void *arg, const void *buf, size_t len)
{
	struct blk_nbd_hs *h = arg;
	ssize_t r;
	int ret;

	while (len > 0) {
		r = send(h->fd, buf, len, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				return -errno;
			if ((ret = blk_nbd_hs_wait(h, POLLOUT)) < 0)
				return ret;
			continue;
		}
		buf = (const uint8_t *)buf + r;
		len -= (size_t)r;
	}
	return 0;
}

/* The handshake on fd within ms, non-blocking from now on; 0 or -errno. */
static int
blk_nbd_handshake(struct blk_nbd *n, int fd, unsigned int ms,
    struct nbd_export *ex, char *err, size_t errlen)
{
	struct blk_nbd_hs h = { fd, blk_nbd_now_ms() + ms };
	struct nbd_io io = { blk_nbd_hs_read, blk_nbd_hs_write, &h };
	int fl;

	if ((fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -errno;
	}
	return nbd_handshake(&io, n->export, ex, err, errlen);
}

/* ---- Requests ---- */

static uint64_t
blk_nbd_iov_len(const struct blk_io *io)
{
	uint64_t len = 0;

	for (unsigned int i = 0; i < io->niov; i++)
		len += io->iov[i].iov_len;
	return len;
}

/* Completes io with result: the figures, the device, then pending. */
static void
blk_nbd_complete(struct blk_nbd *n, struct blk_io *io, int result)
{
	uint64_t len = blk_nbd_iov_len(io);

	pthread_mutex_lock(&n->lock);
	if (result < 0)
		n->st.errors++;
	else
		switch (io->op) {
		case BLK_READ:
			n->st.reads++;
			n->st.read_bytes += len;
			break;
		case BLK_WRITE:
			n->st.writes++;
			n->st.written_bytes += len;
			break;
		case BLK_FLUSH:
			n->st.flushes++;
			break;
		case BLK_DISCARD:
			n->st.discards++;
			break;
		case BLK_WRITE_ZEROES:
			n->st.zeroes++;
			break;
		}
	pthread_mutex_unlock(&n->lock);
	io->done(io, result);		/* takes the device's lock */
	pthread_mutex_lock(&n->lock);
	if (--n->pending == 0)
		pthread_cond_broadcast(&n->idle);
	pthread_mutex_unlock(&n->lock);
}

/*
 * io as an NBD request in slot s: 0, or the result io completes with
 * at once (an operation the export does not take).
 */
static int
blk_nbd_encode(struct blk_nbd *n, struct blk_nbd_slot *s, struct blk_io *io)
{
	uint64_t len = io->op == BLK_READ || io->op == BLK_WRITE ?
	    blk_nbd_iov_len(io) : io->len;
	uint16_t type, flags = 0;

	if (io->op != BLK_FLUSH && (io->offset > n->size ||
	    len > n->size - io->offset))
		return -EIO;
	switch (io->op) {
	case BLK_READ:
		type = NBD_CMD_READ;
		break;
	case BLK_WRITE:
		if (n->readonly)
			return -EROFS;
		type = NBD_CMD_WRITE;
		break;
	case BLK_FLUSH:
		/* A server that takes no flush writes through. */
		if (!(n->ex.flags & NBD_FLAG_SEND_FLUSH))
			return 1;
		type = NBD_CMD_FLUSH;
		len = 0;
		break;
	case BLK_DISCARD:
		/* A discard is advice: none taken is no error. */
		if (n->readonly || !(n->ex.flags & NBD_FLAG_SEND_TRIM))
			return n->readonly ? -EROFS : 1;
		type = NBD_CMD_TRIM;
		break;
	case BLK_WRITE_ZEROES:
		if (n->readonly)
			return -EROFS;
		if (!(n->ex.flags & NBD_FLAG_SEND_WRITE_ZEROES))
			return -EOPNOTSUPP;
		type = NBD_CMD_WRITE_ZEROES;
		flags = io->may_unmap ? 0 : NBD_CMD_FLAG_NO_HOLE;
		break;
	default:
		return -EINVAL;
	}
	/* Larger reads and writes than the server takes: none on
	 * virtio-blk or AHCI, whose requests stay far below 32 MiB. */
	if ((type == NBD_CMD_READ || type == NBD_CMD_WRITE) &&
	    len > n->ex.max_payload)
		return -EIO;
	if (len > UINT32_MAX)
		return -EIO;
	s->io = io;
	s->handle = ++n->gen << 8 | (uint64_t)(s - n->slots);
	s->payload = type == NBD_CMD_WRITE ? len : 0;
	nbd_encode_request(s->hdr, flags, type, s->handle, io->offset,
	    (uint32_t)len);
	s->rx = (struct nbd_rx_req){
		.offset = io->offset, .len = len, .read = type == NBD_CMD_READ,
		.iov = io->iov, .niov = io->niov,
	};
	return 0;
}

/* The backlog into free slots and the send ring, while connected. */
static void
blk_nbd_fill(struct blk_nbd *n)
{
	struct blk_io *io;
	unsigned int i = 0;
	int r;

	while (n->backlog != NULL && n->inflight < BLK_NBD_SLOTS) {
		while (n->slots[i].io != NULL)
			i++;		/* a free one exists: inflight < SLOTS */
		io = n->backlog;
		n->backlog = io->next;
		if (n->backlog == NULL)
			n->btail = &n->backlog;
		if ((r = blk_nbd_encode(n, &n->slots[i], io)) != 0) {
			/* Done at once; the slot stays free. */
			blk_nbd_complete(n, io, r > 0 ? 0 : r);
			continue;
		}
		if (n->inflight++ == 0)
			n->progress_ms = blk_nbd_now_ms();
		n->ring[(n->ring_head + n->ring_len++) % BLK_NBD_SLOTS] = i;
	}
}

static struct nbd_rx_req *
blk_nbd_lookup(void *arg, uint64_t handle)
{
	struct blk_nbd *n = arg;
	struct blk_nbd_slot *s;
	uint64_t i = handle & 0xff;

	if (i >= BLK_NBD_SLOTS)
		return NULL;
	s = &n->slots[i];
	if (s->io == NULL || s->handle != handle)
		return NULL;
	/* Not a reply to a request still (partly) unsent. */
	for (unsigned int k = 0; k < n->ring_len; k++)
		if (n->ring[(n->ring_head + k) % BLK_NBD_SLOTS] == i)
			return NULL;
	return &s->rx;
}

static void
blk_nbd_rx_done(void *arg, uint64_t handle, struct nbd_rx_req *req,
    int result)
{
	struct blk_nbd *n = arg;
	struct blk_nbd_slot *s = &n->slots[handle & 0xff];
	struct blk_io *io = s->io;

	(void)req;
	s->io = NULL;
	n->inflight--;
	blk_nbd_complete(n, io, result);
}

static const struct nbd_rx_ops blk_nbd_rx_ops = {
	.lookup = blk_nbd_lookup,
	.done = blk_nbd_rx_done,
};

/* As much of the send ring as the socket takes: 0, or -errno. */
static int
blk_nbd_send(struct blk_nbd *n)
{
	struct iovec v[BLK_NBD_TX_IOV];
	struct msghdr m = { .msg_iov = v };
	uint64_t skip = n->tx_off;
	unsigned int nv = 0, k;
	ssize_t r;

	/* Gather: whole requests after the first, partly sent, one. */
	for (k = 0; k < n->ring_len && nv < BLK_NBD_TX_IOV; k++) {
		struct blk_nbd_slot *s = &n->slots[n->ring[(n->ring_head + k) %
		    BLK_NBD_SLOTS]];

		if (k > 0 && nv + 1 + (s->payload ? s->io->niov : 0) >
		    BLK_NBD_TX_IOV)
			break;
		if (skip < NBD_REQUEST_SIZE)
			v[nv++] = (struct iovec){ s->hdr + skip,
			    NBD_REQUEST_SIZE - skip };
		skip = skip > NBD_REQUEST_SIZE ? skip - NBD_REQUEST_SIZE : 0;
		for (unsigned int i = 0; s->payload && i < s->io->niov &&
		    nv < BLK_NBD_TX_IOV; i++) {
			size_t l = s->io->iov[i].iov_len;

			if (skip >= l) {
				skip -= l;
				continue;
			}
			v[nv++] = (struct iovec){ (uint8_t *)s->io->iov[i].
			    iov_base + skip, l - skip };
			skip = 0;
		}
	}
	if (nv == 0)
		return 0;
	m.msg_iovlen = nv;
	r = sendmsg(n->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	/* Retire what went out whole. */
	n->tx_off += (uint64_t)r;
	while (n->ring_len > 0) {
		struct blk_nbd_slot *s = &n->slots[n->ring[n->ring_head]];
		uint64_t whole = NBD_REQUEST_SIZE + s->payload;

		if (n->tx_off < whole)
			break;
		n->tx_off -= whole;
		n->ring_head = (n->ring_head + 1) % BLK_NBD_SLOTS;
		n->ring_len--;
	}
	return 0;
}

/* What the server sent: 0, or -errno (the connection is lost). */
static int
blk_nbd_recv(struct blk_nbd *n)
{
	ssize_t r;

	r = read(n->fd, n->rxbuf, BLK_NBD_RXBUF);
	if (r == 0)
		return -ECONNRESET;
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	n->progress_ms = blk_nbd_now_ms();
	return nbd_rx_feed(&n->rx, n->rxbuf, (size_t)r);
}

/* The connection is gone: every request in it back to the backlog. */
static void
blk_nbd_lost(struct blk_nbd *n)
{
	struct blk_io *head = NULL, **tail = &head;

	close(n->fd);
	n->fd = -1;
	for (unsigned int i = 0; i < BLK_NBD_SLOTS; i++) {
		if (n->slots[i].io == NULL)
			continue;
		*tail = n->slots[i].io;
		tail = &(*tail)->next;
		n->slots[i].io = NULL;
	}
	if (head != NULL) {
		*tail = n->backlog;
		if (n->backlog == NULL)
			n->btail = tail;
		n->backlog = head;
	}
	n->inflight = 0;
	n->ring_head = n->ring_len = 0;
	n->tx_off = 0;
	pthread_mutex_lock(&n->lock);
	n->st.disconnects++;
	n->st.state = BLK_NBD_RECONNECTING;
	pthread_mutex_unlock(&n->lock);
}

/* One try at a new connection: 0 once connected, or -errno. */
static int
blk_nbd_reconnect(struct blk_nbd *n)
{
	struct nbd_export ex;
	char err[256];
	int fd, ret;

	if (n->connect == NULL)
		return -ENOTCONN;
	if ((fd = n->connect(n->connect_arg)) < 0)
		return fd;
	/* Within the requests' retry, not the (longer) silence bound. */
	ret = blk_nbd_handshake(n, fd, n->retry_ms < n->timeout_ms ?
	    n->retry_ms : n->timeout_ms, &ex, err, sizeof(err));
	/* The guest's disk does not change size under it. */
	if (ret == 0 && ex.size != n->size)
		ret = -ESTALE;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	n->fd = fd;
	n->ex = ex;
	nbd_rx_init(&n->rx, &blk_nbd_rx_ops, n, ex.structured);
	pthread_mutex_lock(&n->lock);
	n->st.reconnects++;
	n->st.state = BLK_NBD_CONNECTED;
	n->st.flags = ex.flags;
	n->st.structured = ex.structured;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

/* Every request waiting fails: the retry is over. */
static void
blk_nbd_fail_all(struct blk_nbd *n)
{
	struct blk_io *io;

	pthread_mutex_lock(&n->lock);
	n->st.state = BLK_NBD_FAILED;
	pthread_mutex_unlock(&n->lock);
	while ((io = n->backlog) != NULL) {
		n->backlog = io->next;
		blk_nbd_complete(n, io, -EIO);
	}
	n->btail = &n->backlog;
}

/* What submit queued, into the backlog; false once stopping and idle. */
static bool
blk_nbd_take(struct blk_nbd *n)
{
	bool stop;

	pthread_mutex_lock(&n->lock);
	if (n->head != NULL) {
		*n->btail = n->head;
		n->btail = n->tail;
		n->head = NULL;
		n->tail = &n->head;
	}
	n->kicked = false;
	stop = n->stop && n->pending == 0;
	pthread_mutex_unlock(&n->lock);
	return !stop;
}

static void *
blk_nbd_thread(void *arg)
{
	struct blk_nbd *n = arg;
	struct pollfd p[2];
	uint64_t lost_ms = 0, next_try_ms = 0, backoff = 0, now, v;
	int timeout, r;
	enum blk_nbd_state state = BLK_NBD_CONNECTED;

	while (blk_nbd_take(n)) {
		now = blk_nbd_now_ms();
		if (state == BLK_NBD_FAILED && n->backlog != NULL) {
			/* A request after giving up: a new round of tries. */
			state = BLK_NBD_RECONNECTING;
			pthread_mutex_lock(&n->lock);
			n->st.state = state;
			pthread_mutex_unlock(&n->lock);
			lost_ms = next_try_ms = now;
			backoff = 0;
		}
		if (state == BLK_NBD_RECONNECTING && now >= next_try_ms) {
			if (blk_nbd_reconnect(n) == 0) {
				state = BLK_NBD_CONNECTED;
				continue;
			}
			now = blk_nbd_now_ms();
			if (now - lost_ms >= n->retry_ms) {
				blk_nbd_fail_all(n);
				state = BLK_NBD_FAILED;
				continue;
			}
			backoff = backoff == 0 ? BLK_NBD_BACKOFF_MIN_MS :
			    backoff * 2 > BLK_NBD_BACKOFF_MAX_MS ?
			    BLK_NBD_BACKOFF_MAX_MS : backoff * 2;
			next_try_ms = now + backoff;
			if (next_try_ms > lost_ms + n->retry_ms)
				next_try_ms = lost_ms + n->retry_ms;
		}
		if (state == BLK_NBD_CONNECTED)
			blk_nbd_fill(n);

		p[0] = (struct pollfd){ .fd = n->efd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = n->fd, .events = POLLIN |
		    (n->ring_len > 0 ? POLLOUT : 0) };
		timeout = -1;
		if (state == BLK_NBD_RECONNECTING)
			timeout = (int)(next_try_ms > now ? next_try_ms - now :
			    0);
		else if (state == BLK_NBD_CONNECTED && n->inflight > 0)
			timeout = (int)(n->progress_ms + n->timeout_ms > now ?
			    n->progress_ms + n->timeout_ms - now : 0);
		r = poll(p, state == BLK_NBD_CONNECTED ? 2 : 1, timeout);
		if (r < 0)
			continue;	/* EINTR */
		if (p[0].revents & POLLIN)
			(void)!read(n->efd, &v, sizeof(v));
		if (state != BLK_NBD_CONNECTED)
			continue;
		r = 0;
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR))
			r = blk_nbd_recv(n);
		if (r == 0 && (p[1].revents & POLLOUT))
			r = blk_nbd_send(n);
		if (r == 0 && n->inflight > 0 &&
		    blk_nbd_now_ms() - n->progress_ms >= n->timeout_ms)
			r = -ETIMEDOUT;
		if (r < 0) {
			blk_nbd_lost(n);
			state = BLK_NBD_RECONNECTING;
			lost_ms = next_try_ms = blk_nbd_now_ms();
			backoff = 0;
		}
	}
	if (n->fd >= 0) {
		/* A clean goodbye; the server may not hear it. */
		uint8_t d[NBD_REQUEST_SIZE];

		nbd_encode_request(d, 0, NBD_CMD_DISC, 0, 0, 0);
		(void)!send(n->fd, d, sizeof(d), MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	return NULL;
}

/* Called from vCPU threads under the device's lock: never blocks long. */
static int
blk_nbd_submit(void *ctx, struct blk_io *io)
{
	struct blk_nbd *n = ctx;
	uint64_t one = 1;
	int ret = 0;

	pthread_mutex_lock(&n->lock);
	io->next = NULL;
	*n->tail = io;
	n->tail = &io->next;
	n->pending++;
	if (!n->kicked) {
		n->kicked = true;
		if (write(n->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			ret = -errno;
	}
	pthread_mutex_unlock(&n->lock);
	return ret;
}

static void
blk_nbd_drain(void *ctx)
{
	struct blk_nbd *n = ctx;

	pthread_mutex_lock(&n->lock);
	while (n->pending > 0)
		pthread_cond_wait(&n->idle, &n->lock);
	pthread_mutex_unlock(&n->lock);
}

static const struct blk_backend_ops blk_nbd_ops = {
	.submit = blk_nbd_submit,
	.drain = blk_nbd_drain,
};

static void
blk_nbd_destroy(struct blk_nbd *n)
{
	if (n->fd >= 0)
		close(n->fd);
	if (n->efd >= 0)
		close(n->efd);
	pthread_cond_destroy(&n->idle);
	pthread_mutex_destroy(&n->lock);
	free(n->rxbuf);
	free(n->export);
	free(n);
}

int
blk_nbd_new(struct blk_nbd **out, int fd, const struct blk_nbd_config *cfg,
    struct blk_backend *be, char *err, size_t errlen)
{
	struct blk_nbd *n;
	int ret;

	snprintf(err, errlen, "out of memory");
	n = calloc(1, sizeof(*n));
	if (n == NULL) {
		close(fd);
		return -ENOMEM;
	}
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->idle, NULL);
	n->fd = fd;
	n->efd = -1;
	n->tail = &n->head;
	n->btail = &n->backlog;
	n->retry_ms = cfg->retry_ms ? cfg->retry_ms : BLK_NBD_RETRY_MS;
	n->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : BLK_NBD_TIMEOUT_MS;
	n->connect = cfg->connect;
	n->connect_arg = cfg->connect_arg;
	n->export = strdup(cfg->export != NULL ? cfg->export : "");
	n->rxbuf = malloc(BLK_NBD_RXBUF);
	if (n->export == NULL || n->rxbuf == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	if ((ret = blk_nbd_handshake(n, fd, n->timeout_ms, &n->ex, err,
	    errlen)) < 0)
		goto fail;
	if (n->ex.size < 512) {
		snprintf(err, errlen, "an export smaller than one sector");
		ret = -EINVAL;
		goto fail;
	}
	n->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->efd < 0) {
		ret = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	n->size = n->ex.size & ~511ULL;
	n->readonly = cfg->readonly || (n->ex.flags & NBD_FLAG_READ_ONLY);
	nbd_rx_init(&n->rx, &blk_nbd_rx_ops, n,
	    n->ex.structured);
	n->st.state = BLK_NBD_CONNECTED;
	n->st.size = n->ex.size;
	n->st.flags = n->ex.flags;
	n->st.structured = n->ex.structured;
	if ((ret = -pthread_create(&n->thread, NULL, blk_nbd_thread, n)) < 0) {
		snprintf(err, errlen, "thread: %s", strerror(-ret));
		goto fail;
	}
	memset(be, 0, sizeof(*be));
	be->ops = &blk_nbd_ops;
	be->ctx = n;
	be->size = n->size;
	be->readonly = n->readonly;
	if (cfg->serial != NULL)
		snprintf(be->serial, sizeof(be->serial), "%s", cfg->serial);
	*out = n;
	return 0;
fail:
	blk_nbd_destroy(n);
	return ret;
}

void
blk_nbd_stats(struct blk_nbd *n, struct blk_nbd_stats *st)
{
	pthread_mutex_lock(&n->lock);
	*st = n->st;
	pthread_mutex_unlock(&n->lock);
}

void
blk_nbd_free(struct blk_nbd *n)
{
	uint64_t one = 1;

	if (n == NULL)
		return;
	blk_nbd_drain(n);
	pthread_mutex_lock(&n->lock);
	n->stop = true;
	(void)!write(n->efd, &one, sizeof(one));
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	blk_nbd_destroy(n);
}
