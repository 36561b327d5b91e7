/*
 * A VNC viewer for the tests (libvncclient, 32-bit x8r8g8b8 pixels, no
 * threads): connect (with the password vm.display shows), pump the
 * server's messages with a deadline, and count what arrives.  Used by
 * the kvm display test and the linux suite's display scenario.
 */
#ifndef HVIEWER_H
#define HVIEWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rfb/rfbclient.h>

struct viewer {
	rfbClient *client;
	const char *password;
	unsigned int updates;		/* complete framebuffer updates */
	uint64_t area;			/* pixels in the rectangles received */
	int bottom;			/* the lowest line they reached */
};

/* Connects to 127.0.0.1:port; false (and v->client NULL) when refused. */
bool	 viewer_open(struct viewer *v, int port, const char *password);
struct h_conn;
/*
 * vm.display of VM name: its port (or -1), and in pw (len bytes) the
 * password viewers must give, "" when the display has none.
 */
int	 viewer_display(struct h_conn *c, const char *name, char *pw,
	    size_t len);
/* viewer_open() on VM name's port, with its password. */
bool	 viewer_open_vm(struct viewer *v, struct h_conn *c, const char *name);
void	 viewer_close(struct viewer *v);
/* Handle what the server sends for ms; false if the connection died. */
bool	 viewer_pump(struct viewer *v, int ms);
/* Pump until at least want complete updates arrived (or ms passed). */
bool	 viewer_wait_updates(struct viewer *v, unsigned int want, int ms);
/*
 * Pumps until the rectangles received cover at least area pixels in
 * all: a whole first screen comes in several updates where the server's
 * socket buffer is small (an unprivileged worker cannot force it up).
 */
bool	 viewer_wait_area(struct viewer *v, uint64_t area, int ms);
/* The pixel at x, y, 0xrrggbb. */
uint32_t viewer_pixel(const struct viewer *v, int x, int y);
/* Sends text as key presses (Shift where a US keyboard needs it). */
void	 viewer_type(struct viewer *v, const char *text);

#endif
