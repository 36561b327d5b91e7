/* See virtio-net.h; section numbers are Virtio 1.2's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "virtio-dev.h"
#include "virtio-net.h"

/* Feature bits (5.1.3). */
#define VIRTIO_NET_F_CSUM		0
#define VIRTIO_NET_F_GUEST_CSUM		1
#define VIRTIO_NET_F_MAC		5
#define VIRTIO_NET_F_GUEST_TSO4		7
#define VIRTIO_NET_F_GUEST_TSO6		8
#define VIRTIO_NET_F_GUEST_ECN		9
#define VIRTIO_NET_F_HOST_TSO4		11
#define VIRTIO_NET_F_HOST_TSO6		12
#define VIRTIO_NET_F_HOST_ECN		13
#define VIRTIO_NET_F_MRG_RXBUF		15
#define VIRTIO_NET_F_STATUS		16

/* The header (5.1.6). */
#define VIRTIO_NET_HDR_F_NEEDS_CSUM	1
#define VIRTIO_NET_HDR_GSO_NONE		0
#define VIRTIO_NET_HDR_GSO_TCPV4	1
#define VIRTIO_NET_HDR_GSO_TCPV6	4
#define VIRTIO_NET_HDR_GSO_ECN		0x80

#define VIRTIO_NET_S_LINK_UP		1

#define RXQ		0
#define TXQ		1
#define CFG_SIZE	10	/* mac, status, max_virtqueue_pairs (5.1.4) */
/* Frames taken per wake-up before the loop gets its turn back. */
#define RX_BUDGET	64
/* Frames sent per burst before the loop gets its turn back. */
#define TX_BURST	64

struct virtio_net_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers;
};

struct virtio_net {
	struct virtio_dev vdev;
	const struct device_host *host;
	struct net_backend be;
	bool watching;			/* the backend calls us on frames */
	struct device_timer *tx_timer;	/* sent chains wait to go back */
	bool tx_armed;
	struct virtq_chain chain;
	/* A frame as it goes to the backend: our header, then the guest's. */
	struct iovec txiov[1 + VIRTQ_MAX_SEGS];
	size_t rxlen;			/* a received frame waits in rxbuf */
	/* Diagnostics. */
	uint64_t rx_frames, rx_bytes, rx_dropped, rx_starved, rx_errors;
	uint64_t tx_frames, tx_bytes, tx_bad, tx_errors;
	uint64_t tx_bursts, tx_deferred, tx_held;
	uint8_t rxbuf[VIRTIO_NET_FRAME_MAX];
};

static bool
virtio_net_has(const struct virtio_net *n, unsigned int bit)
{
	return virtio_dev_has(&n->vdev, bit);
}

/*
 * May the driver send a frame of len bytes (after the header) with
 * header h?  Only what it negotiated (5.1.6.2), and a checksum inside
 * the frame.
 */
static bool
virtio_net_tx_ok(const struct virtio_net *n, const struct virtio_net_hdr *h,
    uint64_t len)
{
	uint8_t gso = h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;

	if (h->flags & ~VIRTIO_NET_HDR_F_NEEDS_CSUM)
		return false;
	if ((h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
	    (!virtio_net_has(n, VIRTIO_NET_F_CSUM) ||
	    (uint64_t)h->csum_start + h->csum_offset + 2 > len))
		return false;
	if ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) &&
	    !virtio_net_has(n, VIRTIO_NET_F_HOST_ECN))
		return false;
	switch (gso) {
	case VIRTIO_NET_HDR_GSO_NONE:
		return h->gso_type == VIRTIO_NET_HDR_GSO_NONE;
	case VIRTIO_NET_HDR_GSO_TCPV4:
		if (!virtio_net_has(n, VIRTIO_NET_F_HOST_TSO4))
			return false;
		break;
	case VIRTIO_NET_HDR_GSO_TCPV6:
		if (!virtio_net_has(n, VIRTIO_NET_F_HOST_TSO6))
			return false;
		break;
	default:
		return false;
	}
	/* Segmentation needs the checksum offload and a segment size. */
	return (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && h->gso_size != 0;
}

