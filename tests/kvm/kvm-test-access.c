/*
 * Files are opened with the rights of the client: an unprivileged
 * member of the socket's group cannot have root's daemon load a file
 * into guest memory that it could not read itself, neither at vm.create
 * nor at vm.start (definitions made by others, paths changed since),
 * while root may name anything.  And the worker loads exactly the files
 * the supervisor checked and opened, also when the guest resets after
 * another file was renamed over the kernel.
 *
 * Autostart, with no client to ask, opens a VM's files with the rights
 * of the user who created it, through the same path walk: a directory
 * swapped for a link to root-only files while vmmd was down leads
 * nowhere; a definition that names no owner opens only files root owns.
 * A shared directory is opened for the client: read and search, and
 * write unless shared read-only.
 * POSIX ACLs count as they do for the kernel.  And a client may give
 * its guest only the TAPs vmmd.conf's tap_allow gives one of its groups.
 * The data a deleted VM left is its owner's or root's to remove.
 *
 * The test runs as root.  An unprivileged client is a child that drops
 * to uid/gid 65534 (with a supplementary group of its own) and then
 * connects: the daemon takes the credentials at connect time.  The child
 * hands the connected socket back, and the test talks on it.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "harness.h"

#define USER_UID	65534		/* nobody */
#define USER_GID	65534
#define USER_GROUP	54321		/* a supplementary group of the user */
#define HELLO_LINE	"hello from vmmd test guest"
#define ECHO_READY	"echo: ready"

static struct h_daemon *d;
static char pub[256], priv[256];	/* 0755 and 0700 directories */

/* ------------------------------------------------------------------ */
/* The unprivileged client */

static int
send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh;
	struct cmsghdr *cm;

	memset(&mh, 0, sizeof(mh));
	memset(cbuf, 0, sizeof(cbuf));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int
recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh;
	struct cmsghdr *cm;
	int fd;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf;
	mh.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm == NULL || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * A connection made by a child running as uid/gid with the given
 * supplementary groups; NULL + diag on failure.
 */
static struct h_conn *
user_connect(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups)
{
	int sv[2], status, fd;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		tap_bail("socketpair: %s", strerror(errno));
	fflush(stdout);
	if ((pid = fork()) < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(sv[0]);
		if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0 ||
		    setuid(uid) < 0 || getuid() != uid || geteuid() != uid)
			_exit(2);
		if ((fd = h_connect_fd(d)) < 0)
			_exit(3);
		_exit(send_fd(sv[1], fd) == 0 ? 0 : 4);
	}
	close(sv[1]);
	fd = recv_fd(sv[0]);
	close(sv[0]);
	waitpid(pid, &status, 0);
	if (fd < 0) {
		tap_diag("the unprivileged child failed (status 0x%x)",
		    status);
		return NULL;
	}
	return h_conn_adopt(fd);
}

/* ------------------------------------------------------------------ */
/* Checks */

static bool
is_ok(struct json_object *r)
{
	return h_ret(r) != NULL;
}

static bool
is_error(struct json_object *r, const char *cls)
{
	const char *got = h_err_class(r);

	return got != NULL && strcmp(got, cls) == 0;
}

/* vm.create as u; expects an error of class cls (NULL: success). */
static void
user_create(struct h_conn *u, const char *cls, const char *what,
    const char *name, const char *kernel, const char *initrd)
{
	struct json_object *r;
	char k[600], i[600];

	snprintf(k, sizeof(k), kernel ? ",\"kernel\":\"%s\"" : "%s",
	    kernel ? kernel : "");
	snprintf(i, sizeof(i), initrd ? ",\"initrd\":\"%s\"" : "%s",
	    initrd ? initrd : "");
	r = h_callf(u, H_REPLY_MS, "vm.create",
	    "{\"name\":\"%s\",\"memory_mib\":32"
	    "%s%s}", name, k, i);
	tap_ok(cls == NULL ? is_ok(r) : is_error(r, cls), "%s: %s", what,
	    cls == NULL ? "created" : cls);
	if (cls == NULL ? !is_ok(r) : !is_error(r, cls))
		tap_diag("got %s", h_text(r));
	json_object_put(r);
}

/* The reply is permission_denied with exactly this description. */
static void
check_denied(struct json_object *r, const char *what, const char *path,
    const char *field)
{
	char want[700];
	const char *desc = h_err_desc(r);

	snprintf(want, sizeof(want), "%s: %s: not readable by uid %d",
	    field, path, USER_UID);
	tap_ok(is_error(r, "permission_denied") && desc != NULL &&
	    strcmp(desc, want) == 0, "%s: permission_denied, \"%s\"", what,
	    want);
	if (!is_error(r, "permission_denied") || desc == NULL ||
	    strcmp(desc, want) != 0)
		tap_diag("got %s", h_text(r));
}

static void
write_text(const char *path, const char *text, mode_t mode, gid_t gid)
{
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    fchown(fd, 0, gid) < 0 || fchmod(fd, mode) < 0)
		tap_bail("%s: %s", path, strerror(errno));
	close(fd);
}

/* dir/name in one of a few static buffers: for arguments only. */
static const char *
in(const char *dir, const char *name)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, 512, "%s/%s", dir, name);
	return b;
}

/* dir/name into buf, to keep. */
static const char *
path_of(char *buf, const char *dir, const char *name)
{
	snprintf(buf, 512, "%s/%s", dir, name);
	return buf;
}

