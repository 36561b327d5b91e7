/*
 * A guest's screen over VNC, end to end: the fb test guest draws four
 * quadrants into the framebuffer and echoes the keys it gets from the
 * i8042; real viewers (libvncclient) see what it drew, type into it,
 * receive only what changed; vm.screenshot's PNG equals what a viewer
 * sees pixel for pixel; a password (by default one made at each start)
 * is enforced; the web client's files come from the sandboxed worker;
 * and the refresh exists exactly while a viewer is connected (from the
 * display's counters).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rfb/keysym.h>

#include "harness.h"
#include "hviewer.h"

#define W	640
#define H	480

/* What the fb guest draws (tests/guests/fb.c). */
#define RED	0xff0000u
#define GREEN	0x00ff00u
#define BLUE	0x0000ffu
#define WHITE	0xffffffu

/* How the worker finds changes: "write-protect" or "dirty-log". */
static char tracking[32];

static int64_t
display_counter(struct h_conn *c, const char *name, const char *key)
{
	struct json_object *d = h_display_stats(c, name);
	int64_t v = h_int(d, key, -1);

	json_object_put(d);
	return v;
}

static bool
display_refresh_timer(struct h_conn *c, const char *name)
{
	struct json_object *d = h_display_stats(c, name), *t;
	bool on = json_object_object_get_ex(d, "refresh_timer", &t) &&
	    json_object_get_boolean(t);

	json_object_put(d);
	return on;
}

/*
 * Whether the display's refresh timer went away, and with streaming
 * it stopped polling, within ms: the worker sees a viewer's hang-up
 * on its own loop, later on a loaded host.
 */
static bool
display_idle_within(struct h_conn *c, const char *name, int ms)
{
	double deadline = h_now_ms() + ms;
	struct json_object *d;
	bool idle;

	for (;;) {
		d = h_display_stats(c, name);
		idle = !display_refresh_timer(c, name) && h_text(d) != NULL &&
		    strstr(h_text(d), "\"streaming\":true") == NULL;
		json_object_put(d);
		if (idle || h_now_ms() >= deadline)
			return idle;
		h_sleep_ms(20);
	}
}

static void
test_viewer(struct h_daemon *d, struct h_conn *c, struct h_conn *ev,
    struct h_console *con, int port, const char *pw)
{
	struct vview v, v2;
	struct json_object *e;
	uint32_t *shot = NULL, sw = 0, sh = 0, x, y;
	unsigned int mismatches = 0, before;
	int64_t refreshes;
	int ret;

	tap_ok(!display_refresh_timer(c, "scr") &&
	    display_counter(c, "scr", "refreshes") == 0,
	    "no viewer: no refresh timer, no refresh");

	tap_ok(viewer_open(&v, port, pw), "a viewer with it connects");
	if (v.client == NULL)
		return;
	ret = viewer_wait_updates(&v, 1, 10000) &&
	    viewer_wait_area(&v, (uint64_t)W * H, 10000);
	tap_ok(ret, "it gets the whole screen (%llu pixels in %u updates)",
	    (unsigned long long)v.area, v.updates);
	tap_ok(v.client->width == W && v.client->height == H,
	    "the screen is %dx%d (want %dx%d)", v.client->width,
	    v.client->height, W, H);
	tap_ok(vview_pixel(&v, W / 4, H / 4) == RED &&
	    vview_pixel(&v, 3 * W / 4, H / 4) == GREEN &&
	    vview_pixel(&v, W / 4, 3 * H / 4) == BLUE &&
	    vview_pixel(&v, 3 * W / 4, 3 * H / 4) == WHITE,
	    "it shows the guest's quadrants (%06x %06x %06x %06x)",
	    vview_pixel(&v, W / 4, H / 4), vview_pixel(&v, 3 * W / 4, H / 4),
	    vview_pixel(&v, W / 4, 3 * H / 4),
	    vview_pixel(&v, 3 * W / 4, 3 * H / 4));
	e = h_read_event(ev, 5000);
	tap_ok(e != NULL && strcmp(h_str(e, "event"), "display.connected") == 0,
	    "event display.connected (%s)", h_text(e));
	json_object_put(e);
	tap_ok(display_refresh_timer(c, "scr"),
	    "a viewer: the refresh timer exists");

