/*
 * File access on behalf of a client: the classic permission rules
 * applied to a client's credentials, path resolution with those rules,
 * and opening exactly the file that was checked.
 *
 * The daemon keeps its own credentials throughout (it serves many
 * clients from one thread and must never block): it looks at the mode
 * bits itself.  The path is resolved here one component at a time, the
 * way the kernel would for the client, so that a directory the client
 * cannot search hides what is behind it (not even whether a name exists
 * there).  Each step looks up a name in the directory it holds open, the
 * one whose mode was checked: resolving a path string again (realpath,
 * then check, then open) would let a client that owns a directory on
 * the way swap it for a link into a directory it cannot search between
 * the check and the lookup.  What is finally opened is compared with
 * what was checked: a file renamed over it in between is refused, never
 * read.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

bool
access_mode_allows(const struct stat *st, const struct access_cred *cred,
    unsigned int want)
{
	unsigned int bits;

	want &= 07;
	/* One class only, the first that matches: as the kernel does. */
	if (cred->uid == st->st_uid)
		bits = ((unsigned int)st->st_mode >> 6) & 07;
	else if (access_in_group(cred, st->st_gid))
		bits = ((unsigned int)st->st_mode >> 3) & 07;
	else
		bits = (unsigned int)st->st_mode & 07;
	return (bits & want) == want;
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
		if (cred != NULL &&
		    !access_mode_allows(&dirst, cred, ACCESS_SEARCH)) {
			rc = -EACCES;
			goto fail;
		}
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

	if (cred != NULL && !access_mode_allows(&cur, cred, ACCESS_READ)) {
		rc = -EACCES;
		goto fail;
	}
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
	/* The same file, but its mode may have changed since. */
	if (cred != NULL && !access_mode_allows(&st, cred, ACCESS_READ |
	    ((flags & O_ACCMODE) == O_RDWR ? ACCESS_WRITE : 0))) {
		rc = -EACCES;
		goto close_fd;
	}
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
	if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	else if ((flags & O_ACCMODE) == O_RDWR &&
	    !access_mode_allows(&st, cred, ACCESS_WRITE))
		rc = -EACCES;
	else
		rc = access_open_flags(dirfd, name, O_NOFOLLOW | flags, &st,
		    cred);
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
