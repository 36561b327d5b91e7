/*
 * The VNC server against real clients on loopback: libvncclient viewers
 * in threads of their own, the server's event loop in the main thread,
 * and hand-made sockets for what a well-behaved client never does.
 * Every "it happened" is waited for by running the loop until a
 * condition holds (with a deadline that fails the check); every "it
 * did not happen" is a counter that did not move while the loop ran.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <rfb/rfbclient.h>
#include <rfb/keysym.h>

#include "tap.h"
#include "unit-util.h"
#include "dirty.h"
#include "vnc.h"
#include "vnc-viewer.h"

#define FB_W		2048	/* two pages per line: dirty pages say x too */
#define FB_H		128
#define FB_STRIDE	(FB_W * 4)

struct input_event {
	bool is_key;
	uint32_t keysym;
	bool down;
	int x, y;
	unsigned int buttons;
};

/* The host side: what the worker would be. */
struct test_host {
	uint32_t *fb;
	uint64_t *written;	/* pages the "guest" wrote since dirty() */
	size_t words;
	unsigned int dirty_calls;
	struct input_event input[16];
	unsigned int ninput;
	unsigned int connects, disconnects;
	/* The "guest" drawing on: called after dirty() took the pages. */
	void (*still_drawing)(void);
	/* What framebuffer() answers while follow is set. */
	bool follow;
	struct vnc_framebuffer shown;
	unsigned int fb_calls;
};

static struct event_base *base;
static struct test_host host;
static struct vnc *vnc;

static int
host_dirty(void *opaque, uint64_t *bitmap)
{
	struct test_host *h = opaque;

	void (*draw)(void) = h->still_drawing;

	h->dirty_calls++;
	if (h->follow) {
		/* The window's pages, as the worker's display gives them. */
		size_t off = (size_t)((const uint8_t *)h->shown.pixels -
		    (const uint8_t *)h->fb), first = off / 4096;
		size_t pages = ((size_t)(h->shown.height - 1) *
		    h->shown.stride + h->shown.width * 4 + 4095) / 4096;

		for (size_t i = 0; i < pages; i++)
			for (size_t p = first + i; p <= first + i + 1; p++)
				if (p / 64 < h->words &&
				    (h->written[p / 64] >> (p % 64) & 1))
					bitmap[i / 64] |= 1ull << (i % 64);
	} else {
		memcpy(bitmap, h->written, h->words * sizeof(uint64_t));
	}
	memset(h->written, 0, h->words * sizeof(uint64_t));
	h->still_drawing = NULL;
	if (draw != NULL)
		draw();
	return 0;
}

static void
host_key(void *opaque, uint32_t keysym, bool down)
{
	struct test_host *h = opaque;

	if (h->ninput < 16)
		h->input[h->ninput++] = (struct input_event){ true, keysym,
		    down, 0, 0, 0 };
}

static void
host_pointer(void *opaque, int x, int y, unsigned int buttons)
{
	struct test_host *h = opaque;

	if (h->ninput < 16)
		h->input[h->ninput++] = (struct input_event){ false, 0, false,
		    x, y, buttons };
}

static void
host_clients(void *opaque, unsigned int clients, bool connected)
{
	struct test_host *h = opaque;

	if (connected)
		h->connects++;
	else
		h->disconnects++;
}

static void
host_framebuffer(void *opaque, struct vnc_framebuffer *fb)
{
	struct test_host *h = opaque;

	h->fb_calls++;
	if (h->follow)
		*fb = h->shown;
}

static const struct vnc_host test_vnc_host = {
	.key = host_key,
	.pointer = host_pointer,
	.clients_changed = host_clients,
	.dirty = host_dirty,
	.framebuffer = host_framebuffer,
	.opaque = &host,
};

