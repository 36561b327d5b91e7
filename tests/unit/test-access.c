/*
 * Unit tests for daemon/access.c: the classic permission rules applied
 * to a client's credentials, path resolution as that client, and
 * opening only the file that was checked.
 *
 * The credentials are made up (a uid and groups that own nothing here),
 * so the tests need no privileges: a file this process created is
 * "someone else's" to them, or their group's when the made-up groups
 * include our group.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "tap.h"

static char base[256];		/* the test directory, resolved */

/* Synthetic stat data: only what the rules look at. */
static struct stat
mkst(uid_t uid, gid_t gid, mode_t mode)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_uid = uid;
	st.st_gid = gid;
	st.st_mode = S_IFREG | mode;
	return st;
}

static void
test_mode_bits(void)
{
	static const gid_t supp[] = { 50, 200, 300 };
	struct access_cred c = { .uid = 1000, .gid = 100 };
	struct access_cred cs = { .uid = 1000, .gid = 100, .groups = supp,
	    .ngroups = 3 };
	struct access_cred root = { .uid = 0, .gid = 0 };
	struct stat st;

	/* Owner class. */
	st = mkst(1000, 999, 0400);
	tap_ok(access_mode_allows(&st, &c, ACCESS_READ), "owner r--: read");
	tap_ok(!access_mode_allows(&st, &c, ACCESS_SEARCH),
	    "owner r--: no execute");
	st = mkst(1000, 100, 0044);
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ),
	    "owner ---, group and other r: owner denied (one class only)");
	st = mkst(1000, 999, 0004);
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ),
	    "owner ---, other r: owner denied");

	/* Group class: primary group. */
	st = mkst(2000, 100, 0040);
	tap_ok(access_mode_allows(&st, &c, ACCESS_READ),
	    "primary group r: read");
	st = mkst(2000, 100, 0404);
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ),
	    "group ---, other r: group member denied (one class only)");

	/* Group class: supplementary groups. */
	st = mkst(2000, 200, 0040);
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ),
	    "group r, not a member: denied");
	tap_ok(access_mode_allows(&st, &cs, ACCESS_READ),
	    "group r, supplementary member: read");
	st = mkst(2000, 300, 0040);
	tap_ok(access_mode_allows(&st, &cs, ACCESS_READ),
	    "group r, last supplementary group: read");
	st = mkst(2000, 200, 0004);
	tap_ok(!access_mode_allows(&st, &cs, ACCESS_READ),
	    "group ---, other r: supplementary member denied");

	/* Other class. */
	st = mkst(2000, 999, 0004);
	tap_ok(access_mode_allows(&st, &c, ACCESS_READ), "other r: read");
	st = mkst(2000, 999, 0770);
	tap_ok(!access_mode_allows(&st, &cs, ACCESS_READ),
	    "other ---: denied");

	/* Search, and several bits at once. */
	st = mkst(2000, 999, 0001);
	st.st_mode = S_IFDIR | 0001;
	tap_ok(access_mode_allows(&st, &c, ACCESS_SEARCH),
	    "directory other --x: search");
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ),
	    "directory other --x: no read");
	st.st_mode = S_IFDIR | 0004;
	tap_ok(!access_mode_allows(&st, &c, ACCESS_SEARCH),
	    "directory other r--: no search");
	st.st_mode = S_IFDIR | 0005;
	tap_ok(access_mode_allows(&st, &c, ACCESS_READ | ACCESS_SEARCH),
	    "directory other r-x: read and search");
	st.st_mode = S_IFDIR | 0004;
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ | ACCESS_SEARCH),
	    "directory other r--: not read and search");

	/* No special case for uid 0: the caller exempts root. */
	st = mkst(1000, 100, 0000);
	tap_ok(!access_mode_allows(&st, &root, ACCESS_READ),
	    "uid 0 gets only what the bits say");
	/* Special bits do not count as permissions. */
	st = mkst(2000, 999, 07000);
	tap_ok(!access_mode_allows(&st, &c, ACCESS_READ),
	    "setuid/setgid/sticky bits grant nothing");
}

/* Test files ------------------------------------------------------- */

static const char *
at(const char *rel)
{
	static char bufs[4][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, PATH_MAX, "%s/%s", base, rel);
	return b;
}

