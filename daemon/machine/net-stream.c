/* See net-stream.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "net-stream.h"
#include "virtio-net.h"

#define NET_STREAM_LEN		4	/* the length before each frame */
#define NET_STREAM_FRAME_MAX	(VIRTIO_NET_FRAME_MAX - VIRTIO_NET_HDR_LEN)
/* A frame in more pieces than this is lost (a driver makes a few). */
#define NET_STREAM_SEGS		64
/* Two whole frames with their lengths: room for one behind another. */
#define NET_STREAM_RX		(2 * (NET_STREAM_LEN + NET_STREAM_FRAME_MAX))

struct net_stream {
	int fd;
	const char *what;
	struct event *rev;		/* readable; armed while watching */
	struct event *wev;		/* writable; armed while txq waits */
	/* What vCPUs send: under lock, a leaf (taken under a device's). */
	pthread_mutex_t lock;
	uint8_t *txq;
	size_t txlen;
	/* The loop's (under the device's lock, as recv is). */
	uint8_t *rx;
	size_t rxlen;
	net_rx_fn rxfn;
	void *dev;
	bool broken;			/* set once, under lock */
	struct net_stream_stats st;
};

static void
net_stream_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t
net_stream_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* Under lock: the link is over; say so once. */
static void
net_stream_break(struct net_stream *s, const char *why, int err)
{
	if (s->broken)
		return;
	s->broken = true;
	s->st.broken = true;
	log_warn("net: %s: %s%s%s: the guest's network is down", s->what,
	    why, err != 0 ? ": " : "", err != 0 ? strerror(err) : "");
}

/*
 * One frame, its header first in iov: out as [length][frame] in one
 * writev when the queue is empty, the rest of what the socket did not
 * take queued; behind the queue whole, or dropped when it is full.
 */