_Static_assert(sizeof(struct virtio_net_hdr) == VIRTIO_NET_HDR_LEN,
    "the header the backend takes");

/*
 * The frame of the chain, behind the checked header h, in n->txiov: the
 * number of segments.  The guest may rewrite its copy of the header
 * while the backend reads: what goes out is what was checked.
 */
static unsigned int
virtio_net_tx_iov(struct virtio_net *n, struct virtio_net_hdr *h)
{
	const struct virtq_chain *c = &n->chain;
	size_t skip = VIRTIO_NET_HDR_LEN;
	unsigned int i, k = 1;

	n->txiov[0] = (struct iovec){ h, sizeof(*h) };
	for (i = 0; i < c->nout; i++) {
		if (skip >= c->iov[i].iov_len) {
			skip -= c->iov[i].iov_len;
			continue;
		}
		n->txiov[k].iov_base = (uint8_t *)c->iov[i].iov_base + skip;
		n->txiov[k].iov_len = c->iov[i].iov_len - skip;
		k++;
		skip = 0;
	}
	return k;
}

/*
 * Send up to budget chains: how many were taken, or -EINVAL when the
 * queue broke.  Each chain is filled in as used (the backend has its
 * bytes by then); the driver sees them at virtio_net_tx_complete().
 */
static int
virtio_net_tx_drain(struct virtio_net *n, unsigned int budget)
{
	struct virtq *vq = &n->vdev.vq[TXQ];
	struct virtio_net_hdr h;
	unsigned int taken = 0;
	int ret = 0;

	while (taken < budget && (ret = virtq_pop(vq, &n->chain)) > 0) {
		uint64_t len = n->chain.out_len - VIRTIO_NET_HDR_LEN;

		taken++;
		if (n->chain.out_len < VIRTIO_NET_HDR_LEN ||
		    n->chain.out_len > VIRTIO_NET_FRAME_MAX ||
		    virtq_chain_read(&n->chain, 0, &h, sizeof(h)) !=
		    sizeof(h) || !virtio_net_tx_ok(n, &h, len)) {
			n->tx_bad++;
		} else if (n->be.ops->send(n->be.ctx, n->txiov,
		    virtio_net_tx_iov(n, &h)) < 0) {
			n->tx_errors++;
		} else {
			n->tx_frames++;
			n->tx_bytes += len;
		}
		virtq_fill(vq, n->chain.head, 0);
	}
	return ret < 0 ? ret : (int)taken;
}

/* Show the driver every chain sent so far, and interrupt it if it asks. */
static void
virtio_net_tx_complete(struct virtio_net *n)
{
	virtq_flush(&n->vdev.vq[TXQ]);
	virtio_dev_queue_done(&n->vdev, TXQ);
}

static void
virtio_net_tx_arm(struct virtio_net *n, int64_t delay_ns)
{
	n->tx_armed = true;
	device_timer_arm(n->host, n->tx_timer,
	    device_vm_clock(n->host) + delay_ns);
}

/*
 * One transmit burst, from a kick or from the timer: kicks off while we
 * drain (the driver adds without exiting), on again when the ring is
 * empty, and a last look for what came in between.
 *
 * Frames go to the backend at once, but a kick's burst gives them back
 * only when the timer fires, up to VIRTIO_NET_TX_HOLD_NS later, with
 * what later kicks sent meanwhile: one used-index update and at most
 * one interrupt for all of them.  That is what lets the guest's TCP
 * coalesce: its small-queue limit counts the bytes still in the
 * device, so it joins the application's writes into larger frames
 * instead of sending each alone, and each frame saved is a kick, an
 * interrupt and the ACK that answers it.  The wire does not wait:
 * only the buffers' return does.
 *
 * A burst stops after TX_BURST frames: then the timer is due at once,
 * kicks stay off, and the rest goes on at the loop's next turn, after
 * receive and the other devices had theirs.  The timer is armed only
 * while sent frames wait to go back: an idle NIC has none.
 */
