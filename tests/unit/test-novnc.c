/*
 * The display in a real browser: headless Chromium opens noVNC's page
 * (Debian's novnc, served by the VNC server's own HTTP server) and talks
 * WebSockets to the RFB port, with no proxy in between, giving the
 * display's password from the page's URL; its screenshot must show the
 * two halves of the framebuffer in their colours.  Chromium takes its
 * screenshot when its budget of virtual time is spent, whether or not
 * the page has painted what came over the socket in real time: on a
 * busy host the first picture may be blank, so the browser is run again,
 * up to SHOT_TRIES times, until one shows the screen.
 *
 * Skips (77) only where Chromium or noVNC is not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <png.h>

#include "tap.h"
#include "unit-util.h"
#include "scratch.h"
#include "vnc.h"

#define NOVNC_DIR	"/usr/share/novnc"
#define FB_W		320
#define FB_H		240
#define LEFT		0x00ff0000u	/* red */
#define RIGHT		0x000000ffu	/* blue */
#define SHOT_TRIES	5
/* In the page's URL, in its fragment, as vm.display gives it. */
#define PASSWORD	"k3y-Tw0"

static struct event_base *base;
static pid_t browser;
static int browser_status = -1;
static char dir[256];

static int
host_dirty(void *opaque, uint64_t *bitmap)
{
	return 0;		/* the picture never changes */
}

static void
host_key(void *opaque, uint32_t keysym, bool down)
{
}

static void
host_pointer(void *opaque, int x, int y, unsigned int buttons)
{
}

/* At exit, before the scratch directory goes (atexit runs backwards). */
static void
kill_browser(void)
{
	if (browser > 0)
		kill(browser, SIGKILL);
}

static const char *
find_chromium(void)
{
	static const char *const names[] = {
		"/usr/bin/chromium", "/usr/bin/chromium-browser", NULL,
	};
	unsigned int i;

	for (i = 0; names[i] != NULL; i++)
		if (access(names[i], X_OK) == 0)
			return names[i];
	return NULL;
}

/* Polls the browser until it exits; the loop serves it meanwhile. */
static void
watch_cb(evutil_socket_t fd, short what, void *arg)
{
	int status;

	if (waitpid(browser, &status, WNOHANG) == browser) {
		browser = 0;
		browser_status = status;
		event_base_loopexit(base, NULL);
	}
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	tap_diag("the browser did not finish in time");
	event_base_loopexit(base, NULL);
}

static pid_t
start_browser(const char *chromium, const char *url, const char *shot)
{
	char profile[300], screenshot[320];
	pid_t pid;
	int null;

	snprintf(profile, sizeof(profile), "--user-data-dir=%s/profile", dir);
	snprintf(screenshot, sizeof(screenshot), "--screenshot=%s", shot);
	pid = fork();
	if (pid != 0)
		return pid;
	null = open("/dev/null", O_RDWR);
	dup2(null, 0);
	dup2(null, 1);
	dup2(null, 2);
	execl(chromium, chromium, "--headless=new", "--no-sandbox",
	    "--disable-gpu", "--disable-quic", "--no-first-run",
	    "--disable-background-networking", "--disable-component-update",
	    "--disable-sync", "--window-size=800,600",
	    "--virtual-time-budget=30000", profile, screenshot, url,
	    (char *)NULL);
	_exit(127);
}