static void
mkfile(const char *rel, mode_t mode, const char *content)
{
	const char *path = at(rel);
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, content, strlen(content)) !=
	    (ssize_t)strlen(content) || fchmod(fd, mode) < 0)
		tap_bail("%s: %s", path, strerror(errno));
	close(fd);
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

static void
setup(void)
{
	char tmpl[] = "/tmp/vmmd-test-access-XXXXXX";

	char real[PATH_MAX];

	if (mkdtemp(tmpl) == NULL || realpath(tmpl, real) == NULL ||
	    strlen(real) >= sizeof(base) || chmod(real, 0755) < 0)
		tap_bail("test directory: %s", strerror(errno));
	strcpy(base, real);

	mkdir_mode("pub", 0755);
	mkfile("pub/file", 0644, "public");
	mkfile("pub/other", 0644, "other");
	mkfile("pub/group", 0640, "group");
	mkfile("pub/owner-none", 0044, "not the owner's");
	mkfile("secret", 0600, "secret");
	mkdir_mode("priv", 0700);
	mkfile("priv/file", 0644, "hidden");
	mkdir_mode("xonly", 0711);
	mkfile("xonly/file", 0644, "through a search-only directory");
	mkdir_mode("ronly", 0744);
	mkfile("ronly/file", 0644, "behind a list-only directory");
	mklink("secret", "link-secret");
	mklink("pub/file", "link-file");
	mklink(at("pub/file"), "abs-link");
	mklink("../secret", "pub/up-secret");
	mklink("../link-file", "pub/chain");
	mklink("priv/file", "link-priv");
	mklink("loop2", "loop1");
	mklink("loop1", "loop2");
	if (mkfifo(at("fifo"), 0644) < 0)
		tap_bail("mkfifo: %s", strerror(errno));
}

static void
cleanup(void)
{
	static const char *const files[] = {
		"pub/file", "pub/other", "pub/group", "pub/owner-none",
		"pub/swap", "pub/swap2", "pub/up-secret", "pub/chain",
		"secret", "priv/file", "xonly/file", "ronly/file",
		"link-secret", "link-file", "abs-link", "link-priv", "loop1",
		"loop2", "fifo", NULL
	};
	static const char *const dirs[] = { "pub", "priv", "xonly", "ronly",
		NULL };
	int i;

	for (i = 0; files[i] != NULL; i++)
		unlink(at(files[i]));
	for (i = 0; dirs[i] != NULL; i++)
		rmdir(at(dirs[i]));
	rmdir(base);
}

/* Resolve rel as cred; expect rc, and (if 0) the resolved path want. */
static void
expect_resolve(const struct access_cred *cred, const char *path, int rc,
    const char *want, const char *what)
{
	char resolved[PATH_MAX], name[NAME_MAX + 1];
	struct stat st;
	int got;

	resolved[0] = '\0';
	got = access_resolve(path, cred, resolved, name, &st);
	if (got >= 0) {
		close(got);
		got = 0;
	}
	if (rc == 0 && want != NULL)
		tap_ok(got == 0 && strcmp(resolved, want) == 0,
		    "%s: resolves (%d, %s)", what, got, resolved);
	else
		tap_ok(got == rc, "%s: %s (got %d: %s)", what,
		    rc == 0 ? "ok" : strerror(-rc), got,
		    got == 0 ? "ok" : strerror(-got));
}

