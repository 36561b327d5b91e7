/*
 * Thin clones: ten VMs created with one raw base as an overlay disk
 * ({"path": BASE, "overlay": true}, vmctl --disk BASE,overlay), all
 * started at once, each the vblk guest (tests/guests/vblk.c) reading the
 * base through its own overlay and writing to it.  Then: every overlay
 * is clean by qemu-img check and holds its guest's writes, the base is
 * untouched; the overlays survive a restart of vmmd and of the guest;
 * vm.reset_disk (vmctl reset-disk) makes an overlay read as the base
 * again, and is refused while the guest runs; vm.delete with remove_data
 * and a transient VM's end remove the overlay; a read-only overlay disk, and a client
 * who cannot read the base, are refused at create.  The time the ten
 * creates and starts took is printed, not asserted.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "vblk-disks.h"

#define NCLONES		10
#define NOBODY		65534

static struct h_daemon *d;
static char base[512], ro[512];

/* vmctl ARGS... (NULL-terminated): its exit status, a failure said. */
static int
vmctl(const char *arg, ...)
{
	struct h_proc p;
	va_list ap;
	int rc;

	va_start(ap, arg);
	rc = h_vmctlv(d, &p, H_REPLY_MS, arg, ap);
	va_end(ap);
	if (rc != 0)
		tap_diag("vmctl %s: exit %d: %s", arg, rc,
		    h_flat(p.ebuf != NULL ? p.ebuf : ""));
	h_proc_free(&p);
	return rc;
}

/* Where vdisk_holds_writes() converts an image to. */
static const char *
converted(void)
{
	return h_in_dir(d, "converted.raw");
}

/* Where vmmd keeps disk n of vm's overlay. */
static const char *
overlay(const char *vm, int n)
{
	static char buf[4][512];
	static int turn;
	char *b = buf[turn++ % 4];

	snprintf(b, sizeof(buf[0]), "%s/disks/%s.%d.qcow2", d->state, vm, n);
	return b;
}

static const char *
clone_name(int i)
{
	static char buf[4][16];
	static int turn;
	char *b = buf[turn++ % 4];

	snprintf(b, sizeof(buf[0]), "c%d", i);
	return b;
}

static bool
exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void
test_clones(struct h_conn *c)
{
	struct json_object *r, *disk;
	char *was, *now, diskarg[600];
	size_t was_len, len;
	double t0, t1;
	struct stat st;
	int i, ok;

	tap_ok(vdisk_make_base(base, 0644) == 0, "a raw base image");
	tap_ok(vdisk_make_base(ro, 0644) == 0, "a read-only second disk");
	was = h_read_file(base, &was_len);

	/* Ten clones, half through vmctl, all started at once. */
	snprintf(diskarg, sizeof(diskarg), "%s,overlay", base);
	t0 = h_now_ms();
	ok = 1;
	for (i = 0; i < NCLONES; i++) {
		char rodisk[600];

		snprintf(rodisk, sizeof(rodisk), "%s,readonly", ro);
		if (i % 2 == 0)
			ok &= h_create(c, clone_name(i), "\"kernel\":\"%s\","
			    "\"disks\":[{\"path\":\"%s\",\"overlay\":true},"
			    "{\"path\":\"%s\",\"readonly\":true}]",
			    h_env("VMMD_GUEST_VBLK"), base, ro) == 0;
		else
			ok &= vmctl("create", clone_name(i), "--memory", "32",
			    "--kernel", h_env("VMMD_GUEST_VBLK"), "--disk",
			    diskarg, "--disk", rodisk, NULL) == 0;
	}
	tap_ok(ok, "ten VMs created over one base");
	for (i = 0; i < NCLONES; i++)
		ok &= h_start(c, clone_name(i)) == 0;
	t1 = h_now_ms();
	tap_ok(ok, "all ten started");
	tap_diag("ten thin clones created and started in %.0f ms",
	    t1 - t0);

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"c0\"}");
	disk = json_object_array_get_idx(json_object_object_get(h_ret(r),
	    "disks"), 0);
	tap_ok(disk != NULL && strcmp(h_str(disk, "path") ?: "", base) == 0 &&
	    json_object_get_boolean(json_object_object_get(disk, "overlay")) &&
	    strcmp(h_str(disk, "overlay_path") ?: "", overlay("c0", 0)) == 0,
	    "vm.info shows the base, overlay and the overlay's path: %s",
	    disk != NULL ? h_text(disk) : h_text(r));
	json_object_put(r);

	for (ok = 1, i = 0; i < NCLONES; i++)
		if (!vdisk_guest_passes(d, clone_name(i), 1)) {
			tap_diag("%s: the guest did not pass", clone_name(i));
			ok = 0;
		}
	tap_ok(ok, "every guest reads the base through its overlay, writes "
	    "and passes");
	r = h_callf(c, H_REPLY_MS, "vm.reset_disk", "{\"name\":\"c0\"}");
	h_check_error(r, "bad_state", "vm.reset_disk of a running VM");
	json_object_put(r);
	for (ok = 1, i = 0; i < NCLONES; i++)
		ok &= h_stop(c, clone_name(i), true, -1, H_REPLY_MS) == 0;
	tap_ok(ok, "all stopped");

	for (ok = 1, i = 0; i < NCLONES; i++)
		if (!vdisk_holds_writes(overlay(clone_name(i), 0), converted())) {
			tap_diag("%s: its overlay is not as it should be",
			    clone_name(i));
			ok = 0;
		}
	tap_ok(ok, "every overlay is clean by qemu-img check and holds its "
	    "guest's writes");
	if (stat(overlay("c3", 0), &st) < 0)
		memset(&st, 0, sizeof(st));
	tap_ok(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600 &&
	    st.st_uid == geteuid(),
	    "an overlay is the daemon's, mode 0600 (mode %o, uid %lu)",
	    (unsigned)(st.st_mode & 07777), (unsigned long)st.st_uid);
	now = h_read_file(base, &len);
	tap_ok(now != NULL && was != NULL && len == was_len &&
	    memcmp(now, was, len) == 0, "the base is untouched");
	free(now);
	free(was);

	/* Creating one again changes nothing of the one there is. */
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"c1\","
	    "\"disks\":[{\"path\":\"%s\",\"overlay\":true}]}", base);
	h_check_error(r, "exists", "creating c1 again");
	json_object_put(r);
	tap_ok(vdisk_holds_writes(overlay("c1", 0), converted()), "c1's overlay is as it was");
}

