/* See display.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/queue.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "dirty.h"
#include "guest-display.h"
#include "figures-json.h"
#include "json-u64.h"
#include "keymap.h"
#include "log.h"
#include "pc-layout.h"
#include "proto.h"
#include "module-load.h"
#include "vnc-module.h"
#include "wp-track.h"

/*
 * Streaming starts after DISPLAY_STREAM_REFRESHES refreshes in a row
 * each found at least DISPLAY_STREAM_PAGES pages faulted, and stops
 * after DISPLAY_STILL_POLLS polls in a row found nothing written.
 */
#define DISPLAY_STREAM_PAGES		8
#define DISPLAY_STREAM_REFRESHES	3
#define DISPLAY_STILL_POLLS		15

/* A screenshot on its way to a client that asked for it. */
struct display_send {
	TAILQ_ENTRY(display_send) entry;
	struct display *d;
	struct bufferevent *bev;
};

TAILQ_HEAD(display_sends, display_send);

struct display {
	struct event_base *base;
	struct display_host host;
	const struct vnc_module *vm;	/* vnc.h's functions, loaded */
	struct vnc *vnc;
	char *listen;
	char *password;		/* viewers', or NULL; for vm.display/info */

	void *fb;
	uint64_t fb_size;
	uint32_t width, height, stride;	/* the definition's */
	bool pci;			/* a PCI display's memory */
	/*
	 * The picture: mode_offset into fb, with this geometry; the
	 * guest's last good mode (or the definition's size at 0).  The
	 * VNC server shows it from its next refresh (vnc.h).
	 */
	uint64_t mode_offset;
	uint32_t mode_width, mode_height, mode_stride;
	uint64_t *fb_bits;		/* pages of all of fb written */
	size_t fb_words;

	struct wp_track *wp;		/* NULL: the machine logs writes */
	struct event *wp_ev;		/* pending while armed */
	bool armed;			/* pages are write-protected */
	bool quiesced;			/* display_quiesce() until resumed */
	bool all_dirty;			/* writes went unseen: send it all */
	bool tracking_lost;		/* the tracker failed: always all */
	/*
	 * Streaming: polling the dirty log while the screen keeps
	 * changing (see display.h), with the counts that decide it.
	 */
	bool streaming;
	unsigned int faults;		/* pages faulted since the refresh */
	unsigned int busy_refreshes;	/* in a row with many faults */
	unsigned int quiet_polls;	/* in a row with nothing written */
	uint64_t switches;		/* to streaming and back */
	unsigned int viewers;
	const char *tracking;		/* "write-protect" or "dirty-log" */

	/* The viewers' pointer, to turn absolute moves into relative. */
	int last_x, last_y;
	unsigned int last_buttons;

	struct display_sends sends;
	uint64_t keys_unknown;		/* keysyms with no key */
	uint64_t screenshots;
};

/* --- from the VNC server ----------------------------------------------- */

static void
display_key(void *opaque, uint32_t keysym, bool down)
{
	struct display *d = opaque;
	uint8_t set2[KEYMAP_MAX_BYTES];
	int n;

	n = keymap_scancodes(keysym, down, set2);
	if (n < 0) {
		d->keys_unknown++;
		return;
	}
	if (n > 0)
		d->host.key(d->host.opaque, set2, (size_t)n);
}

/*
 * RFB buttons: bit 0 left, 1 middle, 2 right, 3 and 4 the wheel (a
 * press per click).  PS/2: bit 0 left, 1 right, 2 middle.  A PS/2 mouse
 * reports movement, so absolute positions become differences; a
 * guest's pointer may then lag the viewer's, as with any PS/2 mouse.
 */
static void
display_pointer(void *opaque, int x, int y, unsigned int buttons)
{
	struct display *d = opaque;
	unsigned int ps2, pressed = buttons & ~d->last_buttons;
	int dz = 0;

	ps2 = (buttons & 1) | (buttons & 2) << 1 | (buttons & 4) >> 1;
	if (pressed & 8)
		dz--;
	if (pressed & 16)
		dz++;
	if (x != d->last_x || y != d->last_y || dz != 0 ||
	    (buttons & 7) != (d->last_buttons & 7))
		d->host.mouse(d->host.opaque, x - d->last_x, y - d->last_y,
		    dz, ps2);
	d->last_x = x;
	d->last_y = y;
	d->last_buttons = buttons;
}

