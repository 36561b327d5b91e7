/*
 * libFuzzer: the VNC server's handling of client messages (display/vnc.c
 * and vnc-handshake.c on libvncserver), over a real TCP connection on the
 * loopback.
 *
 * Set up once: an event base and a vnc server for a 128x64 framebuffer,
 * polling for changes every millisecond, whose dirty callback reports
 * every page changed (so every update request gets pixels, in whatever
 * encoding and pixel format the input asked for).  Each input is one
 * viewer: it connects, writes, shuts its sending side and reads until
 * the server closes.  What it writes: with the first byte even, a valid
 * RFB 3.8 handshake (version, security type None, ClientInit shared)
 * and then the rest of the input as client messages; with it odd, the
 * rest of the input alone (the handshake itself under fuzz).
 *
 * The client speaks first (its version), so the server takes the
 * connection at once instead of waiting out WebSocket detection; and
 * the whole input is in the socket before the server reads, followed by
 * EOF, so libvncserver's waits for the rest of a message end at once.
 * A run costs a connection and a few loop turns.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "vnc.h"

#define FUZZ_VNC_W	128
#define FUZZ_VNC_H	64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *fuzz_base;
static struct vnc *fuzz_vnc;
static uint32_t fuzz_pixels[FUZZ_VNC_W * FUZZ_VNC_H];
static unsigned int fuzz_viewers;

static void
fuzz_vnc_key(void *opaque, uint32_t keysym, bool down)
{
}

static void
fuzz_vnc_pointer(void *opaque, int x, int y, unsigned int buttons)
{
	if (x < 0 || y < 0 || x >= FUZZ_VNC_W || y >= FUZZ_VNC_H) {
		fprintf(stderr, "pointer outside the screen: %d,%d\n", x, y);
		abort();
	}
}

static void
fuzz_vnc_clients(void *opaque, unsigned int clients, bool connected)
{
	fuzz_viewers = clients;
}

/* Every page changed, every time (the screen of a busy guest). */
static int
fuzz_vnc_dirty(void *opaque, uint64_t *bitmap)
{
	size_t pages = (sizeof(fuzz_pixels) + 4095) / 4096, i;

	for (i = 0; i < pages; i++)
		bitmap[i / 64] |= 1ULL << (i % 64);
	fuzz_pixels[(fuzz_pixels[0] + 1) % (FUZZ_VNC_W * FUZZ_VNC_H)]++;
	return 0;
}

static void
fuzz_vnc_setup(void)
{
	static const struct vnc_host host = {
		.key = fuzz_vnc_key,
		.pointer = fuzz_vnc_pointer,
		.clients_changed = fuzz_vnc_clients,
		.dirty = fuzz_vnc_dirty,
	};
	struct vnc_config cfg = {
		.address = "127.0.0.1",
		.fb = { fuzz_pixels, FUZZ_VNC_W, FUZZ_VNC_H, FUZZ_VNC_W * 4 },
		.mode = VNC_REFRESH_POLL,
		.refresh_fast_ms = 1,
		.refresh_slow_ms = 1,
		.client_timeout_ms = 200,
	};
	char err[256];
	size_t i;

	signal(SIGPIPE, SIG_IGN);	/* vnc.h: the caller's job */
	for (i = 0; i < FUZZ_VNC_W * FUZZ_VNC_H; i++)
		fuzz_pixels[i] = (uint32_t)(i * 2654435761u);
	fuzz_base = event_base_new();
	if (fuzz_base == NULL ||
	    vnc_new(fuzz_base, &cfg, &host, &fuzz_vnc, err, sizeof(err)) < 0) {
		fprintf(stderr, "vnc_new: %s\n", err);
		abort();
	}
}

/*
 * A connect() interrupted by a signal (libFuzzer's -timeout alarm goes
 * off every second) goes on by itself: wait until it is done.
 */
static int
fuzz_vnc_connected(int fd)
{
	struct pollfd pfd = { fd, POLLOUT, 0 };
	socklen_t len = sizeof(int);
	int err = 0;

	while (poll(&pfd, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0)
		return -1;
	return 0;
}

static int
fuzz_vnc_connect(void)
{
	struct sockaddr_in sa;
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)vnc_port(fuzz_vnc));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    (errno != EINTR || fuzz_vnc_connected(fd) < 0)) {
		perror("connect");
		abort();
	}
	return fd;
}

/* All of buf, blocking: the server has not read yet, the socket's
 * buffer takes a whole input (libFuzzer's -max_len keeps it small). */
static void
fuzz_vnc_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;		/* the server cut us off: fine */
		p += n;
		len -= (size_t)n;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char handshake[] = "RFB 003.008\n\x01\x01";
	struct vnc_stats st;
	char buf[65536];
	ssize_t n;
	int fd;

	if (size == 0)
		return 0;
	if (fuzz_base == NULL)
		fuzz_vnc_setup();
	fd = fuzz_vnc_connect();
	if ((data[0] & 1) == 0)
		fuzz_vnc_send(fd, handshake, sizeof(handshake) - 1);
	fuzz_vnc_send(fd, data + 1, size - 1);
	shutdown(fd, SHUT_WR);

	for (;;) {
		event_base_loop(fuzz_base, EVLOOP_NONBLOCK);
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			break;
	}
	close(fd);
	/* The server notices a viewer gone on its own; then it has none. */
	for (;;) {
		vnc_stats(fuzz_vnc, &st);
		if (st.clients == 0)
			break;
		event_base_loop(fuzz_base, EVLOOP_NONBLOCK);
	}
	if (fuzz_viewers != 0)
		abort();
	return 0;
}
