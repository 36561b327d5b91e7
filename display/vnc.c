/*
 * RFB server on libvncserver, driven by the caller's event loop.
 *
 * What libvncserver is left to do: the protocol (handshake, security,
 * message parsing, encodings, WebSocket framing, the HTTP server).  What
 * this file does instead of its select loop: accept connections, watch
 * each client socket, decide when to send an update and how much.
 *
 * Corners of libvncserver 0.9.14 handled here:
 *
 *  - Writes can block.  rfbWriteExact() waits in select() (5 s steps,
 *    up to maxClientWait) when a socket's buffer is full, which would
 *    stall the whole loop for a client that stopped reading.  So an
 *    update is never started unless its worst-case size fits in what
 *    the socket can still queue: each client socket gets a fixed send
 *    buffer (SO_SNDBUF, SO_SNDBUFFORCE where allowed), its queue is
 *    measured with SIOCOUTQ, and only the part of the requested, dirty
 *    region that fits is sent (the rest stays in the client's modified
 *    region for its next request).  A client whose request cannot be
 *    served because its queue stays full is cut off after
 *    client_timeout_ms, without ever blocking the loop.  A client that
 *    asks for nothing is sent nothing and costs nothing.
 *  - WebSocket detection waits.  rfbNewClient() peeks for up to 100 ms
 *    for a client's first bytes ("GET " means WebSocket); a plain RFB
 *    client says nothing before the server does.  A new socket is
 *    therefore held by this file until it either speaks (WebSocket: the
 *    peek then succeeds at once) or stays silent for 100 ms on an event
 *    timeout (plain RFB): libvncserver is then handed a socket pair
 *    that already holds "RFB ", which ends its wait at once, and the
 *    real socket is swapped in when it returns, with the protocol
 *    version it wrote forwarded.
 *  - select() and FD_SETSIZE.  libvncserver FD_SETs client sockets and
 *    the HTTP sockets; a descriptor >= FD_SETSIZE (or -1) would abort
 *    the process.  Connections on such descriptors are refused, and
 *    the HTTP server's IPv6 listening socket, which its check looks at
 *    unconditionally, aliases the IPv4 one instead of being -1.
 *  - The cursor.  libvncserver draws its cursor into the framebuffer
 *    for clients without cursor-shape support; here the framebuffer
 *    is guest memory, so the screen has no cursor (screen->cursor is
 *    NULL) and the guest draws its own.
 *  - A partly received message: rfbProcessClientMessage() reads whole
 *    messages and waits up to maxClientWait (client_timeout_ms) for
 *    the rest in select().  This is the one wait left: it only happens
 *    when a client sends part of a message and then stops.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <rfb/rfb.h>
#include <rfb/rfbregion.h>

#include "dirty.h"
#include "vnc.h"

#define VNC_DEFAULT_ADDRESS	"127.0.0.1"
#define VNC_PORT_FIRST		5900
#define VNC_HTTP_PORT_FIRST	5800
#define VNC_PORT_RANGE		100
#define VNC_WS_DETECT_MS	100	/* libvncserver's own wait */
#define VNC_MAX_RECTS		64
/*
 * Send buffer asked for each client: a full 1024x768 frame and some.
 * Unprivileged, the kernel caps it at net.core.wmem_max; updates are
 * then sent in more, smaller parts.
 */
#define VNC_SNDBUF_WANTED	(4u << 20)
#define VNC_SEND_SLACK		4096u	/* protocol messages besides updates */

struct vnc_client;

/* An accepted socket that has not said yet whether it is WebSocket. */
struct vnc_pending {
	struct vnc *vnc;
	int fd;
	struct event *ev;
	struct vnc_pending *next;
};

struct vnc {
	struct event_base *base;
	struct vnc_config cfg;		/* strings below, owned */
	char *address;
	char *web_dir;
	char *passwords[2];		/* for rfbCheckPasswordByList */
	struct vnc_host host;

	rfbScreenInfoPtr screen;
	int listen_fd;
	struct event *listen_ev;
	int port;

	int http_fd;
	int http_quiet_fd;	/* never readable: see vnc_http_client_cb */
	struct event *http_listen_ev;
	struct event *http_client_ev;
	int http_port;

	struct vnc_pending *pending;
	struct vnc_client *clients;
	unsigned int viewers;

	/* Exists exactly while viewers > 0. */
	struct event *refresh;
	unsigned int quiet_refreshes;
	struct dirty_geometry geo;
	uint64_t *bitmap;
	size_t bitmap_words;

	bool freeing;			/* no callbacks to the host */
	struct vnc_stats stats;		/* counters; the rest computed */
};

