/*
 * Clones beside the running original: the vblkc guest
 * (tests/guests/vblkc.c) counts on its disk, an overlay over a raw
 * base, and checks before every write that the disk holds the count
 * its RAM says it last wrote.  vm.snapshot with keep_running freezes
 * that overlay into DIR/disk-0.qcow2 (a hard link: the same file the
 * original's worker locked exclusively at start) and moves the guest
 * onto a fresh overlay; then, while the original counts on, the
 * snapshot is restored twice with "as": both clones start (no "in use":
 * the frozen image is shared now, never written again), all three
 * guests count on without a FAIL (a clone that saw the original's later
 * writes, or the original a clone's, would say FAIL), the frozen image
 * stays byte for byte as it was, and each VM writes to an overlay of
 * its own over it (qemu-img info, without locks while they run).
 * The locks still keep every writer off the frozen image, and everyone
 * off an overlay a guest writes.
 */
#include <errno.h>
#include <fcntl.h>
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

/* n more counts on con from here, and no FAIL since from. */
static bool
counts_on(struct h_console *con, size_t from, int n)
{
	for (int i = 0; i < n; i++)
		if (h_expect(con, COUNT, 10000) != 0)
			return false;
	return h_count(con->buf + from, con->len - from, "FAIL") == 0;
}

static const char *
overlay_of(const char *vm, char *buf, size_t len)
{
	snprintf(buf, len, "%s/disks/%s.0.qcow2", d->state, vm);
	return buf;
}

/*
 * Whether qemu-img info (-U: no lock taken, the guests run) says image
 * is a qcow2 image over backing.
 */
static bool
over(const char *image, const char *backing)
{
	char cmd[2048], line[4096];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' info -U --output=json '%s' 2>&1",
	    vdisk_qemu_img_path(), image);
	if ((p = popen(cmd, "r")) == NULL)
		return false;
	while (fgets(line, sizeof(line), p) != NULL)
		if (strstr(line, "\"backing-filename\"") != NULL &&
		    strstr(line, backing) != NULL)
			found = true;
	if (pclose(p) != 0)
		return false;
	if (!found)
		tap_diag("%s: not over %s", image, backing);
	return found;
}

/* Whether a whole-file OFD lock of type on path is refused as held. */
static bool
lock_refused(const char *path, short type)
{
	struct flock lk = { .l_type = type, .l_whence = SEEK_SET };
	int fd, rc;

	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		tap_diag("open %s: %s", path, strerror(errno));
		return false;
	}
	rc = fcntl(fd, F_OFD_SETLK, &lk) < 0 ? errno : 0;
	if (rc != EAGAIN && rc != EACCES)
		tap_diag("%s: a lock %s", path, rc == 0 ? "taken" :
		    strerror(rc));
	close(fd);
	return rc == EAGAIN || rc == EACCES;
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