	/* The screenshot is what the viewer sees, pixel for pixel. */
	ret = h_screenshot_pixels(d, "scr", &shot, &sw, &sh);
	tap_ok(ret == 0 && sw == W && sh == H, "vm.screenshot: a %ux%u PNG",
	    sw, sh);
	if (shot != NULL && sw == W && sh == H) {
		for (y = 0; y < H; y++)
			for (x = 0; x < W; x++)
				mismatches += (shot[y * W + x] & 0xffffff) !=
				    vview_pixel(&v, (int)x, (int)y);
		tap_ok(mismatches == 0, "the PNG equals the viewer's screen "
		    "(%u pixels differ)", mismatches);
	}
	free(shot);

	/*
	 * Static screen: with write protection nothing runs at all; with
	 * the dirty log the refresh has backed off to its slow pace.
	 */
	viewer_pump(&v, 1000);
	refreshes = display_counter(c, "scr", "refreshes");
	viewer_pump(&v, 1000);
	refreshes = display_counter(c, "scr", "refreshes") - refreshes;
	if (strcmp(tracking, "write-protect") == 0)
		tap_ok(refreshes == 0, "a static screen with a viewer: no "
		    "refresh in 1 s (%lld)", (long long)refreshes);
	else
		tap_ok(refreshes <= 3, "a static screen with a viewer: "
		    "%lld refreshes in 1 s (dirty log, slow pace)",
		    (long long)refreshes);

	/* Typing: the guest sees the keys, draws, only that is sent. */
	before = v.updates;
	v.area = 0;
	v.bottom = 0;
	SendKeyEvent(v.client, XK_a, TRUE);
	SendKeyEvent(v.client, XK_a, FALSE);
	tap_ok(h_expect(con, "fb: key 0x1e", 5000) == 0 &&
	    h_expect(con, "fb: key 0x9e", 5000) == 0,
	    "a key typed in the viewer reaches the guest (make, break)");
	SendKeyEvent(v.client, XK_Shift_L, TRUE);
	SendKeyEvent(v.client, XK_b, TRUE);
	SendKeyEvent(v.client, XK_b, FALSE);
	SendKeyEvent(v.client, XK_Shift_L, FALSE);
	tap_ok(h_expect(con, "fb: key 0x2a", 5000) == 0 &&
	    h_expect(con, "fb: key 0x30", 5000) == 0 &&
	    h_expect(con, "fb: key 0xb0", 5000) == 0 &&
	    h_expect(con, "fb: key 0xaa", 5000) == 0,
	    "with its modifier, in order");
	tap_ok(viewer_wait_updates(&v, before + 1, 5000),
	    "the square the guest drew is sent");
	viewer_pump(&v, 300);
	/*
	 * The squares fill the first 64 lines.  Changes are known by the
	 * page, and a page is 1.6 lines at this width, so whole lines are
	 * sent, rounded to 16-line tiles: nothing below line 96.
	 */
	tap_ok(v.area > 0 && v.bottom > 0 && v.bottom <= 96,
	    "only what changed is sent (%llu pixels, down to line %d of %d)",
	    (unsigned long long)v.area, v.bottom, H);

	/* A second viewer at the same time. */
	tap_ok(viewer_open(&v2, port, pw) &&
	    viewer_wait_updates(&v2, 1, 10000) &&
	    viewer_wait_area(&v2, (uint64_t)W * H, 10000) &&
	    vview_pixel(&v2, 3 * W / 4, 3 * H / 4) == WHITE,
	    "a second viewer at the same time sees the screen");
	json_object_put(h_read_event(ev, 5000));
	vview_close(&v2);
	json_object_put(h_read_event(ev, 5000));

