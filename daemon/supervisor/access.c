/*
 * File access on behalf of a client: the kernel's permission rules (mode
 * bits and POSIX ACLs) applied to a client's credentials, path
 * resolution with those rules, and opening exactly the file that was
 * checked.
 *
 * The daemon keeps its own credentials throughout (it serves many
 * clients from one thread and must never block): it looks at the mode
 * bits and ACLs itself.  The path is resolved here one component at a
 * time, the way the kernel would for the client, so that a directory the
 * client cannot search hides what is behind it (not even whether a name
 * exists there).  Each step looks up a name in the directory it holds open, the
 * one whose mode was checked: resolving a path string again (realpath,
 * then check, then open) would let a client that owns a directory on
 * the way swap it for a link into a directory it cannot search between
 * the check and the lookup.  What is finally opened is compared with
 * what was checked: a file renamed over it in between is refused, never
 * read.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>

#include "access.h"

static bool
access_in_group(const struct access_cred *cred, gid_t gid)
{
	size_t i;

	if (cred->gid == gid)
		return true;
	for (i = 0; i < cred->ngroups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

/* The access ACL's attribute, as the kernel gives it to getxattr(2). */
#define ACCESS_ACL_XATTR	"system.posix_acl_access"
#define ACCESS_ACL_HEADER	sizeof(struct posix_acl_xattr_header)
#define ACCESS_ACL_ENTRY	sizeof(struct posix_acl_xattr_entry)

/* Entry i of an ACL whose size was checked: tag, permissions and id. */
static void
access_acl_entry(const unsigned char *acl, size_t i, unsigned int *tag,
    unsigned int *perm, uint32_t *id)
{
	struct posix_acl_xattr_entry e;

	memcpy(&e, acl + ACCESS_ACL_HEADER + i * ACCESS_ACL_ENTRY, sizeof(e));
	*tag = le16toh(e.e_tag);
	*perm = le16toh(e.e_perm);
	*id = le32toh(e.e_id);
}

/*
 * Entry i matched with permissions perm: the kernel limits it by the
 * first mask entry after it, if there is one.
 */
static bool
access_acl_masked(const unsigned char *acl, size_t n, size_t i,
    unsigned int perm, unsigned int want)
{
	unsigned int tag, mask;
	uint32_t id;

	for (i++; i < n; i++) {
		access_acl_entry(acl, i, &tag, &mask, &id);
		if (tag == ACL_MASK)
			return (perm & mask & want) == want;
	}
	return (perm & want) == want;
}

/*
 * fs/posix_acl.c's posix_acl_permission(), entry for entry: the first
 * user entry that is cred's decides (the owner's unmasked, a named
 * one's masked); else any group entry of cred's that grants all of want
 * (masked) allows, and having matched one that does not refuses; else
 * the other entry.  An unknown tag, or no other entry, refuses (the
 * kernel says EIO).
 */
static bool
access_acl_permission(const unsigned char *acl, size_t n,
    const struct stat *st, const struct access_cred *cred,
    unsigned int want)
{
	unsigned int tag, perm;
	bool found = false;
	uint32_t id;
	size_t i;

	for (i = 0; i < n; i++) {
		access_acl_entry(acl, i, &tag, &perm, &id);
		switch (tag) {
		case ACL_USER_OBJ:
			/* The caller decided for the owner already. */
			if (cred->uid == st->st_uid)
				return (perm & want) == want;
			break;
		case ACL_USER:
			if (cred->uid == (uid_t)id)
				return access_acl_masked(acl, n, i, perm,
				    want);
			break;
		case ACL_GROUP_OBJ:
		case ACL_GROUP:
			if (!access_in_group(cred, tag == ACL_GROUP ?
			    (gid_t)id : st->st_gid))
				break;
			found = true;
			if ((perm & want) == want)
				return access_acl_masked(acl, n, i, perm,
				    want);
			break;
		case ACL_MASK:
			break;
		case ACL_OTHER:
			return !found && (perm & want) == want;
		default:
			return false;
		}
	}
	return false;
}

