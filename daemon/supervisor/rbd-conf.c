/* See rbd-conf.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "access.h"
#include "rbd-conf.h"
#include "rbd-spec.h"

/* fd's whole content appended to out (a memory file), bounded. */
static int
rbd_conf_copy(int fd, int out, size_t *total)
{
	char buf[8192];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((*total += (size_t)n) > RBD_CONF_MAX)
			return -EFBIG;
		if (write(out, buf, (size_t)n) != n)
			return -EIO;
	}
	/* Sections never run into each other. */
	return write(out, "\n", 1) == 1 ? 0 : -EIO;
}

static int
rbd_conf_file(const char *what, const char *path, unsigned int disk,
    const struct access_cred *cred, int out, size_t *total,
    enum proto_error *cls, char *err, size_t errlen)
{
	int fd = access_open_file(path, cred), rc;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (fd < 0) {
		if (fd == -EACCES && cred != NULL) {
			*cls = PROTO_ERR_PERMISSION;
			snprintf(err, errlen, "disk %u: %s %s: not readable "
			    "by uid %lu", disk, what, path,
			    (unsigned long)cred->uid);
		} else
			snprintf(err, errlen, "disk %u: %s %s: %s", disk,
			    what, path, fd == -EINVAL ? "not a regular file" :
			    strerror(-fd));
		return fd;
	}
	rc = out >= 0 ? rbd_conf_copy(fd, out, total) : 0;
	close(fd);
	if (rc < 0)
		snprintf(err, errlen, "disk %u: %s %s: %s", disk, what, path,
		    rc == -EFBIG ? "larger than 256 KiB together" :
		    strerror(-rc));
	return rc;
}

int
rbd_conf_open(const char *spec, unsigned int disk,
    const struct access_cred *cred, bool check_only, int *fdp,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct rbd_spec r;
	char why[256];
	size_t total = 0;
	int out = -1, rc;

	*fdp = -1;
	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (rbd_spec_parse(spec, &r, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "disk %u: %s", disk, why);
		return -EINVAL;
	}
	if (!check_only &&
	    (out = memfd_create("vmmd-rbd-conf", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) < 0) {
		rc = -errno;
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "disk %u: memfd_create: %s", disk,
		    strerror(-rc));
		return rc;
	}
	rc = rbd_conf_file("conf", r.conf[0] != '\0' ? r.conf :
	    RBD_SPEC_DEFAULT_CONF, disk, cred, out, &total, cls, err, errlen);
	if (rc == 0 && r.keyring[0] != '\0')
		rc = rbd_conf_file("keyring", r.keyring, disk, cred, out,
		    &total, cls, err, errlen);
	if (rc == 0 && out >= 0 && (lseek(out, 0, SEEK_SET) < 0 ||
	    fcntl(out, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW |
	    F_SEAL_SHRINK | F_SEAL_SEAL) < 0)) {
		rc = -errno;
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "disk %u: sealing the configuration: "
		    "%s", disk, strerror(-rc));
	}
	if (rc < 0) {
		if (out >= 0)
			close(out);
		return rc;
	}
	*fdp = out;
	return 0;
}