int
main(void)
{
	static uint32_t fb[FB_W * FB_H];
	const struct timeval tick = { 0, 50000 }, limit = { 90, 0 };
	struct vnc_host host = {
		.key = host_key,
		.pointer = host_pointer,
		.dirty = host_dirty,
	};
	struct vnc_config cfg = {
		.password = PASSWORD,
		.web_dir = NOVNC_DIR,
		.fb = { fb, FB_W, FB_H, FB_W * 4 },
		.mode = VNC_REFRESH_POLL,
	};
	png_image img = { .version = PNG_IMAGE_VERSION };
	const char *shot_err = NULL;
	struct event *watch, *deadline;
	const char *chromium;
	struct vnc_stats st;
	struct vnc *vnc;
	char err[256], url[512], shot[300];
	uint32_t *pix = NULL, i, left = 0, right = 0, tries;
	struct stat sb;

	chromium = find_chromium();
	if (chromium == NULL)
		tap_skip_all("chromium is not installed");
	if (stat(NOVNC_DIR "/vnc.html", &sb) < 0)
		tap_skip_all("noVNC (Debian's novnc) is not installed");
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "%s", scratch_new("novnc"));
	atexit(kill_browser);
	for (i = 0; i < FB_W * FB_H; i++)
		fb[i] = i % FB_W < FB_W / 2 ? LEFT : RIGHT;

	base = event_base_new();
	if (base == NULL || vnc_new(base, &cfg, &host, &vnc, err,
	    sizeof(err)) < 0)
		tap_bail("vnc_new: %s", err);
	tap_ok(vnc_http_port(vnc) > 0, "HTTP server on port %d",
	    vnc_http_port(vnc));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/vnc.html?"
	    "autoconnect=1&host=127.0.0.1&port=%d&resize=off#password="
	    PASSWORD, vnc_http_port(vnc), vnc_port(vnc));
	snprintf(shot, sizeof(shot), "%s/shot.png", dir);
	tap_diag("%s", url);
	watch = event_new(base, -1, EV_PERSIST, watch_cb, NULL);
	deadline = evtimer_new(base, deadline_cb, NULL);
	for (tries = 1; tries <= SHOT_TRIES; tries++) {
		unlink(shot);
		browser = start_browser(chromium, url, shot);
		if (browser < 0)
			tap_bail("fork: %s", strerror(errno));
		event_add(watch, &tick);
		evtimer_add(deadline, &limit);
		event_base_dispatch(base);
		event_del(watch);
		event_del(deadline);
		if (browser_status != 0)
			break;
		left = right = 0;
		img = (png_image){ .version = PNG_IMAGE_VERSION };
		if (!png_image_begin_read_from_file(&img, shot)) {
			shot_err = img.message;
			break;
		}
		img.format = PNG_FORMAT_BGRA;
		pix = malloc(PNG_IMAGE_SIZE(img));
		if (pix == NULL || !png_image_finish_read(&img, NULL, pix, 0,
		    NULL))
			tap_bail("cannot read the screenshot");
		for (i = 0; i < img.width * img.height; i++) {
			left += (pix[i] & 0xffffff) == LEFT;
			right += (pix[i] & 0xffffff) == RIGHT;
		}
		free(pix);
		pix = NULL;
		png_image_free(&img);
		if (left >= FB_W / 2 * FB_H * 9 / 10 &&
		    right >= FB_W / 2 * FB_H * 9 / 10)
			break;
		tap_diag("screenshot %u: %u red, %u blue pixels: not painted "
		    "yet, once more", tries, left, right);
	}

	vnc_stats(vnc, &st);
	tap_ok(browser_status == 0, "chromium ran and exited (status %d)",
	    browser_status);
	tap_ok(st.connections >= 1 && st.updates_sent >= 1,
	    "noVNC connected over WebSockets and got the screen (%llu "
	    "updates, %llu bytes)", (unsigned long long)st.updates_sent,
	    (unsigned long long)st.bytes_sent);
	if (shot_err != NULL)
		tap_ok(0, "a screenshot was written: %s", shot_err);
	else
		tap_ok(left >= FB_W / 2 * FB_H * 9 / 10 &&
		    right >= FB_W / 2 * FB_H * 9 / 10,
		    "the browser shows both halves (%u red, %u blue pixels "
		    "of %ux%u, screenshot %u of at most %u)", left, right,
		    img.width, img.height, tries > SHOT_TRIES ? SHOT_TRIES :
		    tries, SHOT_TRIES);
	event_free(watch);
	event_free(deadline);
	vnc_free(vnc);
	event_base_free(base);
	return tap_done();
}