/* The "guest" fills a rectangle; the pages it wrote become dirty. */
static void
guest_fill(int x0, int y0, int x1, int y1, uint32_t color)
{
	for (int y = y0; y < y1; y++) {
		size_t first = ((size_t)y * FB_STRIDE + (size_t)x0 * 4) / 4096;
		size_t last = ((size_t)y * FB_STRIDE + (size_t)x1 * 4 - 1) / 4096;

		for (int x = x0; x < x1; x++)
			host.fb[y * FB_W + x] = color;
		for (size_t p = first; p <= last; p++)
			host.written[p / 64] |= 1ull << (p % 64);
	}
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double longest_iteration;

/* Run the loop until cond() holds or seconds pass; cond() holds? */
static bool
run_until(bool (*cond)(void *), void *arg, double seconds)
{
	double end = now_s() + seconds;

	while (!cond(arg)) {
		struct timeval tv = { 0, 10000 };
		double t0 = now_s(), dt;

		if (now_s() > end)
			return false;
		event_base_loopexit(base, &tv);
		event_base_loop(base, EVLOOP_ONCE);
		dt = now_s() - t0;
		if (dt > longest_iteration)
			longest_iteration = dt;
	}
	return true;
}

static bool
never(void *arg)
{
	return false;
}

static void
run_for(double seconds)
{
	(void)run_until(never, NULL, seconds);
}

/* --- viewers: libvncclient in a thread -------------------------------- */

struct viewer {
	pthread_t thread;
	struct vview_opts opts;
	pthread_mutex_t lock;	/* vv.client, its framebuffer, and rects */
	struct vview vv;
	atomic_int state;	/* 0 connecting, 1 connected, -1 failed, 2 done */
	atomic_bool stop;
	atomic_int send_input;	/* 1: the input script, 3: a pointer outside */
	struct { int x, y, w, h; } rects[256];
	unsigned int nrects;
};

static void
viewer_got_rect(void *arg, int x, int y, int w, int h)
{
	struct viewer *v = arg;

	if (v->nrects < 256)
		v->rects[v->nrects++] = (typeof(v->rects[0])){ x, y, w, h };
}

static void *
viewer_main(void *arg)
{
	struct viewer *v = arg;
	rfbClient *client;

	if (!vview_open(&v->vv, &v->opts)) {
		v->state = -1;
		return NULL;
	}
	client = v->vv.client;
	v->state = 1;
	while (!v->stop) {
		int sent = 1, outside = 3;

		if (v->send_input == 1) {
			SendKeyEvent(client, XK_a, TRUE);
			SendKeyEvent(client, XK_a, FALSE);
			SendPointerEvent(client, 10, 20, 1);
			SendKeyEvent(client, XK_Return, TRUE);
			SendPointerEvent(client, 30, 40, 0);
			SendKeyEvent(client, XK_Return, FALSE);
			/* The test may have moved on to 3 as soon as the
			 * events arrived: only 1 becomes 2. */
			atomic_compare_exchange_strong(&v->send_input, &sent, 2);
		}
		if (v->send_input == 3) {
			/* Past the screen's edges, as a hostile viewer may. */
			SendPointerEvent(client, 65535, 65535, 0);
			atomic_compare_exchange_strong(&v->send_input, &outside,
			    4);
		}
		if (vview_step(&v->vv, 5000) < 0)
			break;
	}
	vview_close(&v->vv);
	v->state = 2;
	return NULL;
}

/* A viewer in a thread of its own; encodings NULL: "zrle raw". */
static void
viewer_start_encodings(struct viewer *v, int port, const char *password,
    const char *encodings)
{
	memset(v, 0, sizeof(*v));
	pthread_mutex_init(&v->lock, NULL);
	v->opts = (struct vview_opts){
		.port = port, .password = password, .encodings = encodings,
		.exact = true, .lock = &v->lock,
		.on_rect = viewer_got_rect, .arg = v,
	};
	pthread_create(&v->thread, NULL, viewer_main, v);
}

static void
viewer_start(struct viewer *v, int port, const char *password)
{
	viewer_start_encodings(v, port, password, NULL);
}

static void
viewer_stop(struct viewer *v)
{
	v->stop = true;
	pthread_join(v->thread, NULL);
	pthread_mutex_destroy(&v->lock);
}

static bool
viewer_settled(void *arg)
{
	struct viewer *v = arg;

	return v->state != 0;
}

/* The viewer's copy equals the server's framebuffer, pixel for pixel. */
static bool
viewer_in_sync(void *arg)
{
	struct viewer *v = arg;
	bool same = false;

	pthread_mutex_lock(&v->lock);
	if (v->vv.client != NULL && v->vv.client->frameBuffer != NULL &&
	    v->vv.client->width == FB_W && v->vv.client->height == FB_H) {
		const uint32_t *theirs =
		    (const uint32_t *)v->vv.client->frameBuffer;

		same = true;
		for (size_t i = 0; i < (size_t)FB_W * FB_H && same; i++)
			same = ((theirs[i] ^ host.fb[i]) & 0xffffff) == 0;
	}
	pthread_mutex_unlock(&v->lock);
	return same;
}

static bool
viewers_in_sync(void *arg)
{
	struct viewer **vs = arg;

	for (; *vs != NULL; vs++)
		if (!viewer_in_sync(*vs))
			return false;
	return true;
}

static struct vnc_stats
stats(void)
{
	struct vnc_stats st;

	vnc_stats(vnc, &st);
	return st;
}

static unsigned int want_clients;

static bool
clients_are(void *arg)
{
	return stats().clients == want_clients;
}

static bool
wait_clients(unsigned int n)
{
	want_clients = n;
	return run_until(clients_are, NULL, 10);
}

/* --- a client that never reads ---------------------------------------- */

struct stuck {
	pthread_t thread;
	int port;
	int fd;
	atomic_int state;	/* 1: asked for everything; -1: failed */
};

static bool
read_full(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return true;
}

/* Handshake (no security), raw encoding, then full-screen requests
 * that fill the server's queue, and never another read. */
static void *
stuck_main(void *arg)
{
	struct stuck *s = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)s->port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint8_t buf[64], n;
	int small = 4096;
	const uint8_t enc[] = { 2, 0, 0, 1, 0, 0, 0, 0 };	/* raw */
	uint8_t req[10] = { 3, 0, 0, 0, 0, 0, FB_W >> 8, FB_W & 0xff,
	    FB_H >> 8, FB_H & 0xff };
	uint32_t len;

	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (connect(s->fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    !read_full(s->fd, buf, 12) ||
	    write(s->fd, "RFB 003.008\n", 12) != 12 ||
	    !read_full(s->fd, &n, 1) || n == 0 || !read_full(s->fd, buf, n) ||
	    write(s->fd, "\x01", 1) != 1 ||		/* None */
	    !read_full(s->fd, buf, 4) || get32(buf) != 0 ||
	    write(s->fd, "\x01", 1) != 1 ||		/* shared */
	    !read_full(s->fd, buf, 24)) {
		s->state = -1;
		return NULL;
	}
	len = (uint32_t)buf[20] << 24 | buf[21] << 16 | buf[22] << 8 | buf[23];
	if (len > sizeof(buf) || !read_full(s->fd, buf, len) ||
	    write(s->fd, enc, sizeof(enc)) != sizeof(enc)) {
		s->state = -1;
		return NULL;
	}
	for (int i = 0; i < 16; i++)
		if (write(s->fd, req, sizeof(req)) != sizeof(req))
			break;
	s->state = 1;
	return NULL;
}

/* --- sections ---------------------------------------------------------- */

static int
server_new_cfg(const struct vnc_config *cfg)
{
	char err[256] = "";
	int r = vnc_new(base, cfg, &test_vnc_host, &vnc, err, sizeof(err));

	if (r < 0)
		tap_diag("vnc_new: %s", err);
	return r;
}

static int
server_new(enum vnc_refresh_mode mode, const char *password,
    const char *web_dir)
{
	struct vnc_config cfg = {
		.password = password,
		.web_dir = web_dir,
		.fb = { host.fb, FB_W, FB_H, FB_STRIDE },
		.mode = mode,
		.client_timeout_ms = 300,
	};

	return server_new_cfg(&cfg);
}

static bool
cut_off_once(void *arg)
{
	return stats().clients_cut_off >= 1;
}

static bool
input_arrived(void *arg)
{
	return host.ninput >= 6;
}

static bool
pointer_outside_arrived(void *arg)
{
	return host.ninput >= 7;
}

static void
test_polling_server(void)
{
	bool arrived;
	struct viewer a, b;
	struct viewer *both[] = { &a, &b, NULL };
	struct vnc_stats st, before;
	struct stuck stuck = { 0 };
	int r;

	r = server_new(VNC_REFRESH_POLL, NULL, NULL);
	tap_ok(r == 0, "vnc_new on an automatic port");
	if (r < 0)
		return;
	tap_ok(vnc_port(vnc) >= 5900 && vnc_port(vnc) < 6000,
	    "the port is the first free from 5900 (%d)", vnc_port(vnc));
	tap_ok(vnc_http_port(vnc) == 0, "no HTTP server without a directory");

	run_for(0.2);
	st = stats();
	tap_ok(st.clients == 0 && !st.refresh_exists && !st.refresh_armed &&
	    st.refreshes == 0 && st.wakeups == 0 && host.dirty_calls == 0,
	    "nobody watching: no refresh timer, no dirty call, no wake-up");

	viewer_start(&a, vnc_port(vnc), NULL);
	tap_ok(wait_clients(1), "a viewer connects");
	st = stats();
	tap_ok(st.refresh_exists && st.refresh_armed,
	    "the first viewer creates the refresh timer");
	tap_ok(host.connects == 1, "the host hears of the viewer");
	tap_ok(run_until(viewer_in_sync, &a, 10),
	    "the viewer's framebuffer equals the server's");

	/* A change to one region: only its tiles travel. */
	run_for(0.1);
	pthread_mutex_lock(&a.lock);
	a.nrects = 0;
	pthread_mutex_unlock(&a.lock);
	before = stats();
	guest_fill(100, 70, 140, 90, 0x00ff8000);
	tap_ok(run_until(viewer_in_sync, &a, 10), "a change reaches the viewer");
	st = stats();
	{
		/* Lines 70-89 dirty the first page of each line: tiles
		 * x 0-1023 by lines 64-95, 32 of them; compared with
		 * what the viewer has, only x 100-139 changed: tiles
		 * x 64-191, 4 of them. */
		bool inside = a.nrects > 0;

		pthread_mutex_lock(&a.lock);
		for (unsigned int i = 0; i < a.nrects; i++)
			inside &= a.rects[i].x >= 64 && a.rects[i].y >= 64 &&
			    a.rects[i].x + a.rects[i].w <= 192 &&
			    a.rects[i].y + a.rects[i].h <= 96;
		pthread_mutex_unlock(&a.lock);
		tap_ok(inside, "only the changed tiles are sent (%u rects)",
		    a.nrects);
	}
	tap_ok(st.tiles_sent - before.tiles_sent == 4,
	    "4 changed tiles of the 32 dirty ones counted (%llu)",
	    (unsigned long long)(st.tiles_sent - before.tiles_sent));
	tap_ok(st.bytes_sent > before.bytes_sent && st.refreshes > before.refreshes,
	    "bytes sent and refreshes counted");

	/* Input, in order. */
	a.send_input = 1;
	tap_ok(run_until(input_arrived, NULL, 10), "key and pointer events arrive");
	tap_ok(host.input[0].is_key && host.input[0].keysym == XK_a &&
	    host.input[0].down && host.input[1].is_key &&
	    host.input[1].keysym == XK_a && !host.input[1].down &&
	    !host.input[2].is_key && host.input[2].x == 10 &&
	    host.input[2].y == 20 && host.input[2].buttons == 1 &&
	    host.input[3].is_key && host.input[3].keysym == XK_Return &&
	    host.input[3].down && !host.input[4].is_key &&
	    host.input[4].x == 30 && host.input[4].y == 40 &&
	    host.input[4].buttons == 0 && host.input[5].is_key &&
	    host.input[5].keysym == XK_Return && !host.input[5].down,
	    "in the order they were sent");
	a.send_input = 3;
	arrived = run_until(pointer_outside_arrived, NULL, 10);
	tap_ok(arrived && host.input[6].x == FB_W - 1 &&
	    host.input[6].y == FB_H - 1, "a pointer past the screen's edges "
	    "is clamped to them (%d,%d; %u events)", host.input[6].x,
	    host.input[6].y, host.ninput);

	/* A second viewer. */
	viewer_start(&b, vnc_port(vnc), NULL);
	tap_ok(wait_clients(2), "a second viewer connects");
	guest_fill(1500, 10, 1600, 20, 0x000000ff);
	tap_ok(run_until(viewers_in_sync, both, 10),
	    "both viewers see the change");

	/* A client that asks and never reads. */
	stuck.port = vnc_port(vnc);
	pthread_create(&stuck.thread, NULL, stuck_main, &stuck);
	longest_iteration = 0;
	for (int i = 0; i < 40 && stats().clients_cut_off == 0; i++) {
		guest_fill(0, (i * 7) % FB_H, FB_W, (i * 7) % FB_H + 1,
		    0x00010101u * (uint32_t)i);
		run_for(0.05);
	}
	tap_ok(run_until(cut_off_once, NULL, 10),
	    "a client that never reads is cut off");
	pthread_join(stuck.thread, NULL);
	tap_ok(stuck.state == 1, "(it had asked for updates)");
	tap_ok(longest_iteration < 0.5,
	    "the loop never stalled meanwhile (longest iteration %.3f s)",
	    longest_iteration);
	guest_fill(0, 100, 64, 128, 0x0000ff00);
	tap_ok(run_until(viewers_in_sync, both, 10),
	    "the other viewers kept up");
	close(stuck.fd);

	viewer_stop(&a);
	tap_ok(wait_clients(1), "one viewer leaves");
	tap_ok(stats().refresh_exists, "the refresh stays while one watches");
	viewer_stop(&b);
	tap_ok(wait_clients(0), "the last viewer leaves");
	st = stats();
	tap_ok(!st.refresh_exists && !st.refresh_armed,
	    "the last viewer to leave deletes the refresh timer");
	tap_ok(host.connects == 3 && host.disconnects == 3,
	    "the host heard of each viewer coming and going, the cut-off one too");
	before = stats();
	r = (int)host.dirty_calls;
	guest_fill(0, 0, 10, 10, 0x00123456);
	run_for(0.3);
	st = stats();
	tap_ok(st.refreshes == before.refreshes && st.wakeups == before.wakeups &&
	    host.dirty_calls == (unsigned int)r,
	    "nobody watching again: no refresh, no dirty call, no wake-up");
	vnc_free(vnc);
	vnc = NULL;
}

/* The rest of a bar test_update_encodings() began to draw. */
static void
bar_lower_half(void)
{
	guest_fill(0, 96, FB_W, 104, 0x00abcdef);
}

/*
 * The encoding of an update follows what changed (vnc-update.h).  A
 * tight viewer: 16 lines of one colour go as one solid rectangle, 16
 * bytes, without the LastRect marker libvncserver ends an update with
 * when it may split a rectangle (libvncserver counts rectangles, not
 * the update's own 4 bytes).  A viewer that also decodes RRE: two
 * colours side by side, which libvncserver's region makes one
 * rectangle, go as RRE, one block on a background, 32 bytes; a line of
 * many colours stays tight.  Both viewers see every change.
 */
static void
test_update_encodings(void)
{
	static const char *const lists[] = { "tight", "tight rre" };
	struct vnc_stats before;
	unsigned long long bytes;
	struct viewer v;
	bool ok;

	if (server_new(VNC_REFRESH_POLL, NULL, NULL) < 0) {
		tap_ok(false, "vnc_new for the encoding tests");
		return;
	}
	for (int i = 0; i < 2; i++) {
		const char *list = lists[i];
		uint32_t k = (uint32_t)i * 0x10;

		viewer_start_encodings(&v, vnc_port(vnc), NULL, list);
		tap_ok(wait_clients(1) && run_until(viewer_in_sync, &v, 10),
		    "\"%s\": the viewer sees the screen", list);
		run_for(0.1);

		before = stats();
		guest_fill(0, 40, FB_W, 56, 0x00ffffff - k);
		ok = run_until(viewer_in_sync, &v, 10);
		bytes = stats().bytes_sent - before.bytes_sent;
		tap_ok(ok && bytes == 16, "\"%s\": 16 lines of one colour: "
		    "one solid rectangle, 16 bytes, no LastRect (%llu)", list,
		    bytes);

		before = stats();
		guest_fill(0, 60, FB_W / 2, 70, 0x00ff0000 + k);
		guest_fill(FB_W / 2, 60, FB_W, 70, 0x0000ff00 + k);
		ok = run_until(viewer_in_sync, &v, 10);
		bytes = stats().bytes_sent - before.bytes_sent;
		if (i == 0)
			tap_ok(ok, "\"%s\": two colours side by side reach "
			    "the viewer (%llu bytes)", list, bytes);
		else
			tap_ok(ok && bytes == 12 + 4 + 4 + 12, "\"%s\": two "
			    "colours side by side: RRE, 32 bytes (%llu)", list,
			    bytes);

		before = stats();
		for (int x = 0; x < 64; x++)
			guest_fill(x, 100, x + 1, 101, 0x00010203u * (uint32_t)x + k);
		ok = run_until(viewer_in_sync, &v, 10);
		bytes = stats().bytes_sent - before.bytes_sent;
		tap_ok(ok && bytes < 12 + 4 + 4 + 63 * 12, "\"%s\": a line "
		    "of 64 colours reaches the viewer, not as RRE (%llu bytes)",
		    list, bytes);

		if (i == 0) {
			/* The refresh comes while the "guest" draws a bar
			 * (lines 88-103, two tile rows): it looks again
			 * before sending, and the bar goes whole in one
			 * update, one solid rectangle. */
			uint64_t updates;

			before = stats();
			guest_fill(0, 88, FB_W, 96, 0x00abcdef);
			host.still_drawing = bar_lower_half;
			ok = run_until(viewer_in_sync, &v, 10);
			bytes = stats().bytes_sent - before.bytes_sent;
			updates = stats().updates_sent - before.updates_sent;
			tap_ok(ok && updates == 1 && bytes == 16, "a bar "
			    "still being drawn at the refresh goes whole: %llu "
			    "update(s), %llu bytes", (unsigned long long)updates,
			    bytes);
		}

		viewer_stop(&v);
		tap_ok(wait_clients(0), "\"%s\": the viewer leaves", list);
	}
	vnc_free(vnc);
	vnc = NULL;
}

static void
test_password(void)
{
	struct viewer v;

	if (server_new(VNC_REFRESH_POLL, "sesame", NULL) < 0) {
		tap_ok(0, "vnc_new with a password");
		return;
	}
	viewer_start(&v, vnc_port(vnc), "wrong");
	tap_ok(run_until(viewer_settled, &v, 10) && v.state == -1,
	    "a wrong password is refused");
	viewer_stop(&v);
	viewer_start(&v, vnc_port(vnc), NULL);
	tap_ok(run_until(viewer_settled, &v, 10) && v.state == -1,
	    "so is no password");
	viewer_stop(&v);
	tap_ok(stats().clients == 0 && !stats().refresh_exists,
	    "a refused client never counts as a viewer");
	viewer_start(&v, vnc_port(vnc), "sesame");
	tap_ok(run_until(viewer_settled, &v, 10) && v.state == 1,
	    "the right password is accepted");
	tap_ok(wait_clients(1) && run_until(viewer_in_sync, &v, 10),
	    "and the viewer sees the screen");
	viewer_stop(&v);
	tap_ok(wait_clients(0), "it leaves");
	vnc_free(vnc);
	vnc = NULL;
}

static bool
refreshed(void *arg)
{
	return stats().refreshes > *(uint64_t *)arg;
}

static void
test_event_driven(void)
{
	struct viewer v;
	struct vnc_stats st, before;
	uint64_t refreshes;

	if (server_new(VNC_REFRESH_EVENT, NULL, NULL) < 0) {
		tap_ok(0, "vnc_new, event-driven");
		return;
	}
	viewer_start(&v, vnc_port(vnc), NULL);
	tap_ok(wait_clients(1) && run_until(viewer_in_sync, &v, 10),
	    "event-driven: a viewer connects and sees the screen");
	st = stats();
	tap_ok(st.refresh_exists && !st.refresh_armed,
	    "the refresh exists but waits for damage");
	run_for(0.1);
	before = stats();
	run_for(0.5);
	st = stats();
	tap_ok(st.refreshes == before.refreshes && st.wakeups == before.wakeups,
	    "a static screen with a viewer: zero refreshes, zero wake-ups "
	    "(%llu, %llu)", (unsigned long long)(st.refreshes - before.refreshes),
	    (unsigned long long)(st.wakeups - before.wakeups));
	guest_fill(600, 40, 700, 60, 0x00abcdef);
	refreshes = st.refreshes;
	vnc_damage(vnc);
	tap_ok(stats().refresh_armed, "damage arms the refresh");
	tap_ok(run_until(refreshed, &refreshes, 10) &&
	    run_until(viewer_in_sync, &v, 10), "and the change is sent");
	tap_ok(!stats().refresh_armed, "then the refresh waits again");
	viewer_stop(&v);
	tap_ok(wait_clients(0) && !stats().refresh_exists, "the viewer leaves");
	vnc_damage(vnc);
	tap_ok(!stats().refresh_armed && !stats().refresh_exists,
	    "damage with nobody watching does nothing");
	vnc_free(vnc);
	vnc = NULL;
}

/* The viewer shows host.shown, pixel for pixel. */
static bool
viewer_shows_window(void *arg)
{
	struct viewer *v = arg;
	const struct vnc_framebuffer *fb = &host.shown;
	bool same = false;

	pthread_mutex_lock(&v->lock);
	if (v->vv.client != NULL && v->vv.client->frameBuffer != NULL &&
	    v->vv.client->width == (int)fb->width &&
	    v->vv.client->height == (int)fb->height) {
		const uint32_t *theirs =
		    (const uint32_t *)v->vv.client->frameBuffer;

		same = true;
		for (uint32_t y = 0; y < fb->height && same; y++)
			for (uint32_t x = 0; x < fb->width && same; x++)
				same = ((theirs[y * fb->width + x] ^
				    ((const uint32_t *)((const uint8_t *)
				    fb->pixels + (size_t)y * fb->stride))[x]) &
				    0xffffff) == 0;
	}
	pthread_mutex_unlock(&v->lock);
	return same;
}

/*
 * A framebuffer that changes (a guest setting a mode): the server asks
 * for it at each refresh, and a new one (a window of the memory at
 * another place, size and stride) reaches the viewer whole, at its new
 * size; an unchanged or bad one changes nothing.
 */
static void
test_resize(void)
{
	struct viewer v;
	struct vnc_stats st, before;
	uint64_t refreshes;

	if (server_new(VNC_REFRESH_EVENT, NULL, NULL) < 0) {
		tap_ok(0, "vnc_new for the resize tests");
		return;
	}
	viewer_start(&v, vnc_port(vnc), NULL);
	tap_ok(wait_clients(1) && run_until(viewer_in_sync, &v, 10),
	    "resize: a viewer sees the first framebuffer");
	tap_ok(host.fb_calls >= 1, "the server asked for it as the viewer "
	    "came (%u)", host.fb_calls);
	/* 1000x64 from line 16, column 8, with the memory's stride. */
	host.shown = (struct vnc_framebuffer){ host.fb + 16 * FB_W + 8, 1000,
	    64, FB_STRIDE };
	host.follow = true;
	guest_fill(8, 16, 1008, 80, 0x00123456);
	guest_fill(100, 30, 200, 40, 0x00fedcba);
	before = stats();
	refreshes = before.refreshes;
	vnc_damage(vnc);
	tap_ok(run_until(refreshed, &refreshes, 10) &&
	    run_until(viewer_shows_window, &v, 10),
	    "a new framebuffer: the viewer gets it whole, at 1000x64");
	st = stats();
	TAP_EQ(st.resizes, before.resizes + 1, "one resize counted");
	{
		struct vnc_framebuffer now;

		vnc_get_framebuffer(vnc, &now);
		tap_ok(memcmp(&now, &host.shown, sizeof(now)) == 0,
		    "vnc_get_framebuffer: the new one");
	}
	guest_fill(300, 50, 310, 52, 0x00aabbcc);
	refreshes = st.refreshes;
	vnc_damage(vnc);
	tap_ok(run_until(refreshed, &refreshes, 10) &&
	    run_until(viewer_shows_window, &v, 10) &&
	    stats().resizes == st.resizes,
	    "a write inside it: sent, no resize");
	host.shown.stride = 4;		/* shorter than a line: refused */
	guest_fill(300, 50, 310, 52, 0x00ccbbaa);
	refreshes = stats().refreshes;
	vnc_damage(vnc);
	host.shown.stride = FB_STRIDE;
	tap_ok(run_until(refreshed, &refreshes, 10) &&
	    run_until(viewer_shows_window, &v, 10) &&
	    stats().resizes == st.resizes,
	    "a bad geometry is not followed");
	host.follow = false;
	viewer_stop(&v);
	tap_ok(wait_clients(0) && !stats().refresh_exists,
	    "the viewer leaves: no refresh");
	vnc_free(vnc);
	vnc = NULL;
	/* The next tests' server starts with the whole framebuffer. */
	memset(host.written, 0, host.words * sizeof(uint64_t));
}

/* --- HTTP and WebSocket ------------------------------------------------- */

/* A WebSocket upgrade as noVNC's page would send it. */
static char *
ws_upgrade(int http_port, const char *origin_host)
{
	char *s = NULL;

	if (asprintf(&s, "GET /websockify HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "Origin: http://%s:%d\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n\r\n", vnc_port(vnc), origin_host,
	    http_port) < 0)
		return NULL;
	return s;
}

/* One masked binary frame of len bytes (< 126): its length. */
static size_t
ws_frame(uint8_t *out, const void *data, size_t len)
{
	static const uint8_t key[4] = { 0x11, 0x22, 0x33, 0x44 };

	out[0] = 0x82;
	out[1] = (uint8_t)(0x80 | len);
	memcpy(out + 2, key, 4);
	for (size_t i = 0; i < len; i++)
		out[6 + i] = ((const uint8_t *)data)[i] ^ key[i % 4];
	return 6 + len;
}

/* Up to and with the blank line of an HTTP answer, into buf. */
static bool
read_head(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		if (read(fd, buf + got, 1) != 1)
			return false;
		buf[++got] = '\0';
		if (got >= 4 && memcmp(buf + got - 4, "\r\n\r\n", 4) == 0)
			return true;
	}
	return false;
}

