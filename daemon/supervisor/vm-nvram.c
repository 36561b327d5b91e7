/* See vm-nvram.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vm-nvram.h"
#include "vmconfig-store.h"

/* EFI_FIRMWARE_VOLUME_HEADER (PI spec, vol. 3, 3.2.1): its Signature. */
#define VM_NVRAM_FVH_OFFSET	40
#define VM_NVRAM_FVH		"_FVH"
#define VM_NVRAM_HEAD		64

int
vm_nvram_path(const char *dir, const char *name, char *buf, size_t len)
{
	int r;

	if (dir == NULL)
		return -ENOENT;
	r = snprintf(buf, len, "%s/%s.fd", dir, name);
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

static int
vm_nvram_tmp_path(const char *dir, const char *name, char *buf, size_t len)
{
	int r;

	if (dir == NULL)
		return -ENOENT;
	r = snprintf(buf, len, "%s/.%s.fd.tmp", dir, name);
	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

bool
vm_nvram_exists(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	return vm_nvram_path(dir, name, path, sizeof(path)) == 0 &&
	    lstat(path, &st) == 0;
}

bool
vm_nvram_is_volume(const uint8_t *head, size_t len)
{
	return len >= VM_NVRAM_FVH_OFFSET + 4 &&
	    memcmp(head + VM_NVRAM_FVH_OFFSET, VM_NVRAM_FVH, 4) == 0;
}

/* All of src, from its start, into dst. */
static int
vm_nvram_copy_fd(int src, int dst)
{
	char buf[65536];
	off_t off = 0;
	ssize_t r;

	for (;;) {
		r = pread(src, buf, sizeof(buf), off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		for (ssize_t done = 0, w; done < r; done += w) {
			w = pwrite(dst, buf + done, (size_t)(r - done),
			    off + done);
			if (w < 0 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w < 0)
				return -errno;
		}
		off += r;
	}
}

int
vm_nvram_create(const char *dir, const char *name, int template_fd,
    char *err, size_t errlen)
{
	char path[4096], tmp[4096];
	int fd, rc;

	if (vm_nvram_path(dir, name, path, sizeof(path)) < 0 ||
	    vm_nvram_tmp_path(dir, name, tmp, sizeof(tmp)) < 0) {
		snprintf(err, errlen, "UEFI variables: no path for them");
		return -ENAMETOOLONG;
	}
	if (vm_nvram_exists(dir, name)) {
		snprintf(err, errlen, "%s holds the UEFI variables of an "
		    "earlier VM '%s', kept when it was deleted: use another "
		    "name, or remove that VM's data with vm.delete "
		    "{\"name\": \"%s\", \"remove_data\": true}", path, name,
		    name);
		return -EEXIST;
	}
	if (unlink(tmp) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		return rc;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", tmp, strerror(-rc));
		return rc;
	}
	if ((rc = vm_nvram_copy_fd(template_fd, fd)) == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	/* Never over one that appeared meanwhile. */
	if (rc == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
	    RENAME_NOREPLACE) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(err, errlen, "UEFI variables: making %s: %s", path,
		    strerror(-rc));
		unlink(tmp);
		return rc;
	}
	if ((rc = config_sync_dir(dir)) < 0)
		snprintf(err, errlen, "UEFI variables: %s: %s", dir,
		    strerror(-rc));
	return rc;
}

int
vm_nvram_copy(const char *dir, const char *from, const char *to,
    char *err, size_t errlen)
{
	char src[4096];
	int sfd, rc;

	if (vm_nvram_path(dir, from, src, sizeof(src)) < 0) {
		snprintf(err, errlen, "UEFI variables: no path for them");
		return -ENAMETOOLONG;
	}
	sfd = open(src, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (sfd < 0) {
		rc = -errno;
		snprintf(err, errlen, "UEFI variables of VM '%s': %s: %s",
		    from, src, strerror(-rc));
		return rc;
	}
	rc = vm_nvram_create(dir, to, sfd, err, errlen);
	close(sfd);
	return rc;
}

int
vm_nvram_rename(const char *dir, const char *from, const char *to,
    char *err, size_t errlen)
{
	char src[4096], path[4096];
	int rc;

	if (vm_nvram_path(dir, from, src, sizeof(src)) < 0 ||
	    vm_nvram_path(dir, to, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "UEFI variables: no path for them");
		return -ENAMETOOLONG;
	}
	/* RENAME_NOREPLACE: never over a kept file of another VM. */
	if (renameat2(AT_FDCWD, src, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		rc = -errno;
		if (rc == -ENOENT)
			return 0;
		snprintf(err, errlen, "UEFI variables: renaming %s to %s: %s",
		    src, path, strerror(-rc));
		return rc;
	}
	if ((rc = config_sync_dir(dir)) < 0)
		snprintf(err, errlen, "UEFI variables: %s: %s", dir,
		    strerror(-rc));
	return rc;
}

int
vm_nvram_open(const char *dir, const char *name, uint64_t size, int *fd,
    char *err, size_t errlen)
{
	uint8_t head[VM_NVRAM_HEAD];
	char path[4096];
	struct stat st;
	ssize_t n;
	int rc;

	*fd = -1;
	if (vm_nvram_path(dir, name, path, sizeof(path)) < 0) {
		snprintf(err, errlen, "UEFI variables: no path for them");
		return -ENAMETOOLONG;
	}
	*fd = open(path, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (*fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "VM '%s': its UEFI variables %s: %s%s",
		    name, path, strerror(-rc), rc == -ENOENT ? " (recreate "
		    "the VM, or copy OVMF's VARS template there)" : "");
		return rc;
	}
	if (fstat(*fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "VM '%s': %s: %s", name, path,
		    strerror(-rc));
		goto fail;
	}
	rc = -EINVAL;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
		snprintf(err, errlen, "VM '%s': its UEFI variables %s are "
		    "%lld bytes, not the %llu of vmmd.conf's ovmf_vars: "
		    "copy that template there to start again with none",
		    name, path, (long long)st.st_size,
		    (unsigned long long)size);
		goto fail;
	}
	n = pread(*fd, head, sizeof(head), 0);
	if (n < 0 || !vm_nvram_is_volume(head, (size_t)n)) {
		snprintf(err, errlen, "VM '%s': its UEFI variables %s are "
		    "corrupt (no firmware volume header): copy vmmd.conf's "
		    "ovmf_vars there to start again with none", name, path);
		goto fail;
	}
	return 0;
fail:
	close(*fd);
	*fd = -1;
	return rc;
}
