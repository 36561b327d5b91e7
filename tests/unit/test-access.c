/*
 * Unit tests for daemon/access.c: the kernel's permission rules (mode
 * bits and POSIX ACLs) applied to a client's credentials, path
 * resolution as that client, and opening only the file that was
 * checked.
 *
 * The credentials are made up (a uid and groups that own nothing here),
 * so the tests need no privileges: a file this process created is
 * "someone else's" to them, or their group's when the made-up groups
 * include our group.  ACLs are set on files of the test directory where
 * its file system has them; as root, the test also asks the kernel
 * itself (a child with the made-up credentials opens the file) and
 * checks that the daemon's answer is the kernel's.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "access.h"
#include "scratch.h"
#include "tap.h"


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

/* ACLs ------------------------------------------------------------- */

/* One entry of an ACL to make; id only for ACL_USER and ACL_GROUP. */
struct ent {
	unsigned int tag, perm;
	uint32_t id;
};

#define E_UOBJ(p)	{ ACL_USER_OBJ, p, ACL_UNDEFINED_ID }
#define E_USER(u, p)	{ ACL_USER, p, u }
#define E_GOBJ(p)	{ ACL_GROUP_OBJ, p, ACL_UNDEFINED_ID }
#define E_GROUP(g, p)	{ ACL_GROUP, p, g }
#define E_MASK(p)	{ ACL_MASK, p, ACL_UNDEFINED_ID }
#define E_OTHER(p)	{ ACL_OTHER, p, ACL_UNDEFINED_ID }
#define ACL_MAX		16

/* The attribute's value for entries e[0..n): its length. */
static size_t
acl_value(unsigned char *buf, const struct ent *e, size_t n)
{
	struct posix_acl_xattr_header h = {
		.a_version = htole32(POSIX_ACL_XATTR_VERSION) };
	struct posix_acl_xattr_entry x;
	size_t i, len = sizeof(h);

	memcpy(buf, &h, sizeof(h));
	for (i = 0; i < n; i++) {
		x.e_tag = htole16((uint16_t)e[i].tag);
		x.e_perm = htole16((uint16_t)e[i].perm);
		x.e_id = htole32(e[i].id);
		memcpy(buf + len, &x, sizeof(x));
		len += sizeof(x);
	}
	return len;
}

/* access_acl_allows() with the ACL e[0..n) on st. */
static bool
acl_allows(const struct stat *st, const struct ent *e, size_t n,
    const struct access_cred *cred, unsigned int want)
{
	unsigned char buf[sizeof(struct posix_acl_xattr_header) +
	    ACL_MAX * sizeof(struct posix_acl_xattr_entry)];

	return access_acl_allows(st, buf, acl_value(buf, e, n), cred, want);
}

#define NENT(a)	(sizeof(a) / sizeof((a)[0]))

