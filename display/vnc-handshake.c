/*
 * RFB and WebSocket handshakes on the caller's event loop (see
 * vnc-handshake.h, and vnc.c's top for why a handshake is carried
 * here and not left to libvncserver).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <rfb/rfb.h>

#include "vnc-handshake.h"

#define VNC_WS_DETECT_MS	100	/* libvncserver's own wait */
#define VNC_WS_REQUEST_MAX	4096	/* libvncserver's limit too */
/* The longest WebSocket frame taken before the client is a viewer: a
 * handshake message is 16 bytes at most. */
#define VNC_WS_FRAME_MAX	64

/* An accepted connection until it is a viewer: see vnc.c's top. */
struct vnc_greeting {
	struct vnc_handshakes *h;
	int fd;				/* the peer's socket */
	struct event *ev;		/* its input (edge-triggered) */
	struct event *deadline;		/* handshake_timeout_ms */
	enum {
		VNC_GREET_DETECT,	/* WebSocket or not? */
		VNC_GREET_UPGRADE,	/* the WebSocket upgrade request */
		VNC_GREET_RFB,		/* version, security, ClientInit */
	} phase;
	bool websocket;
	/* From VNC_GREET_RFB: libvncserver's client, on its end of a
	 * socket pair; peer is ours. */
	rfbClientPtr cl;
	int peer;
	size_t payload;		/* WebSocket payload it has not read */
	struct vnc_greeting *next;
};

struct vnc_handshakes {
	struct vnc_handshake_params p;
	struct event *listen_ev;
	struct vnc_greeting *greetings;
	unsigned int count;		/* greetings in the list */
};

static struct timeval
vnc_handshake_ms(unsigned int ms)
{
	return (struct timeval){ .tv_sec = ms / 1000,
	    .tv_usec = (ms % 1000) * 1000 };
}

/*
 * From accept until the client is a viewer (see the top): the peer's
 * socket is the greeting's, libvncserver's client sits on one end of a
 * socket pair and the greeting on the other, handing it one whole
 * message at a time.
 */

static void
vnc_greeting_free(struct vnc_greeting *g)
{
	struct vnc_handshakes *h = g->h;
	struct vnc_greeting **pp;

	for (pp = &h->greetings; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	h->count--;
	if (g->ev != NULL)
		event_free(g->ev);
	if (g->deadline != NULL)
		event_free(g->deadline);
	if (g->cl != NULL) {
		if (g->cl->sock != RFB_INVALID_SOCKET)
			rfbCloseClient(g->cl);
		rfbClientConnectionGone(g->cl);	/* vnc.c's clientGoneHook */
	}
	if (g->peer >= 0)
		close(g->peer);
	if (g->fd >= 0)
		close(g->fd);
	free(g);
}

/* What libvncserver wrote, to the peer.  0, or -errno: drop it. */
static int
vnc_greeting_forward(struct vnc_greeting *g)
{
	char buf[1024];
	ssize_t n, w;

	while ((n = read(g->peer, buf, sizeof(buf))) > 0) {
		/*
		 * A few hundred bytes at most before the client is a
		 * viewer: a socket that cannot take them now holds a
		 * receive window nobody opens, and is dropped.
		 */
		w = send(g->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w != n)
			return w < 0 ? -errno : -EAGAIN;
	}
	return n < 0 && errno != EAGAIN ? -errno : 0;
}

/* A short HTTP answer to a WebSocket request, and the end of it. */
static void
vnc_greeting_refuse(struct vnc_greeting *g, int status, const char *reason)
{
	char buf[512];
	int n;

	n = snprintf(buf, sizeof(buf), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n", status,
	    status == 403 ? "Forbidden" : "Bad Request", strlen(reason) + 1,
	    reason);
	if (n > 0 && (size_t)n < sizeof(buf))
		(void)send(g->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	vnc_greeting_free(g);
}

/* Client bytes libvncserver's next call reads, by its state; 0: none. */
static size_t
vnc_greeting_need(const rfbClientPtr cl)
{
	switch (cl->state) {
	case RFB_PROTOCOL_VERSION:
		return sz_rfbProtocolVersionMsg;
	case RFB_SECURITY_TYPE:
		return 1;
	case RFB_AUTHENTICATION:
		return CHALLENGESIZE;
	case RFB_INITIALISATION:
		return sz_rfbClientInitMsg;
	default:
		return 0;
	}
}

/*
 * Part of a message is there, the rest not yet: -EAGAIN, or -EPIPE when
 * the peer has shut down its side (a peek keeps returning what is
 * buffered, never the end of file, and the rest can never come).
 */
static int
vnc_greeting_more(const struct vnc_greeting *g)
{
	struct pollfd pfd = { .fd = g->fd, .events = POLLRDHUP };

	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP |
	    POLLERR)))
		return -EPIPE;
	return -EAGAIN;
}

