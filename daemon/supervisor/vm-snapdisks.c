/*
 * A snapshot's disks (vm-snapdisks.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "access.h"
#include "disk-overlay.h"
#include "qcow2-create.h"
#include "qcow2-header.h"
#include "vm-files.h"
#include "vm-snapdisks.h"
#include "vmconfig-store.h"

/* The fresh overlay's name until commit: disk-overlay.h's, its own. */
static int
vm_snapdisks_tmp(const char *disksdir, const char *vm, unsigned int n,
    char *buf, size_t len)
{
	return disk_overlay_tmp_path(disksdir, vm, n, "snap", buf, len);
}

static bool
vm_snapdisks_is_frozen(const struct vm_disk *d)
{
	return d->overlay && !d->readonly;
}

/*
 * Disk i of def alone, opened with cred's rights as a start opens it
 * (an overlay disk's base, not its overlay): its chain's depth and
 * the virtual size it has.
 */
static int
vm_snapdisks_probe(const struct vm_def *def, unsigned int i,
    const struct access_cred *cred, uint32_t *depth, uint64_t *size,
    bool *qcow2, enum proto_error *cls, char *err, size_t errlen)
{
	char reason[QCOW2_REASON_MAX];
	struct vm_files files;
	struct vm_def one;
	int rc;

	memset(&one, 0, sizeof(one));
	one.name = def->name;
	one.owner = def->owner;
	one.ndisks = 1;
	one.disks[0] = def->disks[i];
	if ((rc = vm_files_open(&one, NULL, NULL, false, cred, &files, cls,
	    err, errlen)) < 0)
		return rc;
	*depth = files.nbacking[0];
	*qcow2 = files.disk_format[0] == VM_FILES_QCOW2;
	rc = qcow2_create_backing_size(files.disk_fd[0], *qcow2, size, reason,
	    sizeof(reason));
	if (rc < 0) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "disk %u: %s: %s", i,
		    def->disks[i].path, reason);
	}
	vm_files_close(&files);
	return rc;
}

/* Disk i's fresh overlay, over dir/disk-i.qcow2, at its temporary name. */
static int
vm_snapdisks_make_next(struct vm_snapdisks *sd, unsigned int i,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct flock lk = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char tmp[4096], base[4096];
	int fd, rc;

	*cls = PROTO_ERR_INTERNAL;
	if (vm_snapdisks_tmp(sd->disksdir, sd->vm, i, tmp, sizeof(tmp)) < 0 ||
	    snprintf(base, sizeof(base), "%s/%s", sd->dir, sd->rec[i].path) >=
	    (int)sizeof(base)) {
		snprintf(err, errlen, "disk %u: path too long", i);
		return -ENAMETOOLONG;
	}
	if ((rc = disk_overlay_create(tmp, i, sd->rec[i].size, base, true,
	    &fd, cls, err, errlen)) < 0)
		return rc;
	/*
	 * The guest's alone, as vm_files_lock_disks() locks a disk written
	 * to at start: the lock goes with the descriptor the worker gets.
	 * (The old overlay's exclusive lock becomes shared once the worker
	 * moved off it, through vmmd's handle on it: vm-disklock.h.)
	 */
	if (fcntl(fd, F_OFD_SETLK, &lk) < 0) {
		rc = -errno;
		snprintf(err, errlen, "overlay %s: cannot lock it: %s", tmp,
		    strerror(-rc));
		close(fd);
		unlink(tmp);
		return rc;
	}
	sd->new_fd[i] = fd;
	return 0;
}

int
vm_snapdisks_prepare(struct vm_snapdisks *sd, const struct vm_def *def,
    const char *disksdir, const char *dir, int dirfd,
    const struct access_cred *cred, uid_t uid, gid_t gid,
    enum proto_error *cls, char *err, size_t errlen)
{
	char reason[QCOW2_REASON_MAX], path[4096];
	unsigned int i;
	uint64_t size;
	bool qcow2;
	int rc = 0;