static int
net_stream_send(void *ctx, const struct iovec *iov, unsigned int niov)
{
	struct net_stream *s = ctx;
	struct iovec v[1 + NET_STREAM_SEGS];
	uint8_t len[NET_STREAM_LEN];
	size_t skip = VIRTIO_NET_HDR_LEN, total = 0, done = 0;
	unsigned int n = 1;
	ssize_t w = 0;

	if (niov > NET_STREAM_SEGS)
		return -EINVAL;
	for (unsigned int i = 0; i < niov; i++) {
		size_t l = iov[i].iov_len;

		if (skip >= l) {
			skip -= l;
			continue;
		}
		v[n++] = (struct iovec){ (uint8_t *)iov[i].iov_base + skip,
		    l - skip };
		total += l - skip;
		skip = 0;
	}
	if (total == 0 || total > NET_STREAM_FRAME_MAX)
		return -EINVAL;
	net_stream_put32(len, (uint32_t)total);
	v[0] = (struct iovec){ len, sizeof(len) };
	total += sizeof(len);

	pthread_mutex_lock(&s->lock);
	if (s->broken) {
		s->st.tx_dropped++;
		pthread_mutex_unlock(&s->lock);
		return -EPIPE;
	}
	if (s->txlen == 0) {
		do
			w = writev(s->fd, v, (int)n);
		while (w < 0 && errno == EINTR);
		if (w < 0 && errno != EAGAIN) {
			net_stream_break(s, "send", errno);
			pthread_mutex_unlock(&s->lock);
			return -EPIPE;
		}
		done = w > 0 ? (size_t)w : 0;
	}
	if (done < total && NET_STREAM_QUEUE - s->txlen < total - done) {
		/* Only a frame not begun can be dropped: one begun always
		 * fits, the queue being empty then. */
		s->st.tx_dropped++;
		pthread_mutex_unlock(&s->lock);
		return -ENOBUFS;
	}
	/* What the socket did not take, into the queue. */
	if (done < total)
		s->st.tx_queued++;
	for (unsigned int i = 0; i < n && done < total; i++) {
		if (done >= v[i].iov_len) {
			done -= v[i].iov_len;
			total -= v[i].iov_len;
			continue;
		}
		memcpy(s->txq + s->txlen, (uint8_t *)v[i].iov_base + done,
		    v[i].iov_len - done);
		s->txlen += v[i].iov_len - done;
		total -= v[i].iov_len;
		done = 0;
	}
	if (s->txlen > 0)
		event_add(s->wev, NULL);
	s->st.tx_frames++;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The loop: the socket takes more; the queue goes out. */
static void
net_stream_writable(evutil_socket_t fd, short what, void *arg)
{
	struct net_stream *s = arg;
	ssize_t w;

	pthread_mutex_lock(&s->lock);
	w = write(s->fd, s->txq, s->txlen);
	if (w < 0 && errno != EAGAIN && errno != EINTR)
		net_stream_break(s, "send", errno);
	if (w > 0) {
		memmove(s->txq, s->txq + w, s->txlen - (size_t)w);
		s->txlen -= (size_t)w;
	}
	if (s->txlen == 0 || s->broken)
		event_del(s->wev);
	pthread_mutex_unlock(&s->lock);
}

/* A whole frame waits in rx. */
static bool
net_stream_ready(const struct net_stream *s)
{
	return s->rxlen >= NET_STREAM_LEN && s->rxlen >= NET_STREAM_LEN +
	    net_stream_get32(s->rx);
}

static ssize_t
net_stream_recv(void *ctx, void *buf, size_t len)
{
	struct net_stream *s = ctx;
	uint8_t *out = buf;
	uint32_t flen;
	size_t copy;
	ssize_t n;

	if (len < VIRTIO_NET_HDR_LEN)
		return -EINVAL;
	for (;;) {
		if (s->rxlen >= NET_STREAM_LEN) {
			flen = net_stream_get32(s->rx);
			if (flen == 0 || flen > NET_STREAM_FRAME_MAX) {
				pthread_mutex_lock(&s->lock);
				net_stream_break(s, "a frame of impossible "
				    "length", 0);
				pthread_mutex_unlock(&s->lock);
				s->rxlen = 0;
				return -EAGAIN;
			}
			if (net_stream_ready(s))
				break;
		}
		if (s->broken)
			return -EAGAIN;
		n = read(s->fd, s->rx + s->rxlen, NET_STREAM_RX - s->rxlen);
		if (n > 0) {
			s->rxlen += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return -EAGAIN;
		pthread_mutex_lock(&s->lock);
		net_stream_break(s, n == 0 ? "the peer closed the link" :
		    "receive", n == 0 ? 0 : errno);
		pthread_mutex_unlock(&s->lock);
		return -EAGAIN;
	}
	/* A zero header (no offloads: net_backend.plain_frames). */
	memset(out, 0, VIRTIO_NET_HDR_LEN);
	copy = flen < len - VIRTIO_NET_HDR_LEN ? flen :
	    len - VIRTIO_NET_HDR_LEN;
	memcpy(out + VIRTIO_NET_HDR_LEN, s->rx + NET_STREAM_LEN, copy);
	memmove(s->rx, s->rx + NET_STREAM_LEN + flen,
	    s->rxlen - NET_STREAM_LEN - flen);
	s->rxlen -= NET_STREAM_LEN + flen;
	s->st.rx_frames++;
	return (ssize_t)(VIRTIO_NET_HDR_LEN + copy);
}

static int
net_stream_set_offload(void *ctx, unsigned int flags)
{
	return flags == 0 ? 0 : -ENOTSUP;
}

static void
net_stream_attach(void *ctx, net_rx_fn rx, void *dev)
{
	struct net_stream *s = ctx;

	if (rx == NULL && s->dev != dev)
		return;			/* a newer device took over */
	event_del(s->rev);
	s->rxfn = rx;
	s->dev = rx != NULL ? dev : NULL;
}

static void
net_stream_watch(void *ctx, bool on)
{
	struct net_stream *s = ctx;

	/* From a vCPU thread too: never wait for a running callback. */
	if (!on) {
		event_del_noblock(s->rev);
		return;
	}
	event_add(s->rev, NULL);
	/* Frames already read wait for no readable socket. */
	if (net_stream_ready(s))
		event_active(s->rev, EV_READ, 0);
}

static void
net_stream_readable(evutil_socket_t fd, short what, void *arg)
{
	struct net_stream *s = arg;

	if (s->rxfn != NULL && !s->broken)
		s->rxfn(s->dev);
	else
		event_del(s->rev);
}

static const struct net_backend_ops net_stream_ops = {
	.send = net_stream_send,
	.recv = net_stream_recv,
	.set_offload = net_stream_set_offload,
	.attach = net_stream_attach,
	.watch = net_stream_watch,
};

int
net_stream_new(struct net_stream **out, struct event_base *base, int fd,
    const uint8_t mac[6], const char *what, struct net_backend *be)
{
	struct net_stream *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->fd = fd;
	s->what = what;
	pthread_mutex_init(&s->lock, NULL);
	s->txq = malloc(NET_STREAM_QUEUE);
	s->rx = malloc(NET_STREAM_RX);
	evutil_make_socket_nonblocking(fd);
	s->rev = event_new(base, fd, EV_READ | EV_PERSIST,
	    net_stream_readable, s);
	s->wev = event_new(base, fd, EV_WRITE | EV_PERSIST,
	    net_stream_writable, s);
	if (s->txq == NULL || s->rx == NULL || s->rev == NULL ||
	    s->wev == NULL) {
		s->fd = -1;		/* not ours yet */
		net_stream_free(s);
		return -ENOMEM;
	}
	*be = (struct net_backend){ .ops = &net_stream_ops, .ctx = s,
	    .plain_frames = true };
	memcpy(be->mac, mac, 6);
	*out = s;
	return 0;
}

void
net_stream_free(struct net_stream *s)
{
	if (s == NULL)
		return;
	if (s->rev != NULL)
		event_free(s->rev);
	if (s->wev != NULL)
		event_free(s->wev);
	if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_destroy(&s->lock);
	free(s->txq);
	free(s->rx);
	free(s);
}

void
net_stream_get_stats(struct net_stream *s, struct net_stream_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}
