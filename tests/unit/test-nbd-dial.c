/*
 * Unit tests for daemon/supervisor/nbd-dial.c, the reconnect of an NBD
 * disk's server that must not hold up the supervisor's event loop, on a
 * private event base against real sockets of the loopback:
 *
 * - a server that answers nothing (a listener whose one-connection queue
 *   is full and that never accepts: the kernel drops every further SYN):
 *   while the connect waits, the loop runs other events, the outcome has
 *   not come, and it comes as "timed out" once NBD_CONNECT_TIMEOUT_MS is
 *   over (waited for, not timed);
 * - the same dial freed while under way: no callback, its socket closed;
 * - a server that accepts: a connected, blocking socket to it;
 * - a port nobody listens on, a Unix socket, a malformed address: each
 *   outcome through the callback from the loop, never from within
 *   nbd_dial_start().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/event.h>

#include "nbd-connect.h"
#include "nbd-dial.h"
#include "scratch.h"
#include "tap.h"

/* Generous: a wait ends on its event, long before this, however busy. */
#define WAIT_S		120

static struct event_base *base;

struct outcome {
	int calls;
	int fd;
	char err[512];
	bool ticked_before;	/* the tick ran before the outcome came */
};

static bool ticked;

static void
dialed(struct nbd_dial *nd, int fd, const char *err, void *arg)
{
	struct outcome *o = arg;

	o->calls++;
	o->fd = fd;
	o->ticked_before = ticked;
	snprintf(o->err, sizeof(o->err), "%s", err != NULL ? err : "");
}

static void
tick(evutil_socket_t unused, short what, void *arg)
{
	ticked = true;
}

/* Turn the loop until o has its outcome, bounded by WAIT_S. */
static void
run_until(struct outcome *o)
{
	struct timeval tv = { .tv_sec = WAIT_S };
	struct event *bound = evtimer_new(base, tick, NULL);

	evtimer_add(bound, &tv);
	while (o->calls == 0 && evtimer_pending(bound, NULL))
		event_base_loop(base, EVLOOP_ONCE);
	event_free(bound);
}