/* Per client: owned by libvncserver's client (cl->clientData). */
struct vnc_client {
	struct vnc *vnc;
	rfbClientPtr cl;
	struct event *read_ev;
	struct event *write_ev;		/* while blocked */
	struct event *stall_ev;		/* while blocked */
	size_t sndbuf;			/* payload bytes the socket may queue */
	bool viewer;			/* past the handshake */
	bool blocked;			/* a request waits for queue space */
	struct vnc_client *next;
};

static void vnc_client_flush(struct vnc_client *c);

static struct timeval
vnc_ms(unsigned int ms)
{
	return (struct timeval){ .tv_sec = ms / 1000,
	    .tv_usec = (ms % 1000) * 1000 };
}

/* --- refresh ---------------------------------------------------------- */

static void
vnc_refresh_arm(struct vnc *vnc)
{
	unsigned int ms = vnc->cfg.refresh_fast_ms;
	struct timeval tv;

	if (vnc->cfg.mode == VNC_REFRESH_POLL &&
	    vnc->quiet_refreshes >= vnc->cfg.idle_refreshes)
		ms = vnc->cfg.refresh_slow_ms;
	tv = vnc_ms(ms);
	evtimer_add(vnc->refresh, &tv);
}

/* Each client gets what it asked for and what fits; see the top. */
static void
vnc_flush_all(struct vnc *vnc)
{
	struct vnc_client *c, *next;

	for (c = vnc->clients; c != NULL; c = next) {
		next = c->next;		/* c may go */
		vnc_client_flush(c);
	}
}

static void
vnc_refresh_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc *vnc = arg;
	struct dirty_rect rects[VNC_MAX_RECTS];
	size_t tiles = 0;
	int n = 0;

	vnc->stats.wakeups++;
	vnc->stats.refreshes++;
	memset(vnc->bitmap, 0, vnc->bitmap_words * sizeof(uint64_t));
	if (vnc->host.dirty(vnc->host.opaque, vnc->bitmap) == 0)
		n = dirty_rects(&vnc->geo, vnc->bitmap, rects, VNC_MAX_RECTS,
		    &tiles);
	for (int i = 0; i < n; i++)
		rfbMarkRectAsModified(vnc->screen, (int)rects[i].x,
		    (int)rects[i].y, (int)(rects[i].x + rects[i].w),
		    (int)(rects[i].y + rects[i].h));
	if (n > 0) {
		vnc->stats.tiles_sent += tiles;
		vnc->quiet_refreshes = 0;
		vnc_flush_all(vnc);
	} else if (vnc->quiet_refreshes < vnc->cfg.idle_refreshes) {
		vnc->quiet_refreshes++;
	}
	/* The last viewer may have gone while flushing. */
	if (vnc->refresh != NULL && vnc->cfg.mode == VNC_REFRESH_POLL)
		vnc_refresh_arm(vnc);
}

static void
vnc_refresh_start(struct vnc *vnc)
{
	vnc->refresh = evtimer_new(vnc->base, vnc_refresh_cb, vnc);
	if (vnc->refresh == NULL)
		return;		/* no refresh: viewers get what they ask for */
	/* Forget what changed while nobody watched: the viewer gets the
	 * whole screen anyway. */
	memset(vnc->bitmap, 0, vnc->bitmap_words * sizeof(uint64_t));
	(void)vnc->host.dirty(vnc->host.opaque, vnc->bitmap);
	vnc->quiet_refreshes = 0;
	if (vnc->cfg.mode == VNC_REFRESH_POLL)
		vnc_refresh_arm(vnc);
}

static void
vnc_refresh_stop(struct vnc *vnc)
{
	if (vnc->refresh != NULL)
		event_free(vnc->refresh);
	vnc->refresh = NULL;
}

void
vnc_damage(struct vnc *vnc)
{
	if (vnc->refresh == NULL)
		return;
	if (evtimer_pending(vnc->refresh, NULL)) {
		/* Polling slowly: the change makes it fast now. */
		if (vnc->quiet_refreshes < vnc->cfg.idle_refreshes)
			return;
		evtimer_del(vnc->refresh);
	}
	vnc->quiet_refreshes = 0;
	vnc_refresh_arm(vnc);
}

void
vnc_set_mode(struct vnc *vnc, enum vnc_refresh_mode mode)
{
	vnc->cfg.mode = mode;
	vnc->quiet_refreshes = 0;
	/* Polling from now on; a pending one-shot just runs once more. */
	if (vnc->refresh != NULL && mode == VNC_REFRESH_POLL &&
	    !evtimer_pending(vnc->refresh, NULL))
		vnc_refresh_arm(vnc);
}

