/*
 * RFB server on libvncserver, driven by the caller's event loop.
 *
 * What libvncserver is left to do: the protocol (security, message
 * parsing, encodings, WebSocket framing).  What this file does instead
 * of its select loop: watch each viewer's socket, decide when to send an
 * update and how much.  Accepting connections and carrying each through
 * its handshake is vnc-handshake.c's, the web server for noVNC's files
 * vnc-http.c's.
 *
 * Corners of libvncserver 0.9.14 handled here:
 *
 *  - Reads wait.  libvncserver reads a message whole, waiting in
 *    select() for the rest (up to maxClientWait, which each byte
 *    restarts), and its WebSocket upgrade reads byte by byte with 100 ms
 *    waits; one silent or slow peer would stall the loop, and with it
 *    the guest.  So until a connection is a viewer it is a greeting of
 *    this file's: its socket stays ours, and libvncserver's client is
 *    given one end of a socket pair.  A message of the handshake goes
 *    to libvncserver only once it has all arrived (peeked at, on
 *    edge-triggered read events): the WebSocket upgrade request, then
 *    the RFB messages, whose sizes follow from the client's state (the
 *    whole WebSocket frames that hold them, for a WebSocket client).
 *    What libvncserver answers (a few hundred bytes in all) is passed
 *    on to the peer.  With ClientInit processed, the peer's socket is
 *    swapped in for the pair's end and the client is a viewer.  Each
 *    greeting is closed handshake_timeout_ms after it was accepted,
 *    and at most max_handshakes exist: further connections are closed
 *    when accepted.
 *  - WebSocket detection waits too.  rfbNewClient() peeks for up to
 *    100 ms for a client's first bytes ("GET " means WebSocket); a
 *    plain RFB client says nothing before the server does.  A greeting
 *    decides itself: the upgrade request if the peer speaks, plain RFB
 *    if it stays silent for VNC_WS_DETECT_MS; the pair then starts
 *    with the request, or with "RFB ", which ends libvncserver's peek
 *    at once and is taken back.
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
 *  - select() and FD_SETSIZE.  libvncserver FD_SETs client sockets; a
 *    descriptor >= FD_SETSIZE would abort the process.  Connections on
 *    such descriptors are refused.
 *  - The cursor.  libvncserver draws its cursor into the framebuffer
 *    for clients without cursor-shape support; here the framebuffer
 *    is guest memory, so the screen has no cursor (screen->cursor is
 *    NULL) and the guest draws its own.
 *  - A partly received message from a viewer: rfbProcessClientMessage()
 *    reads whole messages and waits up to maxClientWait
 *    (client_timeout_ms) for the rest in select().  This is the one
 *    wait left, and only a viewer (a client past authentication) can
 *    cause it, by sending part of a message and then stopping.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <rfb/rfb.h>
#include <rfb/rfbregion.h>

#include "dirty.h"
#include "vnc-handshake.h"
#include "vnc-http.h"
#include "vnc.h"
#include "vnc-update.h"

#define VNC_DEFAULT_ADDRESS	"127.0.0.1"
#define VNC_PORT_FIRST		5900
#define VNC_HTTP_PORT_FIRST	5800
#define VNC_PORT_RANGE		100
#define VNC_MAX_RECTS		64
/* Looks back before a refresh sends, and how far apart (vnc_refresh_settle). */
#define VNC_SETTLE_MS		4
#define VNC_SETTLE_MAX		2
/*
 * Send buffer asked for each client: a full 1024x768 frame and some.
 * Unprivileged, the kernel caps it at net.core.wmem_max; updates are
 * then sent in more, smaller parts.
 */
#define VNC_SNDBUF_WANTED	(4u << 20)
#define VNC_SEND_SLACK		4096u	/* protocol messages besides updates */

struct vnc_client;

struct vnc {
	struct event_base *base;
	struct vnc_config cfg;		/* strings below, owned */
	char *address;
	char *web_dir;
	char *passwords[2];		/* for rfbCheckPasswordByList */
	struct vnc_host host;