/* An unmasked server frame's payload, whole frames until len bytes. */
static bool
ws_read(int fd, uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		uint8_t h[4];
		size_t plen;

		if (!read_full(fd, h, 2))
			return false;
		plen = h[1] & 0x7f;
		if (plen == 126) {
			if (!read_full(fd, h + 2, 2))
				return false;
			plen = (size_t)h[2] << 8 | h[3];
		} else if (plen == 127 || got + plen > len) {
			return false;
		}
		if (!read_full(fd, buf + got, plen))
			return false;
		got += plen;
	}
	return true;
}

static int
connect_port(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

struct http_get {
	int port;
	const char *request;
	char reply[512];
	atomic_int done;
};

static void *
http_get_main(void *arg)
{
	struct http_get *g = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)g->port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;
	ssize_t n;

	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    write(fd, g->request, strlen(g->request)) > 0) {
		while (got < sizeof(g->reply) - 1 &&
		    (n = read(fd, g->reply + got, sizeof(g->reply) - 1 - got)) > 0) {
			got += (size_t)n;
			if (strstr(g->reply, "\r\n\r\n") != NULL &&
			    strncmp(g->reply, "HTTP/1.1 101", 12) == 0)
				break;
		}
	}
	close(fd);
	g->done = 1;
	return NULL;
}

