/*
 * A guest's network cards announced on their links after a live
 * migration, so that the switches between learn at once where its MACs
 * are now rather than when the guest next sends: one RARP request
 * (RFC 903; what QEMU's self-announce sends) from the card's MAC to the
 * broadcast address, sent by the VMM on the card's backend.
 *
 * Why not the guest: VIRTIO_NET_F_GUEST_ANNOUNCE, where the driver
 * sends its own gratuitous ARP and neighbour advertisements, requires
 * the control queue (Virtio 1.2, 5.1.3.1), which our virtio-net does
 * not have.  RARP tells the switches, though not the guest's IP
 * neighbours (their caches stay right: the MAC did not change).
 */
#ifndef VMMD_NET_ANNOUNCE_H
#define VMMD_NET_ANNOUNCE_H

#include <stdint.h>

#include "net-backend.h"

/* A minimum Ethernet frame (without its FCS): the RARP, zero padded. */
#define NET_ANNOUNCE_LEN	60
#define NET_ANNOUNCE_ETHERTYPE	0x8035

/* The RARP request announcing mac, into frame. */
void	net_announce_frame(const uint8_t mac[6],
	    uint8_t frame[NET_ANNOUNCE_LEN]);
/*
 * The announce of be's MAC onto be, behind a zero virtio-net header as
 * every frame to a backend: 0 or -errno (lost, as on a wire).  Under
 * the device's lock, as any send.
 */
int	net_announce(const struct net_backend *be);

#endif