	memset(sd, 0, sizeof(*sd));
	for (i = 0; i < CONFIG_DISKS_MAX; i++)
		sd->old_fd[i] = sd->new_fd[i] = -1;
	sd->dirfd = dirfd;
	sd->disksdir = (char *)disksdir;
	sd->vm = def->name;
	sd->uid = uid;
	sd->gid = gid;
	if ((sd->dir = strdup(dir)) == NULL) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < def->ndisks; i++) {
		const struct vm_disk *d = &def->disks[i];
		struct snap_mdisk *r = &sd->rec[i];

		sd->ndisks = i + 1;
		r->index = i;
		r->sata = d->sata;
		if (d->nbd || d->rbd) {
			/* Its server would have to freeze it with us. */
			*cls = PROTO_ERR_INVALID_ARGUMENT;
			snprintf(err, errlen, "disk %u: %s: an %s disk cannot "
			    "be part of a snapshot (yet)", i, d->path,
			    d->nbd ? "NBD" : "RBD");
			rc = -ENOTSUP;
			goto fail;
		}
		if ((rc = vm_snapdisks_probe(def, i, cred, &r->backing_depth,
		    &r->size, &qcow2, cls, err, errlen)) < 0)
			goto fail;
		if (!vm_snapdisks_is_frozen(d)) {
			r->qcow2 = qcow2;
			if ((sd->shared[i] = strdup(d->path)) == NULL) {
				rc = -ENOMEM;
				*cls = PROTO_ERR_INTERNAL;
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			r->path = sd->shared[i];
			continue;
		}
		/* The overlay over the base the probe opened: one deeper. */
		r->qcow2 = true;
		r->frozen = true;
		r->backing_depth++;
		snap_disk_frozen_name(i, sd->path[i], sizeof(sd->path[i]));
		r->path = sd->path[i];
		if ((rc = disk_overlay_path(disksdir, def->name, i, path,
		    sizeof(path))) < 0 ||
		    (rc = disk_overlay_open(path, def->name, i, &sd->old_fd[i],
		    cls, err, errlen)) < 0)
			goto fail;
		/* Its virtual size is its own header's (its base's size). */
		if ((rc = qcow2_create_backing_size(sd->old_fd[i], true, &size,
		    reason, sizeof(reason))) < 0) {
			*cls = PROTO_ERR_INTERNAL;
			snprintf(err, errlen, "disk %u: overlay %s: %s", i, path,
			    reason);
			goto fail;
		}
		r->size = size;
		if ((rc = vm_snapdisks_make_next(sd, i, cls, err, errlen)) < 0)
			goto fail;
	}
	return 0;
fail:
	vm_snapdisks_abort(sd);
	return rc;
}

unsigned int
vm_snapdisks_frozen(const struct vm_snapdisks *sd)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < sd->ndisks; i++)
		n += sd->rec[i].frozen;
	return n;
}

/*
 * Disk i's overlay is the guest's again (no push): a link in dir goes,
 * and the inode is the daemon's again, as disk_overlay_open() wants it.
 */
static void
vm_snapdisks_unfreeze(struct vm_snapdisks *sd, unsigned int i)
{
	if (!sd->made[i])
		return;
	unlinkat(sd->dirfd, sd->rec[i].path, 0);
	if (sd->old_fd[i] >= 0) {
		(void)fchown(sd->old_fd[i], geteuid(), getegid());
		(void)fchmod(sd->old_fd[i], 0600);
	}
	sd->made[i] = false;
}

