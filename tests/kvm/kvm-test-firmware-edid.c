/*
 * The bochs-display's EDID sets a firmware VM's screen size: with
 * "display": "800x600", SeaBIOS's VGA BIOS (vgabios-bochs-display.bin)
 * reads the EDID at 0 in BAR 2 and sets 800x600 instead of its own
 * 1024x768; the device's mode, vm.display and the screenshot all say
 * 800x600.  A 4096-wide display has no EDID (a detailed timing holds
 * 12 bits a size): SeaBIOS sets 1024x768, and vm.display reports that,
 * the mode in use, not the definition's size.
 *
 * Skipped where SeaBIOS or its VGA BIOS is not installed.  Real-mode
 * code is emulated on our machines' /dev/kvm: the waits are long, and
 * each ends at its event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define NOTHING		"No bootable device"
#define POST_MS		300000

/*
 * name with a display of dw x dh boots to SeaBIOS's last word; its
 * device's mode, vm.display and the screenshot must be w x h.
 */
static void
test_size(struct h_daemon *d, struct h_conn *c, const char *name,
    int dw, int dh, int w, int h, bool edid)
{
	const char *log = h_console_log(d, name);
	struct json_object *reply = NULL, *bd, *r;
	uint32_t *shot = NULL, sw = 0, sh = 0;
	int64_t mw, mh;
	bool ok;

	tap_ok(h_create(c, name, "\"firmware\":\"bios\",\"vnc\":\"auto\","
	    "\"display\":\"%dx%d\"", dw, dh) == 0,
	    "%s: created with firmware bios and a %dx%d display", name, dw, dh);
	tap_ok(h_start(c, name) == 0, "%s: started", name);
	tap_ok(h_vm_log_expect(c, name, log, NOTHING, 1, POST_MS) == 0,
	    "%s: SeaBIOS finds nothing to boot", name);
	bd = h_info_stats(c, name, "devices", "bochs-display", &reply);
	mw = h_int(bd, "width", -1);
	mh = h_int(bd, "height", -1);
	tap_ok(mw == w && mh == h && h_int(bd, "mode_sets", 0) >= 1,
	    "%s: the VGA BIOS set %lldx%lld (%s)", name, (long long)mw,
	    (long long)mh, bd != NULL ? h_text(bd) : "no device");
	tap_ok(edid ? h_int(bd, "edid_reads", 0) > 0 : true,
	    "%s: %s", name, edid ? "it read the EDID" : "(no EDID to read)");
	json_object_put(reply);
	r = h_callf(c, H_REPLY_MS, "vm.display", "{\"name\":\"%s\"}", name);
	tap_ok(h_int(h_ret(r), "width", -1) == w &&
	    h_int(h_ret(r), "height", -1) == h, "%s: vm.display says %lldx%lld",
	    name, (long long)h_int(h_ret(r), "width", -1),
	    (long long)h_int(h_ret(r), "height", -1));
	json_object_put(r);
	ok = h_screenshot_pixels(d, name, &shot, &sw, &sh) == 0;
	tap_ok(ok && sw == (uint32_t)w && sh == (uint32_t)h,
	    "%s: the screenshot is %ux%u", name, sw, sh);
	free(shot);
	tap_ok(h_stop(c, name, true, -1, H_REPLY_MS) == 0, "%s: force stop",
	    name);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	h_need_seabios(true);
	c = h_setup(&d);
	test_size(d, c, "e800", 800, 600, 800, 600, true);
	test_size(d, c, "e4k", 4096, 2160, 1024, 768, false);
	h_close(c);
	return h_done();
}
