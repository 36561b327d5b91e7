/*
 * The stream network backend (daemon/machine/net-stream.c), first
 * against a peer played by the test on a socketpair: frames out as
 * [length][frame] without the virtio header, frames in whole behind a
 * zero header however the stream cuts them, a full socket queueing
 * whole frames (never part of one) that the loop writes out later, a
 * length no frame can have ending the link.  Then against a real passt
 * started as the worker starts it (daemon/worker/user-net.c): a DHCP
 * discover out, passt's offer back.  That part skips where passt is not
 * installed or finds no network on this host to serve.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "net-stream.h"
#include "tap.h"
#include "user-net.h"
#include "virtio-net.h"

static const uint8_t mac[6] = { 0x02, 0, 0, 0, 0, 0x0f };
static struct event_base *base;
static unsigned int rx_calls;

static void
on_rx(void *dev)
{
	rx_calls++;
	event_base_loopbreak(base);
}

/* One frame of len bytes (header first) sent through be. */
static int
send_frame(const struct net_backend *be, const uint8_t *frame, size_t len)
{
	uint8_t hdr[VIRTIO_NET_HDR_LEN] = { 0 };
	struct iovec iov[2] = { { hdr, sizeof(hdr) },
		{ (void *)frame, len } };

	return be->ops->send(be->ctx, iov, 2);
}