/* Disk i's overlay as dir/disk-i.qcow2: linked, else copied. */
static int
vm_snapdisks_freeze_one(struct vm_snapdisks *sd, unsigned int i,
    char *err, size_t errlen)
{
	const char *name = sd->rec[i].path;
	char path[4096];
	struct stat st;
	int fd = -1, rc;

	/* What an earlier attempt left goes; a snapshot is never here. */
	if (unlinkat(sd->dirfd, name, 0) < 0 && errno != ENOENT) {
		rc = -errno;
		goto fail;
	}
	disk_overlay_path(sd->disksdir, sd->vm, i, path, sizeof(path));
	if (linkat(AT_FDCWD, path, sd->dirfd, name, 0) == 0) {
		sd->made[i] = true;
		fd = openat(sd->dirfd, name, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
		rc = fd < 0 ? -errno : 0;
	} else if (errno == EXDEV) {
		fd = openat(sd->dirfd, name, O_RDWR | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			rc = -errno;
			goto fail;
		}
		sd->made[i] = true;
		rc = disk_overlay_copy_fd(sd->old_fd[i], fd);
	} else {
		rc = -errno;
	}
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (rc == 0 && sd->uid != (uid_t)-1 && fchown(fd, sd->uid,
	    sd->gid) < 0)
		rc = -errno;
	if (rc == 0 && fchmod(fd, 0400) < 0)
		rc = -errno;
	if (rc == 0 && fstat(fd, &st) < 0)
		rc = -errno;
	if (rc == 0)
		sd->rec[i].file_size = (uint64_t)st.st_size;
	if (fd >= 0)
		close(fd);
	if (rc == 0)
		return 0;
fail:
	snprintf(err, errlen, "disk %u: freezing its overlay into %s/%s: %s",
	    i, sd->dir, name, strerror(-rc));
	return rc;
}

int
vm_snapdisks_freeze(struct vm_snapdisks *sd, enum proto_error *cls,
    char *err, size_t errlen)
{
	int rc;

	*cls = PROTO_ERR_INTERNAL;
	for (unsigned int i = 0; i < sd->ndisks; i++)
		if (sd->rec[i].frozen &&
		    (rc = vm_snapdisks_freeze_one(sd, i, err, errlen)) < 0)
			return rc;
	if (vm_snapdisks_frozen(sd) > 0 && fsync(sd->dirfd) < 0) {
		rc = -errno;
		snprintf(err, errlen, "fsync %s: %s", sd->dir, strerror(-rc));
		return rc;
	}
	return 0;
}

int
vm_snapdisks_commit(struct vm_snapdisks *sd, struct vm_def *def,
    enum proto_error *cls, char *err, size_t errlen)
{
	char tmp[4096], path[4096], base[4096], *p;
	int rc = 0;

	*cls = PROTO_ERR_INTERNAL;
	for (unsigned int i = 0; i < sd->ndisks; i++) {
		if (!sd->rec[i].frozen)
			continue;
		if (!sd->pushed[i]) {
			/* Its overlay stays the guest's: no frozen copy. */
			vm_snapdisks_unfreeze(sd, i);
			continue;
		}
		vm_snapdisks_tmp(sd->disksdir, sd->vm, i, tmp, sizeof(tmp));
		disk_overlay_path(sd->disksdir, sd->vm, i, path, sizeof(path));
		snprintf(base, sizeof(base), "%s/%s", sd->dir,
		    sd->rec[i].path);
		if (rename(tmp, path) < 0 && rc == 0) {
			rc = -errno;
			snprintf(err, errlen, "overlay %s: %s", path,
			    strerror(-rc));
			continue;
		}
		if ((p = strdup(base)) == NULL) {
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			continue;
		}
		free(def->disks[i].path);
		def->disks[i].path = p;
		def->disks[i].format = VM_DISK_FORMAT_QCOW2;
		/* The frozen image is the client's file now: never removed
		 * by an abort, which would take the guest's base. */
		sd->made[i] = false;
	}
	if (config_sync_dir(sd->disksdir) < 0 && rc == 0) {
		rc = -EIO;
		snprintf(err, errlen, "%s: sync failed", sd->disksdir);
	}
	return rc;
}

void
vm_snapdisks_abort(struct vm_snapdisks *sd)
{
	char tmp[4096];

	for (unsigned int i = 0; i < sd->ndisks; i++) {
		if (!sd->pushed[i])
			vm_snapdisks_unfreeze(sd, i);
		if (sd->new_fd[i] >= 0 && !sd->pushed[i] &&
		    vm_snapdisks_tmp(sd->disksdir, sd->vm, i, tmp,
		    sizeof(tmp)) == 0)
			unlink(tmp);
	}
	vm_snapdisks_free(sd);
}

void
vm_snapdisks_free(struct vm_snapdisks *sd)
{
	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		if (sd->old_fd[i] >= 0)
			close(sd->old_fd[i]);
		if (sd->new_fd[i] >= 0)
			close(sd->new_fd[i]);
		sd->old_fd[i] = sd->new_fd[i] = -1;
		free(sd->shared[i]);
		sd->shared[i] = NULL;
	}
	free(sd->dir);
	sd->dir = NULL;
	sd->ndisks = 0;
}