static bool
http_done(void *arg)
{
	return ((struct http_get *)arg)->done;
}

/* A WebSocket client through the handshake to a viewer (no security),
 * each message split over two writes where asked. */
struct ws_viewer {
	pthread_t thread;
	int port, http_port;
	bool split;
	int fd;
	atomic_int state;	/* 1: a viewer; -1: failed */
	atomic_bool stop;
};

static bool
ws_send(int fd, const void *data, size_t len, bool split)
{
	uint8_t f[64];
	size_t n = ws_frame(f, data, len);

	if (!split)
		return write(fd, f, n) == (ssize_t)n;
	/* Half a header, then the rest: whole frames only, says the
	 * server, however they come. */
	if (write(fd, f, 3) != 3)
		return false;
	usleep(100000);
	return write(fd, f + 3, n - 3) == (ssize_t)(n - 3);
}

static void *
ws_viewer_main(void *arg)
{
	struct ws_viewer *w = arg;
	char *req = ws_upgrade(w->http_port, "127.0.0.1"), head[512];
	uint8_t buf[64];

	w->fd = connect_port(w->port);
	if (w->fd < 0 || req == NULL ||
	    write(w->fd, req, strlen(req)) != (ssize_t)strlen(req) ||
	    !read_head(w->fd, head, sizeof(head)) ||
	    strncmp(head, "HTTP/1.1 101", 12) != 0 ||
	    !ws_read(w->fd, buf, 12) || memcmp(buf, "RFB 003.008\n", 12) ||
	    !ws_send(w->fd, "RFB 003.008\n", 12, w->split) ||
	    !ws_read(w->fd, buf, 2) || buf[0] != 1 || buf[1] != 1 ||
	    !ws_send(w->fd, "\x01", 1, w->split) ||
	    !ws_read(w->fd, buf, 4) || get32(buf) != 0 ||
	    !ws_send(w->fd, "\x01", 1, w->split) ||
	    !ws_read(w->fd, buf, 24 + 4)) {	/* ServerInit, "vmmd" */
		free(req);
		w->state = -1;
		return NULL;
	}
	free(req);
	w->state = 1;
	while (!w->stop)
		usleep(10000);
	close(w->fd);
	return NULL;
}