/* --- clients ---------------------------------------------------------- */

static void
vnc_viewer_change(struct vnc *vnc, bool connected)
{
	if (connected) {
		if (vnc->viewers++ == 0)
			vnc_refresh_start(vnc);
	} else {
		if (--vnc->viewers == 0)
			vnc_refresh_stop(vnc);
	}
	if (!vnc->freeing && vnc->host.clients_changed != NULL)
		vnc->host.clients_changed(vnc->host.opaque, vnc->viewers,
		    connected);
}

/* libvncserver's clientGoneHook: the client is being freed. */
static void
vnc_client_gone(rfbClientPtr cl)
{
	struct vnc_client *c = cl->clientData, **pp;
	struct vnc *vnc;

	if (c == NULL)
		return;
	vnc = c->vnc;
	vnc->stats.bytes_sent += (uint64_t)rfbStatGetSentBytes(cl);
	for (pp = &vnc->clients; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->read_ev != NULL)
		event_free(c->read_ev);
	if (c->write_ev != NULL)
		event_free(c->write_ev);
	if (c->stall_ev != NULL)
		event_free(c->stall_ev);
	cl->clientData = NULL;
	/* libvncserver 0.9.14 forgets the WebSocket context (fixed in
	 * later releases, which free it too: NULL keeps that single). */
	free(cl->wsctx);
	cl->wsctx = NULL;
	if (c->viewer)
		vnc_viewer_change(vnc, false);
	free(c);
}

/* The events go first: the socket closes under them. */
static void
vnc_client_drop(struct vnc_client *c)
{
	rfbClientPtr cl = c->cl;

	if (c->read_ev != NULL)
		event_del(c->read_ev);
	if (c->write_ev != NULL)
		event_del(c->write_ev);
	if (cl->sock != RFB_INVALID_SOCKET)
		rfbCloseClient(cl);
	rfbClientConnectionGone(cl);	/* calls vnc_client_gone */
}

static void
vnc_client_unblock(struct vnc_client *c)
{
	if (!c->blocked)
		return;
	c->blocked = false;
	event_del(c->write_ev);
	event_del(c->stall_ev);
}

static void
vnc_client_block(struct vnc_client *c)
{
	struct timeval tv = vnc_ms(c->vnc->cfg.client_timeout_ms);

	if (c->blocked)
		return;
	c->blocked = true;
	event_add(c->write_ev, NULL);
	event_add(c->stall_ev, &tv);
}

/* Bytes an update of w x h pixels may take at worst: raw pixels, and
 * the few percent some encodings (ultra, hextile) add to raw data. */
static size_t
vnc_update_cost(const rfbClientPtr cl, int w, int h)
{
	size_t bpp = cl->format.bitsPerPixel / 8;
	size_t raw = (size_t)w * (size_t)h * bpp;

	return raw + raw / 8 + 64;
}

/*
 * Of the region a client asked for and that changed, the part whose
 * worst-case size fits in budget, split by lines where needed.
 */
static sraRegionPtr
vnc_client_sendable(rfbClientPtr cl, size_t budget)
{
	sraRegionPtr want, send;
	sraRectangleIterator *it;
	sraRect r;

	want = sraRgnCreateRgn(cl->modifiedRegion);
	sraRgnAnd(want, cl->requestedRegion);
	send = sraRgnCreate();
	it = sraRgnGetIterator(want);
	while (it != NULL && sraRgnIteratorNext(it, &r)) {
		int w = r.x2 - r.x1, h = r.y2 - r.y1, lines;
		size_t cost = vnc_update_cost(cl, w, h);
		sraRegionPtr part;

		if (cost > budget) {
			size_t line = vnc_update_cost(cl, w, 1);

			lines = (int)(budget / line);
			if (lines <= 0)
				break;
			if (lines < h)
				h = lines;
			cost = vnc_update_cost(cl, w, h);
		}
		part = sraRgnCreateRect(r.x1, r.y1, r.x2, r.y1 + h);
		sraRgnOr(send, part);
		sraRgnDestroy(part);
		budget -= cost < budget ? cost : budget;
		if (h < r.y2 - r.y1)
			break;
	}
	if (it != NULL)
		sraRgnReleaseIterator(it);
	sraRgnDestroy(want);
	return send;
}

/*
 * Send this client what it asked for, as far as its socket can take
 * it now without blocking.  May drop the client (c is then freed).
 */
