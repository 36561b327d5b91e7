/* See net-announce.h. */
#include <string.h>

#include "net-announce.h"
#include "virtio-net.h"

void
net_announce_frame(const uint8_t mac[6], uint8_t frame[NET_ANNOUNCE_LEN])
{
	uint8_t *a = frame + 14;

	memset(frame, 0, NET_ANNOUNCE_LEN);
	memset(frame, 0xff, 6);			/* to everyone */
	memcpy(frame + 6, mac, 6);
	frame[12] = NET_ANNOUNCE_ETHERTYPE >> 8;
	frame[13] = NET_ANNOUNCE_ETHERTYPE & 0xff;
	a[1] = 1;				/* hardware: Ethernet */
	a[2] = 0x08;				/* protocol: IPv4 */
	a[4] = 6;				/* address lengths */
	a[5] = 4;
	a[7] = 3;				/* "request reverse" */
	memcpy(a + 8, mac, 6);			/* sender: the card */
	memcpy(a + 18, mac, 6);			/* target: the card */
	/* Both protocol addresses stay 0.0.0.0: the MAC is the news. */
}

int
net_announce(const struct net_backend *be)
{
	uint8_t hdr[VIRTIO_NET_HDR_LEN] = { 0 }, frame[NET_ANNOUNCE_LEN];
	struct iovec iov[2] = {
		{ hdr, sizeof(hdr) },
		{ frame, sizeof(frame) },
	};

	net_announce_frame(be->mac, frame);
	return be->ops->send(be->ctx, iov, 2);
}