static void
setup_files(void)
{
	const char *hello = h_env("VMMD_GUEST_HELLO");

	snprintf(pub, sizeof(pub), "%s/pub", d->dir);
	snprintf(priv, sizeof(priv), "%s/priv", d->dir);
	/* The daemon's directory is mkdtemp's 0700: let the user reach
	 * the socket (0666 here, instead of group vmm) and pub. */
	if (chmod(d->dir, 0711) < 0 || chmod(d->sock, 0666) < 0 ||
	    mkdir(pub, 0755) < 0 || chmod(pub, 0755) < 0 ||
	    mkdir(priv, 0700) < 0)
		tap_bail("setting up %s: %s", d->dir, strerror(errno));
	h_copy_file(hello, in(pub, "hello.elf"), 0644);
	h_copy_file(hello, in(pub, "swap.elf"), 0644);
	h_copy_file(hello, in(pub, "secret.elf"), 0600);
	h_copy_file(hello, in(pub, "pin.elf"), 0644);
	h_copy_file(h_env("VMMD_GUEST_ECHO"), in(pub, "echo.elf"), 0644);
	h_copy_file(hello, in(priv, "hello.elf"), 0644);
	write_text(in(pub, "initrd"), "initrd\n", 0644, 0);
	write_text(in(pub, "secret"), "secret\n", 0600, 0);
	write_text(in(pub, "group-initrd"), "group\n", 0640, USER_GROUP);
	write_text(in(pub, "empty"), "", 0644, 0);
	write_text(in(priv, "initrd"), "hidden\n", 0644, 0);
	if (symlink(in(pub, "secret"), in(pub, "link-secret")) < 0 ||
	    symlink("initrd", in(pub, "link-initrd")) < 0)
		tap_bail("symlink: %s", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* Tests */

static void
test_create(struct h_conn *u, struct h_conn *nogroup)
{
	char hbuf[512];
	const char *hello = path_of(hbuf, pub, "hello.elf");
	struct json_object *r;
	struct stat st;

	/* The attack: a root-only file as the initrd (or the kernel). */
	if (stat("/etc/shadow", &st) == 0 && (st.st_mode & 0004) == 0) {
		r = h_callf(u, H_REPLY_MS, "vm.create",
		    "{\"name\":\"x\",\"kernel\":"
		    "\"%s\",\"initrd\":\"/etc/shadow\"}", hello);
		check_denied(r, "initrd /etc/shadow", "/etc/shadow", "initrd");
		json_object_put(r);
		r = h_callf(u, H_REPLY_MS, "vm.create",
		    "{\"name\":\"x\",\"kernel\":"
		    "\"/etc/shadow\"}");
		check_denied(r, "kernel /etc/shadow", "/etc/shadow", "kernel");
		json_object_put(r);
	} else
		tap_diag("no unreadable /etc/shadow here; using %s only",
		    in(pub, "secret"));
	r = h_callf(u, H_REPLY_MS, "vm.create",
	    "{\"name\":\"x\",\"kernel\":\"%s\","
	    "\"initrd\":\"%s\"}", hello, in(pub, "secret"));
	check_denied(r, "0600 root file as initrd", in(pub, "secret"),
	    "initrd");
	json_object_put(r);
	r = h_callf(u, H_REPLY_MS, "vm.create",
	    "{\"name\":\"x\",\"kernel\":\"%s\"}",
	    in(pub, "secret.elf"));
	check_denied(r, "0600 root kernel", in(pub, "secret.elf"), "kernel");
	json_object_put(r);
	r = h_callf(u, H_REPLY_MS, "vm.create",
	    "{\"name\":\"x\",\"kernel\":\"%s\","
	    "\"initrd\":\"%s\"}", hello, in(priv, "initrd"));
	check_denied(r, "world-readable initrd in a 0700 directory",
	    in(priv, "initrd"), "initrd");
	json_object_put(r);

	user_create(u, "permission_denied", "kernel in a 0700 directory",
	    "x", in(priv, "hello.elf"), NULL);
	user_create(u, "permission_denied", "link to a 0600 root file",
	    "x", hello, in(pub, "link-secret"));
	user_create(u, "permission_denied", "missing file in a 0700 "
	    "directory (whether it exists is not told)", "x", hello,
	    in(priv, "nonexistent"));
	user_create(u, "invalid_argument", "missing file in a searchable "
	    "directory", "x", hello, in(pub, "nonexistent"));
	user_create(u, "invalid_argument", "readable file that is no kernel",
	    "x", in(pub, "initrd"), NULL);

	/* What the client may read, it may use. */
	user_create(u, NULL, "readable kernel and initrd", "uok", hello,
	    in(pub, "initrd"));
	user_create(u, NULL, "link to a readable initrd", "ulink", hello,
	    in(pub, "link-initrd"));
	user_create(u, NULL, "0640 root:G file, G a supplementary group "
	    "of the client", "ugroup", hello, in(pub, "group-initrd"));
	user_create(nogroup, "permission_denied", "the same without the "
	    "supplementary group", "x", hello, in(pub, "group-initrd"));
	user_create(u, NULL, "the default guest (trusted)", "udefault", NULL,
	    NULL);
}

/* vm.start as u; 0 if the VM runs. */
static int
user_start(struct h_conn *u, const char *name)
{
	struct json_object *r;
	int rc;

	r = h_callf(u, H_REPLY_MS, "vm.start", "{\"name\":\"%s\"}", name);
	rc = strcmp(h_str(h_ret(r), "state") ?: "", "running") == 0 ? 0 : -1;
	if (rc < 0)
		tap_diag("vm.start %s: %s", name, h_text(r));
	json_object_put(r);
	return rc;
}

static void
test_start(struct h_conn *u, struct h_conn *c)
{
	tap_ok(user_start(u, "uok") == 0, "uok: the client starts it");
	tap_ok(h_file_expect(h_console_log(d, "uok"), HELLO_LINE, 1,
	    H_BOOT_MS) == 0, "uok: the guest runs");
	tap_ok(h_stop(c, "uok", true, -1, H_REPLY_MS) == 0, "uok: stopped");
	tap_ok(user_start(u, "ugroup") == 0, "ugroup: the client starts it");
	tap_ok(h_stop(c, "ugroup", true, -1, H_REPLY_MS) == 0,
	    "ugroup: stopped");
	tap_ok(user_start(u, "udefault") == 0,
	    "udefault: the client starts the default guest");
	tap_ok(h_stop(c, "udefault", true, -1, H_REPLY_MS) == 0,
	    "udefault: stopped");
}

/* vm.start as u must be refused for path, named what. */
static void
expect_start_denied(struct h_conn *u, const char *name, const char *what,
    const char *path)
{
	struct json_object *r;
	char desc[600];

	r = h_callf(u, H_REPLY_MS, "vm.start", "{\"name\":\"%s\"}", name);
	snprintf(desc, sizeof(desc), "%s: start by the client", name);
	check_denied(r, desc, path, what);
	json_object_put(r);
}

/*
 * Disk images: read-only needs read permission, read-write needs write
 * permission too, checked at vm.create and again at every vm.start.
 */
static void
test_disks(struct h_conn *u, struct h_conn *c)
{
	static char image[1024];
	char want[700], rw[512];
	struct json_object *r;
	const char *desc;

	memset(image, 'x', sizeof(image) - 1);
	write_text(in(pub, "disk-644"), image, 0644, 0);
	write_text(path_of(rw, pub, "disk-666"), image, 0666, 0);
	r = h_callf(u, H_REPLY_MS, "vm.create", "{\"name\":\"udisk-ro\","
	    "\"memory_mib\":32,\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\",\"readonly\":true}]}", in(pub, "hello.elf"),
	    in(pub, "disk-644"));
	tap_ok(is_ok(r), "udisk-ro: a readable image, read-only: created");
	json_object_put(r);
	tap_ok(h_start(u, "udisk-ro") == 0, "udisk-ro: the client starts it");
	tap_ok(h_stop(c, "udisk-ro", true, -1, H_REPLY_MS) == 0,
	    "udisk-ro: stopped");

	r = h_callf(u, H_REPLY_MS, "vm.create", "{\"name\":\"udisk-rw\","
	    "\"memory_mib\":32,\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\"}]}", in(pub, "hello.elf"), in(pub, "disk-644"));
	desc = h_err_desc(r);
	snprintf(want, sizeof(want), "disk: %s: not readable and writable by "
	    "uid %d", in(pub, "disk-644"), USER_UID);
	tap_ok(is_error(r, "permission_denied") && desc != NULL &&
	    strcmp(desc, want) == 0, "udisk-rw: a read-only image for "
	    "writing: \"%s\"", want);
	json_object_put(r);

	r = h_callf(u, H_REPLY_MS, "vm.create", "{\"name\":\"udisk-666\","
	    "\"memory_mib\":32,\"kernel\":\"%s\",\"disks\":[{\"path\":"
	    "\"%s\"}]}", in(pub, "hello.elf"), rw);
	tap_ok(is_ok(r), "udisk-666: a writable image: created");
	json_object_put(r);
	if (chmod(rw, 0644) < 0)
		tap_bail("chmod: %s", strerror(errno));
	r = h_callf(u, H_REPLY_MS, "vm.start", "{\"name\":\"udisk-666\"}");
	tap_ok(is_error(r, "permission_denied"),
	    "udisk-666: made read-only after vm.create: start refused");
	json_object_put(r);
}

/*
 * A shared directory: opened at vm.start with the client's rights,
 * read and search, and write unless the share is read-only.
 */
static void
test_fs(struct h_conn *u, struct h_conn *c)
{
	static const char *const cases[][3] = {
		/* name, directory, readonly */
		{ "ufs-rw", "share-755", "false" },
		{ "ufs-700", "share-700", "true" },
		{ "ufs-ro", "share-755", "true" },
	};
	struct json_object *r;
	char want[600];

	if (mkdir(in(pub, "share-755"), 0755) < 0 ||
	    mkdir(in(pub, "share-700"), 0700) < 0)
		tap_bail("mkdir: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = h_callf(u, H_REPLY_MS, "vm.create", "{\"name\":\"%s\","
		    "\"memory_mib\":32,\"kernel\":\"%s\",\"fs\":{\"tag\":"
		    "\"t\",\"dir\":\"%s\",\"readonly\":%s}}", cases[i][0],
		    in(pub, "hello.elf"), in(pub, cases[i][1]), cases[i][2]);
		tap_ok(is_ok(r), "%s: created", cases[i][0]);
		json_object_put(r);
	}
	for (size_t i = 0; i < 2; i++) {
		r = h_callf(u, H_REPLY_MS, "vm.start", "{\"name\":\"%s\"}",
		    cases[i][0]);
		snprintf(want, sizeof(want), "fs: %s: not accessible to uid "
		    "%d", in(pub, cases[i][1]), USER_UID);
		tap_ok(is_error(r, "permission_denied") && h_err_desc(r) &&
		    strncmp(h_err_desc(r), want, strlen(want)) == 0,
		    "%s: the client may not %s it: start refused (%s)",
		    cases[i][0], i == 0 ? "write" : "read", h_text(r));
		json_object_put(r);
	}
	if (access("/usr/lib/qemu/virtiofsd", X_OK) == 0) {
		tap_ok(h_start(u, "ufs-ro") == 0, "ufs-ro: a directory the "
		    "client may read, shared read-only: started");
		h_stop(c, "ufs-ro", true, -1, H_REPLY_MS);
	}
}

static void
test_recheck(struct h_conn *u, struct h_conn *c)
{
	char sbuf[512];
	const char *swap = path_of(sbuf, pub, "swap.elf");
	struct json_object *r;
	char st[64];

	/* Root may name anything... */
	tap_ok(h_create(c, "rootdef", "\"kernel\":\"%s\",\"initrd\":\"%s\"",
	    in(priv, "hello.elf"), in(priv, "initrd")) == 0,
	    "rootdef: root creates a VM from a 0700 directory");
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"rootshadow\","
	    "\"initrd\":\"%s\"}", in(pub, "secret"));
	tap_ok(is_ok(r), "rootshadow: root may name a 0600 file");
	json_object_put(r);
	tap_ok(h_delete(c, "rootshadow") == 0, "rootshadow: deleted");
	/* ...but a client that starts root's definition needs the rights
	 * itself. */
	expect_start_denied(u, "rootdef", "kernel", in(priv, "hello.elf"));
	h_state(c, "rootdef", st, sizeof(st));
	tap_ok(strcmp(st, "defined") == 0, "rootdef: still defined (%s)", st);
	tap_ok(h_start(c, "rootdef") == 0, "rootdef: root starts it");
	tap_ok(h_stop(c, "rootdef", true, -1, H_REPLY_MS) == 0,
	    "rootdef: stopped");

	/* A root-only file renamed over the kernel after vm.create. */
	user_create(u, NULL, "uswap: readable kernel", "uswap", swap, NULL);
	h_copy_file(h_env("VMMD_GUEST_HELLO"), in(pub, "swap-secret.elf"),
	    0600);
	if (rename(in(pub, "swap-secret.elf"), swap) < 0)
		tap_bail("rename: %s", strerror(errno));
	expect_start_denied(u, "uswap", "kernel", swap);
	tap_ok(h_start(c, "uswap") == 0, "uswap: root may start it");
	tap_ok(h_stop(c, "uswap", true, -1, H_REPLY_MS) == 0,
	    "uswap: stopped");

	/* The same file made unreadable after vm.create. */
	write_text(in(pub, "chmod-initrd"), "initrd\n", 0644, 0);
	user_create(u, NULL, "uchmod: readable initrd", "uchmod",
	    in(pub, "hello.elf"), in(pub, "chmod-initrd"));
	if (chmod(in(pub, "chmod-initrd"), 0600) < 0)
		tap_bail("chmod: %s", strerror(errno));
	expect_start_denied(u, "uchmod", "initrd", in(pub, "chmod-initrd"));
}

/*
 * POSIX ACLs count as the kernel counts them: an entry that denies the
 * client what the mode bits give "other" denies it here too, on a file
 * or on a directory of the path, at vm.create and again at vm.start; an
 * entry that grants what the mode bits do not grants it.
 */

/* The access ACL user::rw-, user:UID:perm, group::r--, mask, other. */
static int
set_user_acl(const char *path, uid_t uid, unsigned int perm,
    unsigned int mask, unsigned int other)
{
	struct {
		uint32_t version;
		struct { uint16_t tag, perm; uint32_t id; } e[5];
	} __attribute__((packed)) acl = {
		htole32(POSIX_ACL_XATTR_VERSION), {
			{ htole16(ACL_USER_OBJ), htole16(7), htole32(~0u) },
			{ htole16(ACL_USER), htole16(perm), htole32(uid) },
			{ htole16(ACL_GROUP_OBJ), htole16(mask),
			    htole32(~0u) },
			{ htole16(ACL_MASK), htole16(mask), htole32(~0u) },
			{ htole16(ACL_OTHER), htole16(other),
			    htole32(~0u) },
		}
	};

	return setxattr(path, "system.posix_acl_access", &acl, sizeof(acl),
	    0) < 0 ? -errno : 0;
}

static void
test_acl(struct h_conn *u, struct h_conn *c)
{
	char kbuf[512], dbuf[512], gbuf[512], sbuf[512];
	const char *denied = path_of(kbuf, pub, "acl-denied.elf");
	const char *dir = path_of(dbuf, pub, "acl-dir");
	const char *granted = path_of(gbuf, pub, "acl-granted.elf");
	const char *late = path_of(sbuf, pub, "acl-late.elf");
	int rc;

	h_copy_file(h_env("VMMD_GUEST_HELLO"), denied, 0644);
	if ((rc = set_user_acl(denied, USER_UID, 0, 4, 4)) < 0) {
		tap_diag("no POSIX ACLs in %s (%s): not tested", pub,
		    strerror(-rc));
		return;
	}
	user_create(u, "permission_denied", "user:nobody:--- on a 0644 "
	    "kernel", "x", denied, NULL);
	tap_ok(h_create(c, "racl", "\"kernel\":\"%s\"", denied) == 0,
	    "racl: root may name it");
	expect_start_denied(u, "racl", "kernel", denied);

	if (mkdir(dir, 0755) < 0 || chmod(dir, 0755) < 0 ||
	    (rc = set_user_acl(dir, USER_UID, 0, 5, 5)) < 0)
		tap_bail("%s: %s", dir, strerror(errno));
	h_copy_file(h_env("VMMD_GUEST_HELLO"), in(dir, "hello.elf"), 0644);
	user_create(u, "permission_denied", "a 0644 kernel in a 0755 "
	    "directory with user:nobody:---", "x", in(dir, "hello.elf"),
	    NULL);

	h_copy_file(h_env("VMMD_GUEST_HELLO"), granted, 0600);
	if (set_user_acl(granted, USER_UID, 4, 4, 0) < 0)
		tap_bail("%s: %s", granted, strerror(errno));
	user_create(u, NULL, "user:nobody:r-- on a 0600 kernel", "uacl",
	    granted, NULL);
	tap_ok(user_start(u, "uacl") == 0, "uacl: the client starts it");
	tap_ok(h_stop(c, "uacl", true, -1, H_REPLY_MS) == 0,
	    "uacl: stopped");

	h_copy_file(h_env("VMMD_GUEST_HELLO"), late, 0644);
	user_create(u, NULL, "uacl-late: readable kernel", "uacl-late", late,
	    NULL);
	if (set_user_acl(late, USER_UID, 0, 4, 4) < 0)
		tap_bail("%s: %s", late, strerror(errno));
	expect_start_denied(u, "uacl-late", "kernel", late);
}

/*
 * The worker loads the file the supervisor opened: a guest reset after
 * another kernel was renamed over the path boots the same kernel again.
 * The next vm.start opens the path anew.
 */
static void
test_pinned(struct h_conn *c)
{
	char pbuf[512], lbuf[512];
	const char *pin = path_of(pbuf, pub, "pin.elf");
	const char *log = path_of(lbuf, d->state, "console/pin.log");
	struct json_object *r;
	char *text;
	size_t len;

	tap_ok(h_create(c, "pin", "\"kernel\":\"%s\"", pin) == 0 &&
	    h_start(c, "pin") == 0, "pin: started");
	tap_ok(h_file_expect(log, HELLO_LINE, 1, H_BOOT_MS) == 0,
	    "pin: hello runs");
	if (rename(in(pub, "echo.elf"), pin) < 0)
		tap_bail("rename: %s", strerror(errno));
	r = h_callf(c, H_REPLY_MS, "vm.reset", "{\"name\":\"pin\"}");
	tap_ok(is_ok(r), "pin: reset after another kernel replaced it");
	json_object_put(r);
	tap_ok(h_file_expect(log, HELLO_LINE, 2, H_BOOT_MS) == 0,
	    "pin: the reset booted the kernel opened at start");
	text = h_read_file(log, &len);
	tap_ok(text != NULL && h_count(text, len, ECHO_READY) == 0,
	    "pin: not the new file");
	free(text);
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"pin\"}");
	tap_ok(strcmp(h_str(h_ret(r), "kernel") ?: "", pin) == 0,
	    "pin: vm.info names the path, not a descriptor");
	json_object_put(r);
	tap_ok(h_stop(c, "pin", true, -1, H_REPLY_MS) == 0, "pin: stopped");
	tap_ok(h_start(c, "pin") == 0 &&
	    h_file_expect(log, ECHO_READY, 1, H_BOOT_MS) == 0,
	    "pin: the next start loads what the path names now");
	tap_ok(h_stop(c, "pin", true, -1, H_REPLY_MS) == 0, "pin: stopped");
}