int
main(void)
{
	static const char *const names[] = { "w", "c1", "c2" };
	struct h_console *con[3];
	struct json_object *r;
	struct h_conn *c;
	struct stat st[4];
	char base[512], dir[600], frozen[700], path[3][600], state[32];
	size_t was_len = 0, mark[3];
	char *was;
	bool ok;

	h_init();
	if (vdisk_qemu_img_path() == NULL) {
		tap_skip_all("qemu-img (qemu-utils) is not installed");
		return 77;
	}
	c = h_setup(&d);
	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	snprintf(frozen, sizeof(frozen), "%s/disk-0.qcow2", dir);
	if (vdisk_make_base(base, 0644) != 0 || mkdir(dir, 0700) < 0)
		tap_bail("the base and the snapshot's directory");

	tap_ok(h_create(c, "w", "\"kernel\":\"%s\",\"disks\":["
	    "{\"path\":\"%s\",\"overlay\":true}]", h_env("VMMD_GUEST_VBLKC"),
	    base) == 0 && h_start(c, "w") == 0,
	    "w: created over an overlay, started");
	if ((con[0] = h_console_open(d, "w")) == NULL)
		tap_bail("w: no console");
	mark[0] = 0;
	tap_ok(h_expect(con[0], "vblkc: start 0", H_BOOT_MS) == 0 &&
	    counts_on(con[0], 0, 3), "w: counts on its disk");

	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"w\","
	    "\"dir\":\"%s\",\"keep_running\":true}", dir);
	tap_ok(h_ret(r) != NULL, "w: snapshot, running on: %s", h_text(r));
	json_object_put(r);
	was = h_read_file(frozen, &was_len);
	tap_ok(was != NULL && was_len > 0 && stat(frozen, &st[3]) == 0 &&
	    st[3].st_nlink == 1, "the frozen image, %zu bytes, the old "
	    "overlay's file", was_len);
	mark[0] = con[0]->len;
	tap_ok(counts_on(con[0], mark[0], 3), "w: counts on after it");

	/* Two clones while w runs: the frozen image is only read now. */
	for (int i = 1; i < 3; i++) {
		r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\","
		    "\"as\":\"%s\"}", dir, names[i]);
		tap_ok(h_ret(r) != NULL, "restore as %s beside running w: %s",
		    names[i], h_text(r));
		json_object_put(r);
		if ((con[i] = h_console_open(d, names[i])) == NULL)
			tap_bail("%s: no console", names[i]);
		mark[i] = 0;
	}
	ok = true;
	for (int round = 0; round < 5; round++)
		for (int i = 0; i < 3; i++)
			ok = ok && counts_on(con[i], mark[i], 1);
	for (int i = 0; ok && i < 3; i++)
		ok = strcmp(h_state(c, names[i], state, sizeof(state)),
		    "running") == 0 && h_count(con[i]->buf + mark[i],
		    con[i]->len - mark[i], "vblkc: start") == 0;
	tap_ok(ok, "w, c1 and c2 run side by side and count on, none FAIL, "
	    "none starting over");
	tap_ok(same_bytes(frozen, was, was_len),
	    "the frozen image is unchanged while all three write");
	for (int i = 0; i < 3; i++)
		overlay_of(names[i], path[i], sizeof(path[i]));
	tap_ok(stat(path[0], &st[0]) == 0 && stat(path[1], &st[1]) == 0 &&
	    stat(path[2], &st[2]) == 0 && st[0].st_ino != st[1].st_ino &&
	    st[0].st_ino != st[2].st_ino && st[1].st_ino != st[2].st_ino &&
	    st[0].st_ino != st[3].st_ino && st[1].st_ino != st[3].st_ino &&
	    st[2].st_ino != st[3].st_ino && over(path[0], frozen) &&
	    over(path[1], frozen) && over(path[2], frozen),
	    "each writes to an overlay of its own over the frozen image");

	/* Read by three guests, it is still no one's to write; and each
	 * overlay is its guest's alone, not even to be read. */
	tap_ok(lock_refused(frozen, F_WRLCK) && lock_refused(path[0],
	    F_RDLCK) && lock_refused(path[1], F_RDLCK) &&
	    lock_refused(path[2], F_RDLCK),
	    "no write lock on the frozen image, no lock on an overlay");

	for (int i = 0; i < 3; i++) {
		h_console_close(con[i]);
		tap_ok(h_stop(c, names[i], true, -1, H_REPLY_MS) == 0,
		    "%s: stopped", names[i]);
	}
	tap_ok(vdisk_qemu_img("check", "-q", frozen, NULL) == 0 &&
	    vdisk_qemu_img("check", "-q", path[0], NULL) == 0 &&
	    vdisk_qemu_img("check", "-q", path[1], NULL) == 0 &&
	    vdisk_qemu_img("check", "-q", path[2], NULL) == 0 &&
	    same_bytes(frozen, was, was_len),
	    "the frozen image and the three overlays are clean; the frozen "
	    "image as it was");
	free(was);
	h_close(c);
	return h_done();
}