	vview_close(&v);
	e = h_read_event(ev, 5000);
	tap_ok(e != NULL &&
	    strcmp(h_str(e, "event"), "display.disconnected") == 0,
	    "event display.disconnected (%s)", h_text(e));
	json_object_put(e);
	tap_ok(display_idle_within(c, "scr", 10000),
	    "the last viewer gone: no refresh timer");
	refreshes = display_counter(c, "scr", "refreshes");
	h_sleep_ms(500);
	tap_ok(display_counter(c, "scr", "refreshes") == refreshes,
	    "and no refresh without a viewer");
}

static void
test_password(struct h_conn *c)
{
	struct vview v;
	char pw[64];
	int port;

	tap_ok(h_create(c, "pw", "\"kernel\":\"%s\",\"cmdline\":\"fb=%dx%d\","
	    "\"vnc\":\"auto\",\"display\":\"%dx%d\",\"vnc_password\":\"s3cret\"",
	    h_env("VMMD_GUEST_FB"), W, H, W, H) == 0 && h_start(c, "pw") == 0,
	    "a VM with a VNC password of its own starts");
	port = viewer_display(c, "pw", pw, sizeof(pw));
	tap_ok(strcmp(pw, "s3cret") == 0, "vm.display shows it");
	tap_ok(!viewer_open(&v, port, "wrong"), "a wrong password is refused");
	tap_ok(!viewer_open(&v, port, NULL), "no password is refused");
	tap_ok(viewer_open(&v, port, "s3cret") &&
	    viewer_wait_updates(&v, 1, 10000),
	    "the right one gets the screen");
	vview_close(&v);
	h_stop(c, "pw", true, -1, H_REPLY_MS);

	tap_ok(h_create(c, "open", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"fb=%dx%d\",\"vnc\":\"auto\",\"display\":\"%dx%d\","
	    "\"vnc_password\":false", h_env("VMMD_GUEST_FB"), W, H, W,
	    H) == 0 && h_start(c, "open") == 0,
	    "a VM whose definition says \"vnc_password\": false starts");
	port = viewer_display(c, "open", pw, sizeof(pw));
	tap_ok(pw[0] == '\0', "vm.display shows no password");
	tap_ok(viewer_open(&v, port, NULL) &&
	    viewer_wait_updates(&v, 1, 10000),
	    "a viewer without one gets the screen");
	vview_close(&v);
	h_stop(c, "open", true, -1, H_REPLY_MS);
}

/* GET path from 127.0.0.1:port: the start of the answer, in buf. */
/* Whether the process maps a file whose path holds name. */
static bool
maps_file(pid_t pid, const char *name)
{
	char path[64], line[1024];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, name) != NULL;
	fclose(f);
	return found;
}

static bool
http_get(int port, const char *path, char *buf, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 10, 0 };
	char req[256];
	size_t got = 0;
	ssize_t n;
	int fd, rl;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	rl = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\n\r\n", path);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    write(fd, req, (size_t)rl) != rl) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return got > 0;
}

