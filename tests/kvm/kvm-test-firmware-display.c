/*
 * A firmware VM's screen from power-on: a VM with "firmware": "bios"
 * and a display gets a bochs-display whose ROM holds Debian's
 * vgabios-bochs-display.bin; SeaBIOS runs it during POST, the VGA BIOS
 * sets a mode through the DISPI registers and SeaBIOS draws its text
 * screen into the framebuffer, wherever it placed BAR 0.  A real VNC
 * viewer then sees a screen of the mode the guest set (not the
 * definition's size), not blank, with some lines of text on it; the
 * screenshot is that screen; no refresh timer runs while nobody
 * watches, before or after; and after a reset it all comes back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "hviewer.h"

#define NOTHING		"No bootable device"
/*
 * SeaBIOS and the VGA BIOS to their last word: a second or two where
 * /dev/kvm opens; in the nested test host, where real-mode code runs
 * emulated twice over, over 120 s was seen on a busy machine.  Only a
 * hang should reach the limit.
 */
#define POST_MS		300000
/* The definition's size, which SeaBIOS takes from the EDID. */
#define DEF_W		640
#define DEF_H		400

static bool
refresh_timer(struct h_conn *c, const char *name, int64_t *refreshes)
{
	struct json_object *d = h_display_stats(c, name), *t;
	bool on = json_object_object_get_ex(d, "refresh_timer", &t) &&
	    json_object_get_boolean(t);

	if (refreshes != NULL)
		*refreshes = h_int(d, "refreshes", -1);
	json_object_put(d);
	return on;
}

/* The refresh timer gone within ms (the worker sees the hang-up). */
static bool
refresh_gone_within(struct h_conn *c, const char *name, int ms)
{
	double deadline = h_now_ms() + ms;

	while (refresh_timer(c, name, NULL)) {
		if (h_now_ms() >= deadline)
			return false;
		h_sleep_ms(20);
	}
	return true;
}

/* Lines of the viewer's screen with a pixel unlike the top left one. */
static unsigned int
rows_drawn(const struct vview *v, int w, int h)
{
	uint32_t bg = vview_pixel(v, 0, 0);
	unsigned int rows = 0;

	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			if (vview_pixel(v, x, y) != bg) {
				rows++;
				break;
			}
	return rows;
}

/* Pump until the viewer's screen is w x h and has text, or ms pass. */
static bool
wait_screen(struct vview *v, int w, int h, int ms)
{
	double deadline = h_now_ms() + ms;

	for (;;) {
		if (v->client->width == w && v->client->height == h &&
		    v->area >= (uint64_t)w * h && rows_drawn(v, w, h) > 0)
			return true;
		if (h_now_ms() >= deadline || !viewer_pump(v, 100))
			return false;
	}
}

