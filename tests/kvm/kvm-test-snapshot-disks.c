/*
 * A snapshot's disks: the vblkc guest (tests/guests/vblkc.c) counts on
 * its first disk, an overlay over a raw base, and checks before every
 * write that the disk holds the count its RAM says it last wrote; its
 * second disk is a raw image.
 *
 * vm.snapshot with keep_running while it counts: the reply says disk 0
 * was frozen into DIR/disk-0.qcow2 and disk 1 (raw) is shared; the guest
 * counts on, on a fresh overlay over the frozen image, which stays
 * byte for byte as it was.  qemu-img check and info --backing-chain
 * take the frozen image and the new overlay (once the VM stopped: its
 * worker holds locks on them, as QEMU would).  Then the VM is stopped
 * and restored from the snapshot: the guest goes on from the
 * snapshot's count and finds its disk as its RAM expects it (a disk
 * that had kept the writes after the snapshot would hold a larger
 * count: the guest says FAIL), the frozen image is still unchanged
 * after the restored guest wrote, and the restored VM's own overlay is
 * clean.  The snapshot directory, moved, restores again, and a second
 * snapshot then freezes an overlay over the first one's image.  A
 * snapshot into another file system copies the overlay and restores
 * as well.  With its frozen image gone, or cut short, the first is
 * refused, naming the image.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "vblk-disks.h"

#define COUNT	"vblkc: count "

static struct h_daemon *d;

/* The last count con printed whole, from from on; -1 if none. */
static long
last_count(const struct h_console *con, size_t from)
{
	const char *p = con->buf + from, *q, *hit = NULL;

	/* A line read only in part has no end yet: not counted. */
	while ((q = strstr(p, COUNT)) != NULL && strchr(q, '\n') != NULL) {
		hit = q;
		p = q + 1;
	}
	return hit != NULL ? strtol(hit + strlen(COUNT), NULL, 10) : -1;
}

/* The first count con printed from from on; -1 if none. */
static long
first_count(const struct h_console *con, size_t from)
{
	const char *q = strstr(con->buf + from, COUNT);

	return q != NULL ? strtol(q + strlen(COUNT), NULL, 10) : -1;
}

/* n more counts on con, none failing. */
static bool
counts_on(struct h_console *con, int n)
{
	for (int i = 0; i < n; i++)
		if (h_expect(con, COUNT, 10000) != 0)
			return false;
	return h_count(con->buf, con->len, "FAIL") == 0;
}

static const char *
overlay(void)
{
	static char buf[512];

	snprintf(buf, sizeof(buf), "%s/disks/w.0.qcow2", d->state);
	return buf;
}

static bool
same_bytes(const char *path, const char *was, size_t was_len)
{
	size_t len;
	char *now = h_read_file(path, &len);
	bool same = now != NULL && len == was_len &&
	    memcmp(now, was, len) == 0;

	free(now);
	return same;
}

/*
 * A snapshot into a directory on another file system (tmpfs at
 * /dev/shm, where the host has one apart from the test's): the frozen
 * image is a copy then, not a link; it restores as well.  Skipped,
 * said, where there is no such file system.
 */
static void
test_other_fs(struct h_conn *c)
{
	static const char *const files[] = { "manifest.json", "memory",
	    "state", "disk-0.qcow2" };
	char dir[] = "/dev/shm/vmmd-snapdisk-XXXXXX", frozen[64];
	const char *line;
	struct h_console *con;
	struct json_object *r;
	struct stat a, b;
	size_t mark;
	long first;

	if (stat(d->state, &a) < 0 || stat("/dev/shm", &b) < 0 ||
	    a.st_dev == b.st_dev || mkdtemp(dir) == NULL) {
		tap_diag("no file system apart from the state directory's "
		    "at /dev/shm: the copy of a frozen image is not tried");
		return;
	}
	snprintf(frozen, sizeof(frozen), "%s/disk-0.qcow2", dir);
	tap_ok(h_start(c, "w") == 0, "w: started again");
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	mark = con->len;
	tap_ok(h_find(con, "vblkc: start", H_BOOT_MS) == 0 &&
	    counts_on(con, 3), "w: counts on from its disk");
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"w\","
	    "\"dir\":\"%s\",\"keep_running\":true}", dir);
	line = h_ret(r) != NULL ? json_object_get_string(
	    json_object_array_get_idx(json_object_object_get(h_ret(r),
	    "snapshot_disks"), 0)) : NULL;
	tap_ok(line != NULL && strstr(line, frozen) != NULL &&
	    counts_on(con, 3) && h_count(con->buf + mark, con->len - mark,
	    "FAIL") == 0,
	    "a snapshot on another file system, the guest counts on: %s",
	    h_text(r));
	json_object_put(r);
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	tap_ok(stat(frozen, &a) == 0 && stat(overlay(), &b) == 0 &&
	    a.st_ino != b.st_ino && (a.st_mode & 0777) == 0400 &&
	    vdisk_qemu_img("check", "-q", frozen, NULL) == 0,
	    "its frozen image is a copy, read-only, clean");
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"w\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "w: restored from it: %s", h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	mark = con->len;
	tap_ok(counts_on(con, 5) && h_count(con->buf + mark, con->len - mark,
	    "FAIL") == 0 && (first = first_count(con, mark)) > 0,
	    "restored w: counts on, its disk as its RAM expects it");
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(frozen, sizeof(frozen), "%s/%s", dir, files[i]);
		unlink(frozen);
	}
	rmdir(dir);
}

