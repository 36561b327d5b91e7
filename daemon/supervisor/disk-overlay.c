/*
 * A VM's overlays (see disk-overlay.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk-overlay.h"
#include "qcow2-create.h"
#include "qcow2-header.h"
#include "vmconfig.h"

int
disk_overlay_path(const char *dir, const char *name, unsigned int n,
    char *buf, size_t len)
{
	int r = snprintf(buf, len, "%s/%s.%u.qcow2", dir, name, n);

	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int
disk_overlay_tmp_path(const char *dir, const char *name, unsigned int n,
    const char *suffix, char *buf, size_t len)
{
	int r = snprintf(buf, len, "%s/.%s.%u.qcow2.%s", dir, name, n, suffix);

	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

/* The virtual size an overlay over base_fd has, or -errno. */
static int
disk_overlay_size(int base_fd, bool base_qcow2, const char *base_path,
    uint64_t *size, enum proto_error *cls, char *err, size_t errlen)
{
	char reason[QCOW2_REASON_MAX];
	int rc;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if ((rc = qcow2_create_backing_size(base_fd, base_qcow2, size, reason,
	    sizeof(reason))) < 0) {
		snprintf(err, errlen, "disk: %s: %s", base_path, reason);
		return rc;
	}
	if (*size == 0) {
		snprintf(err, errlen, "disk: %s: the base of an overlay must "
		    "hold at least one 512-byte sector", base_path);
		return -EINVAL;
	}
	return 0;
}

/* A new file at tmp, read-write, mode 0600, what a crash left there
 * removed first: its descriptor in *fdp, or -errno with err set. */
static int
disk_overlay_tmp_open(const char *tmp, int *fdp, char *err, size_t errlen)
{
	int rc;

	if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "overlay: %s: %s", tmp, strerror(-rc));
		return rc;
	}
	*fdp = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (*fdp < 0) {
		rc = -errno;
		snprintf(err, errlen, "overlay: %s: %s", tmp, strerror(-rc));
		return rc;
	}
	return 0;
}

int
disk_overlay_create(const char *tmp, unsigned int n, uint64_t size,
    const char *base_path, bool base_qcow2, int *fdp,
    enum proto_error *cls, char *err, size_t errlen)
{
	int fd, rc;

	*cls = PROTO_ERR_INTERNAL;
	if ((rc = disk_overlay_tmp_open(tmp, &fd, err, errlen)) < 0)
		return rc;
	rc = qcow2_create(fd, size, base_path, base_qcow2 ? "qcow2" : "raw");
	if (rc == -EINVAL) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, errlen, "disk %u: %s: no qcow2 overlay can have "
		    "it as its base (a name of at most %d bytes, a size of at "
		    "most %llu bytes)", n, base_path, QCOW2_MAX_BACKING_NAME,
		    (unsigned long long)QCOW2_MAX_SIZE);
	} else if (rc == 0 && fsync(fd) < 0) {
		rc = -errno;
	}
	if (rc < 0) {
		if (rc != -EINVAL)
			snprintf(err, errlen, "overlay: %s: %s", tmp,
			    strerror(-rc));
		close(fd);
		unlink(tmp);
		return rc;
	}
	*fdp = fd;
	return 0;
}

int
disk_overlay_make(const char *dir, const char *name, unsigned int n,
    int base_fd, bool base_qcow2, const char *base_path,
    enum proto_error *cls, char *err, size_t errlen)
{
	char path[4096], tmp[4096];
	uint64_t size = 0;
	int fd, rc;