static void
test_acl_rules(void)
{
	static const gid_t supp[] = { 50, 200 };
	struct access_cred mallory = { .uid = 1000, .gid = 100 };
	struct access_cred alice = { .uid = 1001, .gid = 100 };
	struct access_cred member = { .uid = 1002, .gid = 100,
	    .groups = supp, .ngroups = 2 };
	struct access_cred owner = { .uid = 2000, .gid = 100 };
	static const struct ent deny_mallory[] = { E_UOBJ(6),
	    E_USER(1000, 0), E_GOBJ(4), E_MASK(4), E_OTHER(4) };
	static const struct ent grant_mallory[] = { E_UOBJ(6),
	    E_USER(1000, 6), E_GOBJ(0), E_MASK(4), E_OTHER(0) };
	static const struct ent groups[] = { E_UOBJ(6), E_GOBJ(0),
	    E_GROUP(50, 0), E_GROUP(200, 4), E_MASK(4), E_OTHER(4) };
	static const struct ent group_denies[] = { E_UOBJ(6), E_GOBJ(0),
	    E_GROUP(50, 0), E_MASK(4), E_OTHER(4) };
	static const struct ent group_masked[] = { E_UOBJ(6), E_GOBJ(0),
	    E_GROUP(50, 6), E_GROUP(200, 4), E_MASK(4), E_OTHER(0) };
	static const struct ent user_first[] = { E_UOBJ(6),
	    E_USER(1002, 0), E_GOBJ(0), E_GROUP(50, 4), E_MASK(4),
	    E_OTHER(4) };
	static const struct ent owner_named[] = { E_UOBJ(0),
	    E_USER(2000, 4), E_GOBJ(4), E_MASK(4), E_OTHER(4) };
	static const struct ent no_other[] = { E_UOBJ(6), E_GOBJ(4),
	    E_MASK(4) };
	static const struct ent bad_tag[] = { E_UOBJ(6), { 0x40, 4, 0 },
	    E_GOBJ(4), E_OTHER(4) };
	unsigned char buf[64];
	struct stat st;
	size_t len;

	/* The review's case: user:mallory:--- on an o+r file. */
	st = mkst(2000, 999, 0644);
	tap_ok(!acl_allows(&st, deny_mallory, NENT(deny_mallory), &mallory,
	    ACCESS_READ), "user:mallory:--- on a 0644 file: mallory may not "
	    "read");
	tap_ok(acl_allows(&st, deny_mallory, NENT(deny_mallory), &alice,
	    ACCESS_READ), "the same file: anyone else may");
	tap_ok(acl_allows(&st, deny_mallory, NENT(deny_mallory), &owner,
	    ACCESS_READ | ACCESS_WRITE), "the same file: its owner's bits");

	/* A named user granted what the mode bits do not, masked. */
	st = mkst(2000, 999, 0640);
	tap_ok(acl_allows(&st, grant_mallory, NENT(grant_mallory), &mallory,
	    ACCESS_READ), "user:mallory:rw- on a 0640 file: mallory reads");
	tap_ok(!acl_allows(&st, grant_mallory, NENT(grant_mallory), &mallory,
	    ACCESS_WRITE), "mask::r--: mallory does not write");
	tap_ok(!acl_allows(&st, grant_mallory, NENT(grant_mallory), &alice,
	    ACCESS_READ), "nobody else reads");

	/* Groups: one entry granting is enough... */
	st = mkst(2000, 999, 0644);
	tap_ok(acl_allows(&st, groups, NENT(groups), &member, ACCESS_READ),
	    "group:50:---, group:200:r--: a member of both reads");
	/* ...but matching only entries that do not refuses, "other"
	 * notwithstanding. */
	tap_ok(!acl_allows(&st, group_denies, NENT(group_denies), &member,
	    ACCESS_READ), "group:50:--- alone: its member may not read, "
	    "though other may");
	tap_ok(acl_allows(&st, group_denies, NENT(group_denies), &alice,
	    ACCESS_READ), "group:50:---: others read");
	/* An entry that grants, unmasked, decides (and the mask refuses),
	 * as in the kernel: the next group entry is not tried. */
	tap_ok(!acl_allows(&st, group_masked, NENT(group_masked), &member,
	    ACCESS_READ | ACCESS_WRITE), "group:50:rw- masked to r--: no "
	    "write");
	tap_ok(acl_allows(&st, group_masked, NENT(group_masked), &member,
	    ACCESS_READ), "group:50:rw- masked to r--: read");
	/* A named user entry comes before every group entry. */
	tap_ok(!acl_allows(&st, user_first, NENT(user_first), &member,
	    ACCESS_READ), "user:U:--- and group:G:r--: U in G may not read");
	/* The owner: the mode's owner bits, named entry or not. */
	st = mkst(2000, 999, 0044);
	tap_ok(!acl_allows(&st, owner_named, NENT(owner_named), &owner,
	    ACCESS_READ), "user::--- and user:OWNER:r--: the owner may not "
	    "read");

	/* No group bits (mask::---): the kernel does not read the ACL. */
	st = mkst(2000, 999, 0604);
	tap_ok(acl_allows(&st, deny_mallory, NENT(deny_mallory), &mallory,
	    ACCESS_READ), "mode 0604 (mask::---): user:mallory:--- is not "
	    "read, other's r is");
	st = mkst(2000, 999, 0600);
	tap_ok(!acl_allows(&st, grant_mallory, NENT(grant_mallory), &mallory,
	    ACCESS_READ), "mode 0600: user:mallory:rw- grants nothing");

	/* What the kernel could not have given grants nothing. */
	st = mkst(2000, 999, 0644);
	tap_ok(!acl_allows(&st, no_other, NENT(no_other), &alice,
	    ACCESS_READ), "an ACL without an other entry: refused");
	tap_ok(!acl_allows(&st, bad_tag, NENT(bad_tag), &alice, ACCESS_READ),
	    "an unknown tag: refused");
	len = acl_value(buf, deny_mallory, 2);
	buf[0] = 1;
	tap_ok(!access_acl_allows(&st, buf, len, &alice, ACCESS_READ),
	    "another version: refused");
	len = acl_value(buf, deny_mallory, 2);
	tap_ok(!access_acl_allows(&st, buf, len - 3, &alice, ACCESS_READ) &&
	    !access_acl_allows(&st, buf, 2, &alice, ACCESS_READ),
	    "a truncated value: refused");
	tap_ok(access_acl_allows(&st, NULL, 0, &alice, ACCESS_READ) ==
	    access_mode_allows(&st, &alice, ACCESS_READ),
	    "no ACL: the mode bits");
}