static void
vnc_client_flush(struct vnc_client *c)
{
	rfbClientPtr cl = c->cl;
	struct vnc *vnc = c->vnc;
	sraRegionPtr send;
	int queued = 0;
	size_t budget = 0;

	if (!c->viewer || cl->onHold || sraRgnEmpty(cl->requestedRegion) ||
	    !FB_UPDATE_PENDING(cl)) {
		vnc_client_unblock(c);
		return;
	}
	if (ioctl(cl->sock, SIOCOUTQ, &queued) < 0)
		queued = (int)c->sndbuf;
	if ((size_t)queued + VNC_SEND_SLACK < c->sndbuf)
		budget = c->sndbuf - (size_t)queued - VNC_SEND_SLACK;
	send = vnc_client_sendable(cl, budget);
	if (sraRgnEmpty(send) && !sraRgnEmpty(cl->modifiedRegion)) {
		sraRegionPtr want = sraRgnCreateRgn(cl->modifiedRegion);
		bool asked = sraRgnAnd(want, cl->requestedRegion);

		sraRgnDestroy(want);
		sraRgnDestroy(send);
		if (asked)
			vnc_client_block(c);
		else
			vnc_client_unblock(c);
		return;
	}
	vnc_client_unblock(c);
	if (rfbSendFramebufferUpdate(cl, send))
		vnc->stats.updates_sent++;
	sraRgnDestroy(send);
	if (cl->sock == RFB_INVALID_SOCKET)
		vnc_client_drop(c);
}

static void
vnc_client_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_client *c = arg;
	rfbClientPtr cl = c->cl;

	c->vnc->stats.wakeups++;
	/* WebSocket frames may hold several messages: all of them now,
	 * the socket will not say so again. */
	do
		rfbProcessClientMessage(cl);
	while (cl->sock != RFB_INVALID_SOCKET && cl->wsctx != NULL &&
	    webSocketsHasDataInBuffer(cl));
	if (cl->sock == RFB_INVALID_SOCKET) {
		vnc_client_drop(c);
		return;
	}
	if (!c->viewer && cl->state == RFB_NORMAL) {
		c->viewer = true;
		vnc_viewer_change(c->vnc, true);
	}
	vnc_client_flush(c);
}

static void
vnc_client_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_client *c = arg;

	c->vnc->stats.wakeups++;
	vnc_client_flush(c);
}

static void
vnc_client_stall_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_client *c = arg;

	c->vnc->stats.wakeups++;
	if (!c->blocked)
		return;
	c->vnc->stats.clients_cut_off++;
	vnc_client_drop(c);
}

/* libvncserver's newClientHook, inside rfbNewClient(). */
static enum rfbNewClientAction
vnc_new_client_hook(rfbClientPtr cl)
{
	struct vnc *vnc = cl->screen->screenData;
	struct vnc_client *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return RFB_CLIENT_REFUSE;
	c->vnc = vnc;
	c->cl = cl;
	cl->clientData = c;
	cl->clientGoneHook = vnc_client_gone;
	c->next = vnc->clients;
	vnc->clients = c;
	return RFB_CLIENT_ACCEPT;
}

/* Fixed send buffer, so that what the socket can still take is known. */
static size_t
vnc_socket_sndbuf(int fd)
{
	int want = VNC_SNDBUF_WANTED, got = 0;
	socklen_t len = sizeof(got);

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &want,
	    sizeof(want)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want,
		    sizeof(want));
	if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &got, &len) < 0 || got <= 0)
		return 0;
	/* The kernel doubles the value for its bookkeeping: half of it is
	 * payload at the very least. */
	return (size_t)got / 2;
}

/* Swap the real socket in for the pair end libvncserver was given. */
static int
vnc_swap_socket(rfbClientPtr cl, int decoy_peer, int fd)
{
	char version[sz_rfbProtocolVersionMsg];
	struct sockaddr_storage addr;
	socklen_t addrlen = sizeof(addr);
	char host[INET6_ADDRSTRLEN] = "";
	ssize_t n;
	int one = 1;

	n = read(decoy_peer, version, sizeof(version));
	if (n != (ssize_t)sizeof(version))
		return -EPROTO;
	n = write(fd, version, sizeof(version));
	if (n != (ssize_t)sizeof(version))
		return n < 0 ? -errno : -EIO;
	FD_CLR(cl->sock, &cl->screen->allFds);
	close(cl->sock);
	cl->sock = fd;
	FD_SET(fd, &cl->screen->allFds);
	if (fd > cl->screen->maxFd)
		cl->screen->maxFd = fd;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (getpeername(fd, (struct sockaddr *)&addr, &addrlen) == 0) {
		if (addr.ss_family == AF_INET)
			inet_ntop(AF_INET,
			    &((struct sockaddr_in *)&addr)->sin_addr, host,
			    sizeof(host));
		else if (addr.ss_family == AF_INET6)
			inet_ntop(AF_INET6,
			    &((struct sockaddr_in6 *)&addr)->sin6_addr, host,
			    sizeof(host));
	}
	free(cl->host);
	cl->host = strdup(host);
	return 0;
}

