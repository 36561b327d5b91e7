/*
 * VM definitions on disk (see vmconfig-store.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-write.h"
#include "proto.h"
#include "vmconfig.h"
#include "vmconfig-internal.h"
#include "vmconfig-store.h"

/*
 * Tests kill the daemon between two steps of a change to prove that a
 * crash leaves the old or the new definition: with VMMD_TEST_CRASH_AT
 * set to the step's name, the process ends there as abruptly as it can.
 */
static void
config_crash_point(const char *step)
{
	const char *at = getenv(CONFIG_CRASH_ENV);

	if (at != NULL && strcmp(at, step) == 0)
		_exit(CONFIG_CRASH_STATUS);
}

int
config_sync_dir(const char *dir)
{
	int fd, rc = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int
config_save(const char *dir, const struct vm_def *def, char *err,
    size_t errlen)
{
	struct json_object *obj;
	char path[PATH_MAX], tmp[PATH_MAX];
	const char *text;
	size_t len;
	int fd, rc;

	if (!config_name_valid(def->name)) {
		config_err(err, errlen, "invalid name");
		return -EINVAL;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.json", dir,
	    def->name) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.json.XXXXXX", dir,
	    def->name) >= sizeof(tmp)) {
		config_err(err, errlen, "%s: path is too long", dir);
		return -ENAMETOOLONG;
	}

	obj = config_to_json(def, CONFIG_JSON_SECRETS);
	if (obj == NULL) {
		config_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	text = json_object_to_json_string_length(obj,
	    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &len);

	/* A name starting with '.' and not ending in ".json": reloading
	 * never mistakes a leftover temporary file for a definition. */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		config_err(err, errlen, "%s: %s", tmp, strerror(-rc));
		goto put_obj;
	}
	/* Owner-only whatever the libc and the umask: the file may hold
	 * the VNC password.  Set before a byte is written. */
	if (fchmod(fd, S_IRUSR | S_IWUSR) < 0) {
		rc = -errno;
		config_err(err, errlen, "%s: chmod: %s", tmp, strerror(-rc));
		goto close_tmp;
	}
	if ((rc = fd_write_all(fd, text, len / 2)) < 0) {
		config_err(err, errlen, "%s: write: %s", tmp, strerror(-rc));
		goto close_tmp;
	}
	config_crash_point("save-half-written");
	if ((rc = fd_write_all(fd, text + len / 2, len - len / 2)) < 0 ||
	    (rc = fd_write_all(fd, "\n", 1)) < 0) {
		config_err(err, errlen, "%s: write: %s", tmp, strerror(-rc));
		goto close_tmp;
	}
	config_crash_point("save-written");
	if (fsync(fd) < 0) {
		rc = -errno;
		config_err(err, errlen, "%s: fsync: %s", tmp, strerror(-rc));
		goto close_tmp;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = -errno;
		config_err(err, errlen, "%s: close: %s", tmp, strerror(-rc));
		goto unlink_tmp;
	}
	fd = -1;
	config_crash_point("save-synced");
	if (rename(tmp, path) < 0) {
		rc = -errno;
		config_err(err, errlen, "%s: rename: %s", path, strerror(-rc));
		goto unlink_tmp;
	}
	config_crash_point("save-renamed");
	if ((rc = config_sync_dir(dir)) < 0) {
		/* The file is in place; only its durability is in doubt. */
		config_err(err, errlen, "%s: fsync: %s", dir, strerror(-rc));
		goto put_obj;
	}
	json_object_put(obj);
	config_crash_point("save-done");
	return 0;

close_tmp:
	close(fd);
unlink_tmp:
	unlink(tmp);
put_obj:
	json_object_put(obj);
	return rc;
}