static void
test_screen(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "fd");
	struct json_object *reply = NULL, *bd, *on = NULL;
	uint32_t *shot = NULL, sw = 0, sh = 0;
	unsigned int mismatches = 0, rows, tries;
	int64_t w, h, refreshes = -1;
	struct vview v;
	int port;
	char pw[64];
	bool ok;

	tap_ok(h_create(c, "fd", "\"firmware\":\"bios\",\"vnc\":\"auto\","
	    "\"display\":\"%dx%d\"", DEF_W, DEF_H) == 0,
	    "created with firmware bios and a display");
	tap_ok(h_start(c, "fd") == 0, "started");
	tap_ok(h_vm_log_expect(c, "fd", log, NOTHING, 1, POST_MS) == 0,
	    "SeaBIOS finds nothing to boot (serial console)");

	ok = !refresh_timer(c, "fd", &refreshes);
	tap_ok(ok && refreshes == 0,
	    "no viewer yet: no refresh timer, no refresh (%lld)",
	    (long long)refreshes);
	bd = h_info_stats(c, "fd", "devices", "bochs-display", &reply);
	w = h_int(bd, "width", -1);
	h = h_int(bd, "height", -1);
	tap_ok(bd != NULL && h_int(bd, "rom_size", 0) >= 28 * 1024,
	    "a bochs-display with the VGA BIOS in its ROM (%s)",
	    bd != NULL ? h_text(bd) : "no bochs-display device");
	tap_ok(json_object_object_get_ex(bd, "enabled", &on) &&
	    json_object_get_boolean(on) && w > 0 && h > 0 &&
	    h_int(bd, "bpp", 0) == 32 && h_int(bd, "mode_sets", 0) >= 1,
	    "the VGA BIOS set a mode: %lldx%lld, 32 bpp",
	    (long long)w, (long long)h);
	tap_ok(h_int(bd, "bad_writes", -1) == 0 &&
	    h_int(bd, "bad_modes", -1) == 0 &&
	    h_int(bd, "bad_accesses", -1) == 0,
	    "and nothing it wrote was refused");
	json_object_put(reply);
	reply = NULL;
	bd = h_info_stats(c, "fd", "framebuffer", NULL, &reply);
	tap_ok(h_int(bd, "address", 0) != 0 && h_int(bd, "moves", 0) >= 1 &&
	    h_int(bd, "place_failures", -1) == 0,
	    "its memory mapped where SeaBIOS put BAR 0 (%s)", h_text(bd));
	json_object_put(reply);
	reply = NULL;

	/* With nobody watching, a screenshot shows the mode all the same. */
	rows = 0;
	if (h_screenshot_pixels(d, "fd", &shot, &sw, &sh) == 0)
		for (uint32_t y = 0; y < sh; y++)
			for (uint32_t x = 0; x < sw; x++)
				if ((shot[y * sw + x] ^ shot[0]) & 0xffffff) {
					rows++;
					break;
				}
	tap_ok(sw == w && sh == h && rows >= 8, "vm.screenshot without a "
	    "viewer: %ux%u, %u lines differ from the background", sw, sh,
	    rows);
	free(shot);
	shot = NULL;

	port = viewer_display(c, "fd", pw, sizeof(pw));
	tap_ok(viewer_open(&v, port, pw), "a viewer connects (port %d)",
	    port);
	if (v.client == NULL)
		goto stop;
	ok = wait_screen(&v, (int)w, (int)h, 20000);
	tap_ok(ok, "it sees the mode's %lldx%lld screen, not the definition's "
	    "%dx%d (%dx%d, %llu pixels in %u updates)", (long long)w,
	    (long long)h, DEF_W, DEF_H, v.client->width, v.client->height,
	    (unsigned long long)v.area, v.updates);
	rows = rows_drawn(&v, v.client->width, v.client->height);
	tap_ok(rows >= 8, "text on it: %u lines differ from the background",
	    rows);
	tap_ok(refresh_timer(c, "fd", NULL), "a viewer: the refresh timer "
	    "exists");

	/*
	 * The screenshot is what the viewer sees.  SeaBIOS's cursor
	 * blinks (a few times a second): compare again, a little later,
	 * until one pair was taken in the same phase.
	 */
	for (tries = 1; tries <= 20; tries++) {
		viewer_pump(&v, 50);
		free(shot);
		mismatches = ~0u;
		if (h_screenshot_pixels(d, "fd", &shot, &sw, &sh) < 0 ||
		    sw != w || sh != h || v.client->width != w ||
		    v.client->height != h)
			continue;
		mismatches = 0;
		for (uint32_t y = 0; y < sh; y++)
			for (uint32_t x = 0; x < sw; x++)
				mismatches += (shot[y * sw + x] & 0xffffff) !=
				    vview_pixel(&v, (int)x, (int)y);
		if (mismatches == 0)
			break;
	}
	tap_ok(mismatches == 0, "vm.screenshot (%ux%u) equals the viewer's "
	    "screen (%u pixels differ, %u tries)", sw, sh, mismatches,
	    tries);
	free(shot);
	vview_close(&v);
	tap_ok(refresh_gone_within(c, "fd", 10000),
	    "the viewer gone: no refresh timer");

	/* A reset builds a new machine: SeaBIOS sets it all up again. */
	reply = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"fd\"}");
	tap_ok(h_ret(reply) != NULL, "vm.reset (%s)", h_ret(reply) != NULL ?
	    "done" : h_text(reply));
	json_object_put(reply);
	reply = NULL;
	tap_ok(h_vm_log_expect(c, "fd", log, NOTHING, 2, POST_MS) == 0,
	    "SeaBIOS runs again to the same verdict");
	bd = h_info_stats(c, "fd", "devices", "bochs-display", &reply);
	tap_ok(h_int(bd, "width", -1) == w && h_int(bd, "height", -1) == h &&
	    h_int(bd, "mode_sets", 0) == 1,
	    "the new machine's display has the same mode (%s)", h_text(bd));
	json_object_put(reply);
	reply = NULL;
	bd = h_info_stats(c, "fd", "framebuffer", NULL, &reply);
	tap_ok(h_int(bd, "address", 0) != 0, "and its memory is mapped "
	    "again (%s)", h_text(bd));
	json_object_put(reply);
	reply = NULL;
stop:
	tap_ok(h_stop(c, "fd", true, -1, H_REPLY_MS) == 0, "force stop");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	h_need_seabios(true);
	vview_quiet();
	c = h_setup(&d);
	test_screen(d, c);
	h_close(c);
	return h_done();
}
