/*
 * RBD disks on a one-node Ceph cluster this test starts (tests/
 * ceph-cluster.c: a monitor and a memory-backed OSD): the vblk guest
 * (tests/guests/vblk.c) on an image imported from its base reads it,
 * writes, flushes and reads back; vm.info and vmctl info show the disk
 * connected and locked; after a power cycle (vm.reset) it reads its
 * disk again.  A second vmmd's start of a VM on the same image is
 * refused while the first runs, naming the holder; with break_lock it
 * starts, and the first guest's requests fail from then on (its client
 * is blocklisted), which its vm.info says.  Stopped, `rbd export` of
 * the image holds what the guests wrote.  Bad RBD paths are refused at
 * vm.create with the reason.
 *
 * Skips where the Ceph daemons are not installed: the nested test host,
 * whose initramfs carries no Ceph, runs it only where /dev/kvm opens
 * natively (meson.build's kvm_native_only).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceph-cluster.h"
#include "harness.h"
#include "vblk-disks.h"

static struct ceph_cluster cluster;
static char spec[PATH_MAX + 64];

static pid_t cluster_owner;

/* A bail-out too leaves no Ceph daemon behind (not a child's exit). */
static void
stop_cluster(void)
{
	if (getpid() == cluster_owner)
		ceph_cluster_stop(&cluster);
}

/* vm.info's disk i of vm, or NULL (*r to put). */
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

static bool
disk_locked(struct json_object *disk)
{
	struct json_object *v;

	return json_object_object_get_ex(disk, "locked", &v) &&
	    json_object_get_boolean(v);
}

/* Until vm's disk 0 is in state, within H_BOOT_MS: whether it came. */
static bool
wait_disk_state(struct h_conn *c, const char *vm, const char *state)
{
	double end = h_now_ms() + H_BOOT_MS;
	struct json_object *r, *disk;
	bool seen = false;

	while (!seen && h_now_ms() < end) {
		disk = disk_info(c, vm, 0, &r);
		seen = disk != NULL &&
		    strcmp(h_str(disk, "state") ?: "", state) == 0;
		json_object_put(r);
		if (!seen)
			h_sleep_ms(200);
	}
	return seen;
}

static void
test_first(struct h_daemon *d, struct h_conn *c)
{
	struct json_object *r, *disk;
	struct h_proc p;
	int st;

	tap_ok(h_create(c, "r1", "\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\",\"serial\":\"rbd0\"}]", h_env("VMMD_GUEST_VBLK"),
	    spec) == 0, "r1: created on %s", spec);
	tap_ok(h_start(c, "r1") == 0, "r1: started");
	tap_ok(h_file_expect(h_console_log(d, "r1"), "vblk: disk0 slot 2, 128 "
	    "sectors, serial rbd0", 1, H_BOOT_MS) == 0,
	    "r1: the image's 128 sectors, and the serial");
	tap_ok(vdisk_guest_passes(d, "r1", 1), "r1: the guest reads the base "
	    "from the cluster, writes, flushes, reads back, passes");
	disk = disk_info(c, "r1", 0, &r);
	tap_ok(disk != NULL && strcmp(h_str(disk, "format") ?: "", "rbd") ==
	    0 && strcmp(h_str(disk, "state") ?: "", "connected") == 0 &&
	    disk_locked(disk) && strncmp(h_str(disk, "client") ?: "",
	    "client.", 7) == 0 && h_int(disk, "size", -1) ==
	    VDISK_BASE_BYTES && h_int(disk, "reads", 0) > 0 &&
	    h_int(disk, "writes", 0) > 0 && h_int(disk, "errors", -1) == 0,
	    "r1: vm.info shows the disk connected and locked, its reads and "
	    "writes: %s", disk != NULL ? h_text(disk) : "none");
	json_object_put(r);
	st = h_vmctl(d, &p, 10000, "info", "r1", NULL);
	tap_ok(st == 0 && p.obuf != NULL && strstr(p.obuf,
	    "disk 0: rbd, 64.0 KiB, connected, locked, ") != NULL,
	    "r1: vmctl info says so (%s)", h_flat(p.obuf != NULL &&
	    strstr(p.obuf, "disk 0:") != NULL ? strstr(p.obuf, "disk 0:") :
	    "nothing"));
	h_proc_free(&p);
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"r1\"}");
	tap_ok(h_ret(r) != NULL, "r1: vm.reset (a power cycle)");
	json_object_put(r);
	tap_ok(vdisk_guest_passes(d, "r1", 2), "r1: after the power cycle "
	    "the guest reads its disk again and passes");
}

