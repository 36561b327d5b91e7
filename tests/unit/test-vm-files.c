/*
 * Unit tests for daemon/supervisor/vm-files.c's disk locks: one image is
 * one guest's to write, or any number of guests' to read.  Real files
 * and real open file description locks; a second process holds a lock
 * as another worker would.  And its refusal of images in formats that
 * are not raw, unless the definition says raw.  And which clients may
 * use which TAPs (the rules of vmmd.conf's tap_allow), decided before
 * any TAP is touched.  And thin clones' overlays, opened as the top of
 * a chain over their base.  And formats decided by the definition, not
 * by a header a guest wrote: recorded at create, never guessed for a
 * backing file.  And an RBD disk's configuration and keyring, read
 * into one sealed memory file for the worker, no disk lock taken.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <net/if.h>

#include "access.h"
#include "daemon-conf.h"
#include "disk-overlay.h"
#include "qcow2-create.h"
#include "tap.h"
#include "vm-disklock.h"
#include "vm-files.h"

static char image[] = "/tmp/vmmd-test-vm-files-XXXXXX";

static void
def_init(struct vm_def *def, const char *name, bool readonly)
{
	memset(def, 0, sizeof(*def));
	def->name = (char *)name;
	def->disks[0].path = image;
	def->disks[0].readonly = readonly;
	def->ndisks = 1;
	/* The images here are blank: a disk boot would be refused. */
	def->boot = VM_BOOT_KERNEL;
}

/* vm_files_open + vm_files_lock_disks, as a start does: 0 or -errno. */
static int
start(const struct vm_def *def, struct vm_files *f, enum proto_error *cls,
    char *err, size_t errlen)
{
	int rc;

	*cls = 0;
	err[0] = '\0';
	rc = vm_files_open(def, NULL, NULL, false, NULL, f, cls, err, errlen);
	if (rc < 0)
		return rc;
	rc = vm_files_lock_disks(def, f, false, cls, err, errlen);
	if (rc < 0)
		vm_files_close(f);
	return rc;
}

static void
test_writers(void)
{
	struct vm_def a, b;
	struct vm_files fa, fb;
	enum proto_error cls;
	char err[512];
	int rc;

	def_init(&a, "a", false);
	def_init(&b, "b", false);
	tap_ok(start(&a, &fa, &cls, err, sizeof(err)) == 0,
	    "a writer locks the image (%s)", err);
	rc = start(&b, &fb, &cls, err, sizeof(err));
	tap_ok(rc == -EAGAIN && cls == PROTO_ERR_BAD_STATE,
	    "a second writer is refused: %d, class %d", rc, (int)cls);
	tap_ok(strstr(err, image) != NULL && strstr(err, "in use") != NULL,
	    "in words naming the image: %s", err);
	b.disks[0].readonly = true;
	rc = start(&b, &fb, &cls, err, sizeof(err));
	tap_ok(rc == -EAGAIN, "and a reader too: %s", err);
	vm_files_close(&fa);
	b.disks[0].readonly = false;
	tap_ok(start(&b, &fb, &cls, err, sizeof(err)) == 0,
	    "once the first guest's descriptor is closed, the image is free");
	vm_files_close(&fb);
}

/*
 * A guest arriving by migration finds its written disk locked by its
 * source: opened without the lock, which its vmmd's handle takes once
 * the source let it go (vm-disklock.h); a source that drops its handle
 * lets it go while its worker's descriptor is still open.
 */