static bool
ws_viewer_settled(void *arg)
{
	return ((struct ws_viewer *)arg)->state != 0;
}

/* A WebSocket upgrade to the RFB port with this Host and Origin: the
 * status line's code, 0 for none. */
static int
ws_status(const char *host_header, const char *origin, const char *extra)
{
	struct http_get g;
	char *req = NULL;
	pthread_t t;
	int code = 0;

	memset(&g, 0, sizeof(g));
	if (asprintf(&req, "GET /websockify HTTP/1.1\r\nHost: %s\r\n"
	    "%s%s%sUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Sec-WebSocket-Version: 13\r\n%s\r\n", host_header,
	    origin != NULL ? "Origin: " : "", origin != NULL ? origin : "",
	    origin != NULL ? "\r\n" : "", extra) < 0)
		return 0;
	g.port = vnc_port(vnc);
	g.request = req;
	pthread_create(&t, NULL, http_get_main, &g);
	(void)run_until(http_done, &g, 10);
	pthread_join(t, NULL);
	free(req);
	if (sscanf(g.reply, "HTTP/1.1 %d", &code) != 1)
		code = 0;
	if (code != 101 && code != 0)
		tap_diag("%d: %s", code, strstr(g.reply, "\r\n\r\n") ?
		    strstr(g.reply, "\r\n\r\n") + 4 : "");
	return code;
}

/* GET (or whatever request says) on the HTTP port: the reply. */
static void
http_fetch(struct http_get *g, int port, const char *request)
{
	pthread_t t;

	memset(g, 0, sizeof(*g));
	g->port = port;
	g->request = request;
	pthread_create(&t, NULL, http_get_main, g);
	if (!run_until(http_done, g, 10))
		tap_diag("no HTTP answer to %.40s", request);
	pthread_join(t, NULL);
}