/*
 * Hand an accepted socket to libvncserver.  spoke: the client has sent
 * something (WebSocket or TLS); otherwise it waits for the server.
 * Takes fd in every case.
 */
static void
vnc_attach(struct vnc *vnc, int fd, bool spoke)
{
	rfbClientPtr cl;
	struct vnc_client *c;
	int pair[2] = { -1, -1 };

	if (spoke) {
		cl = rfbNewClient(vnc->screen, fd);	/* takes fd */
	} else {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, 0, pair) < 0 || pair[1] >= FD_SETSIZE ||
		    write(pair[0], "RFB ", 4) != 4)
			goto close_pair;
		cl = rfbNewClient(vnc->screen, pair[1]);	/* takes pair[1] */
		pair[1] = -1;
		if (cl != NULL && vnc_swap_socket(cl, pair[0], fd) < 0) {
			rfbCloseClient(cl);
			rfbClientConnectionGone(cl);
			cl = NULL;
		} else if (cl != NULL) {
			fd = -1;	/* now the client's */
		}
		close(pair[0]);
		if (fd >= 0)
			close(fd);
	}
	if (cl == NULL)
		return;
	c = cl->clientData;
	c->sndbuf = vnc_socket_sndbuf(cl->sock);
	c->read_ev = event_new(vnc->base, cl->sock, EV_READ | EV_PERSIST,
	    vnc_client_read_cb, c);
	c->write_ev = event_new(vnc->base, cl->sock,
	    EV_WRITE | EV_ET | EV_PERSIST, vnc_client_write_cb, c);
	c->stall_ev = evtimer_new(vnc->base, vnc_client_stall_cb, c);
	if (c->read_ev == NULL || c->write_ev == NULL || c->stall_ev == NULL ||
	    event_add(c->read_ev, NULL) < 0)
		vnc_client_drop(c);
	return;

close_pair:
	if (pair[0] >= 0)
		close(pair[0]);
	if (pair[1] >= 0)
		close(pair[1]);
	close(fd);
}

static void
vnc_pending_remove(struct vnc_pending *p)
{
	struct vnc_pending **pp;

	for (pp = &p->vnc->pending; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	event_free(p->ev);
	free(p);
}

static void
vnc_pending_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_pending *p = arg;
	struct vnc *vnc = p->vnc;
	char peek[4];
	bool spoke = false;

	vnc->stats.wakeups++;
	if (what & EV_READ) {
		ssize_t n = recv(fd, peek, sizeof(peek), MSG_PEEK);

		if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
			close(fd);	/* gone before saying anything */
			vnc_pending_remove(p);
			return;
		}
		spoke = n > 0;
	}
	vnc_pending_remove(p);
	vnc_attach(vnc, (int)fd, spoke);
}

static void
vnc_listen_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct vnc *vnc = arg;
	struct timeval tv = vnc_ms(VNC_WS_DETECT_MS);
	struct vnc_pending *p;
	int fd;

	vnc->stats.wakeups++;
	fd = accept4((int)lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	vnc->stats.connections++;
	if (fd >= FD_SETSIZE) {		/* libvncserver would FD_SET it */
		close(fd);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		close(fd);
		return;
	}
	p->vnc = vnc;
	p->fd = fd;
	p->ev = event_new(vnc->base, fd, EV_READ, vnc_pending_cb, p);
	if (p->ev == NULL || event_add(p->ev, &tv) < 0) {
		if (p->ev != NULL)
			event_free(p->ev);
		free(p);
		close(fd);
		return;
	}
	p->next = vnc->pending;
	vnc->pending = p;
}

/* --- input ------------------------------------------------------------ */

static void
vnc_key_hook(rfbBool down, rfbKeySym keysym, rfbClientPtr cl)
{
	struct vnc *vnc = cl->screen->screenData;

	if (vnc->host.key != NULL)
		vnc->host.key(vnc->host.opaque, (uint32_t)keysym, down);
}

/*
 * RFB positions are 16-bit and libvncserver passes them on as sent: a
 * viewer may point far outside the screen, which the host would turn
 * into a mouse move of thousands of pixels.  Clamped here, as vnc.h
 * promises.
 */