/* Loop until on_rx or ms pass. */
static void
run_loop(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void
test_framing(void)
{
	struct net_backend be;
	struct net_stream *s;
	struct net_stream_stats st;
	uint8_t frame[1500], buf[VIRTIO_NET_FRAME_MAX], in[4 + 1500];
	static uint8_t big[60000];
	int sv[2], sz = 4096;
	ssize_t n;
	size_t got = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		tap_bail("socketpair");
	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)i;
	TAP_EQ(net_stream_new(&s, base, sv[0], mac, "test", &be), 0,
	    "a backend on a stream socket");
	tap_ok(be.plain_frames && memcmp(be.mac, mac, 6) == 0,
	    "of plain frames, with the guest's address");

	TAP_EQ(send_frame(&be, frame, 60), 0, "a frame sent");
	n = read(sv[1], in, sizeof(in));
	tap_ok(n == 64 && in[0] == 0 && in[1] == 0 && in[2] == 0 &&
	    in[3] == 60 && memcmp(in + 4, frame, 60) == 0,
	    "goes out as its length and itself, without the header");

	/* In: two frames in one write, then one cut in three. */
	{
		uint8_t two[2 * 64], *p = two;

		for (int k = 0; k < 2; k++, p += 64) {
			p[0] = p[1] = p[2] = 0;
			p[3] = 60;
			memcpy(p + 4, frame + k, 60);
		}
		if (write(sv[1], two, sizeof(two)) != sizeof(two))
			tap_bail("write");
	}
	be.ops->attach(be.ctx, on_rx, NULL);
	be.ops->watch(be.ctx, true);
	run_loop(2000);
	TAP_EQ(rx_calls, 1, "the device is told frames wait");
	memset(buf, 0xff, sizeof(buf));
	n = be.ops->recv(be.ctx, buf, sizeof(buf));
	tap_ok(n == 72 && buf[0] == 0 && buf[11] == 0 &&
	    memcmp(buf + 12, frame, 60) == 0,
	    "a frame comes in behind a zero header (%zd)", n);
	n = be.ops->recv(be.ctx, buf, sizeof(buf));
	tap_ok(n == 72 && memcmp(buf + 12, frame + 1, 60) == 0,
	    "and the second from the same read");
	TAP_EQ(be.ops->recv(be.ctx, buf, sizeof(buf)), -EAGAIN,
	    "then nothing");
	in[0] = in[1] = 0;
	in[2] = 1500 >> 8;
	in[3] = 1500 & 0xff;
	memcpy(in + 4, frame, 1500);
	if (write(sv[1], in, 3) != 3)
		tap_bail("write");
	TAP_EQ(be.ops->recv(be.ctx, buf, sizeof(buf)), -EAGAIN,
	    "part of a length: nothing yet");
	if (write(sv[1], in + 3, 700) != 700)
		tap_bail("write");
	TAP_EQ(be.ops->recv(be.ctx, buf, sizeof(buf)), -EAGAIN,
	    "part of a frame: nothing yet");
	if (write(sv[1], in + 703, sizeof(in) - 703) !=
	    (ssize_t)(sizeof(in) - 703))
		tap_bail("write");
	n = be.ops->recv(be.ctx, buf, sizeof(buf));
	tap_ok(n == 1512 && memcmp(buf + 12, frame, 1500) == 0,
	    "the rest: the whole frame");

	/* Out: a socket that takes little queues whole frames. */
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	for (int k = 0; k < 12; k++)
		if (send_frame(&be, big, sizeof(big)) != 0)
			tap_bail("send %d", k);
	net_stream_get_stats(s, &st);
	tap_ok(st.tx_frames == 13 && st.tx_queued > 0 && st.tx_dropped == 0,
	    "12 large frames into a small socket: %llu of them queued",
	    (unsigned long long)st.tx_queued);
	while (got < 12 * (4 + sizeof(big))) {
		struct pollfd pfd = { .fd = sv[1], .events = POLLIN };

		run_loop(10);
		if (poll(&pfd, 1, 2000) != 1)
			break;
		n = read(sv[1], big, sizeof(big));
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	TAP_EQ(got, 12 * (4 + sizeof(big)), "the loop writes them all out, "
	    "each whole");

	/* A length no frame has: the link is over. */
	in[0] = 0x7f;
	if (write(sv[1], in, 8) != 8)
		tap_bail("write");
	TAP_EQ(be.ops->recv(be.ctx, buf, sizeof(buf)), -EAGAIN,
	    "an impossible length is no frame");
	net_stream_get_stats(s, &st);
	tap_ok(st.broken, "and the link is down");
	tap_ok(send_frame(&be, frame, 60) < 0, "sending fails from then on");
	be.ops->attach(be.ctx, NULL, NULL);
	net_stream_free(s);
	close(sv[1]);
}

/* A DHCP discover from mac, as a client sends it (RFC 2131). */
static size_t
dhcp_discover(uint8_t *f)
{
	uint8_t *ip = f + 14, *udp = ip + 20, *b = udp + 8;
	size_t blen = 240 + 4, len;
	uint32_t sum = 0;

	memset(f, 0, 14 + 20 + 8 + blen);
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = 0x08;
	b[0] = 1;			/* BOOTREQUEST */
	b[1] = 1;
	b[2] = 6;
	b[4] = 0x12;			/* xid */
	b[10] = 0x80;			/* broadcast */
	memcpy(b + 28, mac, 6);
	b[236] = 99, b[237] = 130, b[238] = 83, b[239] = 99;
	b[240] = 53, b[241] = 1, b[242] = 1;	/* DHCPDISCOVER */
	b[243] = 255;
	udp[1] = 68, udp[3] = 67;
	udp[4] = (uint8_t)((8 + blen) >> 8);
	udp[5] = (uint8_t)(8 + blen);
	len = 20 + 8 + blen;
	ip[0] = 0x45;
	ip[2] = (uint8_t)(len >> 8);
	ip[3] = (uint8_t)len;
	ip[8] = 64;
	ip[9] = 17;
	memset(ip + 16, 0xff, 4);
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
	return 14 + len;
}

/* Is this frame (behind its header) a DHCP offer (message type 2)? */
static bool
dhcp_offer(const uint8_t *buf, ssize_t n)
{
	const uint8_t *e = buf + VIRTIO_NET_HDR_LEN, *ip = e + 14, *udp, *b;
	const uint8_t *end = buf + n;
	size_t ihl;

	if (n < VIRTIO_NET_HDR_LEN + 14 + 20 || e[12] != 0x08 || e[13] != 0 ||
	    ip[9] != 17)
		return false;
	ihl = (size_t)(ip[0] & 15) * 4;
	udp = ip + ihl;
	b = udp + 8;
	if (b + 240 > end || udp[1] != 67 || udp[3] != 68 || b[0] != 2)
		return false;
	for (const uint8_t *o = b + 240; o + 2 < end && *o != 255;
	    o += *o == 0 ? 1 : 2 + o[1])
		if (o[0] == 53 && o[1] == 1)
			return o[2] == 2;
	return false;
}

static void
test_passt(void)
{
	struct net_backend be;
	struct net_stream *s;
	uint8_t f[400], buf[VIRTIO_NET_FRAME_MAX];
	char err[256];
	int sock, offers = 0;
	pid_t pid;
	ssize_t n;

	if (access("/usr/bin/passt", X_OK) < 0) {
		tap_ok(1, "# SKIP passt is not installed");
		return;
	}
	if (user_net_start("/usr/bin/passt", 0, NULL, 0, &sock, &pid, err,
	    sizeof(err)) < 0) {
		/* passt serves a guest only where the host has a route out. */
		tap_ok(1, "# SKIP passt does not run here: %s", err);
		return;
	}
	tap_ok(1, "passt started as the worker starts it");
	TAP_EQ(net_stream_new(&s, base, sock, mac, "passt", &be), 0,
	    "a backend on its link");
	be.ops->attach(be.ctx, on_rx, NULL);
	be.ops->watch(be.ctx, true);
	TAP_EQ(send_frame(&be, f, dhcp_discover(f)), 0, "a DHCP discover sent");
	for (int tries = 0; tries < 50 && offers == 0; tries++) {
		run_loop(100);
		while ((n = be.ops->recv(be.ctx, buf, sizeof(buf))) > 0)
			offers += dhcp_offer(buf, n);
	}
	TAP_EQ(offers, 1, "passt's offer comes back through the stream");
	be.ops->attach(be.ctx, NULL, NULL);
	net_stream_free(s);
	tap_ok(waitpid(pid, NULL, 0) == pid, "and passt ends when its link "
	    "closes");
}

/* The backend's log lines, as TAP comments. */
static void
log_as_diag(int priority, const char *ident, const char *msg)
{
	tap_diag("log: %s", msg);
}

int
main(void)
{
	log_set_sink(log_as_diag);
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	if (base == NULL)
		tap_bail("event_base_new");
	test_framing();
	test_passt();
	event_base_free(base);
	return tap_done();
}