static void
test_web(void)
{
	char dir[] = "/tmp/test-vnc-web.XXXXXX";
	char path[64], js[64], origin[64], hosthdr[64];
	struct vnc_config cfg;
	struct http_get page, ws;
	struct ws_viewer wv;
	pthread_t t;
	char *req;
	FILE *f;
	int hp;

	if (mkdtemp(dir) == NULL) {
		tap_ok(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/index.html", dir);
	f = fopen(path, "w");
	fputs("<html>vmmd test page</html>\n", f);
	fclose(f);
	snprintf(js, sizeof(js), "%s/app.js", dir);
	f = fopen(js, "w");
	fputs("export default 1;\n", f);
	fclose(f);
	if (server_new(VNC_REFRESH_POLL, NULL, dir) < 0) {
		tap_ok(0, "vnc_new with a web directory");
		goto out;
	}
	hp = vnc_http_port(vnc);
	tap_ok(hp >= 5800 && hp < 5900, "an HTTP port from 5800 (%d)", hp);
	http_fetch(&page, hp, "GET /index.html HTTP/1.0\r\n\r\n");
	tap_ok(page.done, "the HTTP server answers");
	tap_ok(strncmp(page.reply, "HTTP/1.1 200 ", 13) == 0 &&
	    strstr(page.reply, "Content-Type: text/html") != NULL &&
	    strstr(page.reply, "\r\n\r\n<html>vmmd test page</html>\n") !=
	    NULL, "with the file from the web directory");
	http_fetch(&page, hp, "GET /?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
	tap_ok(strstr(page.reply, "vmmd test page") != NULL,
	    "a directory's index.html, the query ignored");
	http_fetch(&page, hp, "GET /app.js HTTP/1.1\r\n\r\n");
	tap_ok(strstr(page.reply, "Content-Type: text/javascript") != NULL &&
	    strstr(page.reply, "export default 1;") != NULL,
	    "a script as a script (modules need it)");
	http_fetch(&page, hp, "HEAD /index.html HTTP/1.1\r\n\r\n");
	tap_ok(strncmp(page.reply, "HTTP/1.1 200 ", 13) == 0 &&
	    strstr(page.reply, "Content-Length: 28\r\n") != NULL &&
	    strstr(page.reply, "vmmd test page") == NULL,
	    "HEAD: the headers alone");
	http_fetch(&page, hp, "GET /nothing.html HTTP/1.1\r\n\r\n");
	tap_ok(strncmp(page.reply, "HTTP/1.1 404 ", 13) == 0,
	    "a missing file: 404");
	http_fetch(&page, hp, "GET /../../etc/passwd HTTP/1.1\r\n\r\n");
	tap_ok(strncmp(page.reply, "HTTP/1.1 400 ", 13) == 0,
	    "a path out of the directory: 400");
	http_fetch(&page, hp, "GET /a/%2e%2E/../etc/passwd HTTP/1.1\r\n\r\n");
	tap_ok(strncmp(page.reply, "HTTP/1.1 400 ", 13) == 0,
	    "so in %%-encoding");
	http_fetch(&page, hp, "POST /index.html HTTP/1.1\r\n\r\n");
	tap_ok(strncmp(page.reply, "HTTP/1.1 405 ", 13) == 0 &&
	    strstr(page.reply, "Allow: GET, HEAD") != NULL,
	    "POST: 405, GET and HEAD allowed");

	req = ws_upgrade(hp, "127.0.0.1");
	memset(&ws, 0, sizeof(ws));
	ws.port = vnc_port(vnc);
	ws.request = req;
	pthread_create(&t, NULL, http_get_main, &ws);
	tap_ok(run_until(http_done, &ws, 10), "a WebSocket handshake on the RFB port");
	pthread_join(t, NULL);
	tap_ok(strncmp(ws.reply, "HTTP/1.1 101", 12) == 0 &&
	    strstr(ws.reply, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") != NULL,
	    "is answered by the server itself");
	if (strncmp(ws.reply, "HTTP/1.1 101", 12) != 0)
		tap_diag("reply: %.200s", ws.reply);
	free(req);

	/* Only the display's own pages may open a WebSocket. */
	snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "127.0.0.1:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin, "") == 101,
	    "a WebSocket from the display's own origin is accepted");
	snprintf(hosthdr, sizeof(hosthdr), "127.0.0.1:%d", vnc_port(vnc) + 1);
	tap_ok(ws_status(hosthdr, origin, "") == 403,
	    "not one for another port");
	snprintf(origin, sizeof(origin), "http://127.0.0.2:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "127.0.0.2:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin, "") == 403,
	    "nor one for another address than the display's");
	snprintf(origin, sizeof(origin), "http://localhost:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "localhost:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin, "") == 101,
	    "one from its page at localhost is accepted");
	tap_ok(ws_status("127.0.0.1", "http://evil.example", "") == 403,
	    "one from another site's page is refused (403)");
	snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", hp + 1);
	tap_ok(ws_status("127.0.0.1", origin, "") == 403,
	    "so is one from another port of the host");
	tap_ok(ws_status("127.0.0.1", NULL, "") == 403,
	    "and one that names no origin");
	snprintf(origin, sizeof(origin), "http://evil.example:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "evil.example:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin, "") == 403,
	    "a name pointed at 127.0.0.1 is not the display's own");
	snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "127.0.0.1:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin,
	    "Sec-WebSocket-Protocol: base64\r\n") == 400,
	    "the base64 protocol is refused (400)");

	for (int split = 0; split < 2; split++) {
		memset(&wv, 0, sizeof(wv));
		wv.port = vnc_port(vnc);
		wv.http_port = hp;
		wv.split = split;
		pthread_create(&wv.thread, NULL, ws_viewer_main, &wv);
		tap_ok(run_until(ws_viewer_settled, &wv, 10) && wv.state == 1 &&
		    wait_clients(1), "a WebSocket client becomes a viewer%s",
		    split ? ", its frames split" : "");
		wv.stop = true;
		pthread_join(wv.thread, NULL);
		tap_ok(wait_clients(0), "and leaves");
	}
	vnc_free(vnc);
	vnc = NULL;

	/*
	 * A display on every address: a page of a name its DNS points
	 * at the host (DNS rebinding) is not the display's, though its
	 * Host and Origin agree; the address the connection came to is.
	 */
	cfg = (struct vnc_config){ .address = "0.0.0.0", .web_dir = dir,
	    .fb = { host.fb, FB_W, FB_H, FB_STRIDE },
	    .mode = VNC_REFRESH_POLL };
	if (server_new_cfg(&cfg) < 0) {
		tap_ok(0, "vnc_new on 0.0.0.0");
		goto out;
	}
	hp = vnc_http_port(vnc);
	snprintf(origin, sizeof(origin), "http://evil.example:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "evil.example:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin, "") == 403, "on 0.0.0.0: a "
	    "WebSocket for another name is refused, Origin and all");
	snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", hp);
	snprintf(hosthdr, sizeof(hosthdr), "127.0.0.1:%d", vnc_port(vnc));
	tap_ok(ws_status(hosthdr, origin, "") == 101, "on 0.0.0.0: one for "
	    "the address the connection came to is accepted");
	vnc_free(vnc);
	vnc = NULL;

	if (server_new(VNC_REFRESH_POLL, NULL, NULL) < 0) {
		tap_ok(0, "vnc_new without a web directory");
		goto out;
	}
	tap_ok(ws_status("127.0.0.1", "http://127.0.0.1:5800", "") == 403,
	    "without a web client, no WebSocket at all");
	vnc_free(vnc);
	vnc = NULL;
out:
	unlink(path);
	unlink(js);
	rmdir(dir);
}

/* --- peers that take their time ---------------------------------------- */

#define TICK_S		0.005
#define DEADLINE_MS	3000

/*
 * A timer on the server's loop: how late it ever ran.  Time the thread
 * spent runnable but waiting for a CPU (its schedstat's run delay, where
 * the kernel keeps one) is the machine's doing, not the loop's, and is
 * not counted: on a busy host that alone can reach tens of ms.
 */
static double tick_last, tick_delay_last, tick_worst;
static int schedstat_fd = -1;

