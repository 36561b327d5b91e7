/*
 * A disk request in flight at a snapshot completes once.  The vblkc
 * guest (tests/guests/vblkc.c) on a raw disk; a test hook
 * (VMMD_TEST_HOLD=disk-write, test-hook.h) holds its first write (count
 * 1) in the worker's disk path, so the virtio-blk device has it in
 * flight when the snapshot is asked for, and hands it on only once the
 * snapshot tries to save the devices; the snapshot waits for it.  The
 * VM stops with the write done and its answer in the guest's RAM,
 * which had not seen it.  Restored, the guest takes that answer (it
 * says "count 1" once and goes on counting from it), finds the disk
 * holding what it wrote, and sees no completion more than it asked for
 * (vblkc fails on one); the restored device counts no write it did not
 * get from the guest after the restore, and the disk holds the last
 * count the guest said.
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
#include "state-rounds.h"

#define HELD		"test hook: a disk write held"
#define RELEASED	"test hook: a disk write released"

/* The count the raw image holds in sector 1 ("VCNT" N), or -1. */
static long
disk_count(const char *path)
{
	unsigned char b[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, b, sizeof(b), 512) : -1;

	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof(b) || memcmp(b, "VCNT", 4) != 0)
		return -1;
	return (long)b[4] | (long)b[5] << 8 | (long)b[6] << 16 |
	    (long)b[7] << 24;
}

/* The figure key of name's virtio-blk device (disk0), or -1. */
static int64_t
blk_figure(struct h_conn *c, const char *name, const char *key)
{
	struct json_object *r, *o;
	int64_t v;

	o = h_info_stats(c, name, "devices", "disk0", &r);
	v = o != NULL ? h_int(o, key, -1) : -1;
	json_object_put(r);
	return v;
}

/* The last "vblkc: count N" in buf[0 .. len), or -1. */
static long
last_count(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *at = NULL, *q;

	while (p < end && (q = memmem(p, (size_t)(end - p), "vblkc: count ",
	    13)) != NULL) {
		at = q;
		p = q + 13;
	}
	return at != NULL ? strtol(at + 13, NULL, 10) : -1;
}

int
main(void)
{
	char disk[4096], dir[4096], log[4096], st[64];
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	int64_t inflight, writes;
	double t0;
	long n, shown;
	size_t from;
	int fd;

	state_rounds_need_hooks("holding a disk write");
	setenv("VMMD_TEST_HOLD", "disk-write", 1);
	h_init();
	c = h_setup(&d);
	snprintf(disk, sizeof(disk), "%s", h_in_dir(d, "count.raw"));
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "snap"));
	snprintf(log, sizeof(log), "%s", h_in_dir(d, "vmmd.log"));
	if ((fd = open(disk, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) < 0 || ftruncate(fd, 65536) < 0 || mkdir(dir, 0700) < 0)
		tap_bail("%s, %s: %s", disk, dir, strerror(errno));
	close(fd);

	tap_ok(h_create(c, "cnt", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\"}]", h_env("VMMD_GUEST_VBLKC"), disk) == 0 &&
	    h_start(c, "cnt") == 0, "cnt: the vblkc guest on a raw disk");
	if ((con = h_console_open(d, "cnt")) == NULL)
		tap_bail("cnt: no console");
	tap_ok(h_expect(con, "vblkc: start 0", H_BOOT_MS) == 0,
	    "cnt: the disk holds no count");
	tap_ok(h_file_expect(log, HELD, 1, H_BOOT_MS) == 0,
	    "the worker holds the guest's first write");
	/* The device counts it from its submission: wait to see it. */
	for (t0 = h_now_ms(); (inflight = blk_figure(c, "cnt",
	    "inflight")) != 1 && h_now_ms() - t0 < H_REPLY_MS;)
		h_sleep_ms(50);
	tap_ok(inflight == 1 && h_count(con->buf, con->len,
	    "vblkc: count") == 0, "in flight: the device has %lld request, "
	    "the guest waits for it", (long long)inflight);

	r = h_callf(c, H_REPLY_MS, "vm.snapshot", "{\"name\":\"cnt\","
	    "\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL && h_wait_state(c, "cnt", "stopped",
	    H_REPLY_MS) == 0, "snapshot with the write in flight: %s",
	    h_text(r));
	json_object_put(r);
	tap_ok(h_file_expect(log, RELEASED, 1, H_REPLY_MS) == 0,
	    "the snapshot released the write and waited for it");
	h_console_drain(con, 200);
	tap_ok(h_count(con->buf, con->len, "vblkc: count") == 0,
	    "the guest stopped before it took the answer");
	n = disk_count(disk);
	tap_ok(n == 1, "the write is on the disk at the snapshot: count %ld",
	    n);
	h_console_close(con);

	r = h_callf(c, H_BOOT_MS, "vm.restore", "{\"dir\":\"%s\"}", dir);
	tap_ok(h_ret(r) != NULL, "cnt: restored: %s", h_text(r));
	json_object_put(r);
	if ((con = h_console_open(d, "cnt")) == NULL)
		tap_bail("cnt: no console after the restore");
	from = con->len;
	tap_ok(h_expect(con, "vblkc: count 1\r\n", H_BOOT_MS) == 0 &&
	    h_expect(con, "vblkc: count 5\r\n", H_BOOT_MS) == 0,
	    "restored: the guest took the answer (count 1) and counts on");
	/* Paused, the figures and the disk hold still. */
	r = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"cnt\"}");
	tap_ok(h_ret(r) != NULL, "cnt: paused: %s", h_text(r));
	json_object_put(r);
	h_console_drain(con, 200);
	shown = last_count(con->buf + from, con->len - from);
	writes = blk_figure(c, "cnt", "writes");
	n = disk_count(disk);
	tap_ok(h_count(con->buf + from, con->len - from, "vblkc: count 1\r") ==
	    1 && h_count(con->buf + from, con->len - from, "FAIL") == 0 &&
	    h_count(con->buf + from, con->len - from, "vblkc: start") == 0,
	    "restored: count 1 said once, no FAIL (no completion more than "
	    "asked for, the disk as the guest wrote it), no new start");
	/*
	 * Writes after the restore: counts 2 .. shown, and maybe the next
	 * one's, done before its flush; the held one not again.
	 */
	tap_ok(shown >= 5 && (writes == shown - 1 || writes == shown) &&
	    (n == shown || n == shown + 1),
	    "the restored device wrote %lld times for counts 2 to %ld; the "
	    "disk holds %ld", (long long)writes, shown, n);
	h_console_close(con);
	tap_ok(h_stop(c, "cnt", true, -1, H_REPLY_MS) == 0 &&
	    strcmp(h_state(c, "cnt", st, sizeof(st)), "stopped") == 0,
	    "cnt: stopped");
	h_close(c);
	return h_done();
}