static void
display_arm(struct display *d)
{
	int ret;

	if (d->wp == NULL || d->armed)
		return;
	if ((ret = wp_track_arm(d->wp)) < 0) {
		log_warn("display: cannot write-protect the framebuffer: %s",
		    strerror(-ret));
		return;
	}
	event_add(d->wp_ev, NULL);
	d->armed = true;
}

/* Lifting the protection also lets a vCPU waiting on a fault go on. */
static void
display_disarm(struct display *d)
{
	int ret;

	if (d->wp == NULL || !d->armed)
		return;
	event_del(d->wp_ev);
	d->armed = false;
	if ((ret = wp_track_disarm(d->wp)) < 0) {
		/*
		 * A writer may still wait on a page: unregistering the
		 * whole region lets every one go, for good.
		 */
		log_warn("display: cannot lift the framebuffer's protection "
		    "(%s): changes are no longer tracked", strerror(-ret));
		event_free(d->wp_ev);
		d->wp_ev = NULL;
		wp_track_free(d->wp);
		d->wp = NULL;
		d->tracking = "none";
		d->tracking_lost = true;
	}
}

static void
display_clients_changed(void *opaque, unsigned int clients, bool connected)
{
	struct display *d = opaque;

	/* Write protection only while someone looks at what changes. */
	d->viewers = clients;
	if (clients == 0 && d->streaming) {
		/* Nobody to send to: back to costing nothing. */
		(void)d->host.set_dirty_log(d->host.opaque, false);
		d->streaming = false;
		d->busy_refreshes = 0;
		d->vm->vnc_set_mode(d->vnc, VNC_REFRESH_EVENT);
	}
	if (clients > 0 && !d->quiesced && !d->streaming)
		display_arm(d);
	else if (clients == 0)
		display_disarm(d);
	d->host.clients_changed(d->host.opaque, clients, connected);
}

void
display_quiesce(struct display *d)
{
	if (d == NULL)
		return;
	d->quiesced = true;
	display_disarm(d);
	/* Writes after the last refresh may go unseen (a reset takes the
	 * dirty log with the old machine): send it all next time. */
	if (d->viewers > 0)
		d->all_dirty = true;
}

void
display_resume(struct display *d)
{
	if (d == NULL || !d->quiesced)
		return;
	d->quiesced = false;
	if (d->viewers > 0) {
		if (!d->streaming)
			display_arm(d);
		d->vm->vnc_damage(d->vnc);
	}
}

/*
 * Switch between write protection and polling the dirty log.  The dirty
 * log is a flag of the framebuffer's memory slot, and changing a slot
 * waits for every vCPU to leave KVM's SRCU read side; a vCPU stopped on
 * a write-protect fault stays inside it until this thread (the loop)
 * resolves the fault, so changing the flag while pages are protected
 * can deadlock the worker.  The protection therefore goes before the
 * flag changes and comes back after: what the guest wrote in between
 * is seen by neither, so the refresh this is called from sends the
 * whole screen.  bitmap is that refresh's, for what the switch itself
 * collects.
 */
static void
display_stream(struct display *d, bool on, uint64_t *bitmap, size_t words)
{
	if (on) {
		if (d->armed)
			(void)wp_track_collect(d->wp, bitmap);
		display_disarm(d);
		if (d->host.set_dirty_log(d->host.opaque, true) < 0) {
			d->busy_refreshes = 0;	/* not now: try later */
			if (d->viewers > 0 && !d->quiesced)
				display_arm(d);
			d->all_dirty = true;
			return;
		}
		d->streaming = true;
		d->quiet_polls = 0;
		d->vm->vnc_set_mode(d->vnc, VNC_REFRESH_POLL);
	} else {
		(void)d->host.dirty_log(d->host.opaque, bitmap, words);
		(void)d->host.set_dirty_log(d->host.opaque, false);
		d->streaming = false;
		d->busy_refreshes = 0;
		if (d->viewers > 0 && !d->quiesced)
			display_arm(d);
		d->vm->vnc_set_mode(d->vnc, VNC_REFRESH_EVENT);
	}
	d->all_dirty = true;
	d->switches++;
}

