/*
 * qcow2 disks, with images made and checked by qemu-img (qemu-utils),
 * which is all this test needs beyond vmmd: the vblk guest
 * (tests/guests/vblk.c) on a qcow2 overlay over a compressed qcow2
 * image over nothing, and at the same time a second guest on a second
 * overlay over the raw image the compressed one was made from.  Each
 * reads what the host put in the base, writes, flushes and reads back;
 * afterwards qemu-img check finds both overlays clean, qemu-img convert
 * shows them holding what the guests wrote over the base, and the bases
 * are untouched.  A backing file is opened only for a disk that says
 * "backing": true; an image with an internal snapshot, and a chain that
 * loops, are refused with the reason.  A disk's format is the one its
 * definition recorded at vm.create: a guest that writes a qcow2 header
 * naming a host file into its raw disk finds it read as raw at the next
 * start, and the file never opened; a qcow2 image that does not name
 * its backing file's format is refused, saying how to name it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "harness.h"
#include "vblk-disks.h"

static struct h_daemon *d;

/* What a disk of vm's vm.info stats says, or NULL (r to put). */
static struct json_object *
disk_info(struct h_conn *c, const char *vm, int i, struct json_object **r)
{
	struct json_object *st, *disks;

	*r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", vm);
	if (!json_object_object_get_ex(h_ret(*r), "stats", &st) ||
	    !json_object_object_get_ex(st, "disks", &disks))
		return NULL;
	return json_object_array_get_idx(disks, (size_t)i);
}

/* The vblk guest's run on vm: its disk's size, then what it did. */
static void
expect_guest(const char *vm)
{
	tap_ok(h_file_expect(h_console_log(d, vm), "vblk: disk0 slot 2, 128 "
	    "sectors", 1, H_BOOT_MS) == 0, "%s: a disk of the base's 128 "
	    "sectors", vm);
	tap_ok(vdisk_guest_passes(d, vm, 1), "%s: the guest reads the base "
	    "through the overlay, writes, flushes, reads back, passes", vm);
}

/* vmctl info q1 says the same as vm.info, a line a disk. */
static void
vmctl_info_disks(struct h_daemon *d, const char *base)
{
	struct h_proc p;
	char want[4200];
	int st = h_vmctl(d, &p, 10000, "info", "q1", NULL);
	const char *out = p.obuf != NULL ? p.obuf : "";

	snprintf(want, sizeof(want), "disk 0: qcow2, %.1f KiB, ",
	    (double)VDISK_BASE_BYTES / 1024);
	tap_ok(st == 0 && strstr(out, want) != NULL && strstr(out, base) !=
	    NULL && strstr(out, "metadata cache ") != NULL &&
	    strstr(out, "disk 1: raw, ") != NULL && strstr(out, "DAMAGED") ==
	    NULL, "q1: vmctl info shows both disks' format, sizes, backing "
	    "file and cache (%s)", h_flat(strstr(out, "disk 0:") ?: out));
	h_proc_free(&p);
}

/* overlay is clean and holds the guest's writes over the base. */
static void
expect_written(const char *overlay, const char *vm)
{
	tap_ok(vdisk_holds_writes(overlay, h_in_dir(d, "converted.raw")),
	    "%s: qemu-img check finds the overlay clean, and it reads as the "
	    "base with the guest's pattern in sectors 1-2 and zeroes in "
	    "sector 3", vm);
}