/* noVNC's files, from the sandboxed worker's own web server. */
static void
test_web(struct h_conn *c)
{
	struct json_object *r;
	const char *url, *p;
	char buf[4096];
	int port = 0;

	if (access("/usr/share/novnc/vnc.html", R_OK) < 0) {
		tap_ok(1, "# SKIP noVNC (Debian's novnc) is not installed");
		tap_ok(1, "# SKIP noVNC (Debian's novnc) is not installed");
		tap_ok(1, "# SKIP noVNC (Debian's novnc) is not installed");
		return;
	}
	tap_ok(h_create(c, "web", "\"kernel\":\"%s\",\"cmdline\":\"fb=%dx%d\","
	    "\"vnc\":\"auto\",\"display\":\"%dx%d\",\"vnc_web\":true",
	    h_env("VMMD_GUEST_FB"), W, H, W, H) == 0 && h_start(c, "web") == 0,
	    "a VM with the web client starts");
	r = h_callf(c, H_REPLY_MS, "vm.display", "{\"name\":\"web\"}");
	url = h_str(h_ret(r), "http");
	if (url != NULL)
		(void)sscanf(url, "http://127.0.0.1:%d/", &port);
	tap_ok(url != NULL && h_str(h_ret(r), "password") != NULL &&
	    strlen(h_str(h_ret(r), "password")) == 8 &&
	    (p = strstr(url, "#password=")) != NULL &&
	    strcmp(p + 10, h_str(h_ret(r), "password")) == 0,
	    "the page's address carries the password in its fragment (%s)",
	    url != NULL ? url : "none");
	json_object_put(r);
	tap_ok(port > 0 && http_get(port, "/vnc.html", buf, sizeof(buf)) &&
	    strncmp(buf, "HTTP/1.1 200 ", 13) == 0 &&
	    strstr(buf, "noVNC") != NULL &&
	    http_get(port, "/core/rfb.js", buf, sizeof(buf)) &&
	    strstr(buf, "Content-Type: text/javascript") != NULL,
	    "the worker serves noVNC's page and scripts (port %d)", port);
	h_stop(c, "web", true, -1, H_REPLY_MS);
}

/*
 * A screen that never stops changing: write protection would cost two
 * system calls a page, so the display polls the dirty log while it
 * streams, and stops when the viewer goes.  The guest draws every
 * millisecond, so that a vCPU is nearly always stopped on a
 * write-protect fault when the display switches to the dirty log; each
 * viewer session switches once more (a switch that changed the memory
 * slot under such a vCPU used to hang the worker for good).
 */
static void
test_streaming(struct h_conn *c, struct h_daemon *d)
{
	struct json_object *disp;
	struct h_console *con;
	struct vview v;
	unsigned int updates;
	double t0;
	bool got, idle;
	int session;

	tap_ok(h_create(c, "anim", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"fb=%dx%d anim=1\",\"vnc\":\"auto\",\"display\":\"%dx%d\"",
	    h_env("VMMD_GUEST_FB"), W, H, W, H) == 0 && h_start(c, "anim") == 0,
	    "anim: a guest that redraws all the time starts");
	con = h_console_open(d, "anim");
	tap_ok(con != NULL && h_expect(con, "fb: anim", H_BOOT_MS) == 0,
	    "anim: it animates");
	h_console_close(con);
	for (session = 1; session <= 3; session++) {
		if (!viewer_open_vm(&v, c, "anim")) {
			tap_ok(false, "anim: a viewer connects (session %d)",
			    session);
			break;
		}
		viewer_pump(&v, 1000);
		updates = v.updates;
		t0 = h_now_ms();
		got = viewer_wait_updates(&v, updates + 5, 10000);
		tap_ok(got, "anim: the viewer keeps getting updates (%u in "
		    "%.1f s, session %d)", v.updates - updates,
		    (h_now_ms() - t0) / 1000, session);
		disp = h_display_stats(c, "anim");
		if (strcmp(tracking, "write-protect") == 0)
			tap_ok(h_int(disp, "streaming_switches", 0) >=
			    session, "anim: the display polls while "
			    "the screen streams (%s)", h_text(disp));
		json_object_put(disp);
		vview_close(&v);
		idle = display_idle_within(c, "anim", 10000);
		disp = h_display_stats(c, "anim");
		tap_ok(idle && h_text(disp) != NULL && strstr(h_text(disp),
		    "\"streaming\":false") != NULL,
		    "anim: the viewer gone, no refresh and no polling (%s)",
		    h_text(disp));
		json_object_put(disp);
	}
	h_stop(c, "anim", true, -1, H_REPLY_MS);
}