static void
vnc_pointer_hook(int buttons, int x, int y, rfbClientPtr cl)
{
	struct vnc *vnc = cl->screen->screenData;

	if (x < 0)
		x = 0;
	else if ((uint32_t)x >= vnc->geo.width)
		x = (int)vnc->geo.width - 1;
	if (y < 0)
		y = 0;
	else if ((uint32_t)y >= vnc->geo.height)
		y = (int)vnc->geo.height - 1;
	if (vnc->host.pointer != NULL)
		vnc->host.pointer(vnc->host.opaque, x, y,
		    (unsigned int)buttons);
}

/* --- HTTP ------------------------------------------------------------- */

static void vnc_http_client_cb(evutil_socket_t fd, short what, void *arg);

/*
 * libvncserver serves one HTTP connection at a time in
 * screen->httpSock, accepting and closing inside rfbHttpCheckFds(), and
 * it closes the connection it has when another one arrives.  Browsers
 * open several at once (and some before they have a request to send),
 * so the listening socket is watched only while no connection is being
 * served: the others wait in the backlog.  A connection that says
 * nothing for VNC_HTTP_IDLE_S is closed, so that it cannot hold the
 * others back.
 */
#define VNC_HTTP_IDLE_S	5

static void
vnc_http_sync(struct vnc *vnc)
{
	const struct timeval idle = { VNC_HTTP_IDLE_S, 0 };
	int fd = vnc->screen->httpSock;

	if (vnc->http_client_ev != NULL)
		event_free(vnc->http_client_ev);
	vnc->http_client_ev = NULL;
	if (fd != RFB_INVALID_SOCKET) {
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		vnc->http_client_ev = event_new(vnc->base, fd,
		    EV_READ | EV_PERSIST, vnc_http_client_cb, vnc);
		if (vnc->http_client_ev == NULL ||
		    event_add(vnc->http_client_ev, &idle) < 0) {
			if (vnc->http_client_ev != NULL)
				event_free(vnc->http_client_ev);
			vnc->http_client_ev = NULL;
			close(fd);
			vnc->screen->httpSock = RFB_INVALID_SOCKET;
		}
	}
	if (vnc->screen->httpSock == RFB_INVALID_SOCKET)
		event_add(vnc->http_listen_ev, NULL);
	else
		event_del(vnc->http_listen_ev);
}

static void
vnc_http_client_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc *vnc = arg;

	vnc->stats.wakeups++;
	if (what & EV_TIMEOUT) {
		close(fd);
		vnc->screen->httpSock = RFB_INVALID_SOCKET;
	} else {
		/*
		 * rfbHttpCheckFds() also polls the listening socket and, if
		 * a connection waits there, drops this one for it: let it
		 * see a descriptor that is never readable instead.
		 */
		vnc->screen->httpListenSock = vnc->http_quiet_fd;
		vnc->screen->httpListen6Sock = vnc->http_quiet_fd;
		rfbHttpCheckFds(vnc->screen);
		vnc->screen->httpListenSock = vnc->http_fd;
		vnc->screen->httpListen6Sock = vnc->http_fd;
	}
	if (vnc->screen->httpSock != (int)fd || (what & EV_TIMEOUT))
		vnc_http_sync(vnc);
}

static void
vnc_http_listen_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc *vnc = arg;

	vnc->stats.wakeups++;
	rfbHttpCheckFds(vnc->screen);
	if (vnc->screen->httpSock >= FD_SETSIZE) {
		close(vnc->screen->httpSock);	/* would abort next time */
		vnc->screen->httpSock = RFB_INVALID_SOCKET;
	}
	vnc_http_sync(vnc);
}

/* --- setup ------------------------------------------------------------ */

/*
 * Listen on address:port, or on the first free port of [first,
 * first + VNC_PORT_RANGE) when port is 0.  The socket, or -errno.
 */
static int
vnc_listen(const char *address, int port, int first, int *bound)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int family, fd, one = 1, err = -EADDRINUSE;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, address,
	    &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		family = AF_INET;
		sslen = sizeof(struct sockaddr_in);
	} else if (inet_pton(AF_INET6, address,
	    &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		family = AF_INET6;
		sslen = sizeof(struct sockaddr_in6);
	} else {
		return -EINVAL;
	}
	ss.ss_family = (sa_family_t)family;

	for (int p = port ? port : first; p < (port ? port + 1 :
	    first + VNC_PORT_RANGE); p++) {
		fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
		if (fd < 0)
			return -errno;
		if (fd >= FD_SETSIZE) {
			close(fd);
			return -EMFILE;
		}
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
		    sizeof(one));
		if (family == AF_INET6)
			(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
			    sizeof(one));
		if (family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = htons(p);
		else
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(p);
		if (bind(fd, (struct sockaddr *)&ss, sslen) == 0 &&
		    listen(fd, 16) == 0) {
			*bound = p;
			return fd;
		}
		err = -errno;
		close(fd);
		if (err != -EADDRINUSE)
			break;
	}
	return err;
}

