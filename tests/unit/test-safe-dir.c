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
#include "scratch.h"
#include "tap.h"

#define OTHER_UID	54321	/* owns nothing on the test machine */

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
	scratch_new("safe-dir");
	scratch_mkdir("state", 0750);
	scratch_mkdir("state/vms", 0700);
	scratch_mkdir("run", 0755);
	scratch_mkdir("gw", 0770);
	scratch_mkdir("ow", 0757);
	scratch_mkdir("sticky", 01777);
	scratch_mkdir("sticky/mine", 0755);
	scratch_mkdir("open", 0777);
	scratch_mkdir("open/inside", 0755);
	scratch_mkdir("gwparent", 0775);
	scratch_mkdir("gwparent/inside", 0700);
	scratch_link("state", "link-state");
	scratch_link(scratch_at("run"), "abs-link-run");
	scratch_link("open/inside", "link-to-open");
	scratch_link("loop2", "loop1");
	scratch_link("loop1", "loop2");
	if (close(open(scratch_at("file"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
		tap_bail("%s: %s", scratch_at("file"), strerror(errno));
}

static void
test_ours(void)
{
	char path[PATH_MAX], err[256];

	expect_ok(scratch_at("state"), "0750, ours");
	expect_ok(scratch_at("state/vms"), "0700 in a 0750 of ours");
	expect_ok(scratch_at("run"), "0755 (systemd's RuntimeDirectory)");
	expect_ok(scratch_at("sticky/mine"), "0755 inside a sticky 1777");
	expect_ok(scratch_at("link-state"), "through a link of ours");
	expect_ok(scratch_at("abs-link-run"), "through an absolute link of ours");
	snprintf(path, sizeof(path), "%s//state/./vms/../vms/", scratch_dir());
	expect_ok(path, "., .. and repeated slashes");
	expect_ok("/", "/");

	expect_refused(scratch_at("gw"), -EPERM, "0770", scratch_at("gw"), "mode 0770");
	expect_refused(scratch_at("ow"), -EPERM, "0757", scratch_at("ow"), "mode 0757");
	expect_refused(scratch_at("sticky"), -EPERM, "sticky 1777 itself",
	    "mode 1777", NULL);
	expect_refused(scratch_at("open/inside"), -EPERM, "0755 inside a 0777",
	    "on the way", "mode 0777");
	expect_refused(scratch_at("gwparent/inside"), -EPERM,
	    "0700 inside a group-writable 0775", scratch_at("gwparent"),
	    "mode 0775");
	expect_refused(scratch_at("link-to-open"), -EPERM,
	    "a link of ours that leads through a 0777", "on the way",
	    scratch_at("open"));
	expect_refused(scratch_at("missing"), -ENOENT, "missing", scratch_at("missing"),
	    NULL);
	expect_refused(scratch_at("file"), -ENOTDIR, "a file", "not a directory",
	    NULL);
	expect_refused(scratch_at("loop1"), -ELOOP, "a loop of links", scratch_at("loop1"),
	    NULL);
	expect_refused("relative/dir", -EINVAL, "a relative path",
	    "not an absolute path", NULL);
	/* No descriptor asked for: the check alone. */
	tap_ok(safedir_check(scratch_at("state"), NULL, err, sizeof(err)) == 0,
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
	scratch_mkdir("theirs", 0700);
	scratch_mkdir("theirs/inside", 0700);
	scratch_mkdir("sticky/theirs", 0700);
	scratch_link(scratch_at("run"), "sticky/their-link");
	if (chown(scratch_at("theirs"), OTHER_UID, OTHER_UID) < 0 ||
	    chown(scratch_at("sticky/theirs"), OTHER_UID, OTHER_UID) < 0 ||
	    lchown(scratch_at("sticky/their-link"), OTHER_UID, OTHER_UID) < 0)
		tap_bail("chown: %s", strerror(errno));
	expect_refused(scratch_at("theirs"), -EPERM, "0700 of another user",
	    "owned by uid 54321", "mode 0700");
	expect_refused(scratch_at("theirs/inside"), -EPERM,
	    "ours, inside another user's", scratch_at("theirs"),
	    "owned by uid 54321");
	expect_refused(scratch_at("sticky/theirs"), -EPERM,
	    "another user's in a sticky directory", "uid 54321", NULL);
	expect_refused(scratch_at("sticky/their-link"), -EPERM,
	    "another user's link in a sticky directory", "symbolic link",
	    "uid 54321");
}

int
main(void)
{
	setup();
	test_ours();
	test_others();
	scratch_remove();
	return tap_done();
}
