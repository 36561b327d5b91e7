/* See scratch.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"
#include "tap.h"

static char scratch_base[PATH_MAX];
static bool scratch_exit_set;
static pid_t scratch_owner;	/* the process that made the directory */

/* Only the process that made it: a forked child's exit leaves it. */
static void
scratch_at_exit(void)
{
	if (getpid() == scratch_owner)
		scratch_remove();
}

const char *
scratch_new(const char *tag)
{
	char tmpl[PATH_MAX];

	snprintf(tmpl, sizeof(tmpl), "/tmp/vmmd-test-%s-XXXXXX", tag);
	if (mkdtemp(tmpl) == NULL ||
	    realpath(tmpl, scratch_base) == NULL ||
	    chmod(scratch_base, 0755) < 0)
		tap_bail("scratch directory %s: %s", tmpl, strerror(errno));
	scratch_owner = getpid();
	if (!scratch_exit_set) {
		atexit(scratch_at_exit);
		scratch_exit_set = true;
	}
	return scratch_base;
}

const char *
scratch_dir(void)
{
	return scratch_base;
}

const char *
scratch_at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static unsigned int n;

	n = (n + 1) % 4;
	if (snprintf(buf[n], sizeof(buf[n]), "%s/%s", scratch_base, rel) >=
	    (int)sizeof(buf[n]))
		tap_bail("%s/%s: too long", scratch_base, rel);
	return buf[n];
}

void
scratch_mkdir(const char *rel, mode_t mode)
{
	const char *path = scratch_at(rel);

	if (mkdir(path, 0700) < 0 || chmod(path, mode) < 0)
		tap_bail("%s: %s", path, strerror(errno));
}

void
scratch_file(const char *rel, mode_t mode, const char *content)
{
	const char *path = scratch_at(rel);
	size_t len = strlen(content);
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, content, len) != (ssize_t)len ||
	    fchmod(fd, mode) < 0)
		tap_bail("%s: %s", path, strerror(errno));
	close(fd);
}

void
scratch_link(const char *target, const char *rel)
{
	const char *path = scratch_at(rel);

	if (symlink(target, path) < 0)
		tap_bail("%s: %s", path, strerror(errno));
}

/* On the way down: every directory opened up, so that it can be read. */
static int
scratch_open_up(const char *path, const struct stat *st, int type,
    struct FTW *ftw)
{
	if (type == FTW_D || type == FTW_DNR)
		(void)chmod(path, 0700);
	return 0;
}

/* On the way up: everything removed. */
static int
scratch_unlink(const char *path, const struct stat *st, int type,
    struct FTW *ftw)
{
	int r = type == FTW_DP ? rmdir(path) : unlink(path);

	if (r < 0)
		tap_diag("cannot remove %s: %s", path, strerror(errno));
	return 0;
}

void
scratch_remove(void)
{
	if (scratch_base[0] == '\0')
		return;
	if (getenv("VMMD_TEST_KEEP") != NULL) {
		tap_diag("kept %s", scratch_base);
		return;
	}
	(void)nftw(scratch_base, scratch_open_up, 16, FTW_PHYS);
	(void)nftw(scratch_base, scratch_unlink, 16, FTW_PHYS | FTW_DEPTH);
	scratch_base[0] = '\0';
}