static double
run_delay_s(void)
{
	char buf[128];
	unsigned long long cpu, delay;
	ssize_t n;

	if (schedstat_fd < 0)
		return 0;
	n = pread(schedstat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &cpu, &delay) != 2)
		return 0;
	return (double)delay / 1e9;
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	double t = now_s(), delay = run_delay_s(), late;

	late = t - tick_last - TICK_S - (delay - tick_delay_last);
	if (tick_last > 0 && late > tick_worst)
		tick_worst = late;
	tick_last = t;
	tick_delay_last = delay;
}

/*
 * A peer that sends burst, reads what the server says to that (greeting:
 * 1 its RFB version, 2 a WebSocket upgrade's answer and the version
 * framed), then sends trickle one byte a second, and notes when the
 * server closes.
 */
struct slow {
	pthread_t thread;
	const char *name;
	int port;
	const char *burst;
	const uint8_t *trickle;
	size_t trickle_len;
	int greeting;
	double started, closed;
	atomic_int state;	/* 0 running, 1 closed by the server, -1 not */
};

static void *
slow_main(void *arg)
{
	struct slow *s = arg;
	char head[512];
	uint8_t buf[64];
	size_t i = 0;
	int fd;

	fd = connect_port(s->port);
	s->started = now_s();
	if (fd < 0 ||
	    (s->burst != NULL && write(fd, s->burst, strlen(s->burst)) !=
	    (ssize_t)strlen(s->burst)) ||
	    (s->greeting == 1 && !read_full(fd, buf, 12)) ||
	    (s->greeting == 2 && (!read_head(fd, head, sizeof(head)) ||
	    !ws_read(fd, buf, 12)))) {
		s->state = -1;
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, i < s->trickle_len ? 1000 : 30000);

		if (n > 0) {
			if (read(fd, buf, sizeof(buf)) <= 0)
				break;		/* closed */
			continue;
		}
		if (i == s->trickle_len) {
			s->state = -1;		/* never closed */
			close(fd);
			return NULL;
		}
		if (send(fd, s->trickle + i++, 1, MSG_NOSIGNAL) != 1)
			break;
	}
	s->closed = now_s();
	s->state = 1;
	close(fd);
	return NULL;
}

static void
slow_start(struct slow *s, const char *name, int port, const char *burst,
    const void *trickle, size_t len, int greeting)
{
	*s = (struct slow){ .name = name, .port = port, .burst = burst,
	    .trickle = trickle, .trickle_len = len, .greeting = greeting };
	pthread_create(&s->thread, NULL, slow_main, s);
}

static bool
slows_done(void *arg)
{
	struct slow *s = arg;

	for (; s->name != NULL; s++)
		if (s->state == 0)
			return false;
	return true;
}

/* An HTTP client that asks for a big file and never reads. */
struct stuck_http {
	pthread_t thread;
	int port;
	int fd;
	atomic_int state;	/* 1: asked */
};