	rfbScreenInfoPtr screen;
	int listen_fd;
	int port;

	int http_fd;
	struct vnc_http *http;
	int http_port;

	struct vnc_handshakes *handshakes; /* till viewers (vnc-handshake.h) */
	struct vnc_client *clients;
	unsigned int viewers;

	/* Exists exactly while viewers > 0. */
	struct event *refresh;
	/*
	 * What viewers were sent, to send only lines that really changed
	 * (dirty_rects_changed()), and what the encoders read (the
	 * screen's frameBuffer points here while it exists): stride *
	 * height bytes while viewers > 0, NULL otherwise (or when it could
	 * not be had: then every dirty tile is sent, from guest memory).
	 */
	uint8_t *shadow;
	unsigned int quiet_refreshes;
	struct dirty_geometry geo;
	uint64_t *bitmap;		/* the refresh's pages written */
	uint64_t *settle_bitmap;	/* a look back's (vnc_refresh_settle) */
	size_t bitmap_words;
	unsigned int settles;		/* looks back in this refresh */
	struct timespec refresh_began;	/* its first look */

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
	bool rre;			/* decodes RRE (vnc-update.h) */
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

/* The next refresh, spent_ms after this one began: the fast pace is
 * kept from refresh to refresh, looks back included (see below). */
static void
vnc_refresh_arm(struct vnc *vnc, unsigned int spent_ms)
{
	unsigned int ms = vnc->cfg.refresh_fast_ms;
	struct timeval tv;

	if (vnc->cfg.mode == VNC_REFRESH_POLL &&
	    vnc->quiet_refreshes >= vnc->cfg.idle_refreshes)
		ms = vnc->cfg.refresh_slow_ms;
	else
		ms = spent_ms < ms ? ms - spent_ms : 0;
	tv = vnc_ms(ms);
	evtimer_add(vnc->refresh, &tv);
}

static unsigned int
vnc_ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned int)((t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000);
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

/*
 * Whether the guest is still writing, looking again VNC_SETTLE_MS after
 * a refresh that found pages written, while polling (a screen that
 * keeps changing): what the look finds joins the refresh's bitmap.
 * True: look once more later.  Up to VNC_SETTLE_MAX looks a refresh,
 * then it is sent as it is.  Why: a frame the guest is drawing when the
 * refresh comes goes half now and the rest at the next refresh, more
 * rectangles and bytes and a torn picture in between; waiting until
 * the writes pause sends it whole.  On hardware a frame takes the guest
 * microseconds to draw and the first look finds nothing: it costs one
 * dirty call and one wake-up an update, and the pace of refreshes
 * stays (vnc_refresh_arm()).  In event mode the first write arms the
 * refresh fast_ms ahead, which is time enough to finish drawing.
 */
static bool
vnc_refresh_settle(struct vnc *vnc)
{
	struct timeval tv = vnc_ms(VNC_SETTLE_MS);
	bool wrote = false;

	if (vnc->cfg.mode != VNC_REFRESH_POLL)
		return false;
	if (vnc->settles > 0) {
		memset(vnc->settle_bitmap, 0,
		    vnc->bitmap_words * sizeof(uint64_t));
		if (vnc->host.dirty(vnc->host.opaque, vnc->settle_bitmap) < 0)
			return false;
		for (size_t i = 0; i < vnc->bitmap_words; i++) {
			wrote |= vnc->settle_bitmap[i] != 0;
			vnc->bitmap[i] |= vnc->settle_bitmap[i];
		}
		/* The look may have switched the display out of polling. */
		if (vnc->cfg.mode != VNC_REFRESH_POLL)
			return false;
	} else {
		for (size_t i = 0; i < vnc->bitmap_words && !wrote; i++)
			wrote = vnc->bitmap[i] != 0;
	}
	if (!wrote || vnc->settles >= VNC_SETTLE_MAX)
		return false;
	vnc->settles++;
	evtimer_add(vnc->refresh, &tv);
	return true;
}

/* libvncserver's format for our pixels: x8r8g8b8, little endian. */
static void
vnc_server_format(rfbScreenInfoPtr s)
{
	s->serverFormat.redShift = 16;
	s->serverFormat.greenShift = 8;
	s->serverFormat.blueShift = 0;
}

static bool
vnc_fb_ok(const struct vnc_framebuffer *fb)
{
	return fb->pixels != NULL && fb->width > 0 && fb->height > 0 &&
	    fb->width <= 16384 && fb->height <= 16384 &&
	    fb->stride >= fb->width * 4u;
}

/*
 * Ask the host for the framebuffer (vnc_host.framebuffer) and follow a
 * change: true when the screen changed, and then the shadow is the new
 * picture and the whole screen is marked for sending.  A change that
 * cannot be had (a bad geometry, no memory) keeps the old screen.
 */
static bool
vnc_follow_fb(struct vnc *vnc)
{
	struct vnc_framebuffer fb = vnc->cfg.fb;
	struct dirty_geometry geo;
	uint64_t *bitmap, *settle;
	uint8_t *shadow = NULL;
	size_t words, bytes;

	if (vnc->host.framebuffer == NULL)
		return false;
	vnc->host.framebuffer(vnc->host.opaque, &fb);
	if (memcmp(&fb, &vnc->cfg.fb, sizeof(fb)) == 0 || !vnc_fb_ok(&fb))
		return false;
	geo = (struct dirty_geometry){ fb.width, fb.height, fb.stride };
	words = dirty_bitmap_words(&geo);
	bytes = (size_t)fb.stride * fb.height;
	bitmap = calloc(words, sizeof(uint64_t));
	settle = calloc(words, sizeof(uint64_t));
	if (vnc->shadow != NULL && (shadow = malloc(bytes)) != NULL)
		memcpy(shadow, fb.pixels, bytes);
	if (bitmap == NULL || settle == NULL ||
	    (vnc->shadow != NULL && shadow == NULL)) {
		free(bitmap);
		free(settle);
		free(shadow);
		return false;
	}
	free(vnc->bitmap);
	free(vnc->settle_bitmap);
	vnc->bitmap = bitmap;
	vnc->settle_bitmap = settle;
	vnc->bitmap_words = words;
	vnc->geo = geo;
	vnc->cfg.fb = fb;
	free(vnc->shadow);
	vnc->shadow = shadow;
	rfbNewFramebuffer(vnc->screen, shadow != NULL ? (char *)shadow :
	    fb.pixels, (int)fb.width, (int)fb.height, 8, 3, 4);
	vnc->screen->paddedWidthInBytes = (int)fb.stride;
	vnc_server_format(vnc->screen);
	/* Each viewer's translation, anew for the format just set. */
	for (struct vnc_client *c = vnc->clients; c != NULL; c = c->next)
		if (c->viewer)
			(void)rfbSetTranslateFunction(c->cl);
	rfbMarkRectAsModified(vnc->screen, 0, 0, (int)fb.width,
	    (int)fb.height);
	vnc->stats.resizes++;
	return true;
}

static void
vnc_refresh_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc *vnc = arg;
	struct dirty_rect rects[VNC_MAX_RECTS];
	size_t tiles = 0;
	int n = 0;

	vnc->stats.wakeups++;
	if (vnc->settles == 0) {
		vnc->stats.refreshes++;
		clock_gettime(CLOCK_MONOTONIC, &vnc->refresh_began);
		if (vnc_follow_fb(vnc)) {
			/* All of the new screen is marked: forget the rest. */
			(void)vnc->host.dirty(vnc->host.opaque, vnc->bitmap);
			vnc->quiet_refreshes = 0;
			vnc_flush_all(vnc);
			goto rearm;
		}
		memset(vnc->bitmap, 0, vnc->bitmap_words * sizeof(uint64_t));
		if (vnc->host.dirty(vnc->host.opaque, vnc->bitmap) < 0)
			goto send;	/* nothing to send: n is 0 */
	}
	if (vnc_refresh_settle(vnc))
		return;
	n = vnc->shadow != NULL ? dirty_rects_changed(&vnc->geo,
	    vnc->bitmap, vnc->cfg.fb.pixels, vnc->shadow, rects,
	    VNC_MAX_RECTS, &tiles) : dirty_rects(&vnc->geo,
	    vnc->bitmap, rects, VNC_MAX_RECTS, &tiles);
send:
	vnc->settles = 0;
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
rearm:
	/* The last viewer may have gone while flushing. */
	if (vnc->refresh != NULL && vnc->cfg.mode == VNC_REFRESH_POLL)
		vnc_refresh_arm(vnc, vnc_ms_since(&vnc->refresh_began));
}