static void
virtio_net_tx(struct virtio_net *n, bool complete)
{
	struct virtq *vq = &n->vdev.vq[TXQ];
	unsigned int budget = TX_BURST;
	int got;

	n->tx_bursts++;
	virtq_quiet(vq);
	for (;;) {
		if ((got = virtio_net_tx_drain(n, budget)) < 0) {
			virtio_dev_needs_reset(&n->vdev);
			complete = true;
			break;
		}
		budget -= (unsigned int)got;
		if (budget == 0) {
			n->tx_deferred++;
			virtio_net_tx_arm(n, 0);
			break;
		}
		if (!virtq_listen(vq))
			break;
		virtq_quiet(vq);
	}
	if (complete)
		virtio_net_tx_complete(n);
	else if (virtq_held(vq) && !n->tx_armed) {
		n->tx_held++;
		virtio_net_tx_arm(n, VIRTIO_NET_TX_HOLD_NS);
	}
}

/* The timer: on the loop, under the device's lock. */
static void
virtio_net_tx_timer(void *dev)
{
	struct virtio_net *n = dev;

	n->tx_armed = false;
	if (virtio_dev_queue_live(&n->vdev, TXQ))
		virtio_net_tx(n, true);
}

enum rx_result {
	RX_DONE,	/* delivered, or lost for good */
	RX_NO_ROOM,	/* the driver must give buffers first */
};

/*
 * Deliver the frame in rxbuf: count the buffers it needs, give them
 * back, then fill that many (so that num_buffers is known before the
 * first is written).  A guest that changes its ring in between
 * confuses only itself: every chain is checked again.
 */
static enum rx_result
virtio_net_rx_one(struct virtio_net *n)
{
	struct virtq *vq = &n->vdev.vq[RXQ];
	bool mrg = virtio_net_has(n, VIRTIO_NET_F_MRG_RXBUF);
	uint64_t room = 0;
	uint16_t k = 0, i;
	size_t off = 0, len;
	int ret;

	while (room < n->rxlen) {
		if ((ret = virtq_pop(vq, &n->chain)) < 0) {
			virtio_dev_needs_reset(&n->vdev);
			return RX_NO_ROOM;
		}
		if (ret == 0)
			break;
		room += n->chain.in_len;
		k++;
		if (!mrg)
			break;
	}
	virtq_unpop(vq, k);
	if (room < n->rxlen) {
		if (k == 0 || mrg)
			return RX_NO_ROOM;
		/* Buffers smaller than a frame: this frame cannot go. */
		n->rx_dropped++;
		n->rxlen = 0;
		return RX_DONE;
	}
	memcpy(&n->rxbuf[10], &k, 2);	/* num_buffers (5.1.6.4) */
	for (i = 0; i < k && off < n->rxlen; i++) {
		if (virtq_pop(vq, &n->chain) <= 0) {
			virtio_dev_needs_reset(&n->vdev);
			break;
		}
		len = virtq_chain_write(&n->chain, 0, &n->rxbuf[off],
		    n->rxlen - off);
		off += len;
		virtq_push(vq, n->chain.head, (uint32_t)len);
	}
	n->rx_frames++;
	n->rx_bytes += n->rxlen - VIRTIO_NET_HDR_LEN;
	n->rxlen = 0;
	return RX_DONE;
}

static bool
virtio_net_rx_ready(const struct virtio_net *n)
{
	return virtio_dev_queue_live(&n->vdev, RXQ) &&
	    !n->vdev.vq[RXQ].broken;
}

static void
virtio_net_watch(struct virtio_net *n, bool on)
{
	/* Stopping is never skipped: a wake-up means the backend watches. */
	if (on && n->watching)
		return;
	n->watching = on;
	n->be.ops->watch(n->be.ctx, on);
}

/*
 * Take frames from the backend while the driver has room: at most
 * RX_BUDGET, then the loop's next turn brings us back.
 */
