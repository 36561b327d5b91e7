/*
 * A VNC viewer on libvncclient, the part every user of one shares: the
 * tests (tests/kvm/hviewer.h, the unit test of the VNC server) and the
 * display benchmark (bench/vnc-watch.c).  Connect, with a password when
 * the display has one; handle what the server sends; count complete
 * updates, rectangles and their area.  No threads of its own: a caller
 * that reads the framebuffer from another thread gives a lock.
 *
 * libvncclient has one log for the whole process: its messages become
 * TAP comments ("# libvncclient: ..."), or nothing after vview_quiet().
 */
#ifndef VMMD_VNC_VIEWER_H
#define VMMD_VNC_VIEWER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rfb/rfbclient.h>

struct vview_opts {
	const char *host;	/* NULL: 127.0.0.1 */
	int port;
	const char *password;	/* NULL: the display asks for none */
	/*
	 * NULL: "zrle raw" when exact, else libvncclient's own list
	 * (tight first).
	 */
	const char *encodings;
	/*
	 * Pixels exactly as the server holds them, x8r8g8b8 (0xrrggbb in
	 * each 32-bit word) and never JPEG: what a test comparing pixels
	 * needs.  False: libvncclient's own defaults, as a stock viewer.
	 */
	bool exact;
	/*
	 * Set: held while a server message is handled (the framebuffer
	 * and client change, on_rect runs) and while client is set or
	 * cleared.
	 */
	pthread_mutex_t *lock;
	/* Set: called for every rectangle received. */
	void (*on_rect)(void *arg, int x, int y, int w, int h);
	void *arg;
};

struct vview {
	rfbClient *client;	/* NULL unless connected */
	atomic_uint updates;	/* complete framebuffer updates */
	uint64_t rects;		/* rectangles received */
	uint64_t area;		/* their pixels */
	int bottom;		/* the lowest line they reached */
	struct vview_opts opts;	/* password: only while connecting */
};

/* libvncclient's messages dropped from now on. */
void	 vview_quiet(void);
/*
 * Connects as o says (the RFB handshake, blocking): false, with
 * v->client NULL, when the server is not there or refuses.
 */
bool	 vview_open(struct vview *v, const struct vview_opts *o);
/* Disconnects and frees the framebuffer; v->client NULL (again). */
void	 vview_close(struct vview *v);
/*
 * Waits up to us microseconds for the server and handles one message:
 * 1 handled, 0 nothing came, -1 the connection is over (errno EINTR
 * when a signal cut the wait short: nothing is lost then).
 */
int	 vview_step(struct vview *v, unsigned int us);
/* The pixel at x, y of an exact viewer, 0xrrggbb. */
uint32_t vview_pixel(const struct vview *v, int x, int y);

#endif
