/*
 * The kvm and linux suites' VNC viewer: a vview (tests/vnc-viewer.h)
 * with exact pixels on a display of the harness's daemon, found through
 * vm.display (port and password), pumped against the harness's clock,
 * typed into.  Used by the kvm display tests and the linux suite's
 * display scenario.
 */
#ifndef HVIEWER_H
#define HVIEWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vnc-viewer.h"

/* Connects to 127.0.0.1:port; false (and v->client NULL) when refused. */
bool	 viewer_open(struct vview *v, int port, const char *password);
struct h_conn;
/*
 * vm.display of VM name: its port (or -1), and in pw (len bytes) the
 * password viewers must give, "" when the display has none.
 */
int	 viewer_display(struct h_conn *c, const char *name, char *pw,
	    size_t len);
/* viewer_open() on VM name's port, with its password. */
bool	 viewer_open_vm(struct vview *v, struct h_conn *c, const char *name);
/* Handle what the server sends for ms; false if the connection died. */
bool	 viewer_pump(struct vview *v, int ms);
/* Pump until at least want complete updates arrived (or ms passed). */
bool	 viewer_wait_updates(struct vview *v, unsigned int want, int ms);
/*
 * Pumps until the rectangles received cover at least area pixels in
 * all: a whole first screen comes in several updates where the server's
 * socket buffer is small (an unprivileged worker cannot force it up).
 */
bool	 viewer_wait_area(struct vview *v, uint64_t area, int ms);
/* Sends text as key presses (Shift where a US keyboard needs it). */
void	 viewer_type(struct vview *v, const char *text);

#endif