static void
virtio_net_rx_run(struct virtio_net *n)
{
	unsigned int budget = RX_BUDGET;
	ssize_t got;

	while (budget-- > 0) {
		if (!virtio_net_rx_ready(n)) {
			virtio_net_watch(n, false);
			break;
		}
		if (n->rxlen == 0) {
			got = n->be.ops->recv(n->be.ctx, n->rxbuf,
			    sizeof(n->rxbuf));
			if (got == -EAGAIN)
				break;
			if (got < 0) {
				n->rx_errors++;
				break;
			}
			if (got <= VIRTIO_NET_HDR_LEN) {
				n->rx_dropped++;
				continue;
			}
			n->rxlen = (size_t)got;
		}
		if (virtio_net_rx_one(n) == RX_NO_ROOM) {
			n->rx_starved++;
			virtio_net_watch(n, false);
			break;
		}
	}
	virtio_dev_queue_done(&n->vdev, RXQ);
}

static struct virtio_net *
virtio_net_of(struct virtio_dev *d)
{
	return VIRTIO_DEV_STATE(d, struct virtio_net, vdev);
}

/*
 * The backend: frames wait for dev, the device it was attached to.  On
 * the loop's thread, no lock held.
 */
static void
virtio_net_rx(void *dev)
{
	struct virtio_net *n = virtio_net_of(dev);

	device_lock(n->host);
	virtio_net_rx_run(n);
	device_unlock(n->host);
}

static void
virtio_net_notify(struct virtio_dev *d, unsigned int q)
{
	struct virtio_net *n = virtio_net_of(d);

	if (q == TXQ) {
		virtio_net_tx(n, false);
		return;
	}
	/* New receive buffers: deliver what waits, then watch again. */
	if (n->watching)
		return;
	if (n->rxlen != 0) {
		if (virtio_net_rx_one(n) == RX_NO_ROOM)
			return;
		virtio_dev_queue_done(d, RXQ);
	}
	virtio_net_watch(n, true);
}

static void
virtio_net_activate(struct virtio_dev *d)
{
	struct virtio_net *n = virtio_net_of(d);
	unsigned int off = 0;

	if (virtio_net_has(n, VIRTIO_NET_F_GUEST_CSUM)) {
		off |= NET_OFFLOAD_CSUM;
		if (virtio_net_has(n, VIRTIO_NET_F_GUEST_TSO4))
			off |= NET_OFFLOAD_TSO4;
		if (virtio_net_has(n, VIRTIO_NET_F_GUEST_TSO6))
			off |= NET_OFFLOAD_TSO6;
		if ((off & (NET_OFFLOAD_TSO4 | NET_OFFLOAD_TSO6)) &&
		    virtio_net_has(n, VIRTIO_NET_F_GUEST_ECN))
			off |= NET_OFFLOAD_TSO_ECN;
	}
	if (n->be.ops->set_offload(n->be.ctx, off) < 0)
		n->rx_errors++;
	/*
	 * Only a loaded device holds a frame here (a reset drops it): it
	 * goes first, or waits for the driver's buffers unwatched, as it
	 * did when saved.
	 */
	if (n->rxlen != 0) {
		if (virtio_net_rx_one(n) == RX_NO_ROOM)
			return;
		virtio_dev_queue_done(d, RXQ);
	}
	virtio_net_watch(n, true);
}

static void
virtio_net_reset(struct virtio_dev *d)
{
	struct virtio_net *n = virtio_net_of(d);

	/* The next wake-up finds no queue and stops watching. */
	n->rxlen = 0;
	device_timer_cancel(n->host, n->tx_timer);
	n->tx_armed = false;
}

static void
virtio_net_config_read(struct virtio_dev *d, uint32_t offset, void *data,
    unsigned int size)
{
	struct virtio_net *n = virtio_net_of(d);
	uint8_t cfg[CFG_SIZE] = { 0 };

	memcpy(cfg, n->be.mac, 6);
	cfg[6] = VIRTIO_NET_S_LINK_UP;
	cfg[8] = 1;			/* one queue pair */
	memcpy(data, &cfg[offset], size);
}

/* Detaches from the backend; on the loop's thread. */
static void
virtio_net_free(struct virtio_dev *d)
{
	struct virtio_net *n = virtio_net_of(d);

	n->be.ops->attach(n->be.ctx, NULL, d);
	device_timer_free(n->host, n->tx_timer);
	free(n);
}