/* The worker's boot errors name the user's paths. */
static void
test_names(struct h_conn *c)
{
	char hbuf[512];
	const char *hello = path_of(hbuf, pub, "hello.elf"), *desc;
	struct json_object *r;

	tap_ok(h_create(c, "empty", "\"kernel\":\"%s\",\"initrd\":\"%s\"",
	    hello, in(pub, "empty")) == 0, "empty: created with an empty "
	    "initrd");
	r = h_callf(c, H_REPLY_MS, "vm.start", "{\"name\":\"empty\"}");
	desc = h_err_desc(r);
	tap_ok(is_error(r, "invalid_argument") && desc != NULL &&
	    strstr(desc, hello) != NULL && strstr(desc, "/proc/") == NULL,
	    "empty: the worker's error names %s", hello);
	if (desc == NULL || strstr(desc, hello) == NULL)
		tap_diag("got %s", h_text(r));
	json_object_put(r);
}

/* vm.autostart NAME on, as conn; the reply. */
static struct json_object *
autostart_on(struct h_conn *conn, const char *name)
{
	return h_callf(conn, H_REPLY_MS, "vm.autostart",
	    "{\"name\":\"%s\",\"autostart\":true}", name);
}

/* The daemon restarted; a root client on it (the old one is closed). */
static struct h_conn *
restart(struct h_conn *c)
{
	h_close(c);
	if (h_daemon_restart(d, 20000) != 0 || (c = h_connect(d)) == NULL)
		tap_bail("vmmd did not come back");
	return c;
}

