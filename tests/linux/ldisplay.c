/* See ldisplay.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hviewer.h"
#include "ldisplay.h"

/* Pixels that are not black: fbcon's text. */
static unsigned int
ld_lit(const struct vview *v)
{
	const uint32_t *fb = (const uint32_t *)v->client->frameBuffer;
	size_t i, n = (size_t)v->client->width * v->client->height;
	unsigned int lit = 0;

	for (i = 0; i < n; i++)
		lit += (fb[i] & 0xffffff) != 0;
	return lit;
}

/* Pixels that differ from an earlier copy of the screen. */
static unsigned int
ld_changed(const struct vview *v, const uint32_t *before)
{
	const uint32_t *fb = (const uint32_t *)v->client->frameBuffer;
	size_t i, n = (size_t)v->client->width * v->client->height;
	unsigned int changed = 0;

	for (i = 0; i < n; i++)
		changed += ((fb[i] ^ before[i]) & 0xffffff) != 0;
	return changed;
}

static bool
ld_refresh_timer(struct lg_vm *vm)
{
	struct json_object *r, *stats, *disp, *t;
	bool on = false;

	r = h_callf(vm->c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}",
	    vm->name);
	if (json_object_object_get_ex(h_ret(r), "stats", &stats) &&
	    json_object_object_get_ex(stats, "display", &disp) &&
	    json_object_object_get_ex(disp, "refresh_timer", &t))
		on = json_object_get_boolean(t);
	json_object_put(r);
	return on;
}

/* vm.screenshot's PNG as "# png: " lines of base64. */
static void
ld_show(struct lg_vm *vm)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char *png;
	char out[80];
	size_t len, i, o = 0;

	if (h_screenshot(vm->d, vm->name, &png, &len) < 0)
		return;
	tap_diag("png: %zu bytes follow", len);
	for (i = 0; i < len; i += 3) {
		uint32_t w = (uint32_t)png[i] << 16 |
		    (i + 1 < len ? (uint32_t)png[i + 1] << 8 : 0) |
		    (i + 2 < len ? png[i + 2] : 0);

		out[o++] = b64[w >> 18 & 63];
		out[o++] = b64[w >> 12 & 63];
		out[o++] = i + 1 < len ? b64[w >> 6 & 63] : '=';
		out[o++] = i + 2 < len ? b64[w & 63] : '=';
		if (o >= 72 || i + 3 >= len) {
			out[o] = '\0';
			tap_diag("png: %s", out);
			o = 0;
		}
	}
	free(png);
}

void
ld_check_display(struct lg_vm *vm, lg_check_fn check, bool show)
{
	struct json_object *r;
	struct vview v;
	unsigned int lit, changed;
	uint32_t *before;
	size_t bytes;
	char *out, pw[64];
	int port, st, i, paused;
	double deadline;

	r = h_callf(vm->c, H_REPLY_MS, "vm.display", "{\"name\":\"%s\"}",
	    vm->name);
	port = (int)h_int(h_ret(r), "port", -1);
	snprintf(pw, sizeof(pw), "%s", h_str(h_ret(r), "password") != NULL ?
	    h_str(h_ret(r), "password") : "");
	check(vm, port > 0 && pw[0] != '\0', "vm.display, with the password "
	    "made at the start: %s", h_text(r));
	json_object_put(r);
	out = lg_cmd(vm, "dmesg | grep -c 'fb0: VESA'", &st, LG_CMD_MS);
	check(vm, out != NULL && atoi(out) >= 1,
	    "the kernel's vesafb took the framebuffer (%s)",
	    out != NULL ? h_flat(out) : "no answer");
	free(out);
	check(vm, !ld_refresh_timer(vm), "no viewer, no refresh timer");
	if (port <= 0 || !viewer_open(&v, port, pw)) {
		check(vm, false, "a VNC viewer connects");
		return;
	}
	viewer_pump(&v, 3000);
	lit = ld_lit(&v);
	check(vm, v.updates >= 1 && lit > 2000, "the viewer sees the "
	    "framebuffer console (%u updates, %u lit pixels of %dx%d)",
	    v.updates, lit, v.client->width, v.client->height);
	check(vm, ld_refresh_timer(vm), "with a viewer, a refresh timer");
	bytes = (size_t)v.client->width * v.client->height * 4;
	before = malloc(bytes);
	if (before == NULL)
		tap_bail("out of memory");
	memcpy(before, v.client->frameBuffer, bytes);
	viewer_type(&v, "echo vnc-typed-$((6*7)) >/dev/ttyS0\n");
	check(vm, lg_expect(vm, "vnc-typed-42", LG_CMD_MS, false) == 0,
	    "a command typed through VNC into the tty0 shell ran");
	viewer_pump(&v, 1000);
	changed = ld_changed(&v, before);
	free(before);
	/* The command line and a new prompt: some hundreds of pixels. */
	check(vm, changed > 300, "and the viewer saw it typed (%u pixels "
	    "changed)", changed);
	/*
	 * Pausing while a viewer watches: fbcon's blinking cursor keeps
	 * writing to the write-protected framebuffer, and a vCPU waiting
	 * on such a write must not keep the pause from completing.
	 */
	for (i = 0, paused = 0; i < 5; i++) {
		r = h_callf(vm->c, H_REPLY_MS, "vm.pause", "{\"name\":\"%s\"}",
		    vm->name);
		paused += h_ret(r) != NULL;
		json_object_put(r);
		viewer_pump(&v, 150);
		r = h_callf(vm->c, H_REPLY_MS, "vm.resume",
		    "{\"name\":\"%s\"}", vm->name);
		paused += h_ret(r) != NULL;
		json_object_put(r);
		viewer_pump(&v, 250);
	}
	viewer_type(&v, "echo vnc-again-$((7*8)) >/dev/ttyS0\n");
	check(vm, paused == 10 && lg_expect(vm, "vnc-again-56", LG_CMD_MS,
	    false) == 0, "5 pauses and resumes with a viewer (%d of 10 "
	    "replies), then typing still works", paused);
	if (show)
		ld_show(vm);
	vview_close(&v);
	/* The worker sees the hang-up on its own loop: wait, bounded. */
	deadline = h_now_ms() + LG_CMD_MS;
	while (ld_refresh_timer(vm) && h_now_ms() < deadline)
		h_sleep_ms(50);
	check(vm, !ld_refresh_timer(vm), "viewer gone, no refresh timer");
}