/* The pages of all of the framebuffer written, into bitmap (words). */
static int
display_collect(struct display *d, uint64_t *bitmap)
{
	size_t words = d->fb_words, i;
	bool any;
	int ret = 0;

	if (d->wp != NULL && !d->streaming) {
		if (d->armed && (ret = wp_track_collect(d->wp, bitmap)) < 0) {
			/* As for a failed fault: start over, send it all. */
			display_disarm(d);
			display_arm(d);
			d->all_dirty = true;
		}
		d->busy_refreshes = d->faults >= DISPLAY_STREAM_PAGES ?
		    d->busy_refreshes + 1 : 0;
		d->faults = 0;
		if (d->busy_refreshes >= DISPLAY_STREAM_REFRESHES)
			display_stream(d, true, bitmap, words);
	} else if (d->tracking_lost) {
		d->all_dirty = true;
	} else {
		ret = d->host.dirty_log(d->host.opaque, bitmap, words);
		for (i = 0, any = false; i < words && !any; i++)
			any = bitmap[i] != 0;
		d->quiet_polls = any ? 0 : d->quiet_polls + 1;
		if (d->streaming && d->quiet_polls >= DISPLAY_STILL_POLLS)
			display_stream(d, false, bitmap, words);
	}
	if (d->all_dirty) {
		for (i = 0; i < words; i++)
			bitmap[i] = ~0ULL;
		d->all_dirty = d->tracking_lost;
		ret = 0;
	}
	return ret;
}

static bool
display_page_dirty(const struct display *d, uint64_t page)
{
	return page / 64 < d->fb_words &&
	    (d->fb_bits[page / 64] >> (page % 64) & 1) != 0;
}

/*
 * What the VNC server asks: the pages of the window it shows (its own
 * idea of it: the bitmap is sized for that), page 0 holding its first
 * byte (dirty.h).  A window that starts inside a page takes each of its
 * pages as dirty when either framebuffer page it covers is.
 */
static int
display_dirty(void *opaque, uint64_t *bitmap)
{
	struct display *d = opaque;
	struct vnc_framebuffer fb;
	uint64_t off, first, pages;
	bool straddles;
	int ret;

	d->vm->vnc_get_framebuffer(d->vnc, &fb);
	off = (uint64_t)((uint8_t *)fb.pixels - (uint8_t *)d->fb);
	first = off / 4096;
	straddles = off % 4096 != 0;
	memset(d->fb_bits, 0, d->fb_words * sizeof(uint64_t));
	ret = display_collect(d, d->fb_bits);
	pages = ((uint64_t)(fb.height - 1) * fb.stride + fb.width * 4ULL +
	    4095) / 4096;
	for (uint64_t i = 0; i < pages; i++)
		if (display_page_dirty(d, first + i) ||
		    (straddles && display_page_dirty(d, first + i + 1)))
			bitmap[i / 64] |= 1ULL << (i % 64);
	return ret;
}

/*
 * The picture now: for a PCI display, the guest's mode when it set one
 * that lies inside the framebuffer (its device checked that too; this
 * is the worker's own reading of guest memory), else the last one.
 */
static void
display_picture(struct display *d, struct vnc_framebuffer *fb)
{
	struct machine_fb_mode m;

	if (d->pci && d->host.fb_mode != NULL &&
	    d->host.fb_mode(d->host.opaque, &m) == 0 && m.enabled &&
	    m.width > 0 && m.height > 0 && m.width <= 16384 &&
	    m.height <= 16384 && m.stride >= m.width * 4ULL &&
	    m.offset < d->fb_size && (uint64_t)(m.height - 1) * m.stride +
	    m.width * 4ULL <= d->fb_size - m.offset) {
		d->mode_offset = m.offset;
		d->mode_width = m.width;
		d->mode_height = m.height;
		d->mode_stride = m.stride;
	}
	*fb = (struct vnc_framebuffer){
		(uint8_t *)d->fb + d->mode_offset, d->mode_width,
		d->mode_height, d->mode_stride,
	};
}