int
config_remove(const char *dir, const char *name, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int rc;

	if (!config_name_valid(name)) {
		config_err(err, errlen, "invalid name");
		return -EINVAL;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/%s.json", dir, name) >=
	    sizeof(path)) {
		config_err(err, errlen, "%s: path is too long", dir);
		return -ENAMETOOLONG;
	}
	if (unlink(path) < 0) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		config_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	config_crash_point("remove-unlinked");
	if ((rc = config_sync_dir(dir)) < 0) {
		config_err(err, errlen, "%s: fsync: %s", dir, strerror(-rc));
		return rc;
	}
	config_crash_point("remove-done");
	return 0;
}

int
config_load_file(const char *path, struct vm_def **defp, char *err,
    size_t errlen)
{
	struct json_object *obj;
	struct stat st;
	char *buf = NULL, desc[256];
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	*defp = NULL;
	/*
	 * O_NOFOLLOW: a link in the definitions directory must not make
	 * the daemon load (and later rewrite) a file kept elsewhere.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
	    O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			config_err(err, errlen, "a symbolic link, not loaded");
		else
			config_err(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		config_err(err, errlen, "%s", strerror(-rc));
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		config_err(err, errlen, "not a regular file");
		goto close_fd;
	}
	if (st.st_size > CONFIG_FILE_MAX) {
		rc = -EFBIG;
		config_err(err, errlen, "larger than %d bytes",
		    CONFIG_FILE_MAX);
		goto close_fd;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		rc = -ENOMEM;
		config_err(err, errlen, "out of memory");
		goto close_fd;
	}
	/* Read at most what fstat promised; a file that grows meanwhile
	 * is cut there and most likely fails to parse. */
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			config_err(err, errlen, "read: %s", strerror(-rc));
			goto free_buf;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}

	if (proto_parse_object(buf, len, &obj, desc, sizeof(desc)) != 0) {
		rc = -EINVAL;
		config_err(err, errlen, "%s", desc);
		goto free_buf;
	}
	rc = config_parse(obj, CONFIG_OWNER, defp, err, errlen);
	json_object_put(obj);

free_buf:
	free(buf);
close_fd:
	close(fd);
	return rc;
}

static int
config_dir_filter(const struct dirent *de)
{
	/* Skips ".", "..", and temporary files of config_save(). */
	return de->d_name[0] != '.';
}

/*
 * Temporary files config_save() left when the process died before its
 * rename (".NAME.json.XXXXXX"): never a definition, only litter.
 */
static void
config_clean_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	const char *dot;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.' ||
		    (dot = strstr(de->d_name, ".json.")) == NULL ||
		    strlen(dot) != strlen(".json.XXXXXX") ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    de->d_name) >= sizeof(path))
			continue;
		(void)unlink(path);
	}
	closedir(d);
}

int
config_load_dir(const char *dir, config_load_cb cb, void *arg)
{
	struct dirent **list;
	struct vm_def *def;
	char path[PATH_MAX], name[NAME_MAX + 1], err[512];
	const char *fname;
	size_t flen;
	int i, n, rc;

	config_clean_dir(dir);
	n = scandir(dir, &list, config_dir_filter, alphasort);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		fname = list[i]->d_name;
		flen = strlen(fname);
		if (flen <= 5 || strcmp(fname + flen - 5, ".json") != 0)
			continue;	/* not ours to judge */
		memcpy(name, fname, flen - 5);
		name[flen - 5] = '\0';
		if (!config_name_valid(name)) {
			cb(arg, fname, NULL, "file name is not NAME.json with "
			    "a valid VM name");
			continue;
		}
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, fname)
		    >= sizeof(path)) {
			cb(arg, fname, NULL, "path is too long");
			continue;
		}
		rc = config_load_file(path, &def, err, sizeof(err));
		if (rc < 0) {
			cb(arg, fname, NULL, err);
			continue;
		}
		if (strcmp(def->name, name) != 0) {
			snprintf(err, sizeof(err), "name '%s' does not match "
			    "the file name", def->name);
			config_def_free(def);
			cb(arg, fname, NULL, err);
			continue;
		}
		if (def->transient) {
			config_def_free(def);
			cb(arg, fname, NULL, "a transient VM is never stored");
			continue;
		}
		cb(arg, fname, def, NULL);
	}
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return 0;
}