/* Test files ------------------------------------------------------- */

static void
setup(void)
{
	scratch_new("access");
	scratch_mkdir("pub", 0755);
	scratch_file("pub/file", 0644, "public");
	scratch_file("pub/other", 0644, "other");
	scratch_file("pub/group", 0640, "group");
	scratch_file("pub/owner-none", 0044, "not the owner's");
	scratch_file("secret", 0600, "secret");
	scratch_mkdir("priv", 0700);
	scratch_file("priv/file", 0644, "hidden");
	scratch_mkdir("xonly", 0711);
	scratch_file("xonly/file", 0644, "through a search-only directory");
	scratch_mkdir("ronly", 0744);
	scratch_file("ronly/file", 0644, "behind a list-only directory");
	scratch_link("secret", "link-secret");
	scratch_link("pub/file", "link-file");
	scratch_link(scratch_at("pub/file"), "abs-link");
	scratch_link("../secret", "pub/up-secret");
	scratch_link("../link-file", "pub/chain");
	scratch_link("priv/file", "link-priv");
	scratch_link("loop2", "loop1");
	scratch_link("loop1", "loop2");
	if (mkfifo(scratch_at("fifo"), 0644) < 0)
		tap_bail("mkfifo: %s", strerror(errno));
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

	expect_resolve(&other, scratch_at("pub/file"), 0, scratch_at("pub/file"),
	    "world-readable file");
	snprintf(path, sizeof(path), "%s//pub/./../pub/.//file",
	    scratch_dir());
	expect_resolve(&other, path, 0, scratch_at("pub/file"),
	    "'.', '..' and repeated slashes");
	expect_resolve(&other, scratch_at("secret"), -EACCES, NULL,
	    "0600 file of someone else");
	expect_resolve(&owner, scratch_at("secret"), 0, scratch_at("secret"),
	    "0600 file of the owner");
	expect_resolve(&other, scratch_at("pub/group"), -EACCES, NULL,
	    "0640 file, not in the group");
	expect_resolve(&member, scratch_at("pub/group"), 0, scratch_at("pub/group"),
	    "0640 file, supplementary group");
	expect_resolve(&primary, scratch_at("pub/group"), 0, scratch_at("pub/group"),
	    "0640 file, primary group");
	expect_resolve(&owner, scratch_at("pub/owner-none"), -EACCES, NULL,
	    "0044 file: its owner is denied");
	expect_resolve(&other, scratch_at("pub/owner-none"), 0, scratch_at("pub/owner-none"),
	    "0044 file: others may read");

	/* Directories on the way. */
	expect_resolve(&other, scratch_at("priv/file"), -EACCES, NULL,
	    "world-readable file in a 0700 directory");
	expect_resolve(&owner, scratch_at("priv/file"), 0, scratch_at("priv/file"),
	    "the same file for the directory's owner");
	expect_resolve(&other, scratch_at("priv/nonexistent"), -EACCES, NULL,
	    "missing file in a 0700 directory: denied, existence not told");
	expect_resolve(&other, scratch_at("priv/../pub/file"), -EACCES, NULL,
	    "'..' out of an unsearchable directory");
	expect_resolve(&other, scratch_at("xonly/file"), 0, scratch_at("xonly/file"),
	    "file in a 0711 directory (search without read)");
	expect_resolve(&other, scratch_at("ronly/file"), -EACCES, NULL,
	    "file in a 0744 directory (read without search)");
	expect_resolve(&other, scratch_at("nonexistent"), -ENOENT, NULL,
	    "missing file in a searchable directory");
	expect_resolve(&other, scratch_at("nodir/file"), -ENOENT, NULL,
	    "missing directory");
	expect_resolve(&other, scratch_at("pub/file/"), -ENOTDIR, NULL,
	    "file with a trailing slash");
	expect_resolve(&other, scratch_at("pub/file/x"), -ENOTDIR, NULL,
	    "file used as a directory");

	/* Symbolic links. */
	expect_resolve(&other, scratch_at("link-file"), 0, scratch_at("pub/file"),
	    "relative link to a readable file");
	expect_resolve(&other, scratch_at("abs-link"), 0, scratch_at("pub/file"),
	    "absolute link to a readable file");
	expect_resolve(&other, scratch_at("pub/chain"), 0, scratch_at("pub/file"),
	    "link to a link, with '..'");
	expect_resolve(&other, scratch_at("link-secret"), -EACCES, NULL,
	    "link to an unreadable file");
	expect_resolve(&other, scratch_at("pub/up-secret"), -EACCES, NULL,
	    "link through '..' to an unreadable file");
	expect_resolve(&owner, scratch_at("link-secret"), 0, scratch_at("secret"),
	    "link to the owner's own 0600 file");
	expect_resolve(&other, scratch_at("link-priv"), -EACCES, NULL,
	    "link into a 0700 directory");
	expect_resolve(&other, scratch_at("loop1"), -ELOOP, NULL, "link loop");

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

	fd = access_open_file(scratch_at("link-file"), &other);
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
	tap_ok(access_open_file(scratch_at("link-secret"), &other) == -EACCES,
	    "open of an unreadable link target as a client: EACCES");
	tap_ok(access_open_file(scratch_at("priv/file"), &other) == -EACCES,
	    "open in an unsearchable directory as a client: EACCES");
	fd = access_open_file(scratch_at("link-secret"), NULL);
	tap_ok(fd >= 0, "the daemon itself opens the same (%d)", fd);
	if (fd >= 0)
		close(fd);
	tap_ok(access_open_file(scratch_at("fifo"), &other) == -EINVAL,
	    "a FIFO is not opened");
	tap_ok(access_open_file(scratch_at("fifo"), NULL) == -EINVAL,
	    "a FIFO is not opened by the daemon either");
	tap_ok(access_open_file(scratch_at("pub"), NULL) == -EINVAL,
	    "a directory is not opened");
	tap_ok(access_open_file(scratch_at("nonexistent"), NULL) == -ENOENT,
	    "missing file: ENOENT");
	tap_ok(access_open_file("pub/file", NULL) == -EINVAL,
	    "relative path: EINVAL");

	/* Another file renamed over the checked one. */
	scratch_file("pub/swap", 0644, "checked");
	scratch_file("pub/swap2", 0644, "swapped in");
	dirfd = access_resolve(scratch_at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0 && strcmp(name, "swap") == 0 && S_ISREG(st.st_mode),
	    "swap: checked");
	if (dirfd < 0)
		tap_bail("cannot go on");
	if (rename(scratch_at("pub/swap2"), scratch_at("pub/swap")) < 0)
		tap_bail("rename: %s", strerror(errno));
	tap_ok(access_open(dirfd, name, &st, &other) == -ESTALE,
	    "swap: a file renamed over the checked one is refused");
	tap_ok(access_open(dirfd, name, &st, NULL) == -ESTALE,
	    "swap: also for the daemon");
	close(dirfd);

	/* A symbolic link put in its place. */
	dirfd = access_resolve(scratch_at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0, "swap to a link: checked");
	if (unlink(scratch_at("pub/swap")) < 0 || symlink("file", scratch_at("pub/swap")) < 0)
		tap_bail("relink: %s", strerror(errno));
	tap_ok(access_open(dirfd, name, &st, &other) == -ESTALE,
	    "swap to a link: refused");
	close(dirfd);
	unlink(scratch_at("pub/swap"));

	/* The directory renamed away after the check: the walk's
	 * descriptor still names the checked directory. */
	scratch_file("pub/swap", 0644, "checked");
	dirfd = access_resolve(scratch_at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0, "moved directory: checked");
	if (rename(scratch_at("pub"), scratch_at("pub-moved")) < 0 ||
	    mkdir(scratch_at("pub"), 0755) < 0)
		tap_bail("moving pub: %s", strerror(errno));
	scratch_file("pub/swap", 0644, "impostor");
	fd = access_open(dirfd, name, &st, &other);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	tap_ok(fd >= 0 && strcmp(buf, "checked") == 0,
	    "moved directory: the checked file is opened, not the new one");
	if (fd >= 0)
		close(fd);
	close(dirfd);
	if (unlink(scratch_at("pub/swap")) < 0 || rmdir(scratch_at("pub")) < 0 ||
	    rename(scratch_at("pub-moved"), scratch_at("pub")) < 0)
		tap_bail("moving pub back: %s", strerror(errno));

	/* The same file, made unreadable after the check. */
	dirfd = access_resolve(scratch_at("pub/swap"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0, "chmod: checked");
	chmod(scratch_at("pub/swap"), 0600);
	tap_ok(access_open(dirfd, name, &st, &other) == -EACCES,
	    "chmod 0600 after the check: refused to the client");
	fd = access_open(dirfd, name, &st, NULL);
	tap_ok(fd >= 0, "chmod 0600 after the check: the daemon may");
	if (fd >= 0)
		close(fd);
	chmod(scratch_at("pub/swap"), 0644);
	fd = access_open(dirfd, name, &st, &other);
	tap_ok(fd >= 0, "unchanged file: opened (%d)", fd);
	if (fd >= 0)
		close(fd);
	close(dirfd);

	/* What the walk returns for a directory. */
	dirfd = access_resolve(scratch_at("pub/"), &other, NULL, name, &st);
	tap_ok(dirfd >= 0 && strcmp(name, ".") == 0 && S_ISDIR(st.st_mode),
	    "a directory: its own descriptor, name \".\"");
	if (dirfd >= 0)
		close(dirfd);
}

/* Set the access ACL e[0..n) on rel: 0, or -errno (EOPNOTSUPP: none). */
static int
set_acl(const char *rel, const struct ent *e, size_t n)
{
	unsigned char buf[sizeof(struct posix_acl_xattr_header) +
	    ACL_MAX * sizeof(struct posix_acl_xattr_entry)];

	if (setxattr(scratch_at(rel), "system.posix_acl_access", buf,
	    acl_value(buf, e, n), 0) < 0)
		return -errno;
	return 0;
}

/* Opens as cred (rw: for writing too): 0 if opened, else the error. */
static int
try_open(const char *path, const struct access_cred *cred, bool rw)
{
	int fd;

	fd = rw ? access_open_file_rw(path, cred) :
	    access_open_file(path, cred);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * ACLs on real files and directories, read by the walk and again on the
 * opened file.  False when the file system has no ACLs.
 */
static bool
test_acl_files(void)
{
	uid_t them = geteuid() + 1000;
	struct access_cred mallory = { .uid = them, .gid = getegid() + 1000 };
	struct access_cred alice = { .uid = them + 1, .gid = getegid() + 1000 };
	const struct ent deny[] = { E_UOBJ(6), E_USER(them, 0), E_GOBJ(4),
	    E_MASK(4), E_OTHER(4) };
	const struct ent deny_dir[] = { E_UOBJ(7), E_USER(them, 0),
	    E_GOBJ(5), E_MASK(5), E_OTHER(5) };
	const struct ent grant[] = { E_UOBJ(6), E_USER(them, 6), E_GOBJ(0),
	    E_MASK(4), E_OTHER(0) };
	const struct ent grant_rw[] = { E_UOBJ(6), E_USER(them, 6), E_GOBJ(0),
	    E_MASK(6), E_OTHER(0) };
	char name[NAME_MAX + 1];
	struct stat st;
	int dirfd, rc;

	scratch_file("pub/acl-deny", 0644, "not for mallory");
	if ((rc = set_acl("pub/acl-deny", deny, NENT(deny))) < 0) {
		tap_diag("no POSIX ACLs in %s (%s): ACLs on files untested",
		    scratch_dir(), strerror(-rc));
		unlink(scratch_at("pub/acl-deny"));
		return false;
	}
	tap_ok(try_open(scratch_at("pub/acl-deny"), &mallory, false) == -EACCES,
	    "user:mallory:--- on a 0644 file: mallory's open refused");
	tap_ok(try_open(scratch_at("pub/acl-deny"), &alice, false) == 0,
	    "the same file: alice opens it");

	scratch_mkdir("acl-dir", 0755);
	scratch_file("acl-dir/file", 0644, "behind the directory's ACL");
	if (set_acl("acl-dir", deny_dir, NENT(deny_dir)) < 0)
		tap_bail("ACL on acl-dir: %s", strerror(errno));
	tap_ok(try_open(scratch_at("acl-dir/file"), &mallory, false) == -EACCES,
	    "user:mallory:--- on a 0755 directory: mallory may not search "
	    "it");
	tap_ok(try_open(scratch_at("acl-dir/file"), &alice, false) == 0,
	    "the same directory: alice may");

	scratch_file("pub/acl-grant", 0600, "for mallory");
	if (set_acl("pub/acl-grant", grant, NENT(grant)) < 0)
		tap_bail("ACL on pub/acl-grant: %s", strerror(errno));
	tap_ok(try_open(scratch_at("pub/acl-grant"), &mallory, false) == 0,
	    "user:mallory:rw-, mask::r-- on a 0600 file: mallory reads");
	tap_ok(try_open(scratch_at("pub/acl-grant"), &mallory, true) == -EACCES,
	    "the same: mallory may not write (the mask)");
	tap_ok(try_open(scratch_at("pub/acl-grant"), &alice, false) == -EACCES,
	    "the same: alice may not read");
	if (set_acl("pub/acl-grant", grant_rw, NENT(grant_rw)) < 0)
		tap_bail("ACL on pub/acl-grant: %s", strerror(errno));
	tap_ok(try_open(scratch_at("pub/acl-grant"), &mallory, true) == 0,
	    "mask::rw-: mallory writes");

	/* An ACL set between the walk and the open: the opened file's. */
	scratch_file("pub/acl-late", 0644, "checked");
	dirfd = access_resolve(scratch_at("pub/acl-late"), &mallory, NULL, name, &st);
	tap_ok(dirfd >= 0, "acl-late: checked");
	if (dirfd < 0)
		tap_bail("cannot go on");
	if (set_acl("pub/acl-late", deny, NENT(deny)) < 0)
		tap_bail("ACL on pub/acl-late: %s", strerror(errno));
	tap_ok(access_open(dirfd, name, &st, &mallory) == -EACCES,
	    "acl-late: an ACL denying mallory after the check: refused");
	close(dirfd);
	return true;
}

/* Credentials for the kernel to judge: a few users and their groups. */
#define K_OWNER		4005
#define K_GROUP		4242

struct kcred {
	const char *name;
	struct access_cred cred;
};

static const gid_t k_c_groups[] = { 4300 };
static const gid_t k_d_groups[] = { 4300, 4301 };
static const gid_t k_g_groups[] = { K_GROUP };
static const struct kcred kcreds[] = {
	{ "A (4001)", { .uid = 4001, .gid = 4001 } },
	{ "B (4002, primary group 4242)", { .uid = 4002, .gid = K_GROUP } },
	{ "C (4003 in 4300)", { .uid = 4003, .gid = 4003,
	    .groups = k_c_groups, .ngroups = 1 } },
	{ "D (4004 in 4300, 4301)", { .uid = 4004, .gid = 4004,
	    .groups = k_d_groups, .ngroups = 2 } },
	{ "F (the owner)", { .uid = K_OWNER, .gid = 4005 } },
	{ "G (4006 in 4242)", { .uid = 4006, .gid = 4006,
	    .groups = k_g_groups, .ngroups = 1 } },
};

struct kcase {
	const char *what;
	bool dir;		/* the ACL on the directory, not the file */
	struct ent acl[ACL_MAX];
	size_t n;
};

static const struct kcase kcases[] = {
	{ "user:A:--- on 0644", false, { E_UOBJ(6), E_USER(4001, 0),
	    E_GOBJ(4), E_MASK(4), E_OTHER(4) }, 5 },
	{ "user:A:rw- on 0640, mask r--", false, { E_UOBJ(6),
	    E_USER(4001, 6), E_GOBJ(4), E_MASK(4), E_OTHER(0) }, 5 },
	{ "user:A:rw-, mask rw-", false, { E_UOBJ(6), E_USER(4001, 6),
	    E_GOBJ(0), E_MASK(6), E_OTHER(0) }, 5 },
	{ "group:4300:---, group:4301:r--", false, { E_UOBJ(6), E_GOBJ(0),
	    E_GROUP(4300, 0), E_GROUP(4301, 4), E_MASK(4), E_OTHER(4) }, 6 },
	{ "group:4300:rw-, group:4301:r--, mask r--", false, { E_UOBJ(6),
	    E_GOBJ(4), E_GROUP(4300, 6), E_GROUP(4301, 4), E_MASK(4),
	    E_OTHER(0) }, 6 },
	{ "user:C:---, group:4300:rw-", false, { E_UOBJ(6),
	    E_USER(4003, 0), E_GOBJ(0), E_GROUP(4300, 6), E_MASK(6),
	    E_OTHER(4) }, 6 },
	{ "mask ---: named entries unread", false, { E_UOBJ(6),
	    E_USER(4001, 0), E_USER(4002, 4), E_GOBJ(4), E_MASK(0),
	    E_OTHER(4) }, 6 },
	{ "user::---, user:OWNER:rw-", false, { E_UOBJ(0),
	    E_USER(K_OWNER, 6), E_GOBJ(6), E_MASK(6), E_OTHER(6) }, 5 },
	{ "group::---, group:4300:r--, other rw-", false, { E_UOBJ(6),
	    E_GOBJ(0), E_GROUP(4300, 4), E_MASK(4), E_OTHER(6) }, 5 },
	{ "directory: user:A:---", true, { E_UOBJ(7), E_USER(4001, 0),
	    E_GOBJ(5), E_MASK(5), E_OTHER(5) }, 5 },
	{ "directory: search for A and 4300 only", true, { E_UOBJ(7),
	    E_USER(4001, 1), E_GOBJ(0), E_GROUP(4300, 1), E_MASK(1),
	    E_OTHER(0) }, 6 },
};

/*
 * What the kernel says to cred opening path (rw: for writing too): 0,
 * -EACCES, or 1 when the child could not take the credentials.
 */
static int
kernel_open(const char *path, const struct access_cred *cred, bool rw)
{
	int status, fd;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		if (setgroups(cred->ngroups, cred->groups) < 0 ||
		    setgid(cred->gid) < 0 || setuid(cred->uid) < 0)
			_exit(3);
		fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC |
		    O_NOCTTY | O_NONBLOCK);
		_exit(fd >= 0 ? 0 : errno == EACCES ? 1 : 2);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		tap_bail("child: %s", strerror(errno));
	switch (WEXITSTATUS(status)) {
	case 0:
		return 0;
	case 1:
		return -EACCES;
	case 3:
		return 1;
	}
	tap_bail("child's open of %s: neither done nor EACCES", path);
}

/*
 * As root: each ACL of kcases, each credential of kcreds, reading and
 * writing: the daemon's answer is the kernel's.
 */
static void
test_acl_kernel(void)
{
	unsigned int granted, refused, wrong;
	char file[PATH_MAX];
	size_t i, j;
	int emu, kern, rw;

	if (geteuid() != 0) {
		tap_diag("not root: ACLs not compared with the kernel's "
		    "decisions");
		return;
	}
	snprintf(file, sizeof(file), "%s", scratch_at("k/file"));
	for (i = 0; i < NENT(kcases); i++) {
		scratch_mkdir("k", 0755);
		scratch_file("k/file", kcases[i].dir ? 0666 : 0644, "k");
		if (chown(scratch_at("k"), K_OWNER, K_GROUP) < 0 ||
		    chown(file, K_OWNER, K_GROUP) < 0 ||
		    set_acl(kcases[i].dir ? "k" : "k/file", kcases[i].acl,
		    kcases[i].n) < 0)
			tap_bail("%s: %s", kcases[i].what, strerror(errno));
		granted = refused = wrong = 0;
		for (j = 0; j < NENT(kcreds); j++)
			for (rw = 0; rw < 2; rw++) {
				kern = kernel_open(file, &kcreds[j].cred, rw);
				if (kern == 1) {
					tap_diag("uid %lu not available here: "
					    "not compared with the kernel",
					    (unsigned long)
					    kcreds[j].cred.uid);
					goto out;
				}
				emu = try_open(file, &kcreds[j].cred, rw);
				if (emu != kern) {
					wrong++;
					tap_diag("%s, %s %s: the kernel says "
					    "%s, vmmd %s", kcases[i].what,
					    kcreds[j].name, rw ? "rw" : "r",
					    kern == 0 ? "yes" : "no",
					    emu == 0 ? "yes" : strerror(-emu));
				} else if (kern == 0)
					granted++;
				else
					refused++;
			}
		tap_ok(wrong == 0, "as the kernel: %s (%u granted, %u refused)",
		    kcases[i].what, granted, refused);
		unlink(file);
		rmdir(scratch_at("k"));
	}
	return;
out:
	unlink(file);
	rmdir(scratch_at("k"));
}

int
main(void)
{
	test_mode_bits();
	test_acl_rules();
	setup();
	test_resolve();
	test_open();
	if (test_acl_files())
		test_acl_kernel();
	scratch_remove();
	return tap_done();
}