int
main(void)
{
	struct json_object *r, *disks;
	struct h_console *con;
	struct h_conn *c;
	char base[512], shared[512], frozen[700], dir[600], moved[512];
	char *was, *img;
	size_t was_len = 0, mark;
	long snapped, stopped, first;
	int rc;

	h_init();
	if (vdisk_qemu_img_path() == NULL) {
		tap_skip_all("qemu-img (qemu-utils) is not installed");
		return 77;
	}
	c = h_setup(&d);
	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(shared, sizeof(shared), "%s", h_in_dir(d, "shared.raw"));
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	snprintf(moved, sizeof(moved), "%s", h_in_dir(d, "moved"));
	snprintf(frozen, sizeof(frozen), "%s/disk-0.qcow2", dir);
	if (vdisk_make_base(base, 0644) != 0 ||
	    vdisk_make_base(shared, 0644) != 0 || mkdir(dir, 0700) < 0 ||
	    mkdir(h_in_dir(d, "snap2"), 0700) < 0)
		tap_bail("the disks and the snapshot's directory");

	tap_ok(h_create(c, "w", "\"kernel\":\"%s\",\"disks\":["
	    "{\"path\":\"%s\",\"overlay\":true},{\"path\":\"%s\","
	    "\"format\":\"raw\"}]", h_env("VMMD_GUEST_VBLKC"), base,
	    shared) == 0 && h_start(c, "w") == 0,
	    "w: created over an overlay and a raw disk, started");
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	tap_ok(h_expect(con, "vblkc: start 0", H_BOOT_MS) == 0 &&
	    counts_on(con, 5), "w: counts on its disk");

	/* The count in the snapshot's RAM is this one or a later one. */
	snapped = last_count(con, 0);
	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"w\","
	    "\"dir\":\"%s\",\"keep_running\":true}", dir);
	disks = h_ret(r) != NULL ? json_object_object_get(h_ret(r),
	    "snapshot_disks") :
	    NULL;
	tap_ok(json_object_is_type(disks, json_type_array) &&
	    json_object_array_length(disks) == 2 &&
	    strstr(json_object_get_string(json_object_array_get_idx(disks,
	    0)), "disk 0 (virtio): frozen into ") != NULL &&
	    strstr(json_object_get_string(json_object_array_get_idx(disks,
	    0)), frozen) != NULL &&
	    strstr(json_object_get_string(json_object_array_get_idx(disks,
	    1)), "disk 1 (virtio): shared, not frozen: ") != NULL &&
	    strstr(json_object_get_string(json_object_array_get_idx(disks,
	    1)), shared) != NULL,
	    "snapshot: disk 0 frozen, disk 1 shared: %s", h_text(r));
	json_object_put(r);
	was = h_read_file(frozen, &was_len);
	tap_ok(was != NULL && was_len > 0, "the frozen image is there, %zu "
	    "bytes", was_len);
	img = h_read_file(h_in_dir(d, "snap/manifest.json"), NULL);
	tap_ok(img != NULL && strstr(img, "\"frozen\":\"disk-0.qcow2\"") &&
	    strstr(img, "\"backing_depth\":1") && strstr(img, shared),
	    "the manifest records the frozen image and the shared disk");
	free(img);

	tap_ok(counts_on(con, 10), "w: counts on after the snapshot");
	tap_ok(same_bytes(frozen, was, was_len),
	    "the frozen image is unchanged while the guest writes");
	stopped = last_count(con, 0);
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");
	tap_ok(vdisk_qemu_img("check", "-q", frozen, NULL) == 0 &&
	    vdisk_qemu_img("info", "--backing-chain", frozen, NULL) == 0,
	    "qemu-img check and info --backing-chain take the frozen image");
	tap_ok(vdisk_qemu_img("check", "-q", overlay(), NULL) == 0 &&
	    vdisk_qemu_img("info", "--backing-chain", overlay(), NULL) == 0,
	    "... and the new overlay over it");

	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"w\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "w: restored: %s", h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console after the restore");
	/* The console log holds the run before: only what follows counts. */
	mark = con->len;
	tap_ok(counts_on(con, 10) && h_count(con->buf + mark, con->len - mark,
	    "vblkc: start") == 0,
	    "restored w: counts on, its disk as its RAM expects it (no FAIL)");
	first = first_count(con, mark);
	tap_ok(first >= snapped && first < stopped,
	    "restored w: on from the snapshot's count, at least %ld (first "
	    "%ld, %ld when stopped)", snapped, first, stopped);
	tap_ok(same_bytes(frozen, was, was_len),
	    "the frozen image is unchanged after the restored guest wrote");
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0,
	    "restored w: stopped");
	tap_ok(vdisk_qemu_img("check", "-q", overlay(), NULL) == 0 &&
	    vdisk_qemu_img("info", "--backing-chain", overlay(), NULL) == 0,
	    "the restored VM's own overlay is clean");

	/* Moved, it still restores: the manifest names the image in it. */
	tap_ok(rename(dir, moved) == 0, "the snapshot moved");
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"w\","
	    "\"dir\":\"%s\"}", moved);
	tap_ok(h_ret(r) != NULL, "w: restored from the moved snapshot: %s",
	    h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	mark = con->len;
	tap_ok(counts_on(con, 3) && first_count(con, mark) == first,
	    "w: counts on from the same count");
	/*
	 * A second snapshot, through vmctl, freezes the overlay over the
	 * first's image; vmctl says what it did with each disk.
	 */
	h_ctl_use(d, H_REPLY_MS);
	rc = h_ctl("snapshot", "w", h_in_dir(d, "snap2"), "--keep-running",
	    NULL);
	tap_ok(rc == 0 && strstr(h_out(), "disk 0 (virtio): frozen into ") &&
	    strstr(h_out(), "snap2/disk-0.qcow2") &&
	    strstr(h_out(), "disk 1 (virtio): shared, not frozen: "),
	    "vmctl snapshot --keep-running: %s%s", h_out(), h_err());
	img = h_read_file(h_in_dir(d, "snap2/manifest.json"), NULL);
	tap_ok(img != NULL && strstr(img, "\"backing_depth\":2") != NULL &&
	    counts_on(con, 3),
	    "the second snapshot's chain is one deeper; the guest counts on");
	free(img);
	h_console_close(con);
	tap_ok(h_stop(c, "w", true, -1, H_REPLY_MS) == 0, "w: stopped");

	test_other_fs(c);

	/* No frozen image: refused, naming it. */
	snprintf(frozen, sizeof(frozen), "%s/disk-0.qcow2", moved);
	snprintf(dir, sizeof(dir), "%s/aside.qcow2", moved);
	if (rename(frozen, dir) < 0)
		tap_bail("rename %s: %s", frozen, strerror(errno));
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"w\","
	    "\"dir\":\"%s\"}", moved);
	tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r),
	    "disk-0.qcow2") != NULL && strstr(h_err_desc(r), "missing"),
	    "a snapshot without its frozen image is refused: %s", h_text(r));
	json_object_put(r);
	/* Cut short: refused too. */
	rc = rename(dir, frozen);
	if (rc < 0 || truncate(frozen, (off_t)was_len - 512) < 0)
		tap_bail("truncate %s: %s", frozen, strerror(errno));
	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"name\":\"w\","
	    "\"dir\":\"%s\"}", moved);
	tap_ok(h_err_class(r) != NULL && strstr(h_err_desc(r),
	    "disk-0.qcow2") != NULL && strstr(h_err_desc(r), "truncated"),
	    "a truncated frozen image is refused: %s", h_text(r));
	json_object_put(r);
	free(was);
	h_close(c);
	return h_done();
}
