/*
 * Unit tests for daemon/supervisor/vm-files.c's disk locks: one image is
 * one guest's to write, or any number of guests' to read.  Real files
 * and real open file description locks; a second process holds a lock
 * as another worker would.  And its refusal of images in formats that
 * are not raw, unless the definition says raw.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"
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
}

/* vm_files_open + vm_files_lock_disks, as a start does: 0 or -errno. */
static int
start(const struct vm_def *def, struct vm_files *f, enum proto_error *cls,
    char *err, size_t errlen)
{
	int rc;

	*cls = 0;
	err[0] = '\0';
	rc = vm_files_open(def, NULL, NULL, f, cls, err, errlen);
	if (rc < 0)
		return rc;
	rc = vm_files_lock_disks(def, f, cls, err, errlen);
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

/* The same image twice in one definition, written: refused too. */
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
	tap_ok(rc == -EAGAIN, "one image as two written disks: refused (%s)",
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

/* A qcow2 image is refused, read-only or not, unless said to be raw. */
static void
test_format(void)
{
	char path[] = "/tmp/vmmd-test-vm-files-qcow2-XXXXXX";
	struct vm_def a;
	struct vm_files fa;
	enum proto_error cls;
	char err[1024];
	int fd, nfd, rc;

	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, 1 << 20) < 0 ||
	    pwrite(fd, "QFI\xfb\0\0\0\3", 8, 0) != 8) {
		tap_ok(0, "set-up: %s", path);
		return;
	}
	close(fd);
	def_init(&a, "a", false);
	a.disks[0].path = path;
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EMEDIUMTYPE && cls == PROTO_ERR_INVALID_ARGUMENT,
	    "a qcow2 image: refused (%d, class %d)", rc, (int)cls);
	tap_ok(strstr(err, path) != NULL && strstr(err, "qcow2") != NULL &&
	    strstr(err, "destroy") != NULL &&
	    strstr(err, "\"format\": \"raw\"") != NULL,
	    "naming the image, its format, the danger and the way out: %s",
	    err);
	a.disks[0].readonly = true;
	rc = start(&a, &fa, &cls, err, sizeof(err));
	tap_ok(rc == -EMEDIUMTYPE && strstr(err, "qcow2") != NULL &&
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
	    "a raw disk then a qcow2 one: refused, %d descriptors open "
	    "before and %d after", nfd, open_fds());
	unlink(path);
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
	test_twice();
	test_inherited();
	test_format();
	unlink(image);
	return tap_done();
}
