/*
 * A card's announce after a migration (devices/virtio/net-announce.c):
 * one frame on its backend, a zero virtio-net header before it, and the
 * frame a 60-byte RARP request (RFC 903) from the card's MAC to the
 * broadcast address, naming the MAC as sender and target, both IPv4
 * addresses zero; a backend's refusal comes back.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "net-announce.h"
#include "tap.h"
#include "virtio-net.h"

static struct {
	unsigned int sends, niov;
	uint8_t buf[256];
	size_t len;
	int rc;
} be;

static int
be_send(void *ctx, const struct iovec *iov, unsigned int niov)
{
	be.sends++;
	be.niov = niov;
	be.len = 0;
	for (unsigned int i = 0; i < niov; i++) {
		if (be.len + iov[i].iov_len > sizeof(be.buf))
			return -EMSGSIZE;
		memcpy(be.buf + be.len, iov[i].iov_base, iov[i].iov_len);
		be.len += iov[i].iov_len;
	}
	return be.rc;
}

static const struct net_backend_ops be_ops = { .send = be_send };

int
main(void)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	static const uint8_t zero[VIRTIO_NET_HDR_LEN];
	static const uint8_t rarp[] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff,	/* to all */
		0x52, 0x54, 0x00, 0x12, 0x34, 0x56,	/* from the card */
		0x80, 0x35,				/* RARP */
		0x00, 0x01, 0x08, 0x00, 6, 4,		/* Ethernet, IPv4 */
		0x00, 0x03,				/* request reverse */
		0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0, 0, 0,
		0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0, 0, 0,
	};
	struct net_backend nb = { .ops = &be_ops };
	const uint8_t *f = be.buf + VIRTIO_NET_HDR_LEN;
	size_t i;
	bool pad = true;

	memcpy(nb.mac, mac, 6);
	TAP_EQ(net_announce(&nb), 0, "announced");
	TAP_EQ(be.sends, 1u, "one frame on the backend");
	TAP_EQ(be.len, (size_t)VIRTIO_NET_HDR_LEN + NET_ANNOUNCE_LEN,
	    "a virtio-net header and a 60-byte frame (%zu bytes)", be.len);
	TAP_EQ(memcmp(be.buf, zero, sizeof(zero)), 0,
	    "the header is all zero: no offload asked");
	TAP_EQ(memcmp(f, rarp, sizeof(rarp)), 0,
	    "a RARP request from the card's MAC to everyone, naming it");
	for (i = sizeof(rarp); i < NET_ANNOUNCE_LEN; i++)
		pad = pad && f[i] == 0;
	tap_ok(pad, "padded with zeroes to the minimum frame");
	be.rc = -ENOBUFS;
	TAP_EQ(net_announce(&nb), -ENOBUFS, "a backend's refusal comes back");
	return tap_done();
}
