/*
 * What a network device model asks of its link: send a frame, take the
 * next received one, say which offloads the driver accepts, and be told
 * when frames arrive.  The worker implements it on a TAP device
 * (daemon/machine/net-tap.c); the backend outlives guest resets.
 *
 * Every frame crosses with a 12-byte virtio net header in front
 * (struct virtio_net_hdr_mrg_rxbuf, Virtio 1.2 5.1.6), the layout TAP
 * uses with IFF_VNET_HDR and TUNSETVNETHDRSZ 12, so neither side
 * translates headers.
 */
#ifndef VMMD_NET_BACKEND_H
#define VMMD_NET_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Offloads the guest can take on received frames (TUN_F_* values). */
#define NET_OFFLOAD_CSUM	0x01	/* partial checksums */
#define NET_OFFLOAD_TSO4	0x02
#define NET_OFFLOAD_TSO6	0x04
#define NET_OFFLOAD_TSO_ECN	0x08

/* Called on the worker's loop when frames wait; not under any lock. */
typedef void (*net_rx_fn)(void *dev);

struct net_backend_ops {
	/*
	 * Send one frame, header first, gathered from iov.  0 or -errno
	 * (the frame is lost, as on a wire).  Any thread, under the
	 * device's lock.
	 */
	int (*send)(void *ctx, const struct iovec *iov, unsigned int niov);
	/*
	 * Take the next received frame, header first, into buf: its
	 * length, -EAGAIN when none waits, or another -errno.  A frame
	 * longer than len is cut short.  Under the device's lock.
	 */
	ssize_t (*recv)(void *ctx, void *buf, size_t len);
	/* Offer received frames with these NET_OFFLOAD_* only. */
	int (*set_offload)(void *ctx, unsigned int flags);
	/*
	 * Who to call when frames wait, and whether to watch for them at
	 * all: a device with no buffers to fill stops watching, so an idle
	 * or starved NIC costs nothing.  attach(ctx, NULL, dev) forgets dev
	 * if it is the one attached (a machine rebuilt at reset may make
	 * the new device before it frees the old).  Either way attach
	 * stops watching, until the device asks.  attach on the loop's
	 * thread; watch from any thread, under the device's lock, and
	 * never waiting for rx: an rx already under way may still run
	 * once after watch(false).
	 */
	void (*attach)(void *ctx, net_rx_fn rx, void *dev);
	void (*watch)(void *ctx, bool on);
};

struct net_backend {
	const struct net_backend_ops *ops;
	void *ctx;
	uint8_t mac[6];		/* the guest's address */
	/*
	 * The link takes and gives whole frames only, with their checksums
	 * done (the header crosses but is always zero): the device offers
	 * the driver no checksum or segmentation offload either way.
	 */
	bool plain_frames;
};

#endif