	if ((rc = disk_overlay_size(base_fd, base_qcow2, base_path, &size,
	    cls, err, errlen)) < 0)
		return rc;
	*cls = PROTO_ERR_INTERNAL;
	if (disk_overlay_path(dir, name, n, path, sizeof(path)) < 0 ||
	    disk_overlay_tmp_path(dir, name, n, "new", tmp, sizeof(tmp)) < 0) {
		snprintf(err, errlen, "overlay of disk %u: path too long", n);
		return -ENAMETOOLONG;
	}
	if ((rc = disk_overlay_create(tmp, n, size, base_path, base_qcow2,
	    &fd, cls, err, errlen)) < 0)
		return rc;
	close(fd);
	if (rename(tmp, path) < 0) {
		rc = -errno;
		snprintf(err, errlen, "overlay: %s: %s", path, strerror(-rc));
		unlink(tmp);
		return rc;
	}
	if ((rc = config_sync_dir(dir)) < 0) {
		snprintf(err, errlen, "overlay: %s: %s", dir, strerror(-rc));
		return rc;
	}
	return 0;
}

int
disk_overlay_open(const char *path, const char *vm, unsigned int n,
    int *fdp, enum proto_error *cls, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	*cls = PROTO_ERR_INTERNAL;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			snprintf(err, errlen, "disk %u: its overlay %s is "
			    "gone; vmctl reset-disk %s %u makes a fresh one "
			    "(the guest's changes are lost)", n, path, vm, n);
		else
			snprintf(err, errlen, "disk %u: overlay %s: %s", n,
			    path, rc == -ELOOP ? "a symbolic link" :
			    strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		snprintf(err, errlen, "disk %u: overlay %s: %s", n, path,
		    strerror(-rc));
		return rc;
	}
	/* Made by disk_overlay_make(), or not taken: the daemon's alone. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		snprintf(err, errlen, "disk %u: overlay %s: not a regular file "
		    "owned by uid %lu, as vmmd makes them", n, path,
		    (unsigned long)geteuid());
		return -EPERM;
	}
	*fdp = fd;
	return 0;
}

int
disk_overlay_remove(const char *dir, const struct vm_def *def, char *err,
    size_t errlen)
{
	char path[4096];
	bool any = false;
	int rc = 0, r;

	for (unsigned int i = 0; i < def->ndisks; i++) {
		if (!def->disks[i].overlay)
			continue;
		any = true;
		if ((r = disk_overlay_path(dir, def->name, i, path,
		    sizeof(path))) == 0 && unlink(path) < 0 && errno != ENOENT)
			r = -errno;
		if (r < 0 && rc == 0) {
			rc = r;
			snprintf(err, errlen, "overlay %s: %s", path,
			    strerror(-r));
		}
	}
	if (any && (r = config_sync_dir(dir)) < 0 && rc == 0) {
		rc = r;
		snprintf(err, errlen, "%s: %s", dir, strerror(-r));
	}
	return rc;
}

bool
disk_overlay_exists(const char *dir, const char *name, unsigned int n)
{
	char path[4096];
	struct stat st;

	return disk_overlay_path(dir, name, n, path, sizeof(path)) == 0 &&
	    lstat(path, &st) == 0;
}

/*
 * [off, end) of src into dst at the same offsets: by the kernel where
 * it can, else read and written here (copy_file_range refuses most
 * pairs of different file systems: EXDEV, or EINVAL on older kernels).
 */
static int
disk_overlay_copy_range(int src, int dst, off_t off, off_t end)
{
	static char buf[65536];	/* the event loop thread's alone */
	bool by_hand = false;
	ssize_t r, w;

	for (; off < end; off += r) {
		size_t want = (size_t)(end - off);

		if (!by_hand) {
			loff_t in = off, out = off;

			r = copy_file_range(src, &in, dst, &out, want, 0);
			if (r < 0 && (errno == EXDEV || errno == EINVAL ||
			    errno == ENOSYS || errno == EOPNOTSUPP)) {
				by_hand = true;
				r = 0;
				continue;
			}
		} else {
			r = pread(src, buf, want < sizeof(buf) ? want :
			    sizeof(buf), off);
			for (w = 0; r > 0 && w < r;) {
				ssize_t n = pwrite(dst, buf + w, (size_t)(r - w),
				    off + w);

				if (n < 0 && errno != EINTR)
					return -errno;
				w += n > 0 ? n : 0;
			}
		}
		if (r < 0 && errno == EINTR) {
			r = 0;
			continue;
		}
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;	/* it shrank under us */
	}
	return 0;
}

int
disk_overlay_copy_fd(int src, int dst)
{
	struct stat st;
	off_t data, hole, off = 0;
	int rc;

	if (ioctl(dst, FICLONE, src) == 0)
		return 0;
	if (fstat(src, &st) < 0)
		return -errno;
	while (off < st.st_size) {
		if ((data = lseek(src, off, SEEK_DATA)) < 0) {
			if (errno == ENXIO)
				break;		/* a hole to the end */
			return -errno;
		}
		if ((hole = lseek(src, data, SEEK_HOLE)) < 0)
			return -errno;
		if ((rc = disk_overlay_copy_range(src, dst, data, hole)) < 0)
			return rc;
		off = hole;
	}
	/* A hole at the end still counts in the length. */
	if (ftruncate(dst, st.st_size) < 0)
		return -errno;
	return 0;
}

int
disk_overlay_copy(const char *dir, const char *from, const char *to,
    unsigned int n, enum proto_error *cls, char *err, size_t errlen)
{
	char src[4096], path[4096], tmp[4096];
	int sfd = -1, fd = -1, rc;

	*cls = PROTO_ERR_INTERNAL;
	if (disk_overlay_path(dir, from, n, src, sizeof(src)) < 0 ||
	    disk_overlay_path(dir, to, n, path, sizeof(path)) < 0 ||
	    disk_overlay_tmp_path(dir, to, n, "new", tmp, sizeof(tmp)) < 0) {
		snprintf(err, errlen, "overlay of disk %u: path too long", n);
		return -ENAMETOOLONG;
	}
	if (disk_overlay_exists(dir, to, n)) {
		*cls = PROTO_ERR_EXISTS;
		snprintf(err, errlen, "disk %u: %s is there already", n, path);
		return -EEXIST;
	}
	sfd = open(src, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (sfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "disk %u: overlay %s: %s", n, src,
		    strerror(-rc));
		return rc;
	}
	if ((rc = disk_overlay_tmp_open(tmp, &fd, err, errlen)) < 0) {
		fd = -1;
		goto out;
	}
	if ((rc = disk_overlay_copy_fd(sfd, fd)) == 0 && fsync(fd) < 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "overlay: copying %s to %s: %s", src,
		    path, strerror(-rc));
		unlink(tmp);
		goto out;
	}
	if ((rc = config_sync_dir(dir)) < 0)
		snprintf(err, errlen, "overlay: %s: %s", dir, strerror(-rc));
out:
	if (fd >= 0)
		close(fd);
	close(sfd);
	return rc;
}

int
disk_overlay_rename(const char *dir, const char *from, const char *to,
    unsigned int n, enum proto_error *cls, char *err, size_t errlen)
{
	char src[4096], path[4096];
	int rc;

	*cls = PROTO_ERR_INTERNAL;
	if (disk_overlay_path(dir, from, n, src, sizeof(src)) < 0 ||
	    disk_overlay_path(dir, to, n, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "overlay of disk %u: path too long", n);
		return -ENAMETOOLONG;
	}
	/* RENAME_NOREPLACE: never over a kept overlay of another VM. */
	if (renameat2(AT_FDCWD, src, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			return 0;
		if (rc == -EEXIST)
			*cls = PROTO_ERR_EXISTS;
		snprintf(err, errlen, "overlay: renaming %s to %s: %s", src,
		    path, strerror(-rc));
		return rc;
	}
	if ((rc = config_sync_dir(dir)) < 0)
		snprintf(err, errlen, "overlay: %s: %s", dir, strerror(-rc));
	return rc;
}