#define VNET_FIGURE(key, metric, kind, unit, help)			\
	{ #key, metric, FIGURE_##kind, FIGURE_UNIT_##unit, help,		\
	    FIGURE_AT(struct virtio_net, key) }

/* The frames and bytes each way; of a struct virtio_net. */
static const struct figure virtio_net_figure_rows[] = {
	VNET_FIGURE(rx_frames, "vmmd_net_receive_frames", COUNTER, NONE,
	    "Frames delivered to the guest"),
	VNET_FIGURE(rx_bytes, "vmmd_net_receive_bytes", COUNTER, BYTES,
	    "Bytes delivered to the guest"),
	VNET_FIGURE(rx_dropped, "vmmd_net_receive_dropped_frames", COUNTER, NONE,
	    "Frames dropped on the way to the guest"),
	VNET_FIGURE(rx_starved, NULL, COUNTER, NONE,
	    "Frames that waited for the guest to post receive buffers"),
	VNET_FIGURE(rx_errors, "vmmd_net_receive_errors", COUNTER, NONE,
	    "Receive errors"),
	VNET_FIGURE(tx_frames, "vmmd_net_transmit_frames", COUNTER, NONE,
	    "Frames the guest sent"),
	VNET_FIGURE(tx_bytes, "vmmd_net_transmit_bytes", COUNTER, BYTES,
	    "Bytes the guest sent"),
	VNET_FIGURE(tx_bad, NULL, COUNTER, NONE,
	    "Frames the guest sent malformed"),
	VNET_FIGURE(tx_errors, "vmmd_net_transmit_errors", COUNTER, NONE,
	    "Transmit errors"),
	VNET_FIGURE(tx_bursts, NULL, COUNTER, NONE,
	    "Runs of the transmit queue"),
	VNET_FIGURE(tx_deferred, NULL, COUNTER, NONE,
	    "Transmit runs that used up their budget, continued from a timer"),
	VNET_FIGURE(tx_held, NULL, COUNTER, NONE,
	    "Sent chains held back before their return"),
};

static const struct figure_table virtio_net_figures =
    FIGURE_TABLE(virtio_net_figure_rows);

static void
virtio_net_diag(struct virtio_dev *vd, struct device_diag *d)
{
	struct virtio_net *n = virtio_net_of(vd);
	uint64_t mac = 0;

	for (unsigned int i = 0; i < 6; i++)
		mac = mac << 8 | n->be.mac[i];
	device_diag_put(d, "mac", mac, DEVICE_DIAG_HEX);
	device_diag_put(d, "watching", n->watching, DEVICE_DIAG_BOOL);
	device_diag_figures(d, &virtio_net_figures, n);
}

/*
 * Snapshots: the section "virtio-net", the MAC the guest was given and
 * the received frame held for want of guest buffers (rxlen bytes of
 * rxbuf), so that no frame taken from the backend is lost.  The MAC
 * is the backend's: a load into a device with another one (a clone)
 * keeps the device's; telling the guest is the clone's business.
 */
struct virtio_net_state {
	uint8_t mac[6];
	uint32_t rxlen;
	uint8_t rxbuf[VIRTIO_NET_FRAME_MAX];
};

static const struct dev_state_field virtio_net_state_fields[] = {
	{ .name = "mac", .type = DEV_STATE_BYTES,
	    DEV_STATE_AT(struct virtio_net_state, mac) },
	{ .name = "rx.frame", .type = DEV_STATE_BYTES,
	    .flags = DEV_STATE_VARLEN,
	    DEV_STATE_AT(struct virtio_net_state, rxbuf),
	    .count_offset = offsetof(struct virtio_net_state, rxlen) },
};

static int
virtio_net_state_check(const void *state, struct dev_state_error *err)
{
	const struct virtio_net_state *st = state;

	if (st->rxlen != 0 && st->rxlen <= VIRTIO_NET_HDR_LEN)
		return dev_state_fail(err, -EINVAL, "virtio-net: rx.frame of "
		    "%u bytes, no longer than its header", st->rxlen);
	return 0;
}