static int
vnc_check_config(const struct vnc_config *cfg, const struct vnc_host *host,
    char *err, size_t errlen)
{
	const struct vnc_framebuffer *fb = &cfg->fb;

	if (fb->pixels == NULL || fb->width == 0 || fb->height == 0 ||
	    fb->width > 16384 || fb->height > 16384 ||
	    fb->stride < fb->width * 4u) {
		snprintf(err, errlen, "bad framebuffer geometry %ux%u stride %u",
		    fb->width, fb->height, fb->stride);
		return -EINVAL;
	}
	if (cfg->port < 0 || cfg->port > 65535 || cfg->http_port < 0 ||
	    cfg->http_port > 65535) {
		snprintf(err, errlen, "bad port");
		return -EINVAL;
	}
	if (host->dirty == NULL) {
		snprintf(err, errlen, "no dirty-page source");
		return -EINVAL;
	}
	return 0;
}

int
vnc_new(struct event_base *base, const struct vnc_config *cfg,
    const struct vnc_host *host, struct vnc **out, char *err,
    size_t errlen)
{
	struct vnc *vnc;
	rfbScreenInfoPtr s;
	int r;

	*out = NULL;
	r = vnc_check_config(cfg, host, err, errlen);
	if (r < 0)
		return r;
	vnc = calloc(1, sizeof(*vnc));
	if (vnc == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	vnc->base = base;
	vnc->cfg = *cfg;
	vnc->host = *host;
	vnc->listen_fd = -1;
	vnc->http_fd = -1;
	vnc->http_quiet_fd = -1;
	if (vnc->cfg.refresh_fast_ms == 0)
		vnc->cfg.refresh_fast_ms = 33;
	if (vnc->cfg.refresh_slow_ms == 0)
		vnc->cfg.refresh_slow_ms = 500;
	if (vnc->cfg.idle_refreshes == 0)
		vnc->cfg.idle_refreshes = 15;
	if (vnc->cfg.client_timeout_ms == 0)
		vnc->cfg.client_timeout_ms = 2000;
	r = -ENOMEM;
	snprintf(err, errlen, "out of memory");
	vnc->address = strdup(cfg->address ? cfg->address : VNC_DEFAULT_ADDRESS);
	if (vnc->address == NULL)
		goto free_vnc;
	vnc->cfg.address = vnc->address;
	if (cfg->password != NULL && cfg->password[0] != '\0') {
		vnc->passwords[0] = strdup(cfg->password);
		if (vnc->passwords[0] == NULL)
			goto free_vnc;
	}
	vnc->cfg.password = NULL;	/* only in passwords[] */
	vnc->geo = (struct dirty_geometry){ cfg->fb.width, cfg->fb.height,
	    cfg->fb.stride };
	vnc->bitmap_words = dirty_bitmap_words(&vnc->geo);
	vnc->bitmap = calloc(vnc->bitmap_words, sizeof(uint64_t));
	if (vnc->bitmap == NULL)
		goto free_vnc;

	rfbLogEnable(0);
	s = rfbGetScreen(NULL, NULL, (int)cfg->fb.width, (int)cfg->fb.height,
	    8, 3, 4);
	if (s == NULL)
		goto free_vnc;
	vnc->screen = s;
	s->screenData = vnc;
	s->frameBuffer = cfg->fb.pixels;
	s->paddedWidthInBytes = (int)cfg->fb.stride;
	/* x8r8g8b8 in a little-endian 32-bit word. */
	s->serverFormat.redShift = 16;
	s->serverFormat.greenShift = 8;
	s->serverFormat.blueShift = 0;
	s->desktopName = "vmmd";
	s->alwaysShared = TRUE;
	s->cursor = NULL;
	s->ignoreSIGPIPE = FALSE;
	s->deferUpdateTime = 0;
	s->deferPtrUpdateTime = 0;
	s->maxClientWait = (int)vnc->cfg.client_timeout_ms;
	s->newClientHook = vnc_new_client_hook;
	s->kbdAddEvent = vnc_key_hook;
	s->ptrAddEvent = vnc_pointer_hook;
	/* libvncserver's own sockets stay closed: none is created. */
	s->port = 0;
	s->ipv6port = 0;
	s->autoPort = FALSE;
	if (vnc->passwords[0] != NULL) {
		s->authPasswdData = vnc->passwords;
		s->passwordCheck = rfbCheckPasswordByList;
	}

	r = vnc_listen(vnc->address, cfg->port, VNC_PORT_FIRST, &vnc->port);
	if (r < 0) {
		snprintf(err, errlen, "cannot listen on %s port %s: %s",
		    vnc->address, cfg->port ? "given" : "5900-5999",
		    strerror(-r));
		goto free_vnc;
	}
	vnc->listen_fd = r;
	r = -ENOMEM;
	vnc->listen_ev = event_new(base, vnc->listen_fd, EV_READ | EV_PERSIST,
	    vnc_listen_cb, vnc);
	if (vnc->listen_ev == NULL || event_add(vnc->listen_ev, NULL) < 0)
		goto free_vnc;

	if (cfg->web_dir != NULL) {
		vnc->web_dir = strdup(cfg->web_dir);
		if (vnc->web_dir == NULL)
			goto free_vnc;
		r = vnc_listen(vnc->address, cfg->http_port,
		    VNC_HTTP_PORT_FIRST, &vnc->http_port);
		if (r < 0) {
			snprintf(err, errlen, "cannot listen for HTTP on %s: %s",
			    vnc->address, strerror(-r));
			goto free_vnc;
		}
		vnc->http_fd = r;
		vnc->http_quiet_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (vnc->http_quiet_fd < 0) {
			r = -errno;
			snprintf(err, errlen, "eventfd: %s", strerror(-r));
			goto free_vnc;
		}
		r = -ENOMEM;
		s->httpDir = vnc->web_dir;
		s->httpPort = vnc->http_port;
		s->httpInitDone = TRUE;
		s->httpListenSock = vnc->http_fd;
		/* Never -1: rfbHttpCheckFds() FD_ISSETs it regardless. */
		s->httpListen6Sock = vnc->http_fd;
		vnc->http_listen_ev = event_new(base, vnc->http_fd,
		    EV_READ | EV_PERSIST, vnc_http_listen_cb, vnc);
		if (vnc->http_listen_ev == NULL ||
		    event_add(vnc->http_listen_ev, NULL) < 0)
			goto free_vnc;
	}
	err[0] = '\0';
	*out = vnc;
	return 0;

free_vnc:
	/* vnc_free() undoes any prefix of the above. */
	vnc_free(vnc);
	return r;
}

void
vnc_free(struct vnc *vnc)
{
	rfbScreenInfoPtr s;

	if (vnc == NULL)
		return;
	vnc->freeing = true;
	s = vnc->screen;
	while (vnc->pending != NULL) {
		close(vnc->pending->fd);
		vnc_pending_remove(vnc->pending);
	}
	while (vnc->clients != NULL)
		vnc_client_drop(vnc->clients);
	vnc_refresh_stop(vnc);
	if (vnc->listen_ev != NULL)
		event_free(vnc->listen_ev);
	if (vnc->listen_fd >= 0)
		close(vnc->listen_fd);
	if (vnc->http_client_ev != NULL)
		event_free(vnc->http_client_ev);
	if (vnc->http_listen_ev != NULL)
		event_free(vnc->http_listen_ev);
	if (vnc->http_fd >= 0)
		close(vnc->http_fd);
	if (vnc->http_quiet_fd >= 0)
		close(vnc->http_quiet_fd);
	if (s != NULL) {
		if (s->httpSock != RFB_INVALID_SOCKET)
			close(s->httpSock);
		s->httpSock = s->httpListenSock = s->httpListen6Sock =
		    RFB_INVALID_SOCKET;
		s->httpDir = NULL;
		s->authPasswdData = NULL;
		rfbScreenCleanup(s);
	}
	free(vnc->web_dir);
	free(vnc->bitmap);
	free(vnc->address);
	if (vnc->passwords[0] != NULL) {
		explicit_bzero(vnc->passwords[0], strlen(vnc->passwords[0]));
		free(vnc->passwords[0]);
	}
	free(vnc);
}

int
vnc_port(const struct vnc *vnc)
{
	return vnc->port;
}

int
vnc_http_port(const struct vnc *vnc)
{
	return vnc->http_fd >= 0 ? vnc->http_port : 0;
}

void
vnc_stats(const struct vnc *vnc, struct vnc_stats *stats)
{
	*stats = vnc->stats;
	stats->clients = vnc->viewers;
	for (const struct vnc_client *c = vnc->clients; c != NULL; c = c->next)
		stats->bytes_sent += (uint64_t)rfbStatGetSentBytes(c->cl);
	stats->refresh_exists = vnc->refresh != NULL;
	stats->refresh_armed = vnc->refresh != NULL &&
	    evtimer_pending(vnc->refresh, NULL);
}
