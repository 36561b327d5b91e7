/*
 * See safe-dir.h.  The walk holds a descriptor of the directory it is
 * in and looks the next name up there (fstatat, openat with
 * O_NOFOLLOW), checking each directory on the descriptor it opened:
 * what is checked is what the walk goes on from.  Symbolic links are
 * read and spliced into what is left of the path, as the kernel would,
 * so every directory a link leads through is checked too.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safe-dir.h"

struct safedir_walk {
	const char *path;	/* what was asked, for messages */
	char done[PATH_MAX];	/* the real path of fd ("" for /) */
	int fd;			/* O_PATH, the directory reached */
	char *err;
	size_t errlen;
};

static bool
safedir_owner_ok(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* "alice (uid 1000)", or "uid 1000" for a uid without a name. */
static void
safedir_owner(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char pwbuf[1024];

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 &&
	    res != NULL)
		snprintf(buf, len, "%s (uid %lu)", pw.pw_name,
		    (unsigned long)uid);
	else
		snprintf(buf, len, "uid %lu", (unsigned long)uid);
}

/* " or to uid N (vmmd's user)" when vmmd does not run as root. */
static void
safedir_also(char *buf, size_t len)
{
	if (geteuid() == 0)
		buf[0] = '\0';
	else
		snprintf(buf, len, " or to uid %lu (vmmd's own)",
		    (unsigned long)geteuid());
}

/* The name of child in the walk's directory, for messages. */
static void
safedir_child(const struct safedir_walk *w, const char *child, char *buf,
    size_t len)
{
	/* child is never NULL; GCC's sanitizer builds cannot tell. */
	snprintf(buf, len, "%s/%s", w->done, child != NULL ? child : "");
}

/*
 * The directory the walk just entered (st, its real path in w->done):
 * its owner, and its mode if the path goes on from it (last is false)
 * or ends there.
 */
static int
safedir_judge(struct safedir_walk *w, const struct stat *st, bool last)
{
	const char *dir = w->done[0] != '\0' ? w->done : "/";
	char owner[128], also[64];
	mode_t mode = st->st_mode & 07777;
	bool writable = (mode & (S_IWGRP | S_IWOTH)) != 0;

	if (safedir_owner_ok(st->st_uid) && (!writable ||
	    (!last && (mode & S_ISVTX) != 0)))
		return 0;
	safedir_owner(st->st_uid, owner, sizeof(owner));
	safedir_also(also, sizeof(also));
	if (last && strcmp(dir, w->path) == 0)
		snprintf(w->err, w->errlen, "%s: refused: owned by %s, mode "
		    "%04o; vmmd trusts only a directory that belongs to "
		    "root%s and that neither its group nor others may write",
		    dir, owner, (unsigned int)mode, also);
	else if (last)
		snprintf(w->err, w->errlen, "%s (%s): refused: owned by %s, "
		    "mode %04o; vmmd trusts only a directory that belongs to "
		    "root%s and that neither its group nor others may write",
		    w->path, dir, owner, (unsigned int)mode, also);
	else
		snprintf(w->err, w->errlen, "%s: refused: %s on the way to "
		    "it is owned by %s, mode %04o; every directory on the way "
		    "must belong to root%s and be writable by no one else, "
		    "unless it is sticky (as /tmp is)", w->path, dir, owner,
		    (unsigned int)mode, also);
	return -EPERM;
}

/*
 * Step into the directory name (not a link) of the walk's directory: its
 * fstat() in *st.  0 or -errno.
 */
