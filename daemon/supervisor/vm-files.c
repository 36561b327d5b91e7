/*
 * Opening a VM's files (see vm-files.h): as the client who asked, so
 * that nobody starts a guest from a file they could not read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include <net/if.h>

#include "access.h"
#include "boot.h"
#include "daemon-conf.h"
#include "disk-format.h"
#include "vm-files.h"

/*
 * Open one file for cred (NULL: as the daemon), as "what: path: why"
 * errors; a kernel must also be one the loaders accept.
 */
static int
vm_files_open_one(const char *what, const char *path, bool kernel,
    bool write, const struct access_cred *cred, int *fdp,
    enum proto_error *cls, char *err, size_t errlen)
{
	char reason[256], self[64];
	struct stat st;
	int fd, rc;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (path[0] != '/') {
		snprintf(err, errlen, "%s: '%s' is not an absolute path", what,
		    path);
		return -EINVAL;
	}
	fd = write ? access_open_file_rw(path, cred) :
	    access_open_file(path, cred);
	if (fd < 0) {
		switch (fd) {
		case -EACCES:
			if (cred == NULL)
				break;
			/* Which directory or bit refused stays unsaid. */
			*cls = PROTO_ERR_PERMISSION;
			snprintf(err, errlen, "%s: %s: not %s by uid %lu",
			    what, path, write ? "readable and writable" :
			    "readable", (unsigned long)cred->uid);
			return fd;
		case -EINVAL:
			snprintf(err, errlen, "%s: %s: not a regular file",
			    what, path);
			return fd;
		case -ESTALE:
			snprintf(err, errlen, "%s: %s: changed while it was "
			    "being opened; try again", what, path);
			return fd;
		case -EROFS:
			snprintf(err, errlen, "%s: %s: read-only file system "
			    "(under systemd the unit's ProtectSystem=strict "
			    "leaves only /var/lib/vmmd writable: give the "
			    "directory in a drop-in's ReadWritePaths=, see "
			    "vmmd(8))", what, path);
			return fd;
		}
		snprintf(err, errlen, "%s: %s: %s", what, path, strerror(-fd));
		return fd;
	}
	if (cred != NULL && cred->root_files_only &&
	    (fstat(fd, &st) < 0 || st.st_uid != 0)) {
		close(fd);
		*cls = PROTO_ERR_PERMISSION;
		snprintf(err, errlen, "%s: %s: not owned by root, and the VM's "
		    "definition names no owner whose rights could open it "
		    "(start it once as a client)", what, path);
		return -EACCES;
	}
	if (kernel) {
		/* The very file opened, not whatever path names now. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		reason[0] = '\0';
		rc = boot_probe(self, reason, sizeof(reason));
		if (rc < 0) {
			close(fd);
			snprintf(err, errlen, "%s: %s: %s", what, path,
			    reason[0] != '\0' ? reason : strerror(-rc));
			return rc;
		}
	}
	*fdp = fd;
	return 0;
}

/*
 * A disk taken as raw must not be an image in another format, unless
 * the definition says it is raw: the guest would read its metadata as
 * data and, writing, destroy it.  Read through fd, the descriptor opened
 * for the worker, so that what is checked is what the guest gets.
 */
static int
vm_files_check_format(const struct vm_disk *disk, int fd,
    enum proto_error *cls, char *err, size_t errlen)
{
	const char *format;
	int rc;

	if (disk->format == VM_DISK_FORMAT_RAW)
		return 0;
	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if ((rc = disk_format_probe(fd, &format)) < 0) {
		snprintf(err, errlen, "disk: %s: cannot read its header: %s",
		    disk->path, strerror(-rc));
		return rc;
	}
	if (format == NULL)
		return 0;
	snprintf(err, errlen, "disk: %s: a %s image, but disks are read as "
	    "raw: the guest would take its %s metadata for data%s; convert it "
	    "to raw (qemu-img convert -O raw), or, if it really is raw, give "
	    "the disk \"format\": \"raw\" (vmctl: --disk PATH,format=raw)",
	    disk->path, format, format, disk->readonly ? "" :
	    " and destroy it with its first writes");
	return -EMEDIUMTYPE;
}

/* Attach to (or create) the TAP called name: its descriptor or -errno. */
static int
vm_files_open_tap(const char *name, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct ifreq ifr;
	int fd, rc;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "net: /dev/net/tun: %s", strerror(-rc));
		return rc;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		rc = -errno;
		close(fd);
		*cls = rc == -EPERM ? PROTO_ERR_PERMISSION :
		    rc == -EBUSY || rc == -EINVAL ?
		    PROTO_ERR_INVALID_ARGUMENT : PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "net: tap %s: %s", name,
		    rc == -EPERM ? "vmmd may not create it or attach to it "
		    "(CAP_NET_ADMIN, or a persistent TAP it owns)" :
		    rc == -EBUSY ? "in use, or not a TAP with virtio headers" :
		    rc == -EINVAL ? "not a TAP device" : strerror(-rc));
		return rc;
	}
	return fd;
}

void
vm_files_close(struct vm_files *f)
{
	if (f->kvm_fd >= 0)
		close(f->kvm_fd);
	f->kvm_fd = -1;
	if (f->kernel_fd >= 0)
		close(f->kernel_fd);
	if (f->initrd_fd >= 0)
		close(f->initrd_fd);
	f->kernel_fd = f->initrd_fd = -1;
	while (f->ndisks > 0)
		close(f->disk_fd[--f->ndisks]);
	if (f->tap_fd >= 0)
		close(f->tap_fd);
	f->tap_fd = -1;
}

