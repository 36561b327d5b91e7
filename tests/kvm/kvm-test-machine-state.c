/*
 * The whole machine's state survives being written out and read back:
 * the demo guest (it prints the time once a second from its LAPIC
 * timer) is paused, and on each resume the test build's hook
 * (test-hook.h, VMMD_TEST_VCPU_STATE=machine) captures the VM clock,
 * TSC, both PICs, the IOAPIC, the PIT, every vCPU and the board's
 * devices (walked from the board table: UART, RTC, i8042, the PCI host
 * bridge, a virtio-rng function the demo guest leaves alone) into
 * sections,
 * restores junk over them (every IOAPIC pin and PIC line masked, the
 * registers clobbered), reads the sections back and restores them in
 * machine-state.h's order.  The guest goes on ticking, never restarted,
 * and the hook finds the chips as they were and the clock not gone
 * back.
 *
 * Then a firmware VM with a display (SeaBIOS at its "No bootable
 * device" prompt, its VGA BIOS's mode set on the bochs-display, the PM
 * block and BARs where SeaBIOS put them) goes through the same round:
 * its screen is the same picture after it, the framebuffer where it
 * was, and it still runs.  Last, a VM with a CD-ROM (an AHCI
 * controller and its ATAPI drive) goes through it too.  Each time the
 * hook also tries a save with a device made to lack its save op: it is
 * refused, naming the device (the UART, the board's first).
 *
 * VMMD_TEST_VCPU_STATE=machine-clobber in the test's environment makes
 * the hook leave the junk: the test must then fail.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <png.h>

#include "harness.h"
#include "state-rounds.h"

#define HOOK_LINE	"test hook: machine state "
#define HOOK_FAILED	"test hook: machine state: "
#define UNSAVED		"test hook: a device without save: com1: the " \
			"device cannot save its state"
#define ROUNDS		3
#define NOTHING		"No bootable device"
/*
 * SeaBIOS and the VGA BIOS to their last word: a second or two where
 * /dev/kvm opens; in the nested test host, where real-mode code runs
 * emulated twice over, over 120 s was seen on a busy machine.  Only a
 * hang should reach the limit.
 */
#define POST_MS		300000

/* vm.screenshot's PNG as 0xaarrggbb words, *w x *h; NULL + diag. */
static uint32_t *
screenshot(struct h_daemon *d, const char *name, uint32_t *w, uint32_t *h)
{
	png_image img = { .version = PNG_IMAGE_VERSION };
	uint32_t *px = NULL;
	unsigned char *png;
	size_t len;

	if (h_screenshot(d, name, &png, &len) < 0)
		return NULL;
	if (png_image_begin_read_from_memory(&img, png, len)) {
		img.format = PNG_FORMAT_BGRA;
		*w = img.width;
		*h = img.height;
		px = malloc(PNG_IMAGE_SIZE(img));
		if (px != NULL && !png_image_finish_read(&img, NULL, px, 0,
		    NULL)) {
			free(px);
			px = NULL;
		}
	}
	if (px == NULL)
		tap_diag("screenshot: not a PNG: %s", img.message);
	png_image_free(&img);
	free(png);
	return px;
}

/* Lines of a w x h picture with a pixel unlike the top left one. */
static unsigned int
rows_drawn(const uint32_t *px, uint32_t w, uint32_t h)
{
	unsigned int rows = 0;

	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++)
			if ((px[y * w + x] ^ px[0]) & 0xffffff) {
				rows++;
				break;
			}
	return rows;
}

static size_t
pixels_differ(const uint32_t *a, const uint32_t *b, uint32_t w, uint32_t h)
{
	size_t n = 0;

	for (size_t i = 0; i < (size_t)w * h; i++)
		n += ((a[i] ^ b[i]) & 0xffffff) != 0;
	return n;
}

/*
 * The screen once it stays the same across two screenshots 200 ms
 * apart (the text goes on the screen after the serial console), within
 * 30 s; NULL if it never does.
 */
static uint32_t *
stable_screen(struct h_daemon *d, const char *name, uint32_t *w,
    uint32_t *h)
{
	double deadline = h_now_ms() + 30000;
	uint32_t *a = screenshot(d, name, w, h), *b;
	uint32_t w2 = 0, h2 = 0;

	while (a != NULL && h_now_ms() < deadline) {
		h_sleep_ms(200);
		if ((b = screenshot(d, name, &w2, &h2)) == NULL)
			break;
		if (w2 == *w && h2 == *h && pixels_differ(a, b, *w, *h) == 0) {
			free(b);
			return a;
		}
		free(a);
		a = b;
		*w = w2;
		*h = h2;
	}
	tap_diag("%s: the screen never stayed the same", name);
	free(a);
	return NULL;
}

/* stats.framebuffer.address, or -1. */
static int64_t
fb_address(struct h_conn *c, const char *name)
{
	struct json_object *reply = NULL, *fb;
	int64_t a;

	fb = h_info_stats(c, name, "framebuffer", NULL, &reply);
	a = h_int(fb, "address", -1);
	json_object_put(reply);
	return a;
}

/*
 * The firmware VM's round; hooks: the hook lines the log had before.
 * Its text is static at the prompt (SeaBIOS retries the boot only
 * after 60 s) and only the cursor blinks, so the screenshots before
 * and after are the same picture when taken in the same blink phase.
 */