/*
 * Move need bytes of RFB from the peer to libvncserver's end of the
 * pair, or whole WebSocket frames holding at least that much payload.
 * Nothing is taken until all of it is there.  0, -EAGAIN (not yet), or
 * -errno: drop it.
 */
static int
vnc_greeting_take(struct vnc_greeting *g, size_t need)
{
	/* Frame header (at most 14 bytes) and what a message needs. */
	uint8_t buf[14 + VNC_WS_FRAME_MAX];
	size_t len, hdr;
	ssize_t n;

	if (!g->websocket) {
		n = recv(g->fd, buf, need, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? -EAGAIN :
			    -errno;
		if ((size_t)n < need)
			return vnc_greeting_more(g);
		if (recv(g->fd, buf, need, MSG_DONTWAIT) != (ssize_t)need ||
		    write(g->peer, buf, need) != (ssize_t)need)
			return -EIO;
		return 0;
	}
	while (g->payload < need) {
		n = recv(g->fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? -EAGAIN :
			    -errno;
		if (n < 2)
			return vnc_greeting_more(g);
		/* Masked (as a client must), binary or continued: what
		 * libvncserver decodes as it is.  Text frames are base64's,
		 * refused at the upgrade; close and ping end the
		 * handshake. */
		if (!(buf[1] & 0x80) || ((buf[0] & 0x0f) != 0 &&
		    (buf[0] & 0x0f) != 2))
			return -EPROTO;
		len = buf[1] & 0x7f;
		hdr = 2 + (len == 126 ? 2 : len == 127 ? 8 : 0) + 4;
		if ((size_t)n < hdr)
			return vnc_greeting_more(g);
		if (len == 126) {
			len = (size_t)buf[2] << 8 | buf[3];
		} else if (len == 127) {
			len = 0;
			for (int i = 2; i < 10; i++) {
				if (len > VNC_WS_FRAME_MAX)
					return -EPROTO;
				len = len << 8 | buf[i];
			}
		}
		if (len == 0 || len > VNC_WS_FRAME_MAX)
			return -EPROTO;
		if ((size_t)n < hdr + len)
			return vnc_greeting_more(g);
		if (recv(g->fd, buf, hdr + len, MSG_DONTWAIT) !=
		    (ssize_t)(hdr + len) ||
		    write(g->peer, buf, hdr + len) != (ssize_t)(hdr + len))
			return -EIO;
		g->payload += len;
	}
	return 0;
}

/*
 * The handshake is over: swap the peer's socket in for libvncserver's
 * end of the pair, and the client is the display's viewer.  Frees g.
 */
static void
vnc_greeting_done(struct vnc_greeting *g)
{
	struct vnc_handshakes *h = g->h;
	rfbClientPtr cl = g->cl;
	struct sockaddr_storage addr;
	socklen_t addrlen = sizeof(addr);
	char host[INET6_ADDRSTRLEN] = "";
	int fd = g->fd, left = 0, one = 1;

	/* What libvncserver has not read would be lost with the pair: a
	 * client must wait for ServerInit. */
	if (ioctl(cl->sock, FIONREAD, &left) < 0 || left != 0) {
		vnc_greeting_free(g);
		return;
	}
	g->cl = NULL;
	g->fd = -1;
	vnc_greeting_free(g);
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
	h->p.viewer(cl);
}

/* Detection is over: the event has no timeout from now on. */
static int
vnc_greeting_detected(struct vnc_greeting *g)
{
	event_del(g->ev);
	return event_add(g->ev, NULL) < 0 ? -ENOMEM : 0;
}

/* Hand libvncserver every whole message there is; see the top. */
static void
vnc_greeting_pump(struct vnc_greeting *g)
{
	rfbScreenInfoPtr s = g->h->p.screen;
	int wait, r;
	size_t need;

	for (;;) {
		if (g->cl->state == RFB_NORMAL) {
			vnc_greeting_done(g);
			return;
		}
		need = vnc_greeting_need(g->cl);
		if (need == 0) {
			vnc_greeting_free(g);
			return;
		}
		r = vnc_greeting_take(g, need);
		if (r == -EAGAIN)
			return;
		if (r < 0) {
			vnc_greeting_free(g);
			return;
		}
		/* All of it is there: libvncserver need not wait, and
		 * must not. */
		wait = s->maxClientWait;
		s->maxClientWait = 1;
		rfbProcessClientMessage(g->cl);
		s->maxClientWait = wait;
		g->payload -= g->payload < need ? g->payload : need;
		r = vnc_greeting_forward(g);
		if (r < 0 || g->cl->sock == RFB_INVALID_SOCKET) {
			/* Refused (a wrong password): it has been told. */
			vnc_greeting_free(g);
			return;
		}
	}
}

/*
 * Give the client to libvncserver, on a socket pair: request is the
 * WebSocket upgrade (len bytes), or NULL for plain RFB.  Frees g on
 * failure.
 */
static void
vnc_greeting_start(struct vnc_greeting *g, const char *request, size_t len)
{
	struct vnc_handshakes *h = g->h;
	rfbClientPtr cl;
	char rfb[4];
	int pair[2];

	if (g->phase == VNC_GREET_DETECT && vnc_greeting_detected(g) < 0) {
		vnc_greeting_free(g);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    pair) < 0) {
		vnc_greeting_free(g);
		return;
	}
	g->peer = pair[0];
	/*
	 * rfbNewClient() peeks for the first bytes, waiting up to 100 ms:
	 * the upgrade is all there, and a plain client is announced by
	 * "RFB ", which is taken back at once.
	 */
	if (pair[1] >= FD_SETSIZE ||	/* libvncserver would FD_SET it */
	    (request != NULL && write(pair[0], request, len) != (ssize_t)len) ||
	    (request == NULL && write(pair[0], "RFB ", 4) != 4)) {
		close(pair[1]);
		vnc_greeting_free(g);
		return;
	}
	cl = rfbNewClient(h->p.screen, pair[1]);	/* takes pair[1] */
	if (cl == NULL) {
		if (request != NULL)
			vnc_greeting_refuse(g, 400, "bad WebSocket upgrade");
		else
			vnc_greeting_free(g);
		return;
	}
	g->cl = cl;
	g->websocket = request != NULL;
	if (request == NULL && read(cl->sock, rfb, 4) != 4) {
		vnc_greeting_free(g);
		return;
	}
	g->phase = VNC_GREET_RFB;
	if (vnc_greeting_forward(g) < 0) {
		vnc_greeting_free(g);
		return;
	}
	vnc_greeting_pump(g);
}

/* "h: v" among the request's header lines: v and its length, or NULL. */
static const char *
vnc_header(const char *req, const char *name, size_t *len)
{
	size_t nlen = strlen(name);
	const char *p, *end;

	for (p = strchr(req, '\n'); p != NULL; p = strchr(p, '\n')) {
		p++;
		if (strncasecmp(p, name, nlen) != 0 || p[nlen] != ':')
			continue;
		p += nlen + 1;
		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strcspn(p, "\r\n");
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		*len = (size_t)(end - p);
		return p;
	}
	return NULL;
}

static bool
vnc_loopback(const char *address)
{
	struct in_addr a4;

	if (inet_pton(AF_INET, address, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return strcmp(address, "::1") == 0;
}

/*
 * Whether host (a Host header's name: an IPv4 address, an IPv6 one in
 * brackets, or a name) is the address the connection fd came to, or
 * the display's listen address, or, on a loopback one, "localhost".
 */
static bool
vnc_host_is_ours(const struct vnc_handshakes *h, int fd, const char *host)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	char v6[INET6_ADDRSTRLEN], local[INET6_ADDRSTRLEN] = "";
	unsigned char a[sizeof(struct in6_addr)], b[sizeof(struct in6_addr)];
	size_t len = strlen(host);
	int af = AF_INET;

	if (getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0) {
		if (ss.ss_family == AF_INET)
			inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->
			    sin_addr, local, sizeof(local));
		else if (ss.ss_family == AF_INET6)
			inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->
			    sin6_addr, local, sizeof(local));
	}
	if (strcasecmp(host, "localhost") == 0)
		return vnc_loopback(h->p.address) || vnc_loopback(local);
	if (len >= 3 && len - 2 < sizeof(v6) && host[0] == '[' &&
	    host[len - 1] == ']') {
		memcpy(v6, host + 1, len - 2);
		v6[len - 2] = '\0';
		host = v6;
		af = AF_INET6;
	}
	/* A name is not ours: a DNS name can be pointed anywhere. */
	if (inet_pton(af, host, a) != 1)
		return false;
	return (inet_pton(af, local, b) == 1 && memcmp(a, b, af == AF_INET ?
	    4 : 16) == 0) || (inet_pton(af, h->p.address, b) == 1 &&
	    memcmp(a, b, af == AF_INET ? 4 : 16) == 0);
}