/* A definition file as one written before owners were recorded. */
static void
write_ownerless(const char *name, const char *kernel)
{
	char path[512], text[1024];

	snprintf(path, sizeof(path), "%s/vms/%s.json", d->state, name);
	snprintf(text, sizeof(text), "{\"name\":\"%s\",\"kernel\":\"%s\","
	    "\"memory_mib\":32,\"autostart\":true}\n", name, kernel);
	write_text(path, text, 0600, 0);
}

static struct h_conn *
test_autostart(struct h_conn *u, struct h_conn *c)
{
	char ubuf[512], kbuf[512], lbuf[512], hidden[512], st[32];
	const char *udir = path_of(ubuf, pub, "udir");
	const char *hello = path_of(kbuf, pub, "hello.elf");
	struct json_object *r;
	char *log;

	/* The user's own directory, an initrd in it. */
	if (mkdir(udir, 0755) < 0 || chown(udir, USER_UID, USER_GID) < 0)
		tap_bail("%s: %s", udir, strerror(errno));
	write_text(in(udir, "i"), "mine\n", 0644, 0);
	if (chown(in(udir, "i"), USER_UID, USER_GID) < 0)
		tap_bail("chown: %s", strerror(errno));
	/* Where the swapped link leads: root's, 0600. */
	path_of(hidden, pub, "hidden");
	if (mkdir(hidden, 0755) < 0)
		tap_bail("%s: %s", hidden, strerror(errno));
	write_text(in(hidden, "i"), "secret\n", 0600, 0);

	user_create(u, NULL, "autostart: the user's VM", "au", hello,
	    in(udir, "i"));
	r = autostart_on(u, "au");
	tap_ok(is_ok(r), "autostart: its owner turns autostart on");
	json_object_put(r);
	user_create(u, NULL, "autostart: another VM of the user", "au2",
	    hello, NULL);
	r = autostart_on(u, "au2");
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"ar\","
	    "\"kernel\":\"%s\",\"memory_mib\":32}", hello);
	json_object_put(r);
	r = autostart_on(u, "ar");
	tap_ok(is_error(r, "permission_denied"), "autostart: not on root's VM "
	    "for another user (%s)", h_err_desc(r) ? h_err_desc(r) : "?");
	json_object_put(r);

	/* vmmd down: the user's directory becomes a link to root's. */
	h_close(c);
	if (h_daemon_stop(d, 20000) != 0)
		tap_diag("vmmd did not exit cleanly");
	path_of(lbuf, pub, "udir.old");
	if (rename(udir, lbuf) < 0 || symlink(hidden, udir) < 0)
		tap_bail("swapping %s: %s", udir, strerror(errno));
	/* And two definitions that name no owner. */
	write_ownerless("old-root", hello);
	write_ownerless("old-user", in(lbuf, "i"));
	if (h_daemon_spawn(d) != 0 || (c = h_connect(d)) == NULL)
		tap_bail("vmmd did not come back");
	tap_ok(h_wait_state(c, "au2", "running", 20000) == 0,
	    "autostart: the user's VM with files the user may read starts");
	h_state(c, "au", st, sizeof(st));
	tap_ok(strcmp(st, "running") != 0, "autostart: the VM whose directory "
	    "now leads to root's file does not start (%s)", st);
	log = h_read_file(d->log, NULL);
	tap_ok(log != NULL && strstr(log, "VM 'au': autostart: initrd:") !=
	    NULL && strstr(log, "not readable by uid 65534") != NULL,
	    "autostart: refused with the owner's rights, and said so");
	tap_ok(h_wait_state(c, "old-root", "running", 20000) == 0,
	    "autostart: no owner recorded, root's files: starts");
	h_state(c, "old-user", st, sizeof(st));
	tap_ok(strcmp(st, "running") != 0 && log != NULL &&
	    strstr(log, "not owned by root") != NULL, "autostart: no owner "
	    "recorded, a user's file: refused (%s)", st);
	free(log);

	/* The directory back: the owner's VM starts again. */
	if (unlink(udir) < 0 || rename(lbuf, udir) < 0)
		tap_bail("restoring %s: %s", udir, strerror(errno));
	c = restart(c);
	tap_ok(h_wait_state(c, "au", "running", 20000) == 0,
	    "autostart: with its own directory back, the VM starts");
	return c;
}