/* The VNC server's question (vnc.h): the picture. */
static void
display_framebuffer(void *opaque, struct vnc_framebuffer *fb)
{
	display_picture(opaque, fb);
}

/* The guest wrote to a protected page: a vCPU waits for this. */
static void
display_wp_cb(evutil_socket_t fd, short what, void *arg)
{
	struct display *d = arg;
	bool first;
	int ret;

	ret = wp_track_handle(d->wp, &first);
	if (ret > 0)
		d->faults += (unsigned int)ret;
	if (ret < 0) {
		/*
		 * A fault read but not resolved would keep its writer
		 * waiting: start over, which wakes every writer, and send
		 * the whole screen.
		 */
		log_warn("display: write-protect fault: %s", strerror(-ret));
		display_disarm(d);
		display_arm(d);
		d->all_dirty = true;
	}
	if (ret != 0)
		d->vm->vnc_damage(d->vnc);
}

/* --- life -------------------------------------------------------------- */

static int
display_alloc_fb(struct display *d, const struct display_config *cfg,
    char *err, size_t errlen)
{
	uint64_t size;

	if (cfg->width < 1 || cfg->height < 1 || cfg->width > 16384 ||
	    cfg->height > 16384) {
		snprintf(err, errlen, "display of %ux%u pixels", cfg->width,
		    cfg->height);
		return -EINVAL;
	}
	d->width = d->mode_width = cfg->width;
	d->height = d->mode_height = cfg->height;
	d->stride = d->mode_stride = cfg->width * 4;
	size = ((uint64_t)d->stride * d->height + 4095) & ~4095ULL;
	/* A PCI BAR's: a power of two, and room for modes (guest-display.h). */
	d->pci = cfg->pci;
	if (d->pci) {
		uint64_t pow2 = DISPLAY_PCI_MIN;

		while (pow2 < size)
			pow2 *= 2;
		size = pow2;
	}
	if (size > PC_FRAMEBUFFER_MAX) {
		snprintf(err, errlen, "display of %ux%u pixels needs more "
		    "than %llu MiB", cfg->width, cfg->height,
		    PC_FRAMEBUFFER_MAX >> 20);
		return -EINVAL;
	}
	d->fb = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d->fb == MAP_FAILED) {
		d->fb = NULL;
		snprintf(err, errlen, "cannot allocate the framebuffer: %s",
		    strerror(errno));
		return -ENOMEM;
	}
	d->fb_size = size;
	d->fb_words = (size / 4096 + 63) / 64;
	d->fb_bits = calloc(d->fb_words, sizeof(uint64_t));
	if (d->fb_bits == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* What the guest drew is its data: out of core files like its RAM. */
	(void)madvise(d->fb, size, MADV_DONTDUMP);
	return 0;
}

/* The VNC server, from the module beside this program (vnc-module.h). */
static int
display_load_vnc(struct display *d, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	int rc;

	if ((rc = module_dir_self(dir, sizeof(dir))) < 0) {
		snprintf(err, errlen, "cannot find the VNC module: "
		    "/proc/self/exe: %s", strerror(-rc));
		return rc;
	}
	return vnc_module_load(dir, &d->vm, err, errlen);
}