static void
test_restarts(struct h_conn **c)
{
	tap_ok(h_daemon_restart(d, 10000) == 0, "vmmd restarted");
	h_close(*c);
	*c = h_connect(d);
	if (*c == NULL)
		tap_bail("cannot connect to the restarted vmmd");
	tap_ok(vdisk_holds_writes(overlay("c0", 0), converted()) &&
	    vdisk_holds_writes(overlay("c9", 0), converted()),
	    "the overlays survive the restart of vmmd");
	tap_ok(h_start(*c, "c0") == 0 && vdisk_guest_passes(d, "c0", 2) &&
	    h_stop(*c, "c0", true, -1, H_REPLY_MS) == 0,
	    "c0 starts again on its overlay and passes");
	tap_ok(vdisk_holds_writes(overlay("c0", 0), converted()),
	    "and its overlay survives the guest's restart");
}

static void
test_reset(struct h_conn *c)
{
	struct json_object *r;
	struct stat st;
	ino_t ino;

	ino = stat(overlay("c2", 0), &st) == 0 ? st.st_ino : 0;
	tap_ok(vmctl("reset-disk", "c2", "0", NULL) == 0,
	    "vmctl reset-disk c2 0");
	tap_ok(vdisk_qemu_img("check", "-q", overlay("c2", 0), NULL) == 0 &&
	    vdisk_qemu_img("compare", "-q", overlay("c2", 0), base, NULL) == 0,
	    "the fresh overlay is clean and reads as the base");
	tap_ok(stat(overlay("c2", 0), &st) == 0 && st.st_ino != ino,
	    "a new file, renamed over the old one");
	r = h_callf(c, H_REPLY_MS, "vm.reset_disk", "{\"name\":\"c4\"}");
	tap_ok(h_err_class(r) == NULL && vdisk_qemu_img("compare", "-q",
	    overlay("c4", 0), base, NULL) == 0,
	    "vm.reset_disk without a disk resets every overlay disk: %s",
	    h_text(r));
	json_object_put(r);
	h_expect_error(c, "vm.reset_disk", "{\"name\":\"c4\",\"disk\":1}",
	    "invalid_argument", "vm.reset_disk of a disk that is no overlay");
	tap_ok(h_start(c, "c2") == 0 && vdisk_guest_passes(d, "c2", 2) &&
	    h_stop(c, "c2", true, -1, H_REPLY_MS) == 0 &&
	    vdisk_holds_writes(overlay("c2", 0), converted()),
	    "c2 runs on its fresh overlay");
}