static void *
stuck_http_main(void *arg)
{
	static const char req[] = "GET /big.bin HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\n\r\n";
	struct stuck_http *h = arg;
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)h->port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int small = 4096;

	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(h->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	if (connect(h->fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    write(h->fd, req, sizeof(req) - 1) == sizeof(req) - 1)
		h->state = 1;
	else
		h->state = -1;
	return NULL;
}

static bool
http_timed_out_twice(void *arg)
{
	return stats().http_timed_out >= 2;
}

static void
test_slow_peers(void)
{
	static const char rfb_version[] = "RFB 003.008\n";
	char dir[] = "/tmp/test-vnc-slow.XXXXXX", path[64], big[64];
	struct vnc_config cfg = {
		.fb = { host.fb, FB_W, FB_H, FB_STRIDE },
		.mode = VNC_REFRESH_POLL,
		.client_timeout_ms = 300,
		.handshake_timeout_ms = DEADLINE_MS,
		.http_timeout_ms = DEADLINE_MS,
	};
	struct slow slows[6] = { 0 };
	struct stuck_http stuck = { 0 };
	const struct timeval tick = { 0, (suseconds_t)(TICK_S * 1e6) };
	struct event *ticker;
	struct vnc_stats st;
	struct viewer v;
	char *upgrade, *upgrade_head, *upgrade_rest;
	uint8_t framed[32];
	size_t framed_len, head_len;
	double t0, connect_s, worst_update = 0;
	bool timely = true, updated = true;
	FILE *f;

	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/index.html", dir);
	snprintf(big, sizeof(big), "%s/big.bin", dir);
	f = fopen(path, "w");
	fputs("<html>vmmd test page</html>\n", f);
	fclose(f);
	f = fopen(big, "w");
	for (int i = 0; i < 8 << 10; i++)
		fwrite(host.fb, 1, 1024, f);	/* 8 MiB */
	fclose(f);
	cfg.web_dir = dir;
	if (server_new_cfg(&cfg) < 0) {
		tap_ok(0, "vnc_new for slow peers");
		goto out;
	}
	upgrade = ws_upgrade(vnc_http_port(vnc), "127.0.0.1");
	head_len = strlen("GET /websockify HTTP/1.1\r\n");
	upgrade_head = strndup(upgrade, head_len);
	upgrade_rest = upgrade + head_len;
	framed_len = ws_frame(framed, rfb_version, 12);

	ticker = event_new(base, -1, EV_PERSIST, tick_cb, NULL);
	schedstat_fd = open("/proc/thread-self/schedstat",
	    O_RDONLY | O_CLOEXEC);
	tick_last = tick_worst = 0;
	event_add(ticker, &tick);

	slow_start(&slows[0], "plain RFB, its version", vnc_port(vnc), NULL,
	    rfb_version, 12, 1);
	slow_start(&slows[1], "a WebSocket upgrade", vnc_port(vnc),
	    upgrade_head, upgrade_rest, strlen(upgrade_rest), 0);
	slow_start(&slows[2], "WebSocket, its version framed", vnc_port(vnc),
	    upgrade, framed, framed_len, 2);
	slow_start(&slows[3], "an HTTP request", vnc_http_port(vnc),
	    "GET /index.html HTTP/1.1\r\n", "Host: 127.0.0.1\r\n\r\n", 19, 0);
	stuck.port = vnc_http_port(vnc);
	pthread_create(&stuck.thread, NULL, stuck_http_main, &stuck);
	run_for(1.5);

	t0 = now_s();
	/* Raw pixels: what the loop spends is then the peers' doing, not
	 * compression's. */
	viewer_start_encodings(&v, vnc_port(vnc), NULL, "raw");
	tap_ok(wait_clients(1), "with slow peers about, a viewer connects");
	connect_s = now_s() - t0;
	tap_ok(connect_s < 1.0, "promptly (%.3f s)", connect_s);
	tap_ok(run_until(viewer_in_sync, &v, 5), "and sees the screen");
	for (int i = 0; i < 5; i++) {
		double t0 = now_s(), dt;

		guest_fill(i * 100, 10, i * 100 + 50, 60,
		    0x00102030u * (uint32_t)(i + 1));
		updated &= run_until(viewer_in_sync, &v, 2);
		dt = now_s() - t0;
		if (dt > worst_update)
			worst_update = dt;
		run_for(0.2);
	}
	tap_ok(updated && worst_update < 0.5, "and gets its updates promptly "
	    "(slowest %.3f s)", worst_update);

	tap_ok(run_until(slows_done, slows, 15), "the slow peers are closed");
	for (int i = 0; slows[i].name != NULL; i++) {
		double after = slows[i].closed - slows[i].started;

		pthread_join(slows[i].thread, NULL);
		if (slows[i].state != 1 || after < DEADLINE_MS / 1e3 - 0.1 ||
		    after > DEADLINE_MS / 1e3 + 1.0) {
			timely = false;
			tap_diag("%s: state %d, closed after %.3f s",
			    slows[i].name, slows[i].state, after);
		}
	}
	tap_ok(timely, "each at its deadline (%d ms after it connected)",
	    DEADLINE_MS);
	pthread_join(stuck.thread, NULL);
	tap_ok(stuck.state == 1 && run_until(http_timed_out_twice, NULL, 10),
	    "so are the HTTP request that never ends and the reader that "
	    "never reads (%llu)",
	    (unsigned long long)stats().http_timed_out);
	st = stats();
	tap_ok(st.handshakes_timed_out == 3 && st.handshakes == 0,
	    "three handshakes timed out, none is left (%llu, %u)",
	    (unsigned long long)st.handshakes_timed_out, st.handshakes);
	/*
	 * A loop that waited on one of these peers would be late by a
	 * second (their pace: a byte a second) or until their deadline;
	 * below that, what delays a 5 ms timer on a busy host (a lock a
	 * thread waiting for a CPU holds, page faults) is not the loop's:
	 * 50 ms was exceeded there (98 ms) with nothing blocked.
	 */
	tap_ok(tick_worst < 0.5, "a timer on the loop was never late by "
	    "half a second, as it would be waiting on a peer that sends a "
	    "byte a second (at worst %.1f ms, waits for a CPU %s)",
	    tick_worst * 1e3, schedstat_fd >= 0 ? "not counted" : "counted");
	guest_fill(0, 100, 64, 128, 0x0000ff00);
	tap_ok(run_until(viewer_in_sync, &v, 5), "the viewer still keeps up");
	viewer_stop(&v);
	tap_ok(wait_clients(0), "and leaves");
	close(stuck.fd);
	event_free(ticker);
	if (schedstat_fd >= 0)
		close(schedstat_fd);
	schedstat_fd = -1;
	free(upgrade_head);
	free(upgrade);
	vnc_free(vnc);
	vnc = NULL;
out:
	unlink(path);
	unlink(big);
	rmdir(dir);
}

/* --- the cap on handshakes ---------------------------------------------- */

#define CAP		8
#define CAP_DEADLINE_MS	2000

struct silent {
	int fd;
	double opened, closed;
	bool data;	/* the server said something */
};

static struct silent silents[CAP + 1];
static int silent_n;

/* Every silent socket [0, silent_n) closed by the server? */
static bool
silents_closed(void *arg)
{
	bool all = true;

	for (int i = 0; i < silent_n; i++) {
		char buf[64];
		ssize_t n = -1;

		while (silents[i].closed == 0 &&
		    (n = recv(silents[i].fd, buf, sizeof(buf),
		    MSG_DONTWAIT)) != 0) {
			if (n < 0 && errno == EAGAIN)
				break;
			if (n < 0) {
				n = 0;
				break;
			}
			silents[i].data = true;
		}
		if (silents[i].closed == 0 && n == 0)
			silents[i].closed = now_s();
		all &= silents[i].closed != 0;
	}
	return all;
}

static bool
handshakes_are_cap(void *arg)
{
	return stats().handshakes == CAP;
}

static void
test_handshake_cap(void)
{
	struct vnc_config cfg = {
		.fb = { host.fb, FB_W, FB_H, FB_STRIDE },
		.mode = VNC_REFRESH_POLL,
		.handshake_timeout_ms = CAP_DEADLINE_MS,
	};
	struct silent extra;
	struct viewer v;
	struct vnc_stats st;
	bool timely = true;

	if (server_new_cfg(&cfg) < 0) {
		tap_ok(0, "vnc_new for the cap");
		return;
	}
	for (silent_n = 0; silent_n < CAP; silent_n++) {
		silents[silent_n] = (struct silent){
		    .fd = connect_port(vnc_port(vnc)), .opened = now_s() };
	}
	tap_ok(run_until(handshakes_are_cap, NULL, 5),
	    "%d silent connections are %d handshakes", CAP, CAP);
	silents[CAP] = (struct silent){ .fd = connect_port(vnc_port(vnc)),
	    .opened = now_s() };
	silent_n = CAP + 1;
	(void)run_until(silents_closed, NULL, 1);
	extra = silents[CAP];
	tap_ok(extra.closed != 0 && !extra.data &&
	    stats().handshakes_refused == 1, "one more is closed at once, "
	    "before a word (after %.3f s)", extra.closed - extra.opened);
	viewer_start(&v, vnc_port(vnc), NULL);
	tap_ok(run_until(viewer_settled, &v, 5) && v.state == -1,
	    "so is a viewer while the cap is reached");
	viewer_stop(&v);
	tap_ok(run_until(silents_closed, NULL, 10),
	    "the silent ones are closed");
	for (int i = 0; i < CAP; i++) {
		double after = silents[i].closed - silents[i].opened;

		if (after < CAP_DEADLINE_MS / 1e3 - 0.1 ||
		    after > CAP_DEADLINE_MS / 1e3 + 1.0) {
			timely = false;
			tap_diag("silent %d closed after %.3f s", i, after);
		}
		close(silents[i].fd);
	}
	close(extra.fd);
	st = stats();
	tap_ok(timely && st.handshakes_timed_out == CAP && st.handshakes == 0,
	    "each at its deadline (%d ms; %llu timed out)", CAP_DEADLINE_MS,
	    (unsigned long long)st.handshakes_timed_out);
	viewer_start(&v, vnc_port(vnc), NULL);
	tap_ok(run_until(viewer_settled, &v, 5) && v.state == 1 &&
	    wait_clients(1), "then a viewer connects again");
	viewer_stop(&v);
	tap_ok(wait_clients(0), "and leaves");
	vnc_free(vnc);
	vnc = NULL;
}

static void
test_config_errors(void)
{
	struct vnc_config cfg = { .fb = { host.fb, FB_W, FB_H, FB_W } };
	char err[128];
	struct vnc *v;

	tap_ok(vnc_new(base, &cfg, &test_vnc_host, &v, err, sizeof(err)) ==
	    -EINVAL && v == NULL, "a stride shorter than a line is refused");
	cfg.fb.stride = FB_STRIDE;
	cfg.address = "not an address";
	tap_ok(vnc_new(base, &cfg, &test_vnc_host, &v, err, sizeof(err)) ==
	    -EINVAL, "so is an address that is none");
	vnc_free(NULL);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	host.fb = calloc((size_t)FB_W * FB_H, 4);
	host.words = (FB_STRIDE * FB_H / 4096 + 63) / 64;
	host.written = calloc(host.words, sizeof(uint64_t));
	if (base == NULL || host.fb == NULL || host.written == NULL)
		tap_bail("out of memory");
	/* Something to look at: a gradient. */
	for (int y = 0; y < FB_H; y++)
		for (int x = 0; x < FB_W; x++)
			host.fb[y * FB_W + x] = (uint32_t)(x & 0xff) << 16 |
			    (uint32_t)(y * 2) << 8 | (uint32_t)((x >> 3) & 0xff);

	test_config_errors();
	test_polling_server();
	test_update_encodings();
	test_password();
	test_event_driven();
	test_resize();
	test_web();
	test_slow_peers();
	test_handshake_cap();

	event_base_free(base);
	free(host.fb);
	free(host.written);
	return tap_done();
}
