/*
 * A network backend (devices/virtio/net-backend.h) on a stream socket
 * that carries Ethernet frames each behind its length, 32 bits in
 * network order: QEMU's "stream" netdev protocol, which passt speaks
 * on the socket it is given with --fd (user-mode networking: DHCP, DNS,
 * NAT and port forwards in an unprivileged process, nothing configured
 * on the host).
 *
 * Plain frames only (net_backend.plain_frames): the virtio header is
 * dropped on the way out and a zero one put before each frame on the
 * way in.  Sending never writes part of a frame and never waits: a
 * frame the socket cannot take whole waits, with the ones after it, in
 * a queue of at most NET_STREAM_QUEUE bytes that the loop writes out
 * when the socket can take more (a full queue drops the frame, counted,
 * as a wire would).  Frames are read into a buffer of their own and
 * handed out whole; a length above the largest frame, or the peer
 * gone, ends the link (logged once; the guest's card then sees
 * nothing more).
 *
 * Threads: send from a vCPU under the device's lock, with the queue
 * under the backend's own lock (a leaf); everything else on the loop.
 * The backend belongs to the worker and outlives guest resets.
 */
#ifndef VMMD_NET_STREAM_H
#define VMMD_NET_STREAM_H

#include <stdint.h>
#include <event2/event.h>

#include "net-backend.h"

#define NET_STREAM_QUEUE	(1024 * 1024)

struct net_stream;

struct net_stream_stats {
	uint64_t tx_frames, tx_queued, tx_dropped;
	uint64_t rx_frames;
	bool broken;			/* the link ended */
};

/*
 * Take fd, a connected stream socket, for a guest with address mac: 0
 * or -errno (-ENOMEM); on success the backend owns fd and fills be.
 * what names the peer in the log ("passt").
 */
int	net_stream_new(struct net_stream **out, struct event_base *base, int fd,
	    const uint8_t mac[6], const char *what, struct net_backend *be);
/* After the device that used it is gone.  NULL is fine. */
void	net_stream_free(struct net_stream *s);
void	net_stream_get_stats(struct net_stream *s, struct net_stream_stats *st);

#endif