/*
 * Browsers let any page open a WebSocket to any address, 127.0.0.1
 * included, and say which site's page it is in Origin: only the
 * display's own web client's pages may connect, those of
 * http://HOST:HTTP-PORT where HOST is the name the upgrade was sent to
 * (its Host header, HOST:PORT with the display's port).  HOST must be
 * the address the connection came to (or the listen address), or
 * localhost on a loopback one: never a name, which an attacker's DNS
 * can point at the display once its page is loaded (DNS rebinding),
 * wherever the display listens.  fd is the connection.  NULL when the
 * request may go on, else why not (into why).
 */
static const char *
vnc_ws_origin(const struct vnc_handshakes *h, int fd, const char *req,
    char *why, size_t len)
{
	char host[256], own[300], *end = NULL;
	const char *v, *origin;
	size_t vlen, hlen, olen;
	long port;

	origin = vnc_header(req, "Origin", &olen);
	if (origin == NULL)
		origin = vnc_header(req, "Sec-WebSocket-Origin", &olen);
	if (h->p.http_port == 0) {
		snprintf(why, len, "WebSocket connections come only from "
		    "this display's web client, and it has none");
		return why;
	}
	v = vnc_header(req, "Host", &vlen);
	if (v == NULL || vlen == 0 || vlen >= sizeof(host)) {
		snprintf(why, len, "a WebSocket upgrade needs its Host");
		return why;
	}
	hlen = v[0] == '[' && memchr(v, ']', vlen) != NULL ?
	    (size_t)((const char *)memchr(v, ']', vlen) - v) + 1 :
	    strcspn(v, ":\r\n");
	if (hlen > vlen)
		hlen = vlen;
	memcpy(host, v, hlen);
	host[hlen] = '\0';
	snprintf(own, sizeof(own), "http://%s:%d", host, h->p.http_port);
	if (!vnc_host_is_ours(h, fd, host)) {
		snprintf(why, len, "WebSocket upgrade for host '%.100s': "
		    "this display answers to its address%s only", host,
		    vnc_loopback(h->p.address) ? " or localhost" : "");
		return why;
	}
	/* The port the upgrade came to: the display's own. */
	port = hlen + 1 < vlen && v[hlen] == ':' ?
	    strtol(v + hlen + 1, &end, 10) : -1;
	if (port != h->p.port || end != v + vlen) {
		snprintf(why, len, "WebSocket upgrade for '%.*s': this "
		    "display answers on port %d", (int)(vlen < 100 ? vlen :
		    100), v, h->p.port);
		return why;
	}
	if (origin == NULL) {
		snprintf(why, len, "WebSocket upgrade without an Origin "
		    "refused: only this display's web client (%s) may "
		    "connect", own);
		return why;
	}
	if (olen != strlen(own) || strncasecmp(origin, own, olen) != 0) {
		snprintf(why, len, "WebSocket from origin '%.*s' refused: "
		    "only this display's web client (%s) may connect",
		    (int)(olen < 100 ? olen : 100), origin, own);
		return why;
	}
	return NULL;
}