/*
 * TAPs are the host's network: without a tap_allow rule in vmmd.conf only
 * root may give a guest one, and a rule gives a group the names it says,
 * checked at vm.create and for whoever starts the VM.
 */

/* vm.create of name on tap as u; expects cls (NULL: success) and, for
 * an error, a description containing want. */
static void
user_create_tap(struct h_conn *u, const char *name, const char *tap,
    const char *cls, const char *want, const char *what)
{
	struct json_object *r;
	const char *desc;
	bool ok;

	r = h_callf(u, H_REPLY_MS, "vm.create", "{\"name\":\"%s\","
	    "\"memory_mib\":32,\"net\":{\"tap\":\"%s\"}}", name, tap);
	desc = h_err_desc(r);
	ok = cls == NULL ? is_ok(r) : is_error(r, cls) && desc != NULL &&
	    strstr(desc, want) != NULL;
	tap_ok(ok, "%s: %s", what, cls == NULL ? "created" : want);
	if (!ok)
		tap_diag("got %s", h_text(r));
	json_object_put(r);
}

/* Whether the interface name exists (or is gone, !present) within ms. */
static bool
tap_present(const char *name, bool present, int ms)
{
	double deadline = h_now_ms() + ms;

	while ((if_nametoindex(name) != 0) != present) {
		if (h_now_ms() > deadline)
			return false;
		h_sleep_ms(20);
	}
	return true;
}