static void
test_guests(struct h_conn *c)
{
	char base[512], comp[512], over1[512], over2[512], ro[512];
	struct json_object *r, *disk;
	char *was_base, *was_comp;
	size_t base_len, comp_len, len;
	char *now;
	int fd;

	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(comp, sizeof(comp), "%s", h_in_dir(d, "base-c.qcow2"));
	snprintf(over1, sizeof(over1), "%s", h_in_dir(d, "over1.qcow2"));
	snprintf(over2, sizeof(over2), "%s", h_in_dir(d, "over2.qcow2"));
	snprintf(ro, sizeof(ro), "%s", h_in_dir(d, "ro.img"));
	tap_ok(vdisk_make_base(base, 0644) == 0, "a raw base image");
	tap_ok(vdisk_qemu_img("convert", "-q", "-c", "-O", "qcow2", base,
	    comp, NULL) == 0, "qemu-img convert -c: a compressed qcow2 copy");
	tap_ok(vdisk_qemu_img("create", "-q", "-f", "qcow2", "-b", comp, "-F",
	    "qcow2", over1, NULL) == 0, "an overlay over the compressed one");
	tap_ok(vdisk_qemu_img("create", "-q", "-f", "qcow2", "-b", base, "-F",
	    "raw", over2, NULL) == 0, "an overlay over the raw one");
	fd = open(ro, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	tap_ok(fd >= 0 && ftruncate(fd, 4096) == 0, "a read-only raw disk");
	if (fd >= 0)
		close(fd);
	was_base = h_read_file(base, &base_len);
	was_comp = h_read_file(comp, &comp_len);

	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"q1\","
	    "\"kernel\":\"%s\",\"disks\":[{\"path\":\"%s\"},{\"path\":\"%s\","
	    "\"readonly\":true}]}", h_env("VMMD_GUEST_VBLK"), over1, ro);
	if (h_check_error(r, "permission_denied", "without \"backing\": "
	    "refused"))
		tap_ok(strstr(h_err_desc(r), comp) != NULL &&
		    strstr(h_err_desc(r), "\"backing\": true") != NULL,
		    "naming the backing file and the way to allow it: %s",
		    h_err_desc(r));
	json_object_put(r);

	tap_ok(h_create(c, "q1", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\",\"backing\":true},{\"path\":\"%s\",\"readonly\":true}]",
	    h_env("VMMD_GUEST_VBLK"), over1, ro) == 0,
	    "q1: created on the first overlay, backing allowed");
	tap_ok(h_create(c, "q2", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\",\"format\":\"qcow2\",\"backing\":true},{\"path\":\"%s\","
	    "\"readonly\":true}]", h_env("VMMD_GUEST_VBLK"), over2, ro) == 0,
	    "q2: created on the second");
	tap_ok(h_start(c, "q1") == 0 && h_start(c, "q2") == 0,
	    "both started");
	expect_guest("q1");
	expect_guest("q2");
	disk = disk_info(c, "q1", 0, &r);
	tap_ok(disk != NULL && strcmp(h_str(disk, "format") ?: "",
	    "qcow2") == 0 && h_int(disk, "size", -1) == VDISK_BASE_BYTES &&
	    h_int(disk, "backing_images", -1) == 1 &&
	    strcmp(json_object_get_string(json_object_array_get_idx(
	    json_object_object_get(disk, "backing"), 0)) ?: "", comp) == 0 &&
	    h_int(disk, "cache_hits", -1) + h_int(disk, "cache_misses", -1)
	    > 0 && json_object_get_boolean(json_object_object_get(disk,
	    "broken")) == 0, "q1: vm.info shows the qcow2 disk: %s",
	    disk != NULL ? h_text(disk) : "none");
	json_object_put(r);
	disk = disk_info(c, "q1", 1, &r);
	tap_ok(disk != NULL && strcmp(h_str(disk, "format") ?: "",
	    "raw") == 0, "q1: and the raw one: %s",
	    disk != NULL ? h_text(disk) : "none");
	json_object_put(r);
	vmctl_info_disks(d, comp);
	tap_ok(h_stop(c, "q1", true, -1, H_REPLY_MS) == 0 &&
	    h_stop(c, "q2", true, -1, H_REPLY_MS) == 0, "both stopped");
	expect_written(over1, "q1");
	expect_written(over2, "q2");
	now = h_read_file(base, &len);
	tap_ok(now != NULL && was_base != NULL && len == base_len &&
	    memcmp(now, was_base, len) == 0, "the raw base is untouched");
	free(now);
	now = h_read_file(comp, &len);
	tap_ok(now != NULL && was_comp != NULL && len == comp_len &&
	    memcmp(now, was_comp, len) == 0,
	    "the compressed base is untouched");
	free(now);
	free(was_base);
	free(was_comp);
}