bool
access_acl_allows(const struct stat *st, const void *acl, size_t len,
    const struct access_cred *cred, unsigned int want)
{
	uint32_t version;
	unsigned int bits;

	want &= 07;
	/* The owner: the owner bits, whatever the ACL says. */
	if (cred->uid == st->st_uid) {
		bits = ((unsigned int)st->st_mode >> 6) & 07;
		return (bits & want) == want;
	}
	/* The kernel reads the ACL only while the mask (which the group
	 * bits are then) grants something: with no group bits the ACL's
	 * named entries are ignored, and the mode bits decide. */
	if (acl != NULL && (st->st_mode & S_IRWXG) != 0) {
		if (len < ACCESS_ACL_HEADER ||
		    (len - ACCESS_ACL_HEADER) % ACCESS_ACL_ENTRY != 0)
			return false;
		memcpy(&version, acl, sizeof(version));
		if (le32toh(version) != POSIX_ACL_XATTR_VERSION)
			return false;
		return access_acl_permission(acl, (len - ACCESS_ACL_HEADER) /
		    ACCESS_ACL_ENTRY, st, cred, want);
	}
	/* One class only, the first that matches: as the kernel does. */
	if (access_in_group(cred, st->st_gid))
		bits = ((unsigned int)st->st_mode >> 3) & 07;
	else
		bits = (unsigned int)st->st_mode & 07;
	return (bits & want) == want;
}

bool
access_mode_allows(const struct stat *st, const struct access_cred *cred,
    unsigned int want)
{
	return access_acl_allows(st, NULL, 0, cred, want);
}

/*
 * The access ACL of fd into *acl (buf, or a malloc()ed buffer when it
 * does not fit, which the caller frees) and its length: 0, with *acl
 * NULL when the file has none or its file system knows no ACLs, or
 * -errno.  An O_PATH descriptor has no extended attributes of its own
 * (EBADF): then the very file is reached through /proc/self/fd.
 */
static int
access_read_acl(int fd, char *buf, size_t bufsize, void **acl, size_t *len)
{
	char self[64];
	void *big = NULL, *p = buf;
	size_t size = bufsize;
	ssize_t n;
	int tries;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	*acl = NULL;
	*len = 0;
	for (tries = 0; tries < 4; tries++) {
		n = fgetxattr(fd, ACCESS_ACL_XATTR, p, size);
		if (n < 0 && errno == EBADF)
			n = getxattr(self, ACCESS_ACL_XATTR, p, size);
		if (n >= 0) {
			*acl = p;
			*len = (size_t)n;
			return 0;
		}
		if (errno == ENODATA || errno == EOPNOTSUPP) {
			free(big);
			return 0;
		}
		if (errno != ERANGE) {
			n = -errno;
			free(big);
			return (int)n;
		}
		/* Larger than buf, or it grew since: ask its size. */
		n = fgetxattr(fd, ACCESS_ACL_XATTR, NULL, 0);
		if (n < 0 && errno == EBADF)
			n = getxattr(self, ACCESS_ACL_XATTR, NULL, 0);
		if (n < 0) {
			n = errno == ENODATA ? 0 : -errno;
			free(big);
			return (int)n;
		}
		free(big);
		size = (size_t)n + ACCESS_ACL_ENTRY;
		if ((big = malloc(size)) == NULL)
			return -ENOMEM;
		p = big;
	}
	free(big);
	return -EAGAIN;
}

int
access_fd_allows(int fd, const struct stat *st,
    const struct access_cred *cred, unsigned int want)
{
	char buf[ACCESS_ACL_HEADER + 32 * ACCESS_ACL_ENTRY];
	void *acl;
	size_t len;
	bool ok;
	int rc;

	/* Where the kernel would not look at the ACL, nor does this. */
	if (cred->uid == st->st_uid || (st->st_mode & S_IRWXG) == 0)
		return access_mode_allows(st, cred, want) ? 0 : -EACCES;
	if ((rc = access_read_acl(fd, buf, sizeof(buf), &acl, &len)) < 0)
		return rc;
	ok = access_acl_allows(st, acl, len, cred, want);
	if (acl != buf)
		free(acl);
	return ok ? 0 : -EACCES;
}

