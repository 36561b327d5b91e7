/*
 * Unit tests for daemon/supervisor/safe-dir.c: which directories vmmd
 * trusts.  In a private directory under /tmp (root's and sticky, so it
 * passes on the way): directories of ours with every mode that matters,
 * a sticky one, links to good and bad places; and, when the test runs
 * as root, directories and a link owned by someone else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safe-dir.h"
#include "tap.h"

#define OTHER_UID	54321	/* owns nothing on the test machine */

static char base[256];

static const char *
at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int n;

	n = (n + 1) % 4;
	snprintf(buf[n], sizeof(buf[n]), "%s/%s", base, rel);
	return buf[n];
}

static void
mkdir_mode(const char *rel, mode_t mode)
{
	if (mkdir(at(rel), 0700) < 0 || chmod(at(rel), mode) < 0)
		tap_bail("%s: %s", at(rel), strerror(errno));
}

static void
mklink(const char *target, const char *rel)
{
	if (symlink(target, at(rel)) < 0)
		tap_bail("%s: %s", at(rel), strerror(errno));
}

/* path passes; its descriptor is that directory. */
static void
expect_ok(const char *path, const char *what)
{
	struct stat a, b;
	char err[1024] = "";
	int fd = -1, rc;

	rc = safedir_check(path, &fd, err, sizeof(err));
	tap_ok(rc == 0 && fd >= 0 && fstat(fd, &a) == 0 &&
	    stat(path, &b) == 0 && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev && (fcntl(fd, F_GETFD) & FD_CLOEXEC),
	    "%s: trusted (%d%s%s)", what, rc, err[0] ? ": " : "", err);
	if (fd >= 0)
		close(fd);
}

/* path is refused with rc, and the message holds each of the words. */
static void
expect_refused(const char *path, int want, const char *what,
    const char *w1, const char *w2)
{
	char err[1024] = "";
	int fd = -1, rc;

	rc = safedir_check(path, &fd, err, sizeof(err));
	tap_ok(rc == want && fd == -1 && strstr(err, w1) != NULL &&
	    (w2 == NULL || strstr(err, w2) != NULL), "%s: refused (%d: %s)",
	    what, rc, err);
	if (fd >= 0)
		close(fd);
}

static void
setup(void)
{
	char tmpl[] = "/tmp/vmmd-test-safe-dir-XXXXXX";
	char real[PATH_MAX];

	if (mkdtemp(tmpl) == NULL || realpath(tmpl, real) == NULL ||
	    strlen(real) >= sizeof(base) || chmod(real, 0755) < 0)
		tap_bail("test directory: %s", strerror(errno));
	strcpy(base, real);
	mkdir_mode("state", 0750);
	mkdir_mode("state/vms", 0700);
	mkdir_mode("run", 0755);
	mkdir_mode("gw", 0770);
	mkdir_mode("ow", 0757);
	mkdir_mode("sticky", 01777);
	mkdir_mode("sticky/mine", 0755);
	mkdir_mode("open", 0777);
	mkdir_mode("open/inside", 0755);
	mkdir_mode("gwparent", 0775);
	mkdir_mode("gwparent/inside", 0700);
	mklink("state", "link-state");
	mklink(at("run"), "abs-link-run");
	mklink("open/inside", "link-to-open");
	mklink("loop2", "loop1");
	mklink("loop1", "loop2");
	if (close(open(at("file"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
		tap_bail("%s: %s", at("file"), strerror(errno));
}

static void
test_ours(void)
{
	char path[PATH_MAX], err[256];

	expect_ok(at("state"), "0750, ours");
	expect_ok(at("state/vms"), "0700 in a 0750 of ours");
	expect_ok(at("run"), "0755 (systemd's RuntimeDirectory)");
	expect_ok(at("sticky/mine"), "0755 inside a sticky 1777");
	expect_ok(at("link-state"), "through a link of ours");
	expect_ok(at("abs-link-run"), "through an absolute link of ours");
	snprintf(path, sizeof(path), "%s//state/./vms/../vms/", base);
	expect_ok(path, "., .. and repeated slashes");
	expect_ok("/", "/");

	expect_refused(at("gw"), -EPERM, "0770", at("gw"), "mode 0770");
	expect_refused(at("ow"), -EPERM, "0757", at("ow"), "mode 0757");
	expect_refused(at("sticky"), -EPERM, "sticky 1777 itself",
	    "mode 1777", NULL);
	expect_refused(at("open/inside"), -EPERM, "0755 inside a 0777",
	    "on the way", "mode 0777");
	expect_refused(at("gwparent/inside"), -EPERM,
	    "0700 inside a group-writable 0775", at("gwparent"),
	    "mode 0775");
	expect_refused(at("link-to-open"), -EPERM,
	    "a link of ours that leads through a 0777", "on the way",
	    at("open"));
	expect_refused(at("missing"), -ENOENT, "missing", at("missing"),
	    NULL);
	expect_refused(at("file"), -ENOTDIR, "a file", "not a directory",
	    NULL);
	expect_refused(at("loop1"), -ELOOP, "a loop of links", at("loop1"),
	    NULL);
	expect_refused("relative/dir", -EINVAL, "a relative path",
	    "not an absolute path", NULL);
	/* No descriptor asked for: the check alone. */
	tap_ok(safedir_check(at("state"), NULL, err, sizeof(err)) == 0,
	    "without a descriptor: trusted");
}

/* Owned by someone else: only root can make that. */
static void
test_others(void)
{
	if (geteuid() != 0) {
		tap_ok(1, "# SKIP owners: not root");
		return;
	}
	mkdir_mode("theirs", 0700);
	mkdir_mode("theirs/inside", 0700);
	mkdir_mode("sticky/theirs", 0700);
	mklink(at("run"), "sticky/their-link");
	if (chown(at("theirs"), OTHER_UID, OTHER_UID) < 0 ||
	    chown(at("sticky/theirs"), OTHER_UID, OTHER_UID) < 0 ||
	    lchown(at("sticky/their-link"), OTHER_UID, OTHER_UID) < 0)
		tap_bail("chown: %s", strerror(errno));
	expect_refused(at("theirs"), -EPERM, "0700 of another user",
	    "owned by uid 54321", "mode 0700");
	expect_refused(at("theirs/inside"), -EPERM,
	    "ours, inside another user's", at("theirs"),
	    "owned by uid 54321");
	expect_refused(at("sticky/theirs"), -EPERM,
	    "another user's in a sticky directory", "uid 54321", NULL);
	expect_refused(at("sticky/their-link"), -EPERM,
	    "another user's link in a sticky directory", "symbolic link",
	    "uid 54321");
}

static void
cleanup(void)
{
	static const char *const links[] = {
		"link-state", "abs-link-run", "link-to-open", "loop1",
		"loop2", "file", "sticky/their-link", NULL
	};
	static const char *const dirs[] = {
		"state/vms", "state", "run", "gw", "ow", "sticky/mine",
		"sticky/theirs", "sticky", "open/inside", "open",
		"gwparent/inside", "gwparent", "theirs/inside", "theirs", NULL
	};
	int i;

	for (i = 0; links[i] != NULL; i++)
		unlink(at(links[i]));
	for (i = 0; dirs[i] != NULL; i++)
		rmdir(at(dirs[i]));
	if (rmdir(base) < 0)
		tap_diag("%s: %s", base, strerror(errno));
}

int
main(void)
{
	setup();
	test_ours();
	test_others();
	cleanup();
	return tap_done();
}