static void
test_resolve(void)
{
	gid_t mygid = getegid();
	uid_t them = geteuid() + 1000;	/* owns nothing here */
	gid_t theirs = mygid + 1000;
	struct access_cred other = { .uid = them, .gid = theirs };
	struct access_cred member = { .uid = them, .gid = theirs,
	    .groups = &mygid, .ngroups = 1 };
	struct access_cred primary = { .uid = them, .gid = mygid };
	struct access_cred owner = { .uid = geteuid(), .gid = theirs };
	char path[PATH_MAX];

	expect_resolve(&other, at("pub/file"), 0, at("pub/file"),
	    "world-readable file");
	snprintf(path, sizeof(path), "%s//pub/./../pub/.//file", base);
	expect_resolve(&other, path, 0, at("pub/file"),
	    "'.', '..' and repeated slashes");
	expect_resolve(&other, at("secret"), -EACCES, NULL,
	    "0600 file of someone else");
	expect_resolve(&owner, at("secret"), 0, at("secret"),
	    "0600 file of the owner");
	expect_resolve(&other, at("pub/group"), -EACCES, NULL,
	    "0640 file, not in the group");
	expect_resolve(&member, at("pub/group"), 0, at("pub/group"),
	    "0640 file, supplementary group");
	expect_resolve(&primary, at("pub/group"), 0, at("pub/group"),
	    "0640 file, primary group");
	expect_resolve(&owner, at("pub/owner-none"), -EACCES, NULL,
	    "0044 file: its owner is denied");
	expect_resolve(&other, at("pub/owner-none"), 0, at("pub/owner-none"),
	    "0044 file: others may read");

	/* Directories on the way. */
	expect_resolve(&other, at("priv/file"), -EACCES, NULL,
	    "world-readable file in a 0700 directory");
	expect_resolve(&owner, at("priv/file"), 0, at("priv/file"),
	    "the same file for the directory's owner");
	expect_resolve(&other, at("priv/nonexistent"), -EACCES, NULL,
	    "missing file in a 0700 directory: denied, existence not told");
	expect_resolve(&other, at("priv/../pub/file"), -EACCES, NULL,
	    "'..' out of an unsearchable directory");
	expect_resolve(&other, at("xonly/file"), 0, at("xonly/file"),
	    "file in a 0711 directory (search without read)");
	expect_resolve(&other, at("ronly/file"), -EACCES, NULL,
	    "file in a 0744 directory (read without search)");
	expect_resolve(&other, at("nonexistent"), -ENOENT, NULL,
	    "missing file in a searchable directory");
	expect_resolve(&other, at("nodir/file"), -ENOENT, NULL,
	    "missing directory");
	expect_resolve(&other, at("pub/file/"), -ENOTDIR, NULL,
	    "file with a trailing slash");
	expect_resolve(&other, at("pub/file/x"), -ENOTDIR, NULL,
	    "file used as a directory");

	/* Symbolic links. */
	expect_resolve(&other, at("link-file"), 0, at("pub/file"),
	    "relative link to a readable file");
	expect_resolve(&other, at("abs-link"), 0, at("pub/file"),
	    "absolute link to a readable file");
	expect_resolve(&other, at("pub/chain"), 0, at("pub/file"),
	    "link to a link, with '..'");
	expect_resolve(&other, at("link-secret"), -EACCES, NULL,
	    "link to an unreadable file");
	expect_resolve(&other, at("pub/up-secret"), -EACCES, NULL,
	    "link through '..' to an unreadable file");
	expect_resolve(&owner, at("link-secret"), 0, at("secret"),
	    "link to the owner's own 0600 file");
	expect_resolve(&other, at("link-priv"), -EACCES, NULL,
	    "link into a 0700 directory");
	expect_resolve(&other, at("loop1"), -ELOOP, NULL, "link loop");

	/* The form of the path. */
	expect_resolve(&other, "pub/file", -EINVAL, NULL, "relative path");
	expect_resolve(&other, "/", 0, "/", "the root directory");
}