static void
vnc_refresh_start(struct vnc *vnc)
{
	vnc->refresh = evtimer_new(vnc->base, vnc_refresh_cb, vnc);
	if (vnc->refresh == NULL)
		return;		/* no refresh: viewers get what they ask for */
	/* The screen as it is now, before the shadow copies it. */
	(void)vnc_follow_fb(vnc);
	/* Forget what changed while nobody watched: the viewer gets the
	 * whole screen anyway. */
	memset(vnc->bitmap, 0, vnc->bitmap_words * sizeof(uint64_t));
	(void)vnc->host.dirty(vnc->host.opaque, vnc->bitmap);
	/*
	 * What the viewer is about to get: the screen as it is now.  The
	 * encoders read the shadow, not guest memory: a refresh compares,
	 * copies and sends one picture, where reading guest memory while
	 * the guest draws would send pixels newer than the ones compared
	 * (half of a frame in flight, sent again at the next refresh).
	 */
	vnc->shadow = malloc((size_t)vnc->geo.stride * vnc->geo.height);
	if (vnc->shadow != NULL) {
		memcpy(vnc->shadow, vnc->cfg.fb.pixels,
		    (size_t)vnc->geo.stride * vnc->geo.height);
		vnc->screen->frameBuffer = (char *)vnc->shadow;
	}
	vnc->quiet_refreshes = 0;
	vnc->settles = 0;
	if (vnc->cfg.mode == VNC_REFRESH_POLL)
		vnc_refresh_arm(vnc, 0);
}