struct json_object *
vm_snapdisks_json(const struct vm_snapdisks *sd)
{
	struct json_object *arr = json_object_new_array();
	char line[4200];

	for (unsigned int i = 0; arr != NULL && i < sd->ndisks; i++) {
		const struct snap_mdisk *r = &sd->rec[i];

		if (r->frozen)
			snprintf(line, sizeof(line), "disk %u (%s): frozen "
			    "into %s/%s", i, r->sata ? "sata" : "virtio",
			    sd->dir, r->path);
		else
			snprintf(line, sizeof(line), "disk %u (%s): shared, "
			    "not frozen: %s (%s)", i, r->sata ? "sata" :
			    "virtio", r->path, r->qcow2 ? "qcow2" : "raw");
		json_object_array_add(arr, json_object_new_string(line));
	}
	return arr;
}

/* restore ------------------------------------------------------------- */

/*
 * What is checked of a frozen image, without reading its data (a disk
 * of gigabytes is not read whole on every restore): a regular file of
 * exactly the length the manifest recorded (a truncated or grown copy
 * is refused), whose qcow2 header the reader accepts
 * (qcow2_header_read: magic, version, features, field consistency),
 * whose L1 and refcount tables lie inside the file, whose virtual size
 * is the recorded one, and which names a backing file exactly when the
 * recorded chain has one.  The chain below it is opened, and checked
 * as at every start, when the VM starts.
 */
static int
vm_snapdisks_check_image(int fd, const struct snap_mdisk *r,
    const char *path, char *err, size_t errlen)
{
	struct qcow2_header *h = calloc(1, sizeof(*h));
	struct stat st;
	uint64_t l1_end, rt_end;
	int rc = -EINVAL;

	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		snprintf(err, errlen, "%s: not a regular file", path);
	else if ((uint64_t)st.st_size != r->file_size)
		snprintf(err, errlen, "%s: %lld bytes, the manifest says %"
		    PRIu64 " (a truncated or altered copy)", path,
		    (long long)st.st_size, r->file_size);
	else if ((rc = qcow2_header_read(fd, h)) < 0)
		snprintf(err, errlen, "%s: not the qcow2 image the manifest "
		    "names: %s", path, rc == -EINVAL ? h->reason :
		    strerror(-rc));
	else {
		rc = -EINVAL;
		l1_end = h->l1_offset + (uint64_t)h->l1_size * 8;
		rt_end = h->refcount_table_offset +
		    (uint64_t)h->refcount_table_clusters *
		    qcow2_cluster_size(h);
		if (l1_end > r->file_size || rt_end > r->file_size)
			snprintf(err, errlen, "%s: its tables lie beyond its "
			    "end (a truncated image)", path);
		else if (h->size != r->size)
			snprintf(err, errlen, "%s: a disk of %" PRIu64 " bytes, "
			    "the manifest says %" PRIu64, path, h->size,
			    r->size);
		else if (h->has_backing != (r->backing_depth > 0))
			snprintf(err, errlen, "%s: %s a backing file, the "
			    "manifest says otherwise", path, h->has_backing ?
			    "names" : "names no");
		else
			rc = 0;
	}
	free(h);
	return rc;
}

