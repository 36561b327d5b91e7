/*
 * The CD-ROM drive's tray and medium across a snapshot: the demo guest
 * with a disc in its drive (any file of whole sectors will do: the
 * guest never reads it).  Ejected with vm.media, snapshotted and
 * restored, the drive is still empty with its tray open (the AHCI
 * controller's diagnostics say so), not holding the disc the
 * definition names; and a vm.reset after the restore, which builds the
 * machine again, does not bring the disc back either.  A snapshot with
 * the disc in restores with it in.  The rest (the state's fields, an
 * older section) is test-ahci's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* The AHCI controller's diagnostic key for cd, or -1. */
static int64_t
ahci_diag(struct h_conn *c, const char *key)
{
	struct json_object *reply = NULL, *a;
	int64_t v;

	a = h_info_stats(c, "cd", "devices", "ahci", &reply);
	v = h_int(a, key, -1);
	json_object_put(reply);
	return v;
}

static bool
call_ok(struct h_conn *c, int ms, const char *cmd, const char *args)
{
	struct json_object *r = h_callf(c, ms, cmd, "%s", args);
	bool ok = r != NULL && h_err_class(r) == NULL;

	if (!ok)
		tap_diag("%s %s: %s", cmd, args, h_text(r));
	json_object_put(r);
	return ok;
}

/* cd snapshotted into d's name (stopped by it), then restored. */
static bool
snapshot_restore(struct h_daemon *d, struct h_conn *c, const char *name)
{
	char args[1024], dir[600];

	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, name));
	if (mkdir(dir, 0700) < 0)
		tap_bail("mkdir %s: %s", dir, strerror(errno));
	snprintf(args, sizeof(args), "{\"name\":\"cd\",\"dir\":\"%s\"}", dir);
	if (!call_ok(c, H_REPLY_MS, "vm.snapshot", args) ||
	    h_wait_state(c, "cd", "stopped", H_REPLY_MS) != 0)
		return false;
	return call_ok(c, H_BOOT_MS, "vm.restore", args);
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	char iso[600];
	int fd;

	h_init();
	c = h_setup(&d);
	snprintf(iso, sizeof(iso), "%s", h_in_dir(d, "disc.iso"));
	if ((fd = open(iso, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 ||
	    ftruncate(fd, 1 << 20) < 0 || close(fd) < 0)
		tap_bail("%s: %s", iso, strerror(errno));

	tap_ok(h_create(c, "cd", "\"cdrom\":\"%s\"", iso) == 0 &&
	    h_start(c, "cd") == 0, "cd: created with a disc, started");
	tap_ok(ahci_diag(c, "port0_medium") == 1 &&
	    ahci_diag(c, "port0_tray_open") == 0, "the drive holds it");
	tap_ok(snapshot_restore(d, c, "in") &&
	    ahci_diag(c, "port0_medium") == 1 &&
	    ahci_diag(c, "port0_tray_open") == 0,
	    "snapshotted and restored with the disc in: it is in");

	tap_ok(call_ok(c, H_REPLY_MS, "vm.media", "{\"name\":\"cd\","
	    "\"device\":\"cdrom0\",\"eject\":true,\"force\":true}") &&
	    ahci_diag(c, "port0_medium") == 0 &&
	    ahci_diag(c, "port0_tray_open") == 1, "ejected: empty, open");
	tap_ok(snapshot_restore(d, c, "out"), "snapshotted and restored");
	tap_ok(ahci_diag(c, "port0_medium") == 0 &&
	    ahci_diag(c, "port0_tray_open") == 1 &&
	    ahci_diag(c, "port0_media_changes") == 1,
	    "restored: the drive is still empty, its tray open (medium %lld, "
	    "tray open %lld)", (long long)ahci_diag(c, "port0_medium"),
	    (long long)ahci_diag(c, "port0_tray_open"));
	tap_ok(call_ok(c, H_REPLY_MS, "vm.reset", "{\"name\":\"cd\"}"),
	    "vm.reset");
	tap_ok(h_wait_state(c, "cd", "running", H_REPLY_MS) == 0 &&
	    ahci_diag(c, "port0_medium") == 0,
	    "after the reset the drive is still empty (medium %lld)",
	    (long long)ahci_diag(c, "port0_medium"));
	tap_ok(h_stop(c, "cd", true, -1, H_REPLY_MS) == 0, "cd: stopped");
	h_close(c);
	return h_done();
}