static void
test_open(void)
{
	gid_t mygid = getegid();
	struct access_cred other = { .uid = geteuid() + 1000,
	    .gid = mygid + 1000 };
	char name[NAME_MAX + 1], buf[32];
	struct stat st;
	ssize_t n;
	int dirfd, fd, flags;

	fd = access_open_file(at("link-file"), &other);
	tap_ok(fd >= 0, "open through a link as a client (%d)", fd);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		tap_ok(strcmp(buf, "public") == 0, "read what the link names");
		flags = fcntl(fd, F_GETFL);
		tap_ok((fcntl(fd, F_GETFD) & FD_CLOEXEC) &&
		    (flags & O_NONBLOCK) && (flags & O_ACCMODE) == O_RDONLY,
		    "read-only, close-on-exec, non-blocking");
		close(fd);
	}
	tap_ok(access_open_file(at("link-secret"), &other) == -EACCES,
	    "open of an unreadable link target as a client: EACCES");
	tap_ok(access_open_file(at("priv/file"), &other) == -EACCES,
	    "open in an unsearchable directory as a client: EACCES");
	fd = access_open_file(at("link-secret"), NULL);
	tap_ok(fd >= 0, "the daemon itself opens the same (%d)", fd);
	if (fd >= 0)
		close(fd);
	tap_ok(access_open_file(at("fifo"), &other) == -EINVAL,
	    "a FIFO is not opened");
	tap_ok(access_open_file(at("fifo"), NULL) == -EINVAL,
	    "a FIFO is not opened by the daemon either");
	tap_ok(access_open_file(at("pub"), NULL) == -EINVAL,
	    "a directory is not opened");
	tap_ok(access_open_file(at("nonexistent"), NULL) == -ENOENT,
	    "missing file: ENOENT");
	tap_ok(access_open_file("pub/file", NULL) == -EINVAL,
	    "relative path: EINVAL");

	/* Another file renamed over the checked one. */
	mkfile("pub/swap", 0644, "checked");
	mkfile("pub/swap2", 0644, "swapped in");
	dirfd = access_resolve(at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0 && strcmp(name, "swap") == 0 && S_ISREG(st.st_mode),
	    "swap: checked");
	if (dirfd < 0)
		tap_bail("cannot go on");
	if (rename(at("pub/swap2"), at("pub/swap")) < 0)
		tap_bail("rename: %s", strerror(errno));
	tap_ok(access_open(dirfd, name, &st, &other) == -ESTALE,
	    "swap: a file renamed over the checked one is refused");
	tap_ok(access_open(dirfd, name, &st, NULL) == -ESTALE,
	    "swap: also for the daemon");
	close(dirfd);

	/* A symbolic link put in its place. */
	dirfd = access_resolve(at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0, "swap to a link: checked");
	if (unlink(at("pub/swap")) < 0 || symlink("file", at("pub/swap")) < 0)
		tap_bail("relink: %s", strerror(errno));
	tap_ok(access_open(dirfd, name, &st, &other) == -ESTALE,
	    "swap to a link: refused");
	close(dirfd);
	unlink(at("pub/swap"));

	/* The directory renamed away after the check: the walk's
	 * descriptor still names the checked directory. */
	mkfile("pub/swap", 0644, "checked");
	dirfd = access_resolve(at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0, "moved directory: checked");
	if (rename(at("pub"), at("pub-moved")) < 0 ||
	    mkdir(at("pub"), 0755) < 0)
		tap_bail("moving pub: %s", strerror(errno));
	mkfile("pub/swap", 0644, "impostor");
	fd = access_open(dirfd, name, &st, &other);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	tap_ok(fd >= 0 && strcmp(buf, "checked") == 0,
	    "moved directory: the checked file is opened, not the new one");
	if (fd >= 0)
		close(fd);
	close(dirfd);
	if (unlink(at("pub/swap")) < 0 || rmdir(at("pub")) < 0 ||
	    rename(at("pub-moved"), at("pub")) < 0)
		tap_bail("moving pub back: %s", strerror(errno));

	/* The same file, made unreadable after the check. */
	dirfd = access_resolve(at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0, "chmod: checked");
	chmod(at("pub/swap"), 0600);
	tap_ok(access_open(dirfd, name, &st, &other) == -EACCES,
	    "chmod 0600 after the check: refused to the client");
	fd = access_open(dirfd, name, &st, NULL);
	tap_ok(fd >= 0, "chmod 0600 after the check: the daemon may");
	if (fd >= 0)
		close(fd);
	chmod(at("pub/swap"), 0644);
	fd = access_open(dirfd, name, &st, &other);
	tap_ok(fd >= 0, "unchanged file: opened (%d)", fd);
	if (fd >= 0)
		close(fd);
	close(dirfd);

	/* What the walk returns for a directory. */
	dirfd = access_resolve(at("pub/"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0 && strcmp(name, ".") == 0 && S_ISDIR(st.st_mode),
	    "a directory: its own descriptor, name \".\"");
	if (dirfd >= 0)
		close(dirfd);
}

int
main(void)
{
	test_mode_bits();
	setup();
	test_resolve();
	test_open();
	cleanup();
	return tap_done();
}