int
display_new(struct event_base *base, const struct display_config *cfg,
    const struct display_host *host, struct display **out, char *err,
    size_t errlen)
{
	struct vnc_host vh = {
		.key = display_key,
		.pointer = display_pointer,
		.clients_changed = display_clients_changed,
		.dirty = display_dirty,
		.framebuffer = display_framebuffer,
	};
	struct vnc_config vc;
	struct display *d;
	int ret;

	d = calloc(1, sizeof(*d));
	if (d == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	d->base = base;
	d->host = *host;
	TAILQ_INIT(&d->sends);
	d->listen = strdup(cfg->listen != NULL ? cfg->listen : "127.0.0.1");
	if (cfg->password != NULL && cfg->password[0] != '\0')
		d->password = strdup(cfg->password);
	if (d->listen == NULL || (cfg->password != NULL &&
	    cfg->password[0] != '\0' && d->password == NULL)) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	if ((ret = display_load_vnc(d, err, errlen)) < 0 ||
	    (ret = display_alloc_fb(d, cfg, err, errlen)) < 0)
		goto fail;

	ret = wp_track_new(d->fb, d->fb_size, &d->wp);
	if (ret == 0) {
		d->wp_ev = event_new(base, wp_track_fd(d->wp),
		    EV_READ | EV_PERSIST, display_wp_cb, d);
		if (d->wp_ev == NULL) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
			goto fail;
		}
		d->tracking = "write-protect";
	} else {
		log_info("display: no userfaultfd write protection (%s): "
		    "polling the dirty log while watched", strerror(-ret));
		d->wp = NULL;
		d->tracking = "dirty-log";
	}

	vh.opaque = d;
	vc = (struct vnc_config){
		.address = d->listen,
		.port = cfg->port,
		.password = cfg->password,
		.web_dir = cfg->web_dir,
		.http_port = cfg->http_port,
		.fb = { d->fb, d->width, d->height, d->stride },
		.mode = d->wp != NULL ? VNC_REFRESH_EVENT : VNC_REFRESH_POLL,
	};
	ret = d->vm->vnc_new(base, &vc, &vh, &d->vnc, err, errlen);
	if (ret < 0)
		goto fail;
	*out = d;
	return 0;

fail:
	display_free(d);
	return ret;
}

static void
display_send_free(struct display_send *s)
{
	TAILQ_REMOVE(&s->d->sends, s, entry);
	bufferevent_free(s->bev);
	free(s);
}

void
display_free(struct display *d)
{
	if (d == NULL)
		return;
	while (!TAILQ_EMPTY(&d->sends))
		display_send_free(TAILQ_FIRST(&d->sends));
	if (d->vm != NULL)
		d->vm->vnc_free(d->vnc);
	if (d->wp_ev != NULL)
		event_free(d->wp_ev);
	wp_track_free(d->wp);
	if (d->fb != NULL)
		munmap(d->fb, d->fb_size);
	free(d->fb_bits);
	free(d->listen);
	if (d->password != NULL) {
		explicit_bzero(d->password, strlen(d->password));
		free(d->password);
	}
	free(d);
}

void
display_machine_fb(const struct display *d, struct machine_fb *fb)
{
	*fb = (struct machine_fb){
		.hva = d->fb,
		.size = d->fb_size,
		.width = d->width,
		.height = d->height,
		.stride = d->stride,
		.dirty_log = d->wp == NULL || d->streaming,
	};
}

/* --- vm.display and vm.info -------------------------------------------- */

/* "127.0.0.1" or "[::1]", for URLs. */
static void
display_host_part(const struct display *d, char *buf, size_t len)
{
	if (strchr(d->listen, ':') != NULL)
		snprintf(buf, len, "[%s]", d->listen);
	else
		snprintf(buf, len, "%s", d->listen);
}

/* The password for a URL's fragment: %-encoded but for unreserved. */
static void
display_url_password(const char *pw, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *pw != '\0' && o + 4 <= len; pw++) {
		unsigned char ch = (unsigned char)*pw;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL) {
			buf[o++] = (char)ch;
		} else {
			buf[o++] = '%';
			buf[o++] = hex[ch >> 4];
			buf[o++] = hex[ch & 15];
		}
	}
	buf[o] = '\0';
}

/*
 * The password goes to whoever may use the control socket (vm.display,
 * vm.info): they may control the VM anyway.  In noVNC's URL it is in
 * the fragment, which the browser keeps to itself.
 */
