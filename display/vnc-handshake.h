/*
 * The display's connections from accept until they are viewers: the
 * WebSocket detection and upgrade (with its Host and Origin checks),
 * then RFB's protocol version, security, authentication and
 * ClientInit, all on the caller's event loop, none of it ever waiting
 * for a peer (vnc.c's top says why and how).  libvncserver's client is
 * made (rfbNewClient(), so the screen's newClientHook runs) when the
 * RFB part begins, and given the peer's socket once ClientInit is
 * processed: p.viewer then takes it.  A connection beyond max at once,
 * on a descriptor libvncserver cannot select() on, or still in its
 * handshake timeout_ms after it was accepted, is closed.
 *
 * vnc.c creates one for its listening socket and calls nothing else of
 * it but its count; it calls vnc.c only through p.viewer (and
 * libvncserver's hooks).  Everything runs on the thread of the base.
 */
#ifndef VMMD_VNC_HANDSHAKE_H
#define VMMD_VNC_HANDSHAKE_H

#include <event2/event.h>
#include <rfb/rfb.h>

#include "vnc.h"

struct vnc_handshakes;

struct vnc_handshake_params {
	struct event_base *base;
	rfbScreenInfoPtr screen;	/* whose clients they become */
	int listen_fd;			/* the RFB port's; not taken */
	const char *address;		/* listened on; borrowed */
	int port;			/* the RFB port, as Host says it */
	int http_port;			/* the web client's; 0: none */
	unsigned int timeout_ms;	/* a handshake's deadline */
	unsigned int max;		/* handshakes at once */
	/* The display's counters: connections, wakeups, handshakes_*. */
	struct vnc_stats *stats;
	/* cl's handshake is over: cl->sock is the peer's socket now. */
	void (*viewer)(rfbClientPtr cl);
};

/* Accept connections on p->listen_fd from now on: 0 or -ENOMEM. */
int vnc_handshake_new(const struct vnc_handshake_params *p,
    struct vnc_handshakes **out);
/* Close every connection still in its handshake.  NULL is fine. */
void vnc_handshake_free(struct vnc_handshakes *h);
/* Connections in their handshake now. */
unsigned int vnc_handshake_count(const struct vnc_handshakes *h);

#endif