static void
test_arriving(void)
{
	struct vm_def a, b;
	struct vm_files fa, fb, fc;
	struct vm_disklock la, lb;
	enum proto_error cls;
	char err[512];
	int rc;

	def_init(&a, "a", false);
	def_init(&b, "b", false);
	vm_disklock_init(&la);
	vm_disklock_init(&lb);
	if (start(&a, &fa, &cls, err, sizeof(err)) != 0)
		tap_bail("a writer does not start: %s", err);
	vm_disklock_keep(&la, &a, &fa);
	rc = vm_files_open(&b, NULL, NULL, false, NULL, &fb, &cls, err,
	    sizeof(err));
	if (rc == 0)
		rc = vm_files_lock_disks(&b, &fb, true, &cls, err,
		    sizeof(err));
	tap_ok(rc == 0 && fb.lock_later[0], "arriving, the source's disk: "
	    "opened, its lock for later (%s)", rc == 0 ? "ok" : err);
	if (rc < 0)
		return;
	vm_disklock_keep(&lb, &b, &fb);
	tap_ok(lb.pending[0] && vm_disklock_take(&lb) == 1,
	    "not taken while the source holds it");
	/* The source's worker keeps its descriptor; vmmd lets go. */
	vm_disklock_drop(&la);
	tap_ok(vm_disklock_take(&lb) == 0 && !lb.pending[0],
	    "taken once the source's vmmd dropped it, its worker's "
	    "descriptor still open");
	rc = start(&a, &fc, &cls, err, sizeof(err));
	tap_ok(rc == -EAGAIN, "the arrived guest's alone now: %s", err);
	vm_files_close(&fa);
	vm_files_close(&fb);
	tap_ok(start(&a, &fc, &cls, err, sizeof(err)) == -EAGAIN,
	    "kept by the target vmmd's handle once its worker's copy is "
	    "closed");
	vm_disklock_release(&lb);
	tap_ok(start(&a, &fc, &cls, err, sizeof(err)) == 0,
	    "and free once that goes with the worker");
	vm_files_close(&fc);
}

static void
test_readers(void)
{
	struct vm_def a, b, c;
	struct vm_files fa, fb, fc;
	enum proto_error cls;
	char err[512];
	int rc;

	def_init(&a, "a", true);
	def_init(&b, "b", true);
	def_init(&c, "c", false);
	tap_ok(start(&a, &fa, &cls, err, sizeof(err)) == 0 &&
	    start(&b, &fb, &cls, err, sizeof(err)) == 0,
	    "two read-only disks share the image");
	rc = start(&c, &fc, &cls, err, sizeof(err));
	tap_ok(rc == -EAGAIN && cls == PROTO_ERR_BAD_STATE,
	    "a writer is refused while guests read it (%s)", err);
	vm_files_close(&fa);
	vm_files_close(&fb);
}

/*
 * The same image twice in one definition, written: refused before any
 * lock is tried, as a definition that could never start.
 */
static void
test_twice(void)
{
	struct vm_def a;
	struct vm_files fa;
	enum proto_error cls;
	char err[512];
	int rc;

	def_init(&a, "a", false);
	a.disks[1] = a.disks[0];
	a.ndisks = 2;
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EBUSY && cls == PROTO_ERR_INVALID_ARGUMENT &&
	    strstr(err, "same file") != NULL,
	    "one image as two written disks: refused (%s)",
	    err);
}

/*
 * The lock lives with the descriptor a worker inherits: a child holding
 * it keeps the image locked after the parent closed its copy, and frees
 * it by dying.
 */