struct json_object *
display_info_json(struct display *d)
{
	struct json_object *o = json_object_new_object();
	struct vnc_framebuffer fb;
	struct vnc_stats st;
	char host[80], url[320], pw[8 * 3 + 1] = "";
	int port = d->vm->vnc_port(d->vnc);
	int http = d->vm->vnc_http_port(d->vnc);

	d->vm->vnc_stats(d->vnc, &st);
	display_host_part(d, host, sizeof(host));
	snprintf(url, sizeof(url), "vnc://%s:%d", host, port);
	json_object_object_add(o, "vnc", json_object_new_string(url));
	json_object_object_add(o, "address",
	    json_object_new_string(d->listen));
	json_object_object_add(o, "port", json_object_new_int(port));
	snprintf(url, sizeof(url), "ws://%s:%d/", host, port);
	json_object_object_add(o, "websocket", json_object_new_string(url));
	if (http > 0) {
		if (d->password != NULL)
			display_url_password(d->password, pw, sizeof(pw));
		snprintf(url, sizeof(url), "http://%s:%d/vnc.html?host=%s&"
		    "port=%d&autoconnect=1%s%s", host, http, d->listen, port,
		    pw[0] != '\0' ? "#password=" : "", pw);
		explicit_bzero(pw, sizeof(pw));
		json_object_object_add(o, "http",
		    json_object_new_string(url));
	} else {
		json_object_object_add(o, "http", NULL);
	}
	/* The mode the guest shows, as a viewer gets it. */
	display_picture(d, &fb);
	json_object_object_add(o, "width", json_object_new_int64(fb.width));
	json_object_object_add(o, "height", json_object_new_int64(fb.height));
	json_object_object_add(o, "clients",
	    json_object_new_int64(st.clients));
	json_object_object_add(o, "password", d->password != NULL ?
	    json_object_new_string(d->password) : NULL);
	json_object_object_add(o, "dirty_tracking",
	    json_object_new_string(d->tracking));
	return o;
}

#define VNC_FIGURE(key, metric, kind, unit, help, member)		\
	{ key, metric, kind, unit, help, FIGURE_AT(struct vnc_stats, member) }