/* A listener on 127.0.0.1 (backlog as given): its fd and *port. */
static int
listener(int backlog, int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, backlog) < 0 || getsockname(fd,
	    (struct sockaddr *)&sin, &len) < 0)
		tap_bail("listener: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A connection to port, to fill a listener's queue. */
static int
filler(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		tap_bail("filler: %s", strerror(errno));
	return fd;
}

/* How many descriptors this process has open. */
static int
open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void
test_unanswered(void)
{
	const struct timeval now = { 0, 0 };
	struct outcome o = { .fd = -1 }, o2 = { .fd = -1 };
	struct nbd_dial *nd = NULL;
	struct event *t;
	char addr[64];
	int lfd, fill, port, before;

	lfd = listener(0, &port);
	fill = filler(port);
	snprintf(addr, sizeof(addr), "nbd://127.0.0.1:%d/x", port);

	/* Cancelled while it waits: nothing comes, nothing stays open. */
	before = open_fds();
	tap_ok(nbd_dial_start(base, addr, 1, NULL, dialed, &o2, &nd) == 0 &&
	    o2.calls == 0, "unanswered: the dial starts, no outcome yet");
	tap_ok(open_fds() == before + 1, "unanswered: its socket connects");
	event_base_loop(base, EVLOOP_NONBLOCK);
	nbd_dial_free(nd);
	event_base_loop(base, EVLOOP_NONBLOCK);
	tap_ok(o2.calls == 0 && open_fds() == before, "unanswered: freed "
	    "while under way, no callback and its socket closed (%d fds, "
	    "%d before)", open_fds(), before);

	/* Waited for: the loop goes on meanwhile, the bound ends it. */
	ticked = false;
	tap_ok(nbd_dial_start(base, addr, 1, NULL, dialed, &o, &nd) == 0,
	    "unanswered: dialled again");
	t = evtimer_new(base, tick, NULL);
	evtimer_add(t, &now);
	while (!ticked && o.calls == 0)
		event_base_loop(base, EVLOOP_ONCE);
	tap_ok(ticked && o.calls == 0, "unanswered: the loop runs another "
	    "event while the connect waits");
	run_until(&o);
	tap_ok(o.calls == 1 && o.fd < 0 && o.ticked_before &&
	    strstr(o.err, "disk 1: ") != NULL &&
	    strstr(o.err, strerror(ETIMEDOUT)) != NULL, "unanswered: after "
	    "%d ms, timed out: %s", NBD_CONNECT_TIMEOUT_MS, o.err);
	nbd_dial_free(nd);
	event_free(t);
	close(fill);
	close(lfd);
}

static void
test_accepted(void)
{
	struct outcome o = { .fd = -1 };
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	struct nbd_dial *nd = NULL;
	char addr[64];
	int lfd, port, afd;

	lfd = listener(8, &port);
	snprintf(addr, sizeof(addr), "nbd://127.0.0.1:%d", port);
	tap_ok(nbd_dial_start(base, addr, 0, NULL, dialed, &o, &nd) == 0 &&
	    o.calls == 0, "accepted: no outcome from within the start");
	run_until(&o);
	afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	tap_ok(o.calls == 1 && o.fd >= 0 && afd >= 0 &&
	    getpeername(o.fd, (struct sockaddr *)&peer, &len) == 0 &&
	    ntohs(peer.sin_port) == port, "accepted: connected to the "
	    "server (%s)", o.err);
	tap_ok(o.fd >= 0 && (fcntl(o.fd, F_GETFL) & O_NONBLOCK) == 0 &&
	    (fcntl(o.fd, F_GETFD) & FD_CLOEXEC) != 0, "accepted: blocking "
	    "and close-on-exec, as the worker takes it");
	nbd_dial_free(nd);
	if (o.fd >= 0)
		close(o.fd);
	if (afd >= 0)
		close(afd);
	close(lfd);
}

static void
test_refused(void)
{
	struct outcome o = { .fd = -1 };
	struct nbd_dial *nd = NULL;
	char addr[64];
	int lfd, port;

	/* A port just free: nobody listens there now. */
	lfd = listener(1, &port);
	close(lfd);
	snprintf(addr, sizeof(addr), "nbd://127.0.0.1:%d", port);
	tap_ok(nbd_dial_start(base, addr, 2, NULL, dialed, &o, &nd) == 0 &&
	    o.calls == 0, "refused: no outcome from within the start");
	run_until(&o);
	tap_ok(o.calls == 1 && o.fd < 0 && strstr(o.err, "disk 2: ") !=
	    NULL && strstr(o.err, "cannot connect: ") != NULL,
	    "refused: %s", o.err);
	nbd_dial_free(nd);
}

static void
test_unix(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct outcome o = { .fd = -1 }, bad = { .fd = -1 };
	struct nbd_dial *nd = NULL, *nd2 = NULL;
	char addr[200];
	int lfd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
	    scratch_at("nbd.sock"));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(lfd, 8) < 0)
		tap_bail("unix listener: %s", strerror(errno));
	snprintf(addr, sizeof(addr), "nbd:unix:%s", sun.sun_path);
	tap_ok(nbd_dial_start(base, addr, 0, NULL, dialed, &o, &nd) == 0 &&
	    o.calls == 0, "unix: connected at once, but no outcome from "
	    "within the start");
	run_until(&o);
	tap_ok(o.calls == 1 && o.fd >= 0, "unix: the outcome from the loop, "
	    "connected (%s)", o.err);

	tap_ok(nbd_dial_start(base, "nbd:nothing", 3, NULL, dialed, &bad,
	    &nd2) == 0 && bad.calls == 0, "bad address: no outcome from "
	    "within the start");
	run_until(&bad);
	tap_ok(bad.calls == 1 && bad.fd < 0 && strstr(bad.err, "disk 3: ") !=
	    NULL, "bad address: %s", bad.err);
	nbd_dial_free(nd);
	nbd_dial_free(nd2);
	if (o.fd >= 0)
		close(o.fd);
	close(lfd);
}

int
main(void)
{
	scratch_new("nbd-dial");
	if ((base = event_base_new()) == NULL)
		tap_bail("event_base_new");
	test_accepted();
	test_refused();
	test_unix();
	test_unanswered();
	event_base_free(base);
	return tap_done();
}