static void
test_inherited(void)
{
	struct vm_def a, b;
	struct vm_files fa, fb;
	enum proto_error cls;
	char err[512];
	int p[2], status;
	pid_t pid;
	char c;

	def_init(&a, "a", false);
	def_init(&b, "b", false);
	if (start(&a, &fa, &cls, err, sizeof(err)) < 0 || pipe(p) < 0) {
		tap_ok(0, "set-up: %s", err);
		return;
	}
	pid = fork();
	if (pid == 0) {
		/* The "worker": keeps the descriptor, CLOEXEC or not. */
		close(p[0]);
		(void)!write(p[1], "", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	(void)!read(p[0], &c, 1);
	close(p[0]);
	vm_files_close(&fa);
	tap_ok(start(&b, &fb, &cls, err, sizeof(err)) == -EAGAIN,
	    "the supervisor's copy closed, the worker's still locks it");
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	tap_ok(start(&b, &fb, &cls, err, sizeof(err)) == 0,
	    "the worker gone, the image is free (%s)", err);
	vm_files_close(&fb);
}

/* How many descriptors this process has open. */
static int
open_fds(void)
{
	struct dirent *e;
	DIR *dir;
	int n = 0;

	if ((dir = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL)
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

/*
 * A VMDK image is refused, read-only or not, unless said to be raw; so
 * is a file that begins like qcow2 but is no usable qcow2 image.
 */
static void
test_format(void)
{
	char path[] = "/tmp/vmmd-test-vm-files-vmdk-XXXXXX";
	struct vm_def a;
	struct vm_files fa;
	enum proto_error cls;
	char err[1024];
	int fd, nfd, rc;

	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, 1 << 20) < 0 ||
	    pwrite(fd, "KDMV\1\0\0\0", 8, 0) != 8) {
		tap_ok(0, "set-up: %s", path);
		return;
	}
	close(fd);
	def_init(&a, "a", false);
	a.disks[0].path = path;
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EMEDIUMTYPE && cls == PROTO_ERR_INVALID_ARGUMENT,
	    "a VMDK image: refused (%d, class %d)", rc, (int)cls);
	tap_ok(strstr(err, path) != NULL && strstr(err, "VMDK") != NULL &&
	    strstr(err, "destroy") != NULL &&
	    strstr(err, "\"format\": \"raw\"") != NULL,
	    "naming the image, its format, the danger and the way out: %s",
	    err);
	a.disks[0].readonly = true;
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EMEDIUMTYPE && strstr(err, "VMDK") != NULL &&
	    strstr(err, "destroy") == NULL,
	    "read-only too, without the writes: %s", err);
	a.disks[0].format = VM_DISK_FORMAT_RAW;
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == 0, "said to be raw: opened (%s)", err);
	if (rc == 0)
		vm_files_close(&fa);
	/* Refused, it leaves no descriptor open: its own nor the disk's
	 * before it. */
	def_init(&a, "a", false);
	a.disks[1].path = path;
	a.ndisks = 2;
	nfd = open_fds();
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EMEDIUMTYPE && open_fds() == nfd,
	    "a raw disk then a VMDK one: refused, %d descriptors open "
	    "before and %d after", nfd, open_fds());
	/* A qcow2 magic on a header that ends there. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	tap_ok(fd >= 0 && ftruncate(fd, 1 << 20) == 0 &&
	    pwrite(fd, "QFI\xfb\0\0\0\3", 8, 0) == 8, "a broken qcow2 header");
	if (fd >= 0)
		close(fd);
	nfd = open_fds();
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EINVAL && cls == PROTO_ERR_INVALID_ARGUMENT &&
	    strstr(err, path) != NULL && open_fds() == nfd,
	    "refused with the reason, no descriptor left open: %s", err);
	unlink(path);
}

/* check_tap as cred for a VM on the TAP name: 0 or -errno, err set. */
static int
check_tap(const char *name, const struct dconf_tap_rule *rules,
    size_t nrules, const struct access_cred *cred, enum proto_error *cls,
    char *err, size_t errlen)
{
	struct vm_def def;

	memset(&def, 0, sizeof(def));
	def.name = (char *)"net";
	snprintf(def.nics[0].tap, sizeof(def.nics[0].tap), "%s", name);
	def.nnics = 1;
	*cls = 0;
	err[0] = '\0';
	return vm_files_check_tap(&def, rules, nrules, cred, cls, err,
	    errlen);
}