static const struct figure vnc_figure_rows[] = {
	VNC_FIGURE("clients", "vmmd_vnc_clients", FIGURE_GAUGE,
	    FIGURE_UNIT_NONE, "VNC viewers connected", clients),
	VNC_FIGURE("connections", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "VNC sockets accepted", connections),
	VNC_FIGURE("refreshes", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Display refresh timer runs", refreshes),
	VNC_FIGURE("loop_wakeups", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Event loop callbacks run for the display", wakeups),
	VNC_FIGURE("bytes_sent", NULL, FIGURE_COUNTER, FIGURE_UNIT_BYTES,
	    "Bytes sent to VNC viewers", bytes_sent),
	VNC_FIGURE("dirty_tiles", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Changed tiles marked for sending", tiles_sent),
	VNC_FIGURE("updates", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "FramebufferUpdate messages sent", updates_sent),
	VNC_FIGURE("resizes", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Screen size or place changes followed", resizes),
	VNC_FIGURE("clients_cut_off", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Stalled VNC viewers disconnected", clients_cut_off),
	VNC_FIGURE("handshakes", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "VNC connections in their handshake", handshakes),
	VNC_FIGURE("handshakes_timed_out", NULL, FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "VNC handshakes that timed out",
	    handshakes_timed_out),
	VNC_FIGURE("handshakes_refused", NULL, FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "VNC connections refused at accept",
	    handshakes_refused),
	VNC_FIGURE("http_timed_out", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "HTTP connections that timed out", http_timed_out),
};

const struct figure_table display_vnc_figures =
    FIGURE_TABLE(vnc_figure_rows);

#define DISPLAY_FIGURE(key, metric, kind, unit, help, member)		\
	{ key, metric, kind, unit, help, FIGURE_AT(struct display, member) }

static const struct figure display_figure_rows[] = {
	DISPLAY_FIGURE("streaming_switches", NULL, FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Switches to streaming and back", switches),
	DISPLAY_FIGURE("keys_unknown", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Keysyms with no key", keys_unknown),
	DISPLAY_FIGURE("screenshots", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Screenshots taken", screenshots),
};

const struct figure_table display_figures =
    FIGURE_TABLE(display_figure_rows);

void
display_get_vnc_stats(const struct display *d, struct vnc_stats *st)
{
	d->vm->vnc_stats(d->vnc, st);
}

struct json_object *
display_stats_json(const struct display *d)
{
	struct json_object *o = json_object_new_object();
	struct vnc_stats st;

	d->vm->vnc_stats(d->vnc, &st);
	figures_json_add(o, &display_vnc_figures, &st);
	json_object_object_add(o, "refresh_timer",
	    json_object_new_boolean(st.refresh_exists));
	json_object_object_add(o, "dirty_tracking",
	    json_object_new_string(d->tracking));
	/* vm.info's: its clients may see it (see display_info_json()). */
	json_object_object_add(o, "password", d->password != NULL ?
	    json_object_new_string(d->password) : NULL);
	json_object_object_add(o, "streaming",
	    json_object_new_boolean(d->streaming));
	figures_json_add(o, &display_figures, d);
	return o;
}

/* --- vm.screenshot ----------------------------------------------------- */

static void
display_send_written(struct bufferevent *bev, void *arg)
{
	display_send_free(arg);
}

static void
display_send_event(struct bufferevent *bev, short what, void *arg)
{
	display_send_free(arg);
}

/* The PNG into an anonymous file, so that its size is known first. */
static int
display_png(struct display *d, const struct vnc_framebuffer *fb, int *fdp,
    off_t *sizep)
{
	struct screenshot_image img = {
		fb->pixels, fb->width, fb->height, fb->stride,
	};
	off_t size = 0;
	int fd, ret;

	fd = memfd_create("vmmd-screenshot", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = d->vm->screenshot_write_fd(&img, fd);
	if (ret == 0 && (size = lseek(fd, 0, SEEK_CUR)) < 0)
		ret = -errno;
	if (ret < 0) {
		close(fd);
		return ret;
	}
	*fdp = fd;
	*sizep = size;
	return 0;
}

int
display_screenshot(struct display *d, int fd, struct json_object *reply_id)
{
	struct json_object *ret_obj, *reply;
	struct display_send *s;
	struct vnc_framebuffer fb;
	const struct timeval tv = { 30, 0 };
	char *line = NULL;
	size_t len;
	off_t size = 0;
	void *map;
	int png = -1, ret;

	/* What the guest shows now, viewers or not. */
	display_picture(d, &fb);
	if ((ret = display_png(d, &fb, &png, &size)) < 0)
		goto close_fd;
	s = calloc(1, sizeof(*s));
	if (s == NULL || evutil_make_socket_nonblocking(fd) < 0 ||
	    (s->bev = bufferevent_socket_new(d->base, fd,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(s);
		close(png);
		ret = -ENOMEM;
		goto close_fd;
	}
	ret_obj = json_object_new_object();
	json_object_object_add(ret_obj, "format",
	    json_object_new_string("png"));
	json_object_object_add(ret_obj, "size", json_object_new_int64(size));
	json_object_object_add(ret_obj, "width",
	    json_object_new_int64(fb.width));
	json_object_object_add(ret_obj, "height",
	    json_object_new_int64(fb.height));
	reply = proto_reply(reply_id, ret_obj);
	if (reply != NULL)
		line = proto_serialize(reply, &len);
	json_object_put(reply);
	map = size > 0 ? mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, png,
	    0) : NULL;
	if (line == NULL || map == MAP_FAILED ||
	    bufferevent_write(s->bev, line, len) < 0 ||
	    bufferevent_write(s->bev, map, (size_t)size) < 0) {
		if (map != NULL && map != MAP_FAILED)
			munmap(map, (size_t)size);
		free(line);
		bufferevent_free(s->bev);	/* closes fd */
		free(s);
		close(png);
		return -ENOMEM;
	}
	munmap(map, (size_t)size);
	close(png);
	free(line);
	/* A client that stops reading is dropped after a while. */
	s->d = d;
	TAILQ_INSERT_TAIL(&d->sends, s, entry);
	bufferevent_set_timeouts(s->bev, NULL, &tv);
	bufferevent_setcb(s->bev, NULL, display_send_written,
	    display_send_event, s);
	bufferevent_enable(s->bev, EV_WRITE);
	d->screenshots++;
	return 0;

close_fd:
	close(fd);
	return ret;
}