int
main(void)
{
	struct h_console *con;
	struct json_object *r, *stats, *disp;
	struct h_daemon *d;
	struct h_conn *c, *ev;
	struct vview v;
	char pw[64], *log;
	int port;

	h_init();
	c = h_setup(&d);
	ev = h_connect(d);
	json_object_put(h_call(ev, "events.subscribe", NULL, H_REPLY_MS));

	tap_ok(h_create(c, "plain", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0 && h_start(c, "plain") == 0,
	    "a VM without a display starts");
	{
		pid_t pid = h_vm_pid(c, "plain");

		tap_ok(pid > 0 && maps_file(pid, "/libc.so") &&
		    !maps_file(pid, "vmmd-vnc.so") &&
		    !maps_file(pid, "libvncserver"),
		    "its worker (%d) maps neither the VNC module nor "
		    "libvncserver", (int)pid);
	}
	h_expect_error(c, "vm.display", "{\"name\":\"plain\"}", "bad_state",
	    "vm.display of a VM without a display");
	h_stop(c, "plain", true, -1, H_REPLY_MS);

	tap_ok(h_create(c, "scr", "\"kernel\":\"%s\",\"cmdline\":\"fb=%dx%d\","
	    "\"vnc\":\"auto\",\"display\":\"%dx%d\"", h_env("VMMD_GUEST_FB"),
	    W, H, W, H) == 0, "scr: created with a display");
	h_expect_error(c, "vm.display", "{\"name\":\"scr\"}", "bad_state",
	    "vm.display before it runs");
	tap_ok(h_start(c, "scr") == 0, "scr: started");
	con = h_console_open(d, "scr");
	if (con == NULL)
		tap_bail("no console");
	tap_ok(h_expect(con, "fb: drawn", H_BOOT_MS) == 0,
	    "the guest drew its picture");
	tap_ok(maps_file(h_vm_pid(c, "scr"), "vmmd-vnc.so") &&
	    maps_file(h_vm_pid(c, "scr"), "libvncserver"),
	    "a worker with a display loaded the VNC module");

	r = h_callf(c, H_REPLY_MS, "vm.display", "{\"name\":\"scr\"}");
	port = (int)h_int(h_ret(r), "port", -1);
	tap_ok(port >= 5900 && port < 6000 &&
	    h_str(h_ret(r), "vnc") != NULL &&
	    h_int(h_ret(r), "clients", -1) == 0,
	    "vm.display: %s", h_text(r));
	snprintf(tracking, sizeof(tracking), "%s",
	    h_str(h_ret(r), "dirty_tracking") ? h_str(h_ret(r),
	    "dirty_tracking") : "");
	tap_diag("dirty tracking: %s", tracking);
	/* The tracking is made while the worker still has vmmd's rights:
	 * a vmmd running as root is never refused it for want of them. */
	log = h_read_file(d->log, NULL);
	tap_ok(geteuid() != 0 || (log != NULL && strstr(log, "no userfaultfd "
	    "write protection (Operation not permitted)") == NULL),
	    "write protection was not refused for want of privilege (%s)",
	    tracking);
	free(log);
	snprintf(pw, sizeof(pw), "%s", h_str(h_ret(r), "password") ?
	    h_str(h_ret(r), "password") : "");
	json_object_put(r);
	tap_ok(strlen(pw) == 8, "by default a display has a password, made "
	    "when the VM started (%s)", pw);
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"scr\"}");
	tap_ok(json_object_object_get_ex(h_ret(r), "stats", &stats) &&
	    json_object_object_get_ex(stats, "display", &disp) &&
	    h_str(disp, "password") != NULL &&
	    strcmp(h_str(disp, "password"), pw) == 0,
	    "vm.info shows it too");
	json_object_put(r);
	tap_ok(!viewer_open(&v, port, NULL), "a viewer without it is refused");
	/* The VM's state events came first: skip them. */
	while ((r = h_read_event(ev, 200)) != NULL)
		json_object_put(r);

	test_viewer(d, c, ev, con, port, pw);
	test_password(c);
	test_web(c);
	test_streaming(c, d);

	h_console_close(con);
	tap_ok(h_stop(c, "scr", true, -1, H_REPLY_MS) == 0, "scr: stopped");
	h_close(ev);
	h_close(c);
	return h_done();
}