static void
vnc_refresh_stop(struct vnc *vnc)
{
	if (vnc->refresh != NULL)
		event_free(vnc->refresh);
	vnc->refresh = NULL;
	vnc->screen->frameBuffer = vnc->cfg.fb.pixels;
	free(vnc->shadow);
	vnc->shadow = NULL;
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
	vnc_refresh_arm(vnc, 0);
}

void
vnc_set_mode(struct vnc *vnc, enum vnc_refresh_mode mode)
{
	vnc->cfg.mode = mode;
	vnc->quiet_refreshes = 0;
	/* Polling from now on; a pending one-shot just runs once more. */
	if (vnc->refresh != NULL && mode == VNC_REFRESH_POLL &&
	    !evtimer_pending(vnc->refresh, NULL))
		vnc_refresh_arm(vnc, 0);
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
	if (vnc_update_send(cl, send, c->rre))
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
	do {
		vnc_update_peek_encodings(cl, &c->rre);
		rfbProcessClientMessage(cl);
	} while (cl->sock != RFB_INVALID_SOCKET && cl->wsctx != NULL &&
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

/* --- viewers ---------------------------------------------------------- */

/*
 * The handshake of cl is over (vnc-handshake.h): cl->sock is the peer's
 * socket from now on, and the client a viewer.
 */
static void
vnc_client_viewer(rfbClientPtr cl)
{
	struct vnc_client *c = cl->clientData;
	struct vnc *vnc = c->vnc;
	int fd = cl->sock;

	c->sndbuf = vnc_socket_sndbuf(fd);
	c->read_ev = event_new(vnc->base, fd, EV_READ | EV_PERSIST,
	    vnc_client_read_cb, c);
	c->write_ev = event_new(vnc->base, fd, EV_WRITE | EV_ET | EV_PERSIST,
	    vnc_client_write_cb, c);
	c->stall_ev = evtimer_new(vnc->base, vnc_client_stall_cb, c);
	if (c->read_ev == NULL || c->write_ev == NULL || c->stall_ev == NULL ||
	    event_add(c->read_ev, NULL) < 0) {
		vnc_client_drop(c);
		return;
	}
	c->viewer = true;
	vnc_viewer_change(vnc, true);
	/* A frame that held more than the handshake left the rest in
	 * libvncserver's buffer, where no socket event will announce it. */
	if (cl->wsctx != NULL && webSocketsHasDataInBuffer(cl))
		vnc_client_read_cb(fd, EV_READ, c);
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
	if (vnc->cfg.refresh_fast_ms == 0)
		vnc->cfg.refresh_fast_ms = 33;
	if (vnc->cfg.refresh_slow_ms == 0)
		vnc->cfg.refresh_slow_ms = 500;
	if (vnc->cfg.idle_refreshes == 0)
		vnc->cfg.idle_refreshes = 15;
	if (vnc->cfg.client_timeout_ms == 0)
		vnc->cfg.client_timeout_ms = 2000;
	if (vnc->cfg.handshake_timeout_ms == 0)
		vnc->cfg.handshake_timeout_ms = 30000;
	if (vnc->cfg.http_timeout_ms == 0)
		vnc->cfg.http_timeout_ms = 10000;
	if (vnc->cfg.max_handshakes == 0)
		vnc->cfg.max_handshakes = 8;
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
	vnc->settle_bitmap = calloc(vnc->bitmap_words, sizeof(uint64_t));
	if (vnc->bitmap == NULL || vnc->settle_bitmap == NULL)
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
	vnc_server_format(s);
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
		r = vnc_http_new(base, vnc->http_fd, vnc->web_dir,
		    vnc->cfg.http_timeout_ms, vnc->cfg.max_handshakes,
		    &vnc->http);
		if (r < 0) {
			snprintf(err, errlen, "web directory %s: %s",
			    vnc->web_dir, strerror(-r));
			goto free_vnc;
		}
	}

	/* Accepting last: the handshakes check Host against both ports. */
	r = vnc_handshake_new(&(struct vnc_handshake_params){
	    .base = base,
	    .screen = s,
	    .listen_fd = vnc->listen_fd,
	    .address = vnc->address,
	    .port = vnc->port,
	    .http_port = vnc->http != NULL ? vnc->http_port : 0,
	    .timeout_ms = vnc->cfg.handshake_timeout_ms,
	    .max = vnc->cfg.max_handshakes,
	    .stats = &vnc->stats,
	    .viewer = vnc_client_viewer,
	}, &vnc->handshakes);
	if (r < 0) {
		snprintf(err, errlen, "out of memory");
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
	vnc_handshake_free(vnc->handshakes);
	while (vnc->clients != NULL)
		vnc_client_drop(vnc->clients);
	vnc_refresh_stop(vnc);
	if (vnc->listen_fd >= 0)
		close(vnc->listen_fd);
	vnc_http_free(vnc->http);
	if (vnc->http_fd >= 0)
		close(vnc->http_fd);
	if (s != NULL) {
		s->authPasswdData = NULL;
		rfbScreenCleanup(s);
	}
	free(vnc->web_dir);
	free(vnc->bitmap);
	free(vnc->settle_bitmap);
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
	struct vnc_http_stats http = { 0 };

	*stats = vnc->stats;
	stats->clients = vnc->viewers;
	stats->handshakes = vnc_handshake_count(vnc->handshakes);
	if (vnc->http != NULL)
		vnc_http_stats(vnc->http, &http);
	stats->wakeups += http.wakeups;
	stats->http_timed_out = http.timed_out;
	for (const struct vnc_client *c = vnc->clients; c != NULL; c = c->next)
		stats->bytes_sent += (uint64_t)rfbStatGetSentBytes(c->cl);
	stats->refresh_exists = vnc->refresh != NULL;
	stats->refresh_armed = vnc->refresh != NULL &&
	    evtimer_pending(vnc->refresh, NULL);
}

void
vnc_get_framebuffer(const struct vnc *vnc, struct vnc_framebuffer *fb)
{
	*fb = vnc->cfg.fb;
}