static void
test_tap_default(struct h_conn *u, struct h_conn *c, bool own_netns)
{
	struct json_object *r;
	const char *desc;
	char st[64];

	user_create_tap(u, "x", "vmt0", "permission_denied", "net: tap vmt0: "
	    "uid 65534 may use no TAP (no tap_allow rule in vmmd.conf names "
	    "one of its groups)", "no tap_allow rule: the client may not name "
	    "a TAP");
	tap_ok(h_create(c, "rtap", "\"net\":{\"tap\":\"vmt0\"}") == 0,
	    "rtap: root may");
	/* Refused before the TAP is made, but a daemon that did not
	 * refuse would make it: only where it would be the test's own. */
	if (!own_netns)
		return;
	r = h_callf(u, H_REPLY_MS, "vm.start", "{\"name\":\"rtap\"}");
	desc = h_err_desc(r);
	tap_ok(is_error(r, "permission_denied") && desc != NULL &&
	    strstr(desc, "net: tap vmt0: uid 65534 may use no TAP") != NULL,
	    "rtap: the client may not start root's VM on a TAP");
	if (!is_error(r, "permission_denied"))
		tap_diag("got %s", h_text(r));
	json_object_put(r);
	h_state(c, "rtap", st, sizeof(st));
	tap_ok(strcmp(st, "defined") == 0 && if_nametoindex("vmt0") == 0,
	    "rtap: still defined (%s), no vmt0 made", st);
}