static void
test_tap(void)
{
	static const gid_t labs[] = { 300 };
	const struct dconf_tap_rule rules[] = {
		{ .gid = 100, .name = "vmtap", .prefix = true,
		    .text = "vmtap*" },
		{ .gid = 300, .name = "lab0", .text = "lab0" },
		{ .gid = 100, .name = "br-vm", .text = "br-vm" },
	};
	struct access_cred member = { .uid = 1000, .gid = 100 };
	struct access_cred lab = { .uid = 1001, .gid = 500, .groups = labs,
	    .ngroups = 1 };
	struct access_cred stranger = { .uid = 1002, .gid = 500 };
	struct access_cred root = { .uid = 0, .gid = 0 };
	struct vm_files f;
	struct vm_def def;
	enum proto_error cls;
	char err[512];
	int rc;

	tap_ok(check_tap("vmtap0", rules, 3, &member, &cls, err,
	    sizeof(err)) == 0, "vmtap0: allowed to the primary group's member");
	tap_ok(check_tap("br-vm", rules, 3, &member, &cls, err,
	    sizeof(err)) == 0, "br-vm: a name of its own rule");
	tap_ok(check_tap("lab0", rules, 3, &lab, &cls, err, sizeof(err)) == 0,
	    "lab0: allowed by a supplementary group");
	rc = check_tap("eth-dmz", rules, 3, &member, &cls, err, sizeof(err));
	tap_ok(rc == -EACCES && cls == PROTO_ERR_PERMISSION &&
	    strcmp(err, "net: tap eth-dmz: not allowed for uid 1000, whose "
	    "groups may use vmtap*, br-vm (tap_allow in vmmd.conf)") == 0,
	    "eth-dmz: refused, naming the TAP and the rules (%s)", err);
	rc = check_tap("vmtap0", rules, 3, &lab, &cls, err, sizeof(err));
	tap_ok(rc == -EACCES && strstr(err, "may use lab0 ") != NULL,
	    "vmtap0: not the rule of another group (%s)", err);
	rc = check_tap("vmtap0", rules, 3, &stranger, &cls, err, sizeof(err));
	tap_ok(rc == -EACCES && cls == PROTO_ERR_PERMISSION &&
	    strcmp(err, "net: tap vmtap0: uid 1002 may use no TAP (no "
	    "tap_allow rule in vmmd.conf names one of its groups)") == 0,
	    "a client of no group with a rule: refused (%s)", err);
	rc = check_tap("vmtap0", NULL, 0, &member, &cls, err, sizeof(err));
	tap_ok(rc == -EACCES && strstr(err, "may use no TAP") != NULL,
	    "no rules at all: refused to all but root (%s)", err);
	tap_ok(check_tap("eth-dmz", NULL, 0, &root, &cls, err,
	    sizeof(err)) == 0, "root may use any TAP");
	tap_ok(check_tap("eth-dmz", NULL, 0, NULL, &cls, err,
	    sizeof(err)) == 0, "and so may the daemon itself");

	/* A start refused before the TAP is opened (or created). */
	memset(&def, 0, sizeof(def));
	def.name = (char *)"net";
	snprintf(def.nics[0].tap, sizeof(def.nics[0].tap), "vmmd-test-no");
	def.nnics = 1;
	memset(&f, 0, sizeof(f));
	for (unsigned int i = 0; i < CONFIG_NICS_MAX; i++)
		f.tap_fd[i] = -1;
	cls = 0;
	rc = vm_files_open_net(&def, rules, 3, &member, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == -EACCES && cls == PROTO_ERR_PERMISSION && f.tap_fd[0] == -1,
	    "vm_files_open_net: refused, no TAP opened (%s)", err);
	tap_ok(if_nametoindex("vmmd-test-no") == 0, "and none created");
}

/*
 * Overlay disks (disk-overlay.h): made over the image as their base,
 * opened at start as the top of a chain whose backing file is the base,
 * refused when they are gone, a link, or over another base; removed.
 */
