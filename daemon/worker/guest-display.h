/*
 * The guest's screen, as the worker owns it: the framebuffer memory the
 * machine maps (it outlives guest resets), the VNC server on the
 * worker's loop, how changes are found, and viewers' input.
 *
 * Changes are found by write-protecting the framebuffer with
 * userfaultfd (wp-track.h) while someone watches: the guest's first
 * write after a refresh wakes the loop, and a static screen costs
 * nothing even with a viewer.  A fault costs a wake-up and two system
 * calls per page, though, so while the screen keeps changing (many
 * pages at every refresh) the display switches to polling the dirty
 * log of the framebuffer's slot, one ioctl per refresh, and back to
 * write protection once the screen is still.  Where userfaultfd is not
 * allowed, it polls the log all the time.  With nobody watching,
 * nothing runs at all.
 *
 * What viewers see is a window of the framebuffer: all of it as the
 * definition sizes it for a guest whose kernel vmmd loads, and for a
 * PCI display (firmware's) the mode the guest set, asked at each
 * refresh (vnc.h's framebuffer()); until one is set, the definition's
 * size at its start.
 *
 * Everything runs on the loop's thread.
 */
#ifndef VMMD_DISPLAY_H
#define VMMD_DISPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <event2/event.h>
#include <json-c/json.h>

#include "figure.h"
#include "machine.h"
#include "vnc.h"

struct display_config {
	const char *listen;	/* NULL: 127.0.0.1 */
	int port;		/* 0: the first free one from 5900 */
	const char *password;	/* NULL: none */
	uint32_t width;
	uint32_t height;
	const char *web_dir;	/* noVNC's files, or NULL: no HTTP */
	int http_port;		/* 0: the first free one from 5800 */
	/*
	 * The framebuffer is a PCI display's memory (a bochs-display's,
	 * for firmware): a power of two, at least DISPLAY_PCI_MIN bytes,
	 * showing the mode the guest sets in it.
	 */
	bool pci;
};

#define DISPLAY_PCI_MIN		(16u << 20)

/* Where viewers' input and questions go (guest.c, on the loop). */
struct display_host {
	/* Set 2 scancodes of one key press or release. */
	void (*key)(void *opaque, const uint8_t *set2, size_t len);
	/* Relative movement; buttons as i8042_mouse() takes them. */
	void (*mouse)(void *opaque, int dx, int dy, int dz,
	    unsigned int buttons);
	/* While polling: OR in the pages the guest wrote since the last. */
	int (*dirty_log)(void *opaque, uint64_t *bitmap, size_t words);
	/* Start or stop logging writes to the framebuffer (0 or -errno). */
	int (*set_dirty_log)(void *opaque, bool on);
	/* A viewer came (connected) or went; clients: how many now. */
	void (*clients_changed)(void *opaque, unsigned int clients,
	    bool connected);
	/*
	 * With display_config.pci: the mode the guest set now (-errno or
	 * !enabled: keep showing what was shown).
	 */
	int (*fb_mode)(void *opaque, struct machine_fb_mode *mode);
	void *opaque;
};

struct display;

/* 0, or -errno with a reason in err (-EINVAL: bad geometry). */
int	display_new(struct event_base *base, const struct display_config *cfg,
	    const struct display_host *host, struct display **out,
	    char *err, size_t errlen);
/* Closes every viewer first, then unmaps the framebuffer.  NULL is fine. */
void	display_free(struct display *d);

/*
 * Before the loop waits for vCPU threads (pausing, or tearing the
 * machine down): a vCPU blocked on a write-protect fault waits for the
 * loop, so the loop lifts the protection first.  display_resume() puts
 * it back (if someone watches) once vCPUs run again, with the whole
 * screen counted as changed, since writes went unseen meanwhile.
 */
void	display_quiesce(struct display *d);
void	display_resume(struct display *d);

/* What the machine maps (with dirty_log when writes must be logged). */
void	display_machine_fb(const struct display *d, struct machine_fb *fb);

/* vm.display's answer. */
struct json_object *display_info_json(struct display *d);
/* vm.info's counters. */
struct json_object *display_stats_json(const struct display *d);
/*
 * The viewers' figures (display_vnc_figures, of a struct vnc_stats) and
 * the display's own (display_figures, of the struct display), as
 * display_stats_json() shows them.
 */
extern const struct figure_table display_vnc_figures;
extern const struct figure_table display_figures;
void display_get_vnc_stats(const struct display *d, struct vnc_stats *st);

/*
 * vm.screenshot: take over the client connection fd, write the reply
 * for reply_id ({"format", "size", "width", "height"}) and then the PNG,
 * and close it.  Takes fd.  0 or -errno (fd closed all the same).
 */
int	display_screenshot(struct display *d, int fd,
	    struct json_object *reply_id);

#endif
