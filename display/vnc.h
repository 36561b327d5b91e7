/*
 * An RFB (VNC) server for one framebuffer, on libvncserver, driven by
 * the caller's libevent loop: the listening sockets and every client
 * socket are events of that loop; libvncserver runs no thread and no
 * select loop of its own.
 *
 * Refresh rule: while no viewer is connected there is no refresh timer,
 * no call to host->dirty and no wake-up.  The first viewer (a client
 * that got through the handshake and authentication) starts the
 * refresh, the last one to leave stops it.  Two ways to learn of
 * changes, chosen by the host:
 *
 *  - VNC_REFRESH_POLL: a timer asks host->dirty for the pages changed
 *    since the last call, fast (refresh_fast_ms) while the screen
 *    changes and slower (refresh_slow_ms) after idle_refreshes quiet
 *    refreshes; any change makes it fast again.
 *  - VNC_REFRESH_EVENT: the host has an event source (a write-protect
 *    tracker) and calls vnc_damage() on the first write after a
 *    refresh; only then is a one-shot timer armed (refresh_fast_ms
 *    later, to gather the rest of the frame).  A static screen with a
 *    viewer costs no wake-up at all.
 *
 * While viewers are connected the server keeps a copy of what they
 * were sent (stride * height bytes, freed with the last viewer) and
 * sends only the tiles of the written pages that differ from it
 * (dirty.h, dirty_rects_changed()).
 *
 * No peer blocks the loop: a connection's handshake (WebSocket
 * upgrade, RFB version, security, authentication) and the web server's
 * files go in non-blocking steps on the loop's events, each connection
 * not yet a viewer has a deadline, and there are at most so many of
 * them (handshake_timeout_ms, max_handshakes).
 *
 * Threads: everything, callbacks included, runs on the thread of the
 * event base.  The process must ignore SIGPIPE (libvncserver writes with
 * write(2)); this module does not change signal dispositions.
 * libvncserver logs through process-wide hooks: vnc_new() turns its
 * logging off.
 */
#ifndef VMMD_VNC_H
#define VMMD_VNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct vnc;

enum vnc_refresh_mode {
	VNC_REFRESH_POLL,
	VNC_REFRESH_EVENT,
};

struct vnc_framebuffer {
	void *pixels;		/* x8r8g8b8, little-endian 32-bit pixels */
	uint32_t width;
	uint32_t height;
	uint32_t stride;	/* bytes, >= 4 * width */
};

struct vnc_config {
	const char *address;	/* IPv4 or IPv6 literal; NULL: 127.0.0.1 */
	int port;		/* 0: the first free one from 5900 to 5999 */
	/*
	 * NULL or "": no authentication.  Otherwise VNC authentication;
	 * only the first 8 characters count (the protocol's DES key).
	 * Copied; never logged.
	 */
	const char *password;
	/*
	 * A directory for the display's web server (noVNC's files,
	 * /usr/share/novnc; see vnc-http.h), or NULL for no HTTP server.
	 */
	const char *web_dir;
	int http_port;		/* 0: the first free one from 5800 to 5899 */
	struct vnc_framebuffer fb;
	enum vnc_refresh_mode mode;
	unsigned int refresh_fast_ms;	/* 0: 33 */
	unsigned int refresh_slow_ms;	/* 0: 500 */
	unsigned int idle_refreshes;	/* 0: 15 */
	/*
	 * A client that cannot take an update it asked for (its socket's
	 * queue stays full) is cut off after this long.  Also bounds the
	 * time libvncserver may wait for the rest of a partly received
	 * message.  0: 2000.
	 */
	unsigned int client_timeout_ms;
	/*
	 * A connection that has not become a viewer (got through the
	 * handshake and authentication) this long after it was accepted
	 * is closed.  Viewers ask for the password while the handshake
	 * waits, so a person's typing must fit.  0: 30000.
	 */
	unsigned int handshake_timeout_ms;
	/*
	 * An HTTP connection whose request has not arrived whole this long
	 * after it was accepted, or whose response made no progress for
	 * this long, is closed.  0: 10000.
	 */
	unsigned int http_timeout_ms;
	/*
	 * At most this many connections in their handshake on the RFB
	 * port (further ones are closed as soon as accepted), and as many
	 * being served on the HTTP port (further ones wait in its
	 * backlog).  0: 8.
	 */
	unsigned int max_handshakes;
};