static void
test_overlay(void)
{
	char dir[] = "/tmp/vmmd-test-overlay-XXXXXX", path[512], link[600];
	struct vm_files f;
	struct vm_def def;
	enum proto_error cls;
	char err[1024];
	int rc;

	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	def_init(&def, "clone", false);
	def.disks[0].overlay = true;
	rc = vm_files_open(&def, NULL, NULL, true, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == 0, "at create, an overlay disk opens its base (%s)",
	    rc == 0 ? "ok" : err);
	if (rc == 0) {
		tap_ok((fcntl(f.disk_fd[0], F_GETFL) & O_ACCMODE) == O_RDONLY,
		    "read-only");
		rc = disk_overlay_make(dir, "clone", 0, f.disk_fd[0],
		    f.disk_format[0] == VM_FILES_QCOW2, image, &cls, err,
		    sizeof(err));
		tap_ok(rc == 0, "the overlay is made over it (%s)",
		    rc == 0 ? "ok" : err);
		vm_files_close(&f);
	}
	disk_overlay_path(dir, "clone", 0, path, sizeof(path));
	rc = vm_files_open(&def, NULL, dir, false, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == 0 && f.disk_format[0] == VM_FILES_QCOW2 &&
	    f.nbacking[0] == 1 && strcmp(f.backing[0][0].path, image) == 0 &&
	    f.backing[0][0].format == VM_FILES_RAW &&
	    strcmp(f.overlay_path[0] ?: "", path) == 0,
	    "at start the overlay is the top, qcow2, over the raw base (%s)",
	    rc == 0 ? "ok" : err);
	if (rc == 0) {
		tap_ok((fcntl(f.disk_fd[0], F_GETFL) & O_ACCMODE) == O_RDWR,
		    "opened read-write");
		rc = vm_files_lock_disks(&def, &f, false, &cls, err, sizeof(err));
		tap_ok(rc == 0, "and locked (%s)", rc == 0 ? "ok" : err);
		vm_files_close(&f);
	}

	/* Another base: the overlay names the old one. */
	def.disks[0].path = (char *)"/tmp/another-base";
	rc = vm_files_open(&def, NULL, dir, false, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == -EINVAL && strstr(err, "reset-disk") != NULL,
	    "an overlay over another base is refused: %s", err);
	def.disks[0].path = image;

	/* A symbolic link in its place. */
	snprintf(link, sizeof(link), "%s.real", path);
	if (rename(path, link) < 0 || symlink(link, path) < 0)
		tap_bail("symlink: %s", strerror(errno));
	rc = vm_files_open(&def, NULL, dir, false, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == -ELOOP && strstr(err, "symbolic link") != NULL,
	    "an overlay that is a symbolic link is refused: %s", err);
	unlink(path);
	unlink(link);

	rc = vm_files_open(&def, NULL, dir, false, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == -ENOENT && strstr(err, "vmctl reset-disk clone 0") !=
	    NULL, "a missing overlay says how to make one: %s", err);

	rc = vm_files_open(&def, NULL, NULL, true, NULL, &f, &cls, err,
	    sizeof(err));
	if (rc == 0) {
		disk_overlay_make(dir, "clone", 0, f.disk_fd[0], false, image,
		    &cls, err, sizeof(err));
		vm_files_close(&f);
	}
	rc = disk_overlay_remove(dir, &def, err, sizeof(err));
	tap_ok(rc == 0 && access(path, F_OK) < 0 && errno == ENOENT,
	    "removed with the VM");
	tap_ok(disk_overlay_remove(dir, &def, err, sizeof(err)) == 0,
	    "removing it again is fine");
	rmdir(dir);
}

/*
 * The first three clusters of a qcow2 image of size bytes over the
 * backing file backing in format fmt ("" for none: the extension's
 * type zeroed, which ends the extensions before it), into fd at 0:
 * what a guest can write into a raw disk of 256 KiB or more.
 */