/* dir/name for cred to read: its fd, or -errno. */
static int
vm_snapdisks_open(int dirfd, const char *name, const struct access_cred *cred)
{
	struct stat st;
	int fd, rc;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else
		rc = cred != NULL ? access_fd_allows(fd, &st, cred,
		    ACCESS_READ) : 0;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int
vm_snapdisks_restore(const char *name, struct vm_def *def,
    const struct snap_manifest *m, const char *disksdir, const char *dir,
    int dirfd, const struct access_cred *cred, enum proto_error *cls,
    char *err, size_t errlen)
{
	int fds[CONFIG_DISKS_MAX];
	char path[CONFIG_DISKS_MAX][4096];
	size_t i;
	int rc = 0;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	for (i = 0; i < CONFIG_DISKS_MAX; i++)
		fds[i] = -1;
	if (m->ndisks != def->ndisks) {
		snprintf(err, errlen, "the snapshot has %zu disks, VM '%s' "
		    "%u", m->ndisks, name, def->ndisks);
		return -EINVAL;
	}
	for (i = 0; i < m->ndisks; i++) {
		const struct snap_mdisk *r = &m->disks[i];
		const struct vm_disk *d = &def->disks[i];

		if (r->index != i || r->sata != d->sata) {
			snprintf(err, errlen, "disk %zu: %s in the snapshot, "
			    "%s here", i, r->sata ? "sata" : "virtio",
			    d->sata ? "sata" : "virtio");
			rc = -EINVAL;
			goto out;
		}
		if (!r->frozen) {
			if (strcmp(r->path, d->path) != 0) {
				snprintf(err, errlen, "disk %zu: the snapshot "
				    "shares %.1024s, VM '%s' has %.1024s", i,
				    r->path, name, d->path);
				rc = -EINVAL;
				goto out;
			}
			continue;
		}
		if (snprintf(path[i], sizeof(path[i]), "%s/%s", dir,
		    r->path) >= (int)sizeof(path[i])) {
			snprintf(err, errlen, "%s: path too long", dir);
			rc = -ENAMETOOLONG;
			goto out;
		}
		if ((fds[i] = vm_snapdisks_open(dirfd, r->path, cred)) < 0) {
			rc = fds[i];
			if (rc == -EACCES)
				*cls = PROTO_ERR_PERMISSION;
			if (rc == -ENOENT)
				snprintf(err, errlen, "%s: missing: the frozen "
				    "image of disk %zu", path[i], i);
			else
				snprintf(err, errlen, "%s: %s", path[i],
				    strerror(-rc));
			goto out;
		}
		if ((rc = vm_snapdisks_check_image(fds[i], r, path[i], err,
		    errlen)) < 0)
			goto out;
	}
	/* Every image checked: only now is anything made. */
	for (i = 0; i < m->ndisks; i++) {
		char *p;

		if (!m->disks[i].frozen)
			continue;
		if ((rc = disk_overlay_make(disksdir, name, (unsigned int)i,
		    fds[i], true, path[i], cls, err, errlen)) < 0)
			goto out;
		if ((p = strdup(path[i])) == NULL) {
			*cls = PROTO_ERR_INTERNAL;
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
			goto out;
		}
		free(def->disks[i].path);
		def->disks[i].path = p;
		def->disks[i].format = VM_DISK_FORMAT_QCOW2;
		def->disks[i].overlay = true;
		def->disks[i].readonly = false;
	}
out:
	for (i = 0; i < CONFIG_DISKS_MAX; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}