/* A second vmmd, as another host's: refused, then taking the lock. */
static void
test_second(struct h_daemon *d, struct h_conn *c)
{
	struct h_daemon *d2 = h_daemon_start();
	struct h_conn *c2 = h_connect(d2);
	struct json_object *r, *disk;
	char holder[64] = "";

	disk = disk_info(c, "r1", 0, &r);
	if (disk != NULL)
		snprintf(holder, sizeof(holder), "%s",
		    h_str(disk, "client") ?: "");
	json_object_put(r);
	tap_ok(c2 != NULL && h_create(c2, "r2", "\"kernel\":\"%s\",\"disks\":"
	    "[{\"path\":\"%s\"}]", h_env("VMMD_GUEST_VBLK"), spec) == 0,
	    "a second vmmd: r2 created on the same image");
	if (c2 == NULL)
		goto out;
	r = h_callf(c2, H_BOOT_MS, "vm.start", "{\"name\":\"r2\"}");
	tap_ok(h_err_class(r) != NULL && holder[0] != '\0' &&
	    strstr(h_err_desc(r) ?: "", "is locked by") != NULL &&
	    strstr(h_err_desc(r) ?: "", holder) != NULL,
	    "r2: its start is refused while r1 holds the lock, naming %s: %s",
	    holder, h_err_desc(r) ?: "no error");
	json_object_put(r);
	r = h_callf(c2, H_BOOT_MS, "vm.start", "{\"name\":\"r2\","
	    "\"break_lock\":true}");
	tap_ok(h_ret(r) != NULL, "r2: started with break_lock: %s",
	    h_err_desc(r) ?: "ok");
	json_object_put(r);
	tap_ok(vdisk_guest_passes(d2, "r2", 1), "r2: its guest reads, "
	    "writes, flushes, reads back, passes");
	/* The old holder is blocklisted: its next requests fail. */
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"r1\"}");
	json_object_put(r);
	tap_ok(wait_disk_state(c, "r1", "failed"), "r1: once its lock is "
	    "broken its requests fail, and vm.info says the disk failed");
	disk = disk_info(c, "r1", 0, &r);
	tap_ok(disk != NULL && h_int(disk, "errors", 0) > 0,
	    "r1: its failed requests counted: %s", disk != NULL ?
	    h_text(disk) : "none");
	json_object_put(r);
	tap_ok(h_stop(c2, "r2", true, -1, H_REPLY_MS) == 0, "r2: stopped");
	h_close(c2);
out:
	tap_ok(h_daemon_stop(d2, 10000) == 0, "the second vmmd exits 0");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;
	struct json_object *r;
	char err[1024], dir[256], base[256], out[256];

	h_init();
	if (ceph_cluster_available(err, sizeof(err)) < 0)
		tap_skip_all("%s (the nested test host carries no Ceph)", err);
	if (vdisk_qemu_img_path() == NULL)
		tap_skip_all("qemu-img is not installed (qemu-utils)");
	c = h_setup(&d);
	snprintf(dir, sizeof(dir), "%s", h_in_dir(d, "ceph"));
	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(out, sizeof(out), "%s", h_in_dir(d, "export.raw"));
	cluster_owner = getpid();
	atexit(stop_cluster);
	if (mkdir(dir, 0755) < 0 ||
	    ceph_cluster_start(&cluster, dir, err, sizeof(err)) < 0)
		tap_bail("the test cluster: %s", err);
	tap_ok(1, "a one-node memstore cluster is up at %s",
	    cluster.mon_host);
	tap_ok(vdisk_make_base(base, 0644) == 0 &&
	    ceph_cluster_run(&cluster, NULL, 0, "rbd", "import",
	    "--no-progress", base, CEPH_CLUSTER_POOL "/vd", NULL) == 0,
	    "the vblk guest's base imported as %s/vd", CEPH_CLUSTER_POOL);
	snprintf(spec, sizeof(spec), "rbd:%s/vd,conf=%s", CEPH_CLUSTER_POOL,
	    cluster.conf);

	test_first(d, c);
	test_second(d, c);
	tap_ok(h_stop(c, "r1", true, -1, H_REPLY_MS) == 0, "r1: stopped");
	tap_ok(ceph_cluster_run(&cluster, NULL, 0, "rbd", "export",
	    "--no-progress", CEPH_CLUSTER_POOL "/vd", out, NULL) == 0 &&
	    vdisk_holds_writes(out, h_in_dir(d, "converted.raw")),
	    "rbd export of the image holds what the guests wrote");

	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"bad\","
	    "\"kernel\":\"%s\",\"disks\":[{\"path\":\"rbd:%s/vd,"
	    "conf=%s/nope.conf\"}]}", h_env("VMMD_GUEST_VBLK"),
	    CEPH_CLUSTER_POOL, dir);
	h_check_error(r, "invalid_argument", "a missing configuration file "
	    "is refused at vm.create");
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"bad\","
	    "\"kernel\":\"%s\",\"disks\":[{\"path\":\"rbd:vd\"}]}",
	    h_env("VMMD_GUEST_VBLK"));
	h_check_error(r, "invalid_argument", "an RBD path without a pool is "
	    "refused");
	json_object_put(r);

	ceph_cluster_stop(&cluster);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