static int
write_qcow2_header(int fd, const char *backing, const char *fmt)
{
	uint8_t *buf = malloc(3 << 16);
	int mfd, rc = -1;

	mfd = memfd_create("qcow2", MFD_CLOEXEC);
	if (buf != NULL && mfd >= 0 && qcow2_create(mfd, 1 << 20, backing,
	    fmt[0] != '\0' ? fmt : "raw") == 0 &&
	    pread(mfd, buf, 3 << 16, 0) == 3 << 16) {
		if (fmt[0] == '\0')
			memset(buf + 104, 0, 4);	/* the extension's type */
		rc = pwrite(fd, buf, 3 << 16, 0) == 3 << 16 ? 0 : -1;
	}
	if (mfd >= 0)
		close(mfd);
	free(buf);
	return rc;
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

/*
 * A raw disk created without a format is recorded raw; a qcow2 header
 * naming a backing file written into it afterwards (by its guest) is
 * read as the guest's data at the next start, and the file it names is
 * never opened.  A definition with no format recorded (an older vmmd's)
 * still probes, but refuses the backing file.  A qcow2 image whose
 * backing format is unnamed is refused, saying how to name it.
 */
static void
test_recorded(void)
{
	char raw[] = "/tmp/vmmd-test-vm-files-raw-XXXXXX";
	char secret[] = "/tmp/vmmd-test-vm-files-secret-XXXXXX";
	char over[] = "/tmp/vmmd-test-vm-files-over-XXXXXX";
	struct vm_files f;
	struct vm_def def;
	enum proto_error cls;
	char err[1024];
	int fd, sfd, ofd, ino, rc;

	fd = mkstemp(raw);
	sfd = mkstemp(secret);
	ofd = mkstemp(over);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0 || sfd < 0 || ofd < 0 || ino < 0 ||
	    ftruncate(fd, 1 << 20) < 0 || ftruncate(sfd, 1 << 20) < 0 ||
	    inotify_add_watch(ino, secret, IN_OPEN) < 0)
		tap_bail("set-up: %s", strerror(errno));
	close(sfd);

	def_init(&def, "guest", false);
	def.disks[0].path = raw;
	rc = vm_files_open(&def, NULL, NULL, true, NULL, &f, &cls, err,
	    sizeof(err));
	if (rc == 0) {
		vm_files_record_formats(&def, &f);
		vm_files_close(&f);
	}
	tap_ok(rc == 0 && def.disks[0].format == VM_DISK_FORMAT_RAW,
	    "at create, a raw disk without a format is recorded raw (%s)",
	    rc == 0 ? "ok" : err);

	/* Its guest writes a qcow2 header over the host's file. */
	def.disks[0].backing = true;
	tap_ok(write_qcow2_header(fd, secret, "raw") == 0,
	    "the guest writes a qcow2 header naming %s into sector 0",
	    secret);
	was_opened(ino);
	rc = start(&def, &f, &cls, err, sizeof(err));
	tap_ok(rc == 0 && f.disk_format[0] == VM_FILES_RAW &&
	    f.nbacking[0] == 0, "the next start reads it as raw still, with "
	    "no backing file (%s)", rc == 0 ? "ok" : err);
	if (rc == 0)
		vm_files_close(&f);
	tap_ok(!was_opened(ino), "and %s was not opened", secret);

	/* The same definition as an older vmmd left it. */
	def.disks[0].format = VM_DISK_FORMAT_PROBED;
	rc = start(&def, &f, &cls, err, sizeof(err));
	tap_ok(rc == -EPERM && cls == PROTO_ERR_INVALID_ARGUMENT &&
	    strstr(err, secret) != NULL && strstr(err, "older vmmd") !=
	    NULL && strstr(err, "format=qcow2") != NULL,
	    "no format recorded: probed, but the backing file it names is "
	    "refused: %s", err);
	tap_ok(!was_opened(ino), "and not opened either");

	/* A qcow2 image that does not name its backing file's format. */
	tap_ok(write_qcow2_header(ofd, secret, "") == 0,
	    "a qcow2 image over %s, its format unnamed", secret);
	def.disks[0].path = over;
	def.disks[0].format = VM_DISK_FORMAT_QCOW2;
	rc = vm_files_open(&def, NULL, NULL, true, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == -EMEDIUMTYPE && cls == PROTO_ERR_INVALID_ARGUMENT &&
	    strstr(err, over) != NULL && strstr(err, "qemu-img rebase -u "
	    "-F raw|qcow2") != NULL && strstr(err, "qemu-img create -F") !=
	    NULL, "refused, saying how to name it: %s", err);
	tap_ok(!was_opened(ino), "the backing file unopened");
	/* Named, it is opened. */
	tap_ok(write_qcow2_header(ofd, secret, "raw") == 0,
	    "the same image naming its backing file raw");
	rc = vm_files_open(&def, NULL, NULL, true, NULL, &f, &cls, err,
	    sizeof(err));
	tap_ok(rc == 0 && f.nbacking[0] == 1 &&
	    f.backing[0][0].format == VM_FILES_RAW && was_opened(ino),
	    "opened, over its raw backing file (%s)", rc == 0 ? "ok" : err);
	if (rc == 0)
		vm_files_close(&f);

	close(ino);
	close(fd);
	close(ofd);
	unlink(raw);
	unlink(secret);
	unlink(over);
}