static void
test_delete(struct h_conn *c)
{
	int i, ok = 1;

	struct json_object *r;

	for (i = 0; i < NCLONES; i++) {
		r = h_callf(c, H_REPLY_MS, "vm.delete", "{\"name\":\"%s\","
		    "\"remove_data\":true}", clone_name(i));
		ok &= h_err_class(r) == NULL &&
		    !exists(overlay(clone_name(i), 0));
		json_object_put(r);
	}
	tap_ok(ok, "vm.delete with remove_data removes each VM's overlay");

	tap_ok(h_create(c, "t", "\"kernel\":\"%s\",\"transient\":true,"
	    "\"disks\":[{\"path\":\"%s\",\"overlay\":true},{\"path\":\"%s\","
	    "\"readonly\":true}]", h_env("VMMD_GUEST_VBLK"), base, ro) == 0 &&
	    exists(overlay("t", 0)), "a transient clone has its overlay");
	tap_ok(h_start(c, "t") == 0 && vdisk_guest_passes(d, "t", 1) &&
	    h_stop(c, "t", true, -1, H_REPLY_MS) == 0 &&
	    !exists(overlay("t", 0)), "which goes when the VM goes");
}

/* As uid nobody: vm.create of a clone of path; the error class or "". */
static void
user_create(const char *path, const char *want, const char *what)
{
	int status;
	pid_t pid;

	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		struct json_object *r;
		struct h_conn *u;
		gid_t g = NOBODY;

		if (setgroups(1, &g) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0 || (u = h_connect(d)) == NULL)
			_exit(2);
		r = h_callf(u, H_REPLY_MS, "vm.create", "{\"name\":\"u\","
		    "\"disks\":[{\"path\":\"%s\",\"overlay\":true}]}", path);
		_exit(strcmp(h_err_class(r) ?: "", want) == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "%s (status 0x%x)", what, status);
}

static void
test_refusals(struct h_conn *c)
{
	const char *secret = h_in_dir(d, "secret.raw");
	struct json_object *r;

	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"rov\","
	    "\"disks\":[{\"path\":\"%s\",\"overlay\":true,\"readonly\":true}]}",
	    base);
	if (h_check_error(r, "invalid_argument", "a read-only overlay disk"))
		tap_ok(strstr(h_err_desc(r), "overlay") != NULL &&
		    strstr(h_err_desc(r), "readonly") != NULL,
		    "said so: %s", h_err_desc(r));
	json_object_put(r);
	tap_ok(!exists(overlay("rov", 0)), "and no overlay made");

	if (geteuid() != 0) {
		tap_diag("not root: no test as another user");
		return;
	}
	/* The way to the socket and the bases open to others. */
	tap_ok(chmod(d->dir, 0711) == 0 && chmod(d->sock, 0666) == 0 &&
	    vdisk_make_base(secret, 0600) == 0, "a base only root can read");
	user_create(secret, "permission_denied",
	    "uid nobody may not clone a base it cannot read");
	tap_ok(!exists(overlay("u", 0)), "and no overlay made");
	user_create(base, "", "but may clone one it can read");
	tap_ok(exists(overlay("u", 0)), "which has its overlay");
	r = h_callf(c, H_REPLY_MS, "vm.delete", "{\"name\":\"u\","
	    "\"remove_data\":true}");
	tap_ok(h_err_class(r) == NULL && !exists(overlay("u", 0)),
	    "deleted with it, with remove_data");
	json_object_put(r);
}

int
main(void)
{
	struct h_conn *c;

	h_init();
	if (vdisk_qemu_img_path() == NULL)
		tap_skip_all("qemu-img is not installed (qemu-utils)");
	c = h_setup(&d);
	snprintf(base, sizeof(base), "%s", h_in_dir(d, "base.raw"));
	snprintf(ro, sizeof(ro), "%s", h_in_dir(d, "ro.img"));
	test_clones(c);
	test_restarts(&c);
	test_reset(c);
	test_delete(c);
	test_refusals(c);
	h_close(c);
	tap_ok(h_daemon_stop(d, 10000) == 0, "vmmd exits 0 on SIGTERM");
	return h_done();
}