static int
safedir_enter(struct safedir_walk *w, const char *name, struct stat *st)
{
	char *slash;
	int fd, rc;

	fd = openat(w->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0 || fstat(fd, st) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	close(w->fd);
	w->fd = fd;
	if (strcmp(name, "..") == 0) {
		if ((slash = strrchr(w->done, '/')) != NULL)
			*slash = '\0';
	} else if (strlen(w->done) + 1 + strlen(name) < sizeof(w->done)) {
		strcat(w->done, "/");
		strcat(w->done, name);
	} else
		return -ENAMETOOLONG;
	return 0;
}

int
safedir_check(const char *path, int *dirfdp, char *err, size_t errlen)
{
	struct safedir_walk w = { .path = path, .fd = -1, .err = err,
	    .errlen = errlen };
	char target[PATH_MAX], where[PATH_MAX + NAME_MAX], owner[128];
	char also[64];
	char *todo, *rest, *name, *slash, *next;
	unsigned int links = 0;
	struct stat st;
	ssize_t n;
	int rc;

	if (path[0] != '/') {
		snprintf(err, errlen, "%s: not an absolute path", path);
		return -EINVAL;
	}
	if ((todo = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w.fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w.fd < 0 || fstat(w.fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "/: %s", strerror(-rc));
		goto out;
	}
	if ((rc = safedir_judge(&w, &st, false)) < 0)
		goto out;
	rest = todo;
	for (;;) {
		while (*rest == '/')
			rest++;
		if (*rest == '\0')
			break;
		name = rest;
		if ((slash = strchr(rest, '/')) != NULL) {
			*slash = '\0';
			rest = slash + 1;
		} else
			rest += strlen(rest);
		if (strcmp(name, ".") == 0)
			continue;
		safedir_child(&w, name, where, sizeof(where));
		if (fstatat(w.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", where, strerror(-rc));
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			/*
			 * Only its owner or a writer of its directory (which
			 * is checked) could have put another in its place.
			 */
			if (!safedir_owner_ok(st.st_uid)) {
				safedir_owner(st.st_uid, owner, sizeof(owner));
				safedir_also(also, sizeof(also));
				snprintf(err, errlen, "%s: refused: the "
				    "symbolic link %s on the way to it is "
				    "owned by %s; it must belong to root%s",
				    path, where, owner, also);
				rc = -EPERM;
				goto out;
			}
			if (++links > SAFEDIR_MAX_SYMLINKS) {
				rc = -ELOOP;
				snprintf(err, errlen, "%s: %s", path,
				    strerror(-rc));
				goto out;
			}
			n = readlinkat(w.fd, name, target, sizeof(target));
			if (n <= 0 || (size_t)n >= sizeof(target)) {
				rc = n < 0 ? -errno : n == 0 ? -ENOENT :
				    -ENAMETOOLONG;
				snprintf(err, errlen, "%s: %s: %s", path,
				    where, strerror(-rc));
				goto out;
			}
			target[n] = '\0';
			/* The link's target, then what was left after it. */
			if (asprintf(&next, "%s/%s", target, rest) < 0) {
				rc = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			free(todo);
			todo = rest = next;
			if (target[0] == '/') {
				close(w.fd);
				w.done[0] = '\0';
				w.fd = open("/", O_PATH | O_DIRECTORY |
				    O_CLOEXEC);
				if (w.fd < 0) {
					rc = -errno;
					snprintf(err, errlen, "/: %s",
					    strerror(-rc));
					goto out;
				}
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = -ENOTDIR;
			if (strcmp(where, path) == 0)
				snprintf(err, errlen, "%s: not a directory",
				    path);
			else
				snprintf(err, errlen, "%s: %s is not a "
				    "directory", path, where);
			goto out;
		}
		if ((rc = safedir_enter(&w, name, &st)) < 0) {
			snprintf(err, errlen, "%s: %s", where, strerror(-rc));
			goto out;
		}
		/* The end of the path is judged below, by the stricter rule. */
		if (rest[strspn(rest, "/")] != '\0' &&
		    (rc = safedir_judge(&w, &st, false)) < 0)
			goto out;
	}
	if (fstat(w.fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	if ((rc = safedir_judge(&w, &st, true)) < 0)
		goto out;
	if (dirfdp != NULL) {
		*dirfdp = w.fd;
		w.fd = -1;
	}
out:
	if (w.fd >= 0)
		close(w.fd);
	free(todo);
	return rc;
}
