/*
 * Media change in a running firmware VM's CD-ROM drive (vm.media,
 * vmctl media).  SeaBIOS boots the El Torito CD to its GRUB's marker
 * (media whose GRUB then waits at its prompt: one that halts would end
 * the guest under the test, at once where real-mode code runs fast);
 * the hybrid ISO inserted while the guest runs is what the drive then
 * holds: after vm.reset SeaBIOS boots it, from the same drive, to that
 * image's own marker.  Ejected, the drive is empty (the AHCI
 * controller's diagnostics say so) and after a reset SeaBIOS finds
 * nothing to boot.  Requests naming no drive the VM has, both or
 * neither of eject and insert, a relative path or a stopped VM are
 * refused.  What a guest's driver sees of a change (UNIT ATTENTION,
 * the media events, NOT READY) is the unit tests' (test-atapi,
 * test-ahci): no test guest here speaks ATAPI.
 *
 * Skipped where SeaBIOS is not installed or the media could not be
 * built.  Real-mode code is emulated on our machines' /dev/kvm: the
 * waits are long, and each ends at its event.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define BOOTING_CD	"Booting from DVD/CD"
#define MARKER_CD	"VMMD-MEDIA-ELTORITO-OK"
#define MARKER_HYBRID	"VMMD-MEDIA-HYBRID-OK"
#define NOTHING		"No bootable device"
#define BOOT_MS		300000
#define GRUB_MS		300000

static const char *iso, *hybrid;

/* The AHCI controller's diagnostic key, or -1. */
static int64_t
ahci_diag(struct h_conn *c, const char *key)
{
	struct json_object *reply = NULL, *a;
	int64_t v;

	a = h_info_stats(c, "md", "devices", "ahci", &reply);
	v = h_int(a, key, -1);
	json_object_put(reply);
	return v;
}

static bool
media_ok(struct h_conn *c, const char *args)
{
	struct json_object *r;
	bool ok;

	r = h_callf(c, H_REPLY_MS, "vm.media", "{\"name\":\"md\",%s}", args);
	ok = r != NULL && h_err_class(r) == NULL;
	if (!ok)
		tap_diag("vm.media %s: %s", args, h_text(r));
	json_object_put(r);
	return ok;
}

static bool
reset(struct h_conn *c)
{
	struct json_object *r;
	bool ok;

	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"md\"}");
	ok = r != NULL && h_err_class(r) == NULL;
	json_object_put(r);
	return ok;
}

static void
test_refused(struct h_conn *c)
{
	h_expect_error(c, "vm.media", "{\"name\":\"md\",\"device\":\"cdrom0\","
	    "\"eject\":true}", "bad_state", "a stopped VM's drive");
	h_expect_error(c, "vm.media", "{\"name\":\"md\",\"device\":\"cdrom1\","
	    "\"eject\":true}", "invalid_argument", "a drive the VM lacks");
	h_expect_error(c, "vm.media", "{\"name\":\"md\",\"device\":\"disk0\","
	    "\"eject\":true}", "invalid_argument", "a disk is no drive");
	h_expect_error(c, "vm.media", "{\"name\":\"md\",\"device\":\"cdrom0\"}",
	    "invalid_argument", "neither eject nor insert");
	h_expect_errorf(c, "vm.media", "invalid_argument", "both",
	    "{\"name\":\"md\",\"device\":\"cdrom0\",\"eject\":true,"
	    "\"insert\":\"%s\"}", hybrid);
	h_expect_error(c, "vm.media", "{\"name\":\"md\",\"device\":\"cdrom0\","
	    "\"insert\":\"x.iso\"}", "invalid_argument", "a relative path");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	const char *log;

	h_init();
	h_need_seabios(false);
	h_need_media("VMMD_MEDIA_ELTORITO_PROMPT", &iso,
	    "VMMD_MEDIA_HYBRID_PROMPT", &hybrid);
	c = h_setup(&d);
	log = h_console_log(d, "md");
	tap_ok(h_create(c, "md", "\"firmware\":\"bios\",\"cdrom\":\"%s\"",
	    iso) == 0, "created with the El Torito CD");
	test_refused(c);
	tap_ok(h_start(c, "md") == 0, "started");
	tap_ok(h_vm_log_expect(c, "md", log, MARKER_CD, 1, BOOT_MS + GRUB_MS) ==
	    0,
	    "SeaBIOS boots the CD to its GRUB");
	tap_ok(ahci_diag(c, "port0_medium") == 1 &&
	    ahci_diag(c, "port0_media_changes") == 0, "the drive holds it");

	tap_ok(media_ok(c, "\"device\":\"cdrom0\",\"insert\":\"" "\"") == false,
	    "an empty path is refused");
	h_ctl_use(d, H_REPLY_MS);
	tap_ok(h_ctl("media", "md", "cdrom0", "--insert", hybrid, NULL) == 0,
	    "vmctl media md cdrom0 --insert HYBRID (%s)", h_flat(h_err()));
	tap_ok(ahci_diag(c, "port0_medium") == 1 &&
	    ahci_diag(c, "port0_tray_open") == 0 &&
	    ahci_diag(c, "port0_media_changes") == 2,
	    "the old medium out, the new one in (2 changes)");
	tap_ok(reset(c), "vm.reset");
	tap_ok(h_vm_log_expect(c, "md", log, BOOTING_CD, 2, BOOT_MS) == 0 &&
	    h_vm_log_expect(c, "md", log, MARKER_HYBRID, 1, GRUB_MS) == 0,
	    "SeaBIOS boots the new medium from the same drive");

	tap_ok(media_ok(c, "\"device\":\"cdrom0\",\"eject\":true"),
	    "vm.media eject");
	tap_ok(ahci_diag(c, "port0_medium") == 0 &&
	    ahci_diag(c, "port0_tray_open") == 1, "the drive is empty, its "
	    "tray open");
	tap_ok(reset(c), "vm.reset");
	tap_ok(h_vm_log_expect(c, "md", log, NOTHING, 1, BOOT_MS) == 0,
	    "SeaBIOS finds nothing to boot");
	tap_ok(ahci_diag(c, "port0_medium") == 0, "still empty after the "
	    "reset");
	tap_ok(media_ok(c, "\"device\":\"cdrom0\",\"eject\":true"),
	    "an empty drive ejects again");
	h_diag_lines("md", log);
	tap_ok(h_stop(c, "md", true, -1, H_REPLY_MS) == 0, "force stop");
	h_close(c);
	return h_done();
}