static const struct dev_state_table virtio_net_state_table = {
	DEV_STATE_TABLE("virtio-net", 1, struct virtio_net_state,
	    virtio_net_state_fields),
	.check = virtio_net_state_check,
};

static int
virtio_net_save(struct virtio_dev *d, struct dev_state_buf *out)
{
	struct virtio_net *n = virtio_net_of(d);
	struct virtio_net_state *st = malloc(sizeof(*st));
	int rc;

	if (st == NULL)
		return -ENOMEM;
	memcpy(st->mac, n->be.mac, 6);
	st->rxlen = (uint32_t)n->rxlen;
	memcpy(st->rxbuf, n->rxbuf, n->rxlen);
	rc = dev_state_save(&virtio_net_state_table, st, out);
	free(st);
	return rc;
}

static int
virtio_net_load(struct virtio_dev *d, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct virtio_net *n = virtio_net_of(d);
	struct virtio_net_state *st = calloc(1, sizeof(*st));
	int rc;

	if (st == NULL)
		return dev_state_fail(err, -ENOMEM, "virtio-net: no memory");
	rc = dev_state_load(&virtio_net_state_table, st, buf, len, err);
	if (rc == 0) {
		n->rxlen = st->rxlen;
		memcpy(n->rxbuf, st->rxbuf, st->rxlen);
	}
	free(st);
	return rc;
}

static const struct virtio_dev_ops virtio_net_ops = {
	.type = 1,
	.nqueues = 2,
	.queue_max = VIRTIO_NET_QUEUE,
	.features = 1ULL << VIRTIO_NET_F_CSUM |
	    1ULL << VIRTIO_NET_F_GUEST_CSUM | 1ULL << VIRTIO_NET_F_MAC |
	    1ULL << VIRTIO_NET_F_GUEST_TSO4 | 1ULL << VIRTIO_NET_F_GUEST_TSO6 |
	    1ULL << VIRTIO_NET_F_GUEST_ECN | 1ULL << VIRTIO_NET_F_HOST_TSO4 |
	    1ULL << VIRTIO_NET_F_HOST_TSO6 | 1ULL << VIRTIO_NET_F_HOST_ECN |
	    1ULL << VIRTIO_NET_F_MRG_RXBUF | 1ULL << VIRTIO_NET_F_STATUS,
	.config_size = CFG_SIZE,
	.config_read = virtio_net_config_read,
	.notify = virtio_net_notify,
	.activate = virtio_net_activate,
	.save = virtio_net_save,
	.load = virtio_net_load,
	.reset = virtio_net_reset,
	.diag = virtio_net_diag,
	.free = virtio_net_free,
};


struct virtio_dev *
virtio_net_new(const struct device_host *host, const struct net_backend *be)
{
	struct virtio_net *n = calloc(1, sizeof(*n));

	if (n == NULL)
		return NULL;
	n->host = host;
	n->be = *be;
	if ((n->tx_timer = device_timer_new(host, virtio_net_tx_timer,
	    n)) == NULL)
		goto free_n;
	if (virtio_dev_init(&n->vdev, &virtio_net_ops) < 0)
		goto free_timer;
	if (be->plain_frames)
		n->vdev.features &= ~(1ULL << VIRTIO_NET_F_CSUM |
		    1ULL << VIRTIO_NET_F_GUEST_CSUM |
		    1ULL << VIRTIO_NET_F_GUEST_TSO4 |
		    1ULL << VIRTIO_NET_F_GUEST_TSO6 |
		    1ULL << VIRTIO_NET_F_GUEST_ECN |
		    1ULL << VIRTIO_NET_F_HOST_TSO4 |
		    1ULL << VIRTIO_NET_F_HOST_TSO6 |
		    1ULL << VIRTIO_NET_F_HOST_ECN);
	n->be.ops->attach(n->be.ctx, virtio_net_rx, &n->vdev);
	return &n->vdev;

free_timer:
	device_timer_free(host, n->tx_timer);
free_n:
	free(n);
	return NULL;
}