static void
test_tap_rules(struct h_conn *u, struct h_conn *nogroup, struct h_conn *c,
    bool own_netns)
{
	user_create_tap(u, "utap", "vmt-u0", NULL, NULL, "tap_allow = "
	    "54321:vmt*: a member of 54321 names vmt-u0");
	user_create_tap(u, "x", "other0", "permission_denied", "net: tap "
	    "other0: not allowed for uid 65534, whose groups may use vmt* "
	    "(tap_allow in vmmd.conf)", "other0: not a name of the rule");
	user_create_tap(nogroup, "x", "vmt-u1", "permission_denied", "net: "
	    "tap vmt-u1: uid 65534 may use no TAP", "vmt-u1: not for a "
	    "client outside 54321");
	if (!own_netns)
		return;
	/* In the test's own network namespace: the TAPs go with it. */
	tap_ok(user_start(u, "rtap") == 0, "rtap: the rule lets the client "
	    "start root's VM on vmt0");
	tap_ok(tap_present("vmt0", true, H_REPLY_MS), "rtap: vmt0 created");
	tap_ok(h_stop(c, "rtap", true, -1, H_REPLY_MS) == 0 &&
	    tap_present("vmt0", false, H_REPLY_MS),
	    "rtap: stopped, vmt0 gone with it");
	tap_ok(user_start(u, "utap") == 0 &&
	    tap_present("vmt-u0", true, H_REPLY_MS),
	    "utap: the client starts its VM on vmt-u0");
	tap_ok(h_stop(c, "utap", true, -1, H_REPLY_MS) == 0,
	    "utap: stopped");
}

/*
 * vmmd again, with the rule tap_allow = 54321:vmt* if rule, in a network
 * namespace of the test's own when it can have one (so that the TAPs it
 * creates, even by mistake, are nobody else's business); the clients
 * connect anew.  Whether the namespace is the test's.
 */
static bool
restart_for_taps(struct h_conn **u, struct h_conn **nogroup,
    struct h_conn **c, bool rule)
{
	static int own_netns = -1;
	gid_t group = USER_GROUP;

	h_close(*u);
	h_close(*nogroup);
	h_close(*c);
	if (own_netns < 0)
		own_netns = unshare(CLONE_NEWNET) == 0 &&
		    access("/dev/net/tun", R_OK | W_OK) == 0;
	if (rule)
		h_daemon_setting(d, "tap_allow", "54321:vmt*");
	if (h_daemon_restart(d, H_REPLY_MS) < 0 || chmod(d->sock, 0666) < 0)
		tap_bail("restarting vmmd");
	*c = h_connect(d);
	*u = user_connect(USER_UID, USER_GID, &group, 1);
	*nogroup = user_connect(USER_UID, USER_GID, NULL, 0);
	if (*c == NULL || *u == NULL || *nogroup == NULL)
		tap_bail("no clients after the restart");
	if (!own_netns)
		tap_diag("no network namespace of the test's own: no TAP is "
		    "made");
	return own_netns;
}

/*
 * A VM's definition is its owner's (or root's) to change, rename or
 * clone: another member of group vmm could otherwise point root's VM at
 * a path that passes the check as them and is swapped before root's next
 * start, or take its secrets into a clone.
 */
static void
test_owned_edits(struct h_conn *u, struct h_conn *c)
{
	char hbuf[512];
	const char *hello = path_of(hbuf, pub, "hello.elf");
	struct json_object *r;

	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"rootvm\","
	    "\"memory_mib\":32,\"kernel\":\"%s\"}", hello);
	tap_ok(is_ok(r), "edits: root defines rootvm");
	json_object_put(r);
	r = h_callf(u, H_REPLY_MS, "vm.redefine", "{\"name\":\"rootvm\","
	    "\"definition\":{\"name\":\"rootvm\",\"memory_mib\":64,"
	    "\"kernel\":\"%s\"}}", hello);
	tap_ok(is_error(r, "permission_denied") && strstr(h_text(r),
	    "only its owner or root") != NULL, "edits: another member may not "
	    "redefine root's VM: %s", h_text(r));
	json_object_put(r);
	r = h_callf(u, H_REPLY_MS, "vm.rename", "{\"name\":\"rootvm\","
	    "\"new_name\":\"taken\"}");
	tap_ok(is_error(r, "permission_denied"), "edits: nor rename it: %s",
	    h_text(r));
	json_object_put(r);
	r = h_callf(u, H_REPLY_MS, "vm.clone", "{\"name\":\"rootvm\","
	    "\"new_name\":\"copied\"}");
	tap_ok(is_error(r, "permission_denied"), "edits: nor clone it: %s",
	    h_text(r));
	json_object_put(r);
	user_create(u, NULL, "edits: the member's own VM", "uvm", hello,
	    NULL);
	r = h_callf(u, H_REPLY_MS, "vm.rename", "{\"name\":\"uvm\","
	    "\"new_name\":\"uvm2\"}");
	tap_ok(is_ok(r), "edits: the member renames its own VM: %s",
	    h_text(r));
	json_object_put(r);
	r = h_callf(c, H_REPLY_MS, "vm.redefine", "{\"name\":\"uvm2\","
	    "\"definition\":{\"name\":\"uvm2\",\"memory_mib\":48,"
	    "\"kernel\":\"%s\"}}", hello);
	tap_ok(is_ok(r), "edits: root may change it: %s", h_text(r));
	json_object_put(r);
	h_delete(c, "uvm2");
	h_delete(c, "rootvm");
}

