/* See worker-record.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-write.h"
#include "log.h"
#include "proto.h"
#include "worker-record.h"

#define WREC_SUFFIX	".json"
#define WREC_VERSION	1
#define WREC_MAX	(1024 * 1024)	/* a definition and a few numbers */

static int
wrec_path(const char *dir, const char *name, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s" WREC_SUFFIX, dir, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int
wrec_write(const char *dir, const char *name, pid_t pid, uid_t uid,
    uint32_t vsock_cid, struct json_object *definition, char *err,
    size_t errlen)
{
	struct json_object *obj;
	char path[PATH_MAX], tmp[PATH_MAX];
	const char *text;
	size_t len;
	int fd, rc = -ENOMEM;

	if (wrec_path(dir, name, path, sizeof(path)) < 0 ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s" WREC_SUFFIX ".XXXXXX",
	    dir, name) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	if ((obj = json_object_new_object()) == NULL)
		goto nomem;
	if (json_object_object_add(obj, "version",
	    json_object_new_int(WREC_VERSION)) < 0 ||
	    json_object_object_add(obj, "name",
	    json_object_new_string(name)) < 0 ||
	    json_object_object_add(obj, "pid",
	    json_object_new_int64(pid)) < 0 ||
	    json_object_object_add(obj, "uid",
	    json_object_new_int64(uid)) < 0 ||
	    json_object_object_add(obj, "vsock_cid",
	    json_object_new_int64(vsock_cid)) < 0 ||
	    json_object_object_add(obj, "definition",
	    json_object_get(definition)) < 0 ||
	    (text = json_object_to_json_string_length(obj,
	    JSON_C_TO_STRING_PLAIN, &len)) == NULL)
		goto put_obj;
	/*
	 * A name that starts with '.' and ends in neither ".json" nor
	 * ".sock": no reader takes a half-written file for a record.
	 */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		goto put_obj;
	}
	/* Owner-only whatever the umask: it may hold the VNC password. */
	if (fchmod(fd, S_IRUSR | S_IWUSR) < 0)
		rc = -errno;
	else if ((rc = fd_write_all(fd, text, len)) == 0)
		rc = fd_write_all(fd, "\n", 1);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		unlink(tmp);
		goto put_obj;
	}
	if (rename(tmp, path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		unlink(tmp);
		goto put_obj;
	}
	json_object_put(obj);
	return 0;

put_obj:
	json_object_put(obj);
	if (rc != -ENOMEM)
		return rc;
nomem:
	snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

/* A member of obj that is an integer in [0, max], or -1. */
static int64_t
wrec_int(struct json_object *obj, const char *key, int64_t max)
{
	struct json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return -1;
	n = json_object_get_int64(v);
	return n >= 0 && n <= max ? n : -1;
}

int
wrec_read(const char *dir, const char *name, struct wrec *rec, char *err,
    size_t errlen)
{
	struct json_object *obj, *v;
	char path[PATH_MAX], *buf, desc[256];
	struct stat st;
	int64_t pid, uid, cid;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	memset(rec, 0, sizeof(*rec));
	if (wrec_path(dir, name, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "%s: path too long", dir);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
	    O_NOFOLLOW);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	/* Ours alone: what anyone else could have written counts for
	 * nothing (the directory is checked at start-up too). */
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_nlink != 1) {
		rc = -EPERM;
		snprintf(err, errlen, "%s: not a record of ours (uid %ld, "
		    "mode %04o)", path, (long)st.st_uid,
		    (unsigned int)(st.st_mode & 07777));
		goto close_fd;
	}
	if (st.st_size > WREC_MAX) {
		rc = -EFBIG;
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    WREC_MAX);
		goto close_fd;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto close_fd;
	}
	while (len < (size_t)st.st_size) {
		n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	rc = proto_parse_object(buf, len, &obj, desc, sizeof(desc));
	free(buf);
	if (rc != 0) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: %s", path, desc);
		goto close_fd;
	}
	pid = wrec_int(obj, "pid", INT32_MAX);
	uid = wrec_int(obj, "uid", UINT32_MAX - 1);
	cid = wrec_int(obj, "vsock_cid", UINT32_MAX - 1);
	if (wrec_int(obj, "version", INT32_MAX) != WREC_VERSION ||
	    !json_object_object_get_ex(obj, "name", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), name) != 0 ||
	    pid <= 1 || uid < 0 || cid < 0 ||
	    !json_object_object_get_ex(obj, "definition", &v) ||
	    !json_object_is_type(v, json_type_object)) {
		rc = -EINVAL;
		snprintf(err, errlen, "%s: not a record of worker '%s'", path,
		    name);
		json_object_put(obj);
		goto close_fd;
	}
	rec->pid = (pid_t)pid;
	rec->uid = (uid_t)uid;
	rec->vsock_cid = (uint32_t)cid;
	rec->definition = json_object_get(v);
	json_object_put(obj);
	rc = 0;

close_fd:
	close(fd);
	return rc;
}

void
wrec_remove(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (wrec_path(dir, name, path, sizeof(path)) == 0 &&
	    unlink(path) < 0 && errno != ENOENT)
		log_warn("%s: %s", path, strerror(errno));
}