/* An RBD disk: conf then keyring in a sealed memfd; errors name them. */
static void
test_rbd(void)
{
	char conf[] = "/tmp/vmmd-test-rbd-conf-XXXXXX";
	char key[] = "/tmp/vmmd-test-rbd-key-XXXXXX";
	char path[200], buf[256] = "", err[512];
	struct vm_files f;
	struct vm_def def;
	enum proto_error cls;
	int cfd = mkstemp(conf), kfd = mkstemp(key), rc, seals;
	ssize_t n;

	if (cfd < 0 || kfd < 0 || write(cfd, "[global]\nmon host = x\n",
	    22) != 22 || write(kfd, "[client.a]\n\tkey = K\n", 20) != 20) {
		tap_ok(0, "RBD: configuration files: %s", strerror(errno));
		return;
	}
	close(cfd);
	close(kfd);
	def_init(&def, "rbd", false);
	def.disks[0].rbd = true;
	def.disks[0].format = VM_DISK_FORMAT_RAW;
	snprintf(path, sizeof(path), "rbd:p/i,conf=%s,keyring=%s,id=a", conf,
	    key);
	def.disks[0].path = path;
	rc = start(&def, &f, &cls, err, sizeof(err));
	tap_ok(rc == 0, "RBD: the start opens its configuration: %s", err);
	if (rc == 0) {
		n = pread(f.disk_fd[0], buf, sizeof(buf) - 1, 0);
		seals = fcntl(f.disk_fd[0], F_GET_SEALS);
		tap_ok(n > 0 && strcmp(buf, "[global]\nmon host = x\n\n"
		    "[client.a]\n\tkey = K\n\n") == 0 && seals >= 0 &&
		    (seals & F_SEAL_WRITE) && (seals & F_SEAL_GROW),
		    "RBD: one sealed memory file, the configuration then the "
		    "keyring (%zd bytes, seals 0x%x)", n, seals);
		vm_files_close(&f);
	}
	unlink(key);
	rc = start(&def, &f, &cls, err, sizeof(err));
	tap_ok(rc < 0 && cls == PROTO_ERR_INVALID_ARGUMENT &&
	    strstr(err, "disk 0: keyring ") != NULL && strstr(err, key) !=
	    NULL, "RBD: a missing keyring is named: %s", err);
	unlink(conf);
}

int
main(void)
{
	int fd;

	fd = mkstemp(image);
	if (fd < 0 || ftruncate(fd, 1 << 20) < 0) {
		perror(image);
		return 1;
	}
	close(fd);
	test_writers();
	test_readers();
	test_arriving();
	test_twice();
	test_inherited();
	test_format();
	test_tap();
	test_overlay();
	test_recorded();
	test_rbd();
	unlink(image);
	return tap_done();
}