static void
test_refusals(struct h_conn *c)
{
	const char *snap = h_in_dir(d, "snap.qcow2"), *a = h_in_dir(d, "a.qcow2");
	const char *b = h_in_dir(d, "b.qcow2");
	struct json_object *r;

	tap_ok(vdisk_qemu_img("create", "-q", "-f", "qcow2", snap, "1M",
	    NULL) == 0 && vdisk_qemu_img("snapshot", "-c", "s1", snap,
	    NULL) == 0,
	    "an image with an internal snapshot");
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"snap\","
	    "\"disks\":[{\"path\":\"%s\"}]}", snap);
	if (h_check_error(r, "invalid_argument", "refused"))
		tap_ok(strstr(h_err_desc(r), "snapshot") != NULL &&
		    strstr(h_err_desc(r), snap) != NULL, "with the reason: %s",
		    h_err_desc(r));
	json_object_put(r);

	/* a over b over a: qemu-img makes it only when told not to look. */
	tap_ok(vdisk_qemu_img("create", "-q", "-f", "qcow2", b, "1M",
	    NULL) == 0 && vdisk_qemu_img("create", "-q", "-f", "qcow2", "-u",
	    "-b", b, "-F", "qcow2", a, "1M", NULL) == 0 &&
	    vdisk_qemu_img("rebase", "-u", "-b", a, "-F", "qcow2", b,
	    NULL) == 0, "a backing chain that loops");
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"loop\","
	    "\"disks\":[{\"path\":\"%s\",\"backing\":true}]}", a);
	if (h_check_error(r, "invalid_argument", "refused"))
		tap_ok(strstr(h_err_desc(r), "comes back") != NULL,
		    "said so: %s", h_err_desc(r));
	json_object_put(r);
}