/* A whole upgrade request (NUL-terminated, len bytes) came: judge it. */
static void
vnc_greeting_upgrade(struct vnc_greeting *g, const char *req, size_t len)
{
	const char *v;
	char why[512];
	size_t vlen;

	if (vnc_ws_origin(g->h, g->fd, req, why, sizeof(why)) != NULL) {
		vnc_greeting_refuse(g, 403, why);
		return;
	}

	/* base64 framing would change what a frame's length means to
	 * vnc_greeting_take(); browsers have long spoken binary. */
	v = vnc_header(req, "Sec-WebSocket-Protocol", &vlen);
	if (v != NULL && memmem(v, vlen, "base64", 6) != NULL) {
		vnc_greeting_refuse(g, 400, "the base64 WebSocket protocol "
		    "is not supported; use binary");
		return;
	}
	vnc_greeting_start(g, req, len);
}

static void
vnc_greeting_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_greeting *g = arg;
	char req[VNC_WS_REQUEST_MAX + 1];
	const char *end;
	ssize_t n;

	g->h->p.stats->wakeups++;
	switch (g->phase) {
	case VNC_GREET_DETECT:
		n = recv(g->fd, req, 4, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			vnc_greeting_free(g);	/* gone before a word */
			return;
		}
		if (n < 0) {
			/* Silent for VNC_WS_DETECT_MS: plain RFB, whose
			 * client waits for the server. */
			if (what & EV_TIMEOUT)
				vnc_greeting_start(g, NULL, 0);
			return;
		}
		if (memcmp(req, "GET ", (size_t)n) != 0) {
			/* Spoke first, but no WebSocket: RFB or nothing
			 * (TLS is not offered), libvncserver will say. */
			if (req[0] == 0x16 || req[0] == (char)0x80)
				vnc_greeting_free(g);
			else
				vnc_greeting_start(g, NULL, 0);
			return;
		}
		/* "GET " or part of it: no more detection, only the
		 * deadline. */
		if (vnc_greeting_detected(g) < 0) {
			vnc_greeting_free(g);
			return;
		}
		if (n < 4) {
			if (vnc_greeting_more(g) == -EPIPE)
				vnc_greeting_free(g);
			return;
		}
		g->phase = VNC_GREET_UPGRADE;
		__attribute__((fallthrough));
	case VNC_GREET_UPGRADE:
		n = recv(g->fd, req, VNC_WS_REQUEST_MAX, MSG_PEEK |
		    MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			vnc_greeting_free(g);
			return;
		}
		if (n < 0)
			return;
		req[n] = '\0';
		end = strstr(req, "\r\n\r\n");
		if (end == NULL) {
			if (n == VNC_WS_REQUEST_MAX || strlen(req) < (size_t)n)
				vnc_greeting_refuse(g, 400, "bad WebSocket "
				    "upgrade");
			else if (vnc_greeting_more(g) == -EPIPE)
				vnc_greeting_free(g);
			return;		/* the rest comes later */
		}
		/* Exactly the request: the client's first frames go
		 * to libvncserver a message at a time. */
		n = end + 4 - req;
		if (recv(g->fd, req, (size_t)n, MSG_DONTWAIT) != n) {
			vnc_greeting_free(g);
			return;
		}
		req[n] = '\0';
		vnc_greeting_upgrade(g, req, (size_t)n);
		return;
	case VNC_GREET_RFB:
		vnc_greeting_pump(g);
		return;
	}
}