/* Callbacks to the owner; opaque is passed back to each. */
struct vnc_host {
	/* X11 keysym pressed or released (RFB KeyEvent). */
	void (*key)(void *opaque, uint32_t keysym, bool down);
	/* Absolute position in framebuffer pixels, always on the screen
	 * (a viewer's position past an edge is clamped to it); buttons:
	 * bit 0 left, 1 middle, 2 right, 3/4 wheel up/down (RFB
	 * PointerEvent). */
	void (*pointer)(void *opaque, int x, int y, unsigned int buttons);
	/* A viewer came or went; clients is the new count. May be NULL. */
	void (*clients_changed)(void *opaque, unsigned int clients,
	    bool connected);
	/*
	 * Set in bitmap (dirty_bitmap_words() 64-bit words, zeroed by
	 * the caller; see dirty.h) the pages written since the last call,
	 * and forget them.  0 or -errno (the refresh then sends nothing).
	 * Called only while a viewer is connected; the first call after
	 * the first viewer arrives only resynchronises (its result is
	 * dropped: a new viewer gets the whole screen anyway).
	 */
	int (*dirty)(void *opaque, uint64_t *bitmap);
	/*
	 * Optional (NULL: the framebuffer never changes).  The framebuffer
	 * to show now, into fb (which holds the one shown): asked when the
	 * first viewer arrives and at each refresh, before dirty().  A
	 * change of any member (one vnc_new() would take) resizes the
	 * screen, viewers that can are told its new size (the DesktopSize
	 * pseudo-encoding) and get all of it; dirty() fills bitmaps for
	 * the new one from then on.  A change the guest makes without
	 * writing to the framebuffer waits for a refresh (in
	 * VNC_REFRESH_EVENT mode, for the next write).
	 */
	void (*framebuffer)(void *opaque, struct vnc_framebuffer *fb);
	void *opaque;
};

struct vnc_stats {
	unsigned int clients;		/* viewers now */
	uint64_t connections;		/* sockets accepted */
	uint64_t refreshes;		/* refresh timer runs */
	uint64_t wakeups;		/* loop callbacks run for the display */
	uint64_t bytes_sent;		/* to clients, gone ones included */
	uint64_t tiles_sent;		/* changed tiles (dirty.h) marked for sending */
	uint64_t updates_sent;		/* FramebufferUpdate messages */
	uint64_t clients_cut_off;	/* stalled clients disconnected */
	unsigned int handshakes;	/* connections in their handshake now */
	uint64_t handshakes_timed_out;	/* closed at handshake_timeout_ms */
	uint64_t handshakes_refused;	/* closed at accept: max_handshakes */
	uint64_t http_timed_out;	/* HTTP connections closed at theirs */
	uint64_t resizes;		/* framebuffer changes followed */
	bool refresh_armed;		/* the refresh timer is pending */
	bool refresh_exists;		/* the refresh timer is allocated */
};

/*
 * Listen and serve.  0, or -errno with a message in err: -EINVAL (bad
 * config), -EADDRINUSE (no free port), others from socket calls.
 */
int vnc_new(struct event_base *base, const struct vnc_config *cfg,
    const struct vnc_host *host, struct vnc **out, char *err,
    size_t errlen);

/* Disconnects every client and closes every socket.  NULL is fine. */
void vnc_free(struct vnc *vnc);

/* The RFB (and WebSocket) port, and the HTTP port or 0. */
int vnc_port(const struct vnc *vnc);
int vnc_http_port(const struct vnc *vnc);

/*
 * The event source saw the framebuffer change (VNC_REFRESH_EVENT).
 * Arms the one-shot refresh unless it is armed or nobody watches.
 */
void vnc_damage(struct vnc *vnc);
/*
 * Change how changes are learnt while running (a host that finds the
 * screen changing all the time may switch to polling, and back).
 */
void vnc_set_mode(struct vnc *vnc, enum vnc_refresh_mode mode);

void vnc_stats(const struct vnc *vnc, struct vnc_stats *stats);

/*
 * The framebuffer shown now: the one dirty()'s bitmaps are for (it
 * changes only when the server follows host->framebuffer()).
 */
void vnc_get_framebuffer(const struct vnc *vnc, struct vnc_framebuffer *fb);

#endif