/* Whether the inotify descriptor ino saw its file opened since last. */
static bool
was_opened(int ino)
{
	char buf[4096] __attribute__((aligned(8)));
	bool opened = false;
	ssize_t n;

	while ((n = read(ino, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;

			opened |= (e->mask & IN_OPEN) != 0;
			p += sizeof(*e) + e->len;
		}
	return opened;
}

/* path's bytes over the start of disk (the guest's writes): 0 or -1. */
static int
copy_over(const char *path, const char *disk)
{
	size_t len;
	char *buf = h_read_file(path, &len);
	int fd, rc = -1;

	fd = open(disk, O_WRONLY | O_CLOEXEC);
	if (buf != NULL && fd >= 0 && pwrite(fd, buf, len, 0) == (ssize_t)len)
		rc = 0;
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* Starts vm, waits for the echo guest, checks disk 0 in vm.info, stops. */
static void
run_echo(struct h_conn *c, const char *vm, const char *what)
{
	struct json_object *r, *disk, *chain;

	tap_ok(h_start(c, vm) == 0 && h_file_expect(h_console_log(d, vm),
	    "echo: ready", 1, H_BOOT_MS) == 0, "%s: %s: the guest runs", vm,
	    what);
	disk = disk_info(c, vm, 0, &r);
	if (disk == NULL || !json_object_object_get_ex(disk, "backing",
	    &chain))
		chain = NULL;
	tap_ok(disk != NULL && strcmp(h_str(disk, "format") ?: "",
	    "raw") == 0 && h_int(disk, "backing_images", 0) == 0 &&
	    (chain == NULL || json_object_array_length(chain) == 0),
	    "%s: %s: its disk is raw, over nothing: %s", vm, what,
	    disk != NULL ? h_text(disk) : "none");
	json_object_put(r);
	tap_ok(h_stop(c, vm, true, -1, H_REPLY_MS) == 0, "%s: stopped", vm);
}

/*
 * The guest of a raw disk writes a qcow2 header naming a host file (its
 * own disk's first sector: written here between two starts, standing
 * for the guest), on a disk that allows backing files: the next start
 * reads the disk as the raw one it was created as, and the file is not
 * opened.  And a qcow2 image that names no format for its backing file.
 */
static void
test_guest_header(struct h_conn *c)
{
	char raw[512], secret[512], hdr[512], bare[512];
	struct json_object *r, *disks;
	int fd, ino;

	snprintf(raw, sizeof(raw), "%s", h_in_dir(d, "guest.raw"));
	snprintf(secret, sizeof(secret), "%s", h_in_dir(d, "secret.raw"));
	snprintf(hdr, sizeof(hdr), "%s", h_in_dir(d, "header.qcow2"));
	snprintf(bare, sizeof(bare), "%s", h_in_dir(d, "bare.qcow2"));
	fd = open(raw, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	tap_ok(fd >= 0 && ftruncate(fd, 1 << 20) == 0, "a raw disk");
	if (fd >= 0)
		close(fd);
	tap_ok(vdisk_qemu_img("create", "-q", "-f", "raw", secret, "1M",
	    NULL) == 0, "a host file, %s", secret);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ino < 0 || inotify_add_watch(ino, secret, IN_OPEN) < 0)
		tap_bail("inotify: %s", strerror(errno));

	tap_ok(h_create(c, "gh", "\"kernel\":\"%s\",\"memory_mib\":32,"
	    "\"disks\":[{\"path\":\"%s\",\"backing\":true}]",
	    h_env("VMMD_GUEST_ECHO"), raw) == 0,
	    "gh: created on it without a format, backing allowed");
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"gh\"}");
	disks = json_object_object_get(h_ret(r), "disks");
	tap_ok(strcmp(h_str(json_object_array_get_idx(disks, 0), "format") ?:
	    "", "raw") == 0, "gh: its definition records the format found, "
	    "raw: %s", disks != NULL ? json_object_to_json_string(disks) :
	    "no disks");
	json_object_put(r);
	run_echo(c, "gh", "first start");

	tap_ok(vdisk_qemu_img("create", "-q", "-f", "qcow2", "-b", secret,
	    "-F", "raw", hdr, NULL) == 0 && copy_over(hdr, raw) == 0,
	    "the guest writes a qcow2 header naming %s into its disk",
	    secret);
	was_opened(ino);
	run_echo(c, "gh", "second start");
	tap_ok(!was_opened(ino), "gh: %s was not opened", secret);

	/* A qcow2 image naming its backing file but not its format: an
	 * image qemu-img made before 6.1; now made by renaming the
	 * extension to one nobody knows. */
	fd = -1;
	if (vdisk_qemu_img("create", "-q", "-f", "qcow2", "-b", secret,
	    "-F", "raw", bare, NULL) == 0)
		fd = open(bare, O_RDWR | O_CLOEXEC);
	{
		unsigned char c0[4096];
		ssize_t n = fd >= 0 ? pread(fd, c0, sizeof(c0), 0) : -1;
		bool done = false;

		for (ssize_t o = 104; !done && o + 4 <= n; o += 4)
			if (memcmp(c0 + o, "\xe2\x79\x2a\xca", 4) == 0)
				done = pwrite(fd, "\x01\x02\x03\x04", 4, o) == 4;
		tap_ok(done, "a qcow2 image over %s naming no backing format",
		    secret);
	}
	if (fd >= 0)
		close(fd);
	was_opened(ino);
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"bare\","
	    "\"kernel\":\"%s\",\"disks\":[{\"path\":\"%s\","
	    "\"backing\":true}]}", h_env("VMMD_GUEST_ECHO"), bare);
	if (h_check_error(r, "invalid_argument", "vm.create on it: refused"))
		tap_ok(strstr(h_err_desc(r), bare) != NULL &&
		    strstr(h_err_desc(r), "qemu-img rebase -u -F raw|qcow2") !=
		    NULL, "saying how to name it: %s", h_err_desc(r));
	json_object_put(r);
	tap_ok(!was_opened(ino), "and %s was not opened", secret);
	close(ino);
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	if (vdisk_qemu_img_path() == NULL)
		tap_skip_all("qemu-img is not installed (qemu-utils)");
	c = h_setup(&d);
	test_guests(c);
	test_refusals(c);
	test_guest_header(c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