static void
vnc_greeting_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vnc_greeting *g = arg;

	g->h->p.stats->wakeups++;
	g->h->p.stats->handshakes_timed_out++;
	vnc_greeting_free(g);
}

static void
vnc_handshake_listen_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct vnc_handshakes *h = arg;
	struct timeval detect = vnc_handshake_ms(VNC_WS_DETECT_MS);
	struct timeval deadline = vnc_handshake_ms(h->p.timeout_ms);
	struct vnc_greeting *g;
	int fd;

	h->p.stats->wakeups++;
	fd = accept4((int)lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	h->p.stats->connections++;
	if (h->count >= h->p.max) {
		h->p.stats->handshakes_refused++;
		close(fd);
		return;
	}
	if (fd >= FD_SETSIZE) {		/* libvncserver would FD_SET it */
		close(fd);
		return;
	}
	g = calloc(1, sizeof(*g));
	if (g == NULL) {
		close(fd);
		return;
	}
	g->h = h;
	g->fd = fd;
	g->peer = -1;
	g->next = h->greetings;
	h->greetings = g;
	h->count++;
	/* Edge-triggered: what is there is only peeked at, until a whole
	 * message is. */
	g->ev = event_new(h->p.base, fd, EV_READ | EV_ET | EV_PERSIST,
	    vnc_greeting_cb, g);
	g->deadline = evtimer_new(h->p.base, vnc_greeting_deadline_cb, g);
	if (g->ev == NULL || g->deadline == NULL ||
	    event_add(g->ev, &detect) < 0 ||
	    evtimer_add(g->deadline, &deadline) < 0)
		vnc_greeting_free(g);
}

int
vnc_handshake_new(const struct vnc_handshake_params *p,
    struct vnc_handshakes **out)
{
	struct vnc_handshakes *h;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	h->p = *p;
	h->listen_ev = event_new(p->base, p->listen_fd, EV_READ | EV_PERSIST,
	    vnc_handshake_listen_cb, h);
	if (h->listen_ev == NULL || event_add(h->listen_ev, NULL) < 0) {
		vnc_handshake_free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void
vnc_handshake_free(struct vnc_handshakes *h)
{
	if (h == NULL)
		return;
	while (h->greetings != NULL)
		vnc_greeting_free(h->greetings);
	if (h->listen_ev != NULL)
		event_free(h->listen_ev);
	free(h);
}

unsigned int
vnc_handshake_count(const struct vnc_handshakes *h)
{
	return h != NULL ? h->count : 0;
}