/* A console log for name, as a started guest would have left. */
static void
kept_log(const char *name)
{
	int fd = open(h_console_log(d, name), O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0640);

	if (fd < 0 || write(fd, "booted\n", 7) != 7)
		tap_bail("%s: %s", h_console_log(d, name), strerror(errno));
	close(fd);
}

/* vm.delete {name, remove_data: true} on conn; the reply. */
static struct json_object *
remove_data(struct h_conn *conn, const char *name)
{
	return h_callf(conn, H_REPLY_MS, "vm.delete", "{\"name\":\"%s\","
	    "\"remove_data\":true}", name);
}

/*
 * The data a deleted VM left (vm.delete keeps it) is its owner's or
 * root's to remove, also once no VM has that name: another member of
 * group vmm could otherwise destroy a VM's overlays after its owner
 * deleted it to define it again.  Data with no owner recorded (a
 * definition without one, files from before the record) is root's.
 */
static void
test_kept_data(struct h_conn *u, struct h_conn *c)
{
	char hbuf[512], lbuf[512];
	const char *hello = path_of(hbuf, pub, "hello.elf"), *log;
	struct json_object *r;

	r = h_callf(c, H_REPLY_MS, "vm.create", "{\"name\":\"rk\","
	    "\"memory_mib\":32,\"kernel\":\"%s\"}", hello);
	json_object_put(r);
	kept_log("rk");
	log = path_of(lbuf, d->state, "console/rk.log");
	r = h_callf(c, H_REPLY_MS, "vm.delete", "{\"name\":\"rk\"}");
	tap_ok(is_ok(r) && access(log, F_OK) == 0, "kept data: root deletes "
	    "its VM, its console log kept: %s", h_text(r));
	json_object_put(r);
	r = remove_data(u, "rk");
	tap_ok(is_error(r, "permission_denied") && strstr(h_text(r),
	    "only its owner or root") != NULL && access(log, F_OK) == 0,
	    "kept data: another member may not remove root's: %s",
	    h_text(r));
	json_object_put(r);
	r = remove_data(c, "rk");
	tap_ok(is_ok(r) && access(log, F_OK) < 0, "kept data: root may: %s",
	    h_text(r));
	json_object_put(r);

	user_create(u, NULL, "kept data: the member's own VM", "uk", hello,
	    NULL);
	kept_log("uk");
	r = h_callf(u, H_REPLY_MS, "vm.delete", "{\"name\":\"uk\"}");
	json_object_put(r);
	r = remove_data(u, "uk");
	log = path_of(lbuf, d->state, "console/uk.log");
	tap_ok(is_ok(r) && access(log, F_OK) < 0, "kept data: the member "
	    "removes what its own VM left: %s", h_text(r));
	json_object_put(r);

	/* No VM ever recorded an owner for this one. */
	kept_log("orphan");
	log = path_of(lbuf, d->state, "console/orphan.log");
	r = remove_data(u, "orphan");
	tap_ok(is_error(r, "permission_denied") && strstr(h_text(r),
	    "only root") != NULL && access(log, F_OK) == 0, "kept data: with "
	    "no owner recorded, not a member's: %s", h_text(r));
	json_object_put(r);
	r = remove_data(c, "orphan");
	tap_ok(is_ok(r) && access(log, F_OK) < 0, "kept data: but root's: %s",
	    h_text(r));
	json_object_put(r);
}

int
main(void)
{
	gid_t group = USER_GROUP;
	struct h_conn *u, *nogroup;
	struct h_conn *c;
	bool own_netns;

	h_init();
	if (geteuid() != 0)
		tap_skip_all("needs root, to act as an unprivileged client");
	c = h_setup(&d);
	setup_files();
	u = user_connect(USER_UID, USER_GID, &group, 1);
	nogroup = user_connect(USER_UID, USER_GID, NULL, 0);
	tap_ok(u != NULL && nogroup != NULL, "uid %d connects after dropping "
	    "root", USER_UID);
	if (u == NULL || nogroup == NULL)
		tap_bail("no unprivileged client");

	test_create(u, nogroup);
	test_start(u, c);
	test_recheck(u, c);
	test_disks(u, c);
	test_fs(u, c);
	test_acl(u, c);
	test_pinned(c);
	test_names(c);
	test_owned_edits(u, c);
	test_kept_data(u, c);
	own_netns = restart_for_taps(&u, &nogroup, &c, false);
	test_tap_default(u, c, own_netns);
	restart_for_taps(&u, &nogroup, &c, true);
	test_tap_rules(u, nogroup, c, own_netns);
	h_close(nogroup);
	c = test_autostart(u, c);

	h_close(u);
	h_close(c);
	return h_done();
}