int
vm_files_open(const struct vm_def *def, const char *default_kernel,
    const struct access_cred *cred, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	char reason[512];
	int rc;

	f->kvm_fd = f->kernel_fd = f->initrd_fd = -1;
	f->ndisks = 0;
	f->tap_fd = -1;
	/* root may read anything anyway: no point in checking. */
	if (cred != NULL && cred->uid == 0)
		cred = NULL;

	if (def->kernel != NULL) {
		rc = vm_files_open_one("kernel", def->kernel, true, false, cred,
		    &f->kernel_fd, cls, err, errlen);
		if (rc < 0)
			return rc;
	} else if (default_kernel != NULL) {
		/* The daemon's own choice (-g): trusted, not the client's. */
		rc = vm_files_open_one("kernel", default_kernel, true, false,
		    NULL, &f->kernel_fd, cls, reason, sizeof(reason));
		if (rc < 0) {
			snprintf(err, errlen, "VM '%s' has no kernel and the "
			    "default guest is not usable (%s); create the VM "
			    "with a kernel, or start vmmd with -g FILE",
			    def->name, reason);
			return rc;
		}
	}
	if (def->initrd != NULL) {
		rc = vm_files_open_one("initrd", def->initrd, false, false,
		    cred, &f->initrd_fd, cls, err, errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
	}
	for (unsigned int i = 0; i < def->ndisks; i++) {
		rc = vm_files_open_one("disk", def->disks[i].path, false,
		    !def->disks[i].readonly, cred, &f->disk_fd[i], cls, err,
		    errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
		f->ndisks = i + 1;
		rc = vm_files_check_format(&def->disks[i], f->disk_fd[i], cls,
		    err, errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
	}
	return 0;
}

int
vm_files_open_kvm(struct vm_files *f, enum proto_error *cls, char *err,
    size_t errlen)
{
	int fd, rc;

	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "cannot open /dev/kvm: %s%s",
		    strerror(-rc), rc == -ENOENT ? " (no KVM on this host: "
		    "load kvm_intel or kvm_amd, or enable virtualization in "
		    "the firmware)" : "");
		return rc;
	}
	f->kvm_fd = fd;
	return 0;
}

int
vm_files_lock_disks(const struct vm_def *def, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct flock lk;
	int rc;

	for (unsigned int i = 0; i < f->ndisks; i++) {
		memset(&lk, 0, sizeof(lk));
		lk.l_type = def->disks[i].readonly ? F_RDLCK : F_WRLCK;
		lk.l_whence = SEEK_SET;	/* l_start = l_len = 0: all of it */
		if (fcntl(f->disk_fd[i], F_OFD_SETLK, &lk) == 0)
			continue;
		rc = -errno;
		if (rc == -EAGAIN || rc == -EACCES) {
			*cls = PROTO_ERR_BAD_STATE;
			snprintf(err, errlen, "disk: %s: in use by another "
			    "guest or program (it holds a lock on it%s; any "
			    "process that can read the file can lock it: "
			    "/proc/locks names the holder)",
			    def->disks[i].path, def->disks[i].readonly ? "" :
			    "; a disk written to is one guest's alone");
		} else {
			*cls = PROTO_ERR_INTERNAL;
			snprintf(err, errlen, "disk: %s: cannot lock it: %s",
			    def->disks[i].path, strerror(-rc));
		}
		return rc;
	}
	return 0;
}

static bool
vm_files_in_group(const struct access_cred *cred, gid_t gid)
{
	if (cred->gid == gid)
		return true;
	for (size_t i = 0; i < cred->ngroups; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

int
vm_files_check_tap(const struct vm_def *def,
    const struct dconf_tap_rule *rules, size_t nrules,
    const struct access_cred *cred, enum proto_error *cls, char *err,
    size_t errlen)
{
	char names[256];
	size_t len = 0, i;
	int n;

	if (def->net_tap[0] == '\0' || cred == NULL || cred->uid == 0)
		return 0;
	names[0] = '\0';
	for (i = 0; i < nrules; i++) {
		if (!vm_files_in_group(cred, rules[i].gid))
			continue;
		if (dconf_tap_matches(&rules[i], def->net_tap))
			return 0;
		/* What the client may use instead, to say so. */
		if (len < sizeof(names)) {
			n = snprintf(names + len, sizeof(names) - len, "%s%s",
			    len > 0 ? ", " : "", rules[i].text);
			len += n > 0 ? (size_t)n : 0;
		}
	}
	*cls = PROTO_ERR_PERMISSION;
	if (len == 0)
		snprintf(err, errlen, "net: tap %s: uid %lu may use no TAP "
		    "(no tap_allow rule in vmmd.conf names one of its groups)",
		    def->net_tap, (unsigned long)cred->uid);
	else
		snprintf(err, errlen, "net: tap %s: not allowed for uid %lu, "
		    "whose groups may use %s%s (tap_allow in vmmd.conf)",
		    def->net_tap, (unsigned long)cred->uid, names,
		    len >= sizeof(names) ? "..." : "");
	return -EACCES;
}

int
vm_files_open_net(const struct vm_def *def,
    const struct dconf_tap_rule *rules, size_t nrules,
    const struct access_cred *cred, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	int rc;

	if (def->net_tap[0] == '\0')
		return 0;
	if ((rc = vm_files_check_tap(def, rules, nrules, cred, cls, err,
	    errlen)) < 0 ||
	    (rc = vm_files_open_tap(def->net_tap, cls, err, errlen)) < 0)
		return rc;
	f->tap_fd = rc;
	return 0;
}

