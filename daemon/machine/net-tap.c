/* See net-tap.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include <net/if.h>

#include "net-tap.h"
#include "virtio-net.h"

_Static_assert(NET_OFFLOAD_CSUM == TUN_F_CSUM &&
    NET_OFFLOAD_TSO4 == TUN_F_TSO4 && NET_OFFLOAD_TSO6 == TUN_F_TSO6 &&
    NET_OFFLOAD_TSO_ECN == TUN_F_TSO_ECN, "offload bits are TUN_F_*");

struct net_tap {
	int fd;
	struct event *ev;		/* readable; armed while watching */
	/* Set and read on the loop's thread only. */
	net_rx_fn rx;
	void *dev;
};

static int
net_tap_send(void *ctx, const struct iovec *iov, unsigned int niov)
{
	struct net_tap *t = ctx;
	ssize_t n;

	do
		n = writev(t->fd, iov, (int)niov);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

static ssize_t
net_tap_recv(void *ctx, void *buf, size_t len)
{
	struct net_tap *t = ctx;
	ssize_t n;

	do
		n = read(t->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return n;
}

static int
net_tap_set_offload(void *ctx, unsigned int flags)
{
	struct net_tap *t = ctx;

	return ioctl(t->fd, TUNSETOFFLOAD, (unsigned long)flags) < 0 ?
	    -errno : 0;
}

static void
net_tap_attach(void *ctx, net_rx_fn rx, void *dev)
{
	struct net_tap *t = ctx;

	if (rx == NULL && t->dev != dev)
		return;			/* a newer device took over */
	/* A new device watches when its driver is ready, not before. */
	event_del(t->ev);
	t->rx = rx;
	t->dev = rx != NULL ? dev : NULL;
}

static void
net_tap_watch(void *ctx, bool on)
{
	struct net_tap *t = ctx;

	/* From a vCPU thread too: never wait for a running callback. */
	if (on)
		event_add(t->ev, NULL);
	else
		event_del_noblock(t->ev);
}

static void
net_tap_readable(evutil_socket_t fd, short what, void *arg)
{
	struct net_tap *t = arg;

	if (t->rx != NULL)
		t->rx(t->dev);
	else
		event_del(t->ev);	/* nobody to take frames */
}

static const struct net_backend_ops net_tap_ops = {
	.send = net_tap_send,
	.recv = net_tap_recv,
	.set_offload = net_tap_set_offload,
	.attach = net_tap_attach,
	.watch = net_tap_watch,
};

int
net_tap_new(struct net_tap **out, struct event_base *base, int fd,
    const uint8_t mac[6], struct net_backend *be, char *name)
{
	struct net_tap *t;
	struct ifreq ifr;
	int hdr = VIRTIO_NET_HDR_LEN, fl;

	memset(&ifr, 0, sizeof(ifr));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0)
		return errno == EBADFD || errno == ENOTTY || errno == EINVAL ?
		    -EINVAL : -errno;
	if ((ifr.ifr_flags & (IFF_TAP | IFF_TUN)) != IFF_TAP ||
	    !(ifr.ifr_flags & IFF_VNET_HDR) || !(ifr.ifr_flags & IFF_NO_PI))
		return -EINVAL;
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr) < 0 ||
	    ioctl(fd, TUNSETOFFLOAD, 0UL) < 0 ||
	    (fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->fd = fd;
	t->ev = event_new(base, fd, EV_READ | EV_PERSIST, net_tap_readable,
	    t);
	if (t->ev == NULL) {
		free(t);
		return -ENOMEM;
	}
	memcpy(name, ifr.ifr_name, IFNAMSIZ);
	name[IFNAMSIZ - 1] = '\0';
	*be = (struct net_backend){ .ops = &net_tap_ops, .ctx = t };
	memcpy(be->mac, mac, 6);
	*out = t;
	return 0;
}

void
net_tap_free(struct net_tap *t)
{
	if (t == NULL)
		return;
	event_free(t->ev);
	close(t->fd);
	free(t);
}