static void
test_firmware(struct h_daemon *d, struct h_conn *c, size_t hooks)
{
	const char *log = h_console_log(d, "fw");
	uint32_t *s1, *s2 = NULL, w1 = 0, h1 = 0, w2 = 0, h2 = 0;
	size_t differ;
	int64_t a1, a2;
	int tries;
	char st[64];

	tap_ok(h_create(c, "fw", "\"firmware\":\"bios\",\"vnc\":\"auto\","
	    "\"display\":\"640x400\"") == 0 && h_start(c, "fw") == 0,
	    "fw: created with firmware bios and a display, started");
	tap_ok(h_vm_log_expect(c, "fw", log, NOTHING, 1, POST_MS) == 0,
	    "fw: SeaBIOS finds nothing to boot");
	s1 = stable_screen(d, "fw", &w1, &h1);
	a1 = fb_address(c, "fw");
	tap_ok(s1 != NULL && rows_drawn(s1, w1, h1) >= 8 && a1 > 0,
	    "fw: its screen has text (%ux%u), the framebuffer at %#llx",
	    w1, h1, (unsigned long long)a1);
	state_rounds_pause_resume(c, NULL, "fw", "fw");
	tap_ok(h_file_expect(d->log, HOOK_LINE, hooks + 1, 10000) == 0,
	    "fw: the hook saved and restored the machine");
	/*
	 * SeaBIOS's VGA BIOS blinks its software cursor from the timer
	 * tick (9 ticks on, 9 off): s1 was taken in one phase, so look
	 * until a screenshot is in the same one.  A framebuffer the round
	 * trip lost or moved never matches.
	 */
	differ = SIZE_MAX;
	for (tries = 1; tries <= 100 && differ != 0; tries++) {
		if (tries > 1)
			h_sleep_ms(100);
		free(s2);
		s2 = screenshot(d, "fw", &w2, &h2);
		if (s1 != NULL && s2 != NULL && w1 == w2 && h1 == h2)
			differ = pixels_differ(s1, s2, w1, h1);
	}
	a2 = fb_address(c, "fw");
	tap_ok(differ == 0, "fw: the same picture after the round trip "
	    "(%ux%u, %zu pixels differ, %d screenshots)", w2, h2,
	    differ == SIZE_MAX ? 0 : differ, tries - 1);
	tap_ok(a1 > 0 && a2 == a1, "fw: the framebuffer where it was (%#llx)",
	    (unsigned long long)a2);
	h_state(c, "fw", st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "fw: still running (%s)", st);
	free(s1);
	free(s2);
	tap_ok(h_stop(c, "fw", true, -1, H_REPLY_MS) == 0, "fw: stopped");
}

/* A VM with a CD-ROM; hooks: the hook lines the log had before. */
static void
test_cdrom(struct h_daemon *d, struct h_conn *c, size_t hooks)
{
	const char *iso = h_in_dir(d, "blank.iso");
	int fd;

	fd = open(iso, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, 1 << 20) != 0)
		tap_bail("%s: cannot make it", iso);
	close(fd);
	tap_ok(h_create(c, "cd", "\"firmware\":\"bios\",\"cdrom\":\"%s\"",
	    iso) == 0 && h_start(c, "cd") == 0,
	    "cd: created with a CD-ROM, started");
	state_rounds_pause_resume(c, NULL, "cd", "cd");
	tap_ok(h_file_expect(d->log, HOOK_LINE, hooks + 1, 10000) == 0,
	    "cd: the hook saved and restored the machine, AHCI included");
	tap_ok(h_stop(c, "cd", true, -1, H_REPLY_MS) == 0, "cd: stopped");
}

int
main(void)
{
	const char *mode = getenv("VMMD_TEST_VCPU_STATE");
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	char label[32], *log;

	h_init();
	state_rounds_need_hooks("the machine state hook");
	if (mode == NULL)
		setenv("VMMD_TEST_VCPU_STATE", "machine", 1);
	c = h_setup(&d);

	con = state_rounds_demo(d, c, "demo", "\"rng\":true");

	for (int i = 1; i <= ROUNDS; i++) {
		snprintf(label, sizeof(label), "round %d", i);
		state_rounds_pause_resume(c, con, "demo", label);
		tap_ok(h_file_expect(d->log, HOOK_LINE, i, 10000) == 0,
		    "round %d: the hook saved and restored the machine", i);
		con->mark = con->len;
		tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
		    h_expect(con, DEMO_TICK, 5000) == 0,
		    "round %d: the guest ticks on", i);
	}
	state_rounds_ran_on(c, con, "demo", DEMO_BANNER);
	log = h_read_file(d->log, NULL);
	tap_ok(log != NULL && strstr(log, "test hook: machine state: ") ==
	    NULL && strstr(log, "NOT back") == NULL,
	    "no step of the hook failed, the chips and clock came back");
	tap_ok(log != NULL && h_count(log, strlen(log), UNSAVED) == ROUNDS,
	    "each round, a save with a device lacking its save op was "
	    "refused, naming it");
	if (log != NULL && (mode = strstr(log, HOOK_LINE)) != NULL)
		tap_diag("%.*s", (int)strcspn(mode, "\n"), mode);
	free(log);
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");

	if (access(H_BIOS_IMAGE, R_OK) == 0 && access(H_VGA_IMAGE, R_OK) == 0) {
		test_firmware(d, c, ROUNDS);
		test_cdrom(d, c, ROUNDS + 1);
		log = h_read_file(d->log, NULL);
		tap_ok(log != NULL && strstr(log, HOOK_FAILED) == NULL &&
		    strstr(log, "NOT back") == NULL,
		    "fw, cd: no step of the hook failed");
		free(log);
	} else {
		tap_diag("%s or %s not installed: no firmware VM",
		    H_BIOS_IMAGE, H_VGA_IMAGE);
	}
	h_close(c);
	return h_done();
}