/* An O_PATH descriptor of "/" and its stat, or -errno. */
static int
access_open_root(struct stat *st)
{
	int fd, rc;

	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

/*
 * Step from dirfd into its entry name, a directory whose fstatat() gave
 * expect; dirfd is replaced (and *dirst set) on success.
 */
static int
access_enter(int *dirfd, const char *name, const struct stat *expect,
    struct stat *dirst)
{
	struct stat st;
	int fd, rc;

	fd = openat(*dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		/* A link or a file there now: it changed since fstatat(). */
		return errno == ELOOP || errno == ENOTDIR ? -ESTALE : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (expect != NULL && (st.st_dev != expect->st_dev ||
	    st.st_ino != expect->st_ino)) {
		close(fd);
		return -ESTALE;
	}
	close(*dirfd);
	*dirfd = fd;
	*dirst = st;
	return 0;
}

/*
 * Whether cred may have want of what name in dirfd is, cur its fstatat():
 * 0, -EACCES, -ESTALE when name is no longer cur, or -errno.  The ACL is
 * read from the file itself (an O_PATH descriptor of it: nothing is
 * opened for reading, a FIFO or a device node no more than a file).
 */
static int
access_check_final(int dirfd, const char *name, const struct stat *cur,
    const struct access_cred *cred, unsigned int want)
{
	struct stat st;
	int fd, rc;

	if (strcmp(name, ".") == 0)
		return access_fd_allows(dirfd, cur, cred, want);
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (st.st_dev != cur->st_dev || st.st_ino != cur->st_ino)
		rc = -ESTALE;
	else
		rc = access_fd_allows(fd, &st, cred, want);
	close(fd);
	return rc;
}

int
access_resolve(const char *path, const struct access_cred *cred,
    char *resolved, char *name, struct stat *st)
{
	char rest[PATH_MAX], res[PATH_MAX], target[PATH_MAX];
	char comp[NAME_MAX + 1];
	struct stat dirst, cur;
	const char *p, *next;
	size_t len, reslen = 0, taillen;
	unsigned int nlinks = 0;
	int dirfd, rc;
	ssize_t n;

	if (path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(rest))
		return -ENAMETOOLONG;
	strcpy(rest, path);
	/* res is the resolved directory so far, "" standing for "/". */
	res[0] = '\0';
	if ((dirfd = access_open_root(&dirst)) < 0)
		return dirfd;
	cur = dirst;
	strcpy(name, ".");

	p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		len = strcspn(p, "/");
		next = p + len;

		/* Every name looked up, "." and ".." too, needs search
		 * permission on the directory it is looked up in. */
		if (cred != NULL && (rc = access_fd_allows(dirfd, &dirst,
		    cred, ACCESS_SEARCH)) < 0)
			goto fail;
		if (len == 1 && p[0] == '.') {
			cur = dirst;
			strcpy(name, ".");
			p = next;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			/* The physical parent, which is also the dirname of
			 * res (it has no links).  ".." of "/" is "/". */
			if ((rc = access_enter(&dirfd, "..", NULL, &dirst)) < 0)
				goto fail;
			while (reslen > 0 && res[reslen - 1] != '/')
				reslen--;
			if (reslen > 0)
				reslen--;
			res[reslen] = '\0';
			cur = dirst;
			strcpy(name, ".");
			p = next;
			continue;
		}

		if (len >= sizeof(comp) || reslen + 1 + len >= sizeof(res)) {
			rc = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		if (fstatat(dirfd, comp, &cur, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			goto fail;
		}

		if (S_ISLNK(cur.st_mode)) {
			/* Reading a link needs no permission on the link
			 * itself; its target is resolved like the rest. */
			if (++nlinks > ACCESS_MAX_SYMLINKS) {
				rc = -ELOOP;
				goto fail;
			}
			n = readlinkat(dirfd, comp, target, sizeof(target));
			if (n < 0) {
				rc = -errno;
				goto fail;
			}
			taillen = strlen(next);
			if ((size_t)n >= sizeof(target) ||
			    (size_t)n + taillen >= sizeof(rest)) {
				rc = -ENAMETOOLONG;
				goto fail;
			}
			if (n == 0) {
				rc = -ENOENT;
				goto fail;
			}
			/* rest becomes the target followed by what was left
			 * after the link (next points into rest). */
			memmove(rest + n, next, taillen + 1);
			memcpy(rest, target, (size_t)n);
			p = rest;
			if (target[0] == '/') {
				close(dirfd);
				if ((dirfd = access_open_root(&dirst)) < 0)
					return dirfd;
				reslen = 0;
				res[0] = '\0';
			}
			cur = dirst;
			strcpy(name, ".");
			continue;
		}

		res[reslen] = '/';
		memcpy(res + reslen + 1, comp, len + 1);
		reslen += 1 + len;
		/* Anything after the name, even a lone slash, makes it a
		 * directory that the walk goes into. */
		if (*next != '\0') {
			if (!S_ISDIR(cur.st_mode)) {
				rc = -ENOTDIR;
				goto fail;
			}
			if ((rc = access_enter(&dirfd, comp, &cur, &dirst)) < 0)
				goto fail;
			strcpy(name, ".");
		} else
			memcpy(name, comp, len + 1);
		p = next;
	}

	if (cred != NULL &&
	    (rc = access_check_final(dirfd, name, &cur, cred,
	    ACCESS_READ)) < 0)
		goto fail;
	if (resolved != NULL) {
		if (reslen == 0)
			strcpy(resolved, "/");
		else
			memcpy(resolved, res, reslen + 1);
	}
	*st = cur;
	return dirfd;

fail:
	close(dirfd);
	return rc;
}

/* Open, then make sure it is the checked regular file. */
static int
access_open_flags(int dirfd, const char *name, int flags,
    const struct stat *checked, const struct access_cred *cred)
{
	struct stat st;
	int fd, rc;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK | flags);
	if (fd < 0)
		/* With O_NOFOLLOW: a link where the file was checked. */
		return errno == ELOOP ? -ESTALE : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto close_fd;
	}
	if (st.st_dev != checked->st_dev || st.st_ino != checked->st_ino) {
		rc = -ESTALE;
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto close_fd;
	}
	/* The same file, but its mode or ACL may have changed since. */
	if (cred != NULL && (rc = access_fd_allows(fd, &st, cred, ACCESS_READ |
	    ((flags & O_ACCMODE) == O_RDWR ? ACCESS_WRITE : 0))) < 0)
		goto close_fd;
	return fd;

close_fd:
	close(fd);
	return rc;
}

int
access_open(int dirfd, const char *name, const struct stat *checked,
    const struct access_cred *cred)
{
	return access_open_flags(dirfd, name, O_NOFOLLOW, checked, cred);
}

static int
access_open_file_flags(const char *path, const struct access_cred *cred,
    int flags)
{
	char name[NAME_MAX + 1];
	struct stat st;
	int dirfd, rc;

	if (path[0] != '/')
		return -EINVAL;
	if (cred == NULL) {
		/* The daemon's own rights: the kernel resolves the path. */
		if (stat(path, &st) < 0)
			return -errno;
		/*
		 * Not even opened unless it is a regular file: opening a
		 * device node can have effects of its own (a watchdog
		 * starts counting).
		 */
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		return access_open_flags(AT_FDCWD, path, flags, &st, NULL);
	}
	dirfd = access_resolve(path, cred, NULL, name, &st);
	if (dirfd < 0)
		return dirfd;
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto close_dir;
	}
	/* Write permission too before an O_RDWR open: opening for
	 * writing is not without effects (it breaks others' leases). */
	if ((flags & O_ACCMODE) == O_RDWR && (rc = access_check_final(dirfd,
	    name, &st, cred, ACCESS_WRITE)) < 0)
		goto close_dir;
	rc = access_open_flags(dirfd, name, O_NOFOLLOW | flags, &st, cred);
close_dir:
	close(dirfd);
	return rc;
}

int
access_open_file(const char *path, const struct access_cred *cred)
{
	return access_open_file_flags(path, cred, 0);
}

int
access_open_file_rw(const char *path, const struct access_cred *cred)
{
	return access_open_file_flags(path, cred, O_RDWR);
}

int
access_open_dir(const char *path, const struct access_cred *cred,
    bool write)
{
	char name[NAME_MAX + 1];
	struct stat checked, st;
	int dirfd, fd, rc;

	if (path[0] != '/')
		return -EINVAL;
	if (cred == NULL) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	dirfd = access_resolve(path, cred, NULL, name, &checked);
	if (dirfd < 0)
		return dirfd;
	if (!S_ISDIR(checked.st_mode)) {
		close(dirfd);
		return -ENOTDIR;
	}
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	rc = fd < 0 ? (errno == ELOOP ? -ESTALE : -errno) : 0;
	close(dirfd);
	if (rc < 0)
		return rc;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (st.st_dev != checked.st_dev || st.st_ino != checked.st_ino)
		rc = -ESTALE;
	else
		rc = access_fd_allows(fd, &st, cred, ACCESS_READ |
		    (write ? ACCESS_WRITE : 0) | ACCESS_SEARCH);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}
