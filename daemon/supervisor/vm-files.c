/*
 * Opening a VM's files (see vm-files.h): as the client who asked, so
 * that nobody starts a guest from a file they could not read.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <limits.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <net/if.h>

#include "access.h"
#include "boot.h"
#include "boot-firmware.h"
#include "daemon-conf.h"
#include "disk-format.h"
#include "disk-overlay.h"
#include "nbd-connect.h"
#include "rbd-conf.h"
#include "qcow2-header.h"
#include "vm-files.h"
#include "vm-nvram.h"

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
 * Which format the image open as fd is in, for a disk that says
 * format (PROBED: whatever the header shows).  what and path name it in
 * err.  Raw and qcow2 are taken; another format's header is refused
 * unless the disk says raw: the guest would read its metadata as data
 * and, writing, destroy it.  Read through fd, the descriptor opened
 * for the worker, so that what is checked is what the guest gets.
 */
static int
vm_files_format(const char *what, const char *path, int fd,
    enum vm_disk_format format, bool readonly, enum vm_files_format *out,
    enum proto_error *cls, char *err, size_t errlen)
{
	const char *found;
	int rc;

	*out = VM_FILES_RAW;
	if (format == VM_DISK_FORMAT_RAW)
		return 0;
	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if ((rc = disk_format_probe(fd, &found)) < 0) {
		snprintf(err, errlen, "%s: %s: cannot read its header: %s",
		    what, path, strerror(-rc));
		return rc;
	}
	if (found != NULL && strcmp(found, "qcow2") == 0) {
		*out = VM_FILES_QCOW2;
		return 0;
	}
	if (format == VM_DISK_FORMAT_QCOW2) {
		snprintf(err, errlen, "%s: %s: not a qcow2 image (its header "
		    "is %s's)", what, path, found != NULL ? found : "no "
		    "format");
		return -EMEDIUMTYPE;
	}
	if (found == NULL)
		return 0;
	snprintf(err, errlen, "%s: %s: a %s image, but only raw and qcow2 "
	    "images are read: the guest would take its %s metadata for "
	    "data%s; convert it (qemu-img convert -O qcow2), or, if it "
	    "really is raw, give the disk \"format\": \"raw\" (vmctl: "
	    "--disk PATH,format=raw)", what, path, found, found, readonly ?
	    "" : " and destroy it with its first writes");
	return -EMEDIUMTYPE;
}

/*
 * The file a qcow2 image at parent names as its backing file: an
 * absolute name as it is, a relative one from the image's directory.
 */
static int
vm_files_backing_path(const char *parent, const char *name, char *out,
    size_t outlen)
{
	const char *slash = strrchr(parent, '/');
	int n;

	if (name[0] == '/')
		n = snprintf(out, outlen, "%s", name);
	else
		n = snprintf(out, outlen, "%.*s/%s", (int)(slash - parent),
		    parent, name);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/*
 * The refusal of a backing file named by a disk whose definition records
 * no format: one made by a vmmd older than the recording, probed at
 * every start.  Such a header is trusted no further than for reading
 * the image itself (what a qcow2 image's own metadata points to lies
 * within its file: the guest's data, whatever shape it took), never for
 * opening another file with the rights of whoever starts the VM: the
 * guest of a raw disk can write a qcow2 header naming any path into its
 * first sector (CVE-2008-2004).  Recording the format found at load
 * instead would record what such a guest may already have written, and
 * opening the chain once to record it is the very hole; so the owner
 * says which it is, once.  Into err; *cls is the caller's
 * invalid_argument.
 */
static void
vm_files_unrecorded(const struct vm_def *def, unsigned int i,
    const char *backing, char *err, size_t errlen)
{
	const struct vm_disk *disk = &def->disks[i];

	snprintf(err, errlen, "disk %u: %s: a qcow2 header naming the backing "
	    "file '%s', but the VM's definition (from an older vmmd) records "
	    "no format for the disk, and a guest writing a raw disk can write "
	    "such a header: the backing file is not opened on its word.  If "
	    "the image is qcow2, say so: give the disk \"format\": \"qcow2\" "
	    "(vmctl delete %s, then vmctl create ... --disk %s,format=qcow2,"
	    "backing; or edit the definition and restart vmmd); if it is "
	    "raw, \"format\": \"raw\"", i, disk->path, backing, def->name,
	    disk->path);
}

/*
 * Disk i of def, open as f->disk_fd[i]: its format and, for a qcow2
 * image, its backing chain, each file opened for cred, read-only.  The
 * top of an overlay disk opened at start (f->overlay_path[i]) is the
 * daemon's overlay, qcow2, and its backing file must be the disk's base.
 *
 * What decides a format is never a header a guest could have written:
 * the definition's format (recorded at vm.create, see vm-files.h), and
 * below the top the format each image names for its backing file.  The
 * header is read for a format only where the definition has none, and
 * then it may not lead to a backing file unless the client is naming
 * the image now (creating): see vm_files_unrecorded().
 */
static int
vm_files_open_chain(const struct vm_def *def, unsigned int i,
    bool creating, const struct access_cred *cred, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	const struct vm_disk *disk = &def->disks[i];
	const char *top = f->overlay_path[i];
	struct vm_files_backing *chain;
	struct qcow2_header *h;
	enum vm_files_format fmt;
	const char *parent = top != NULL ? top : disk->path;
	struct stat st[VM_FILES_BACKING_MAX + 1];
	enum vm_disk_format want;
	int fd = f->disk_fd[i], rc;
	unsigned int n;

	/* An overlay's base, opened at create, is never written. */
	rc = vm_files_format("disk", parent, fd, top != NULL ?
	    VM_DISK_FORMAT_QCOW2 : disk->format, disk->readonly ||
	    (disk->overlay && top == NULL), &f->disk_format[i], cls, err,
	    errlen);
	if (rc < 0 || f->disk_format[i] == VM_FILES_RAW)
		return rc;
	h = malloc(sizeof(*h));
	chain = calloc(VM_FILES_BACKING_MAX, sizeof(*chain));
	if (h == NULL || chain == NULL) {
		free(h);
		free(chain);
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->backing[i] = chain;
	fmt = VM_FILES_QCOW2;
	for (n = 0;; n++) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		if (fstat(fd, &st[n]) < 0) {
			rc = -errno;
			snprintf(err, errlen, "disk: %s: %s", parent,
			    strerror(-rc));
			break;
		}
		for (unsigned int k = 0; k < n; k++)
			if (st[k].st_dev == st[n].st_dev &&
			    st[k].st_ino == st[n].st_ino) {
				snprintf(err, errlen, "disk: %s: its backing "
				    "chain comes back to a file of its own "
				    "at %s", disk->path, parent);
				rc = -ELOOP;
				goto out;
			}
		if (fmt == VM_FILES_RAW)
			break;		/* a raw file ends the chain */
		if ((rc = qcow2_header_read(fd, h)) < 0) {
			snprintf(err, errlen, "disk: %s: %s", parent,
			    rc == -EINVAL ? h->reason : strerror(-rc));
			break;
		}
		if (top != NULL && n == 0 && (!h->has_backing ||
		    strcmp(h->backing_file, disk->path) != 0)) {
			snprintf(err, errlen, "disk %u: its overlay %s is not "
			    "over the disk's base %s; vmctl reset-disk %s %u "
			    "makes a fresh one (the guest's changes are lost)",
			    i, top, disk->path, def->name, i);
			rc = -EINVAL;
			break;
		}
		if (!h->has_backing)
			break;
		if (n == 0 && top == NULL && disk->format ==
		    VM_DISK_FORMAT_PROBED && !creating) {
			vm_files_unrecorded(def, i, h->backing_file, err,
			    errlen);
			rc = -EPERM;
			break;
		}
		/* An overlay's base was named by the client: its chain too. */
		if (!disk->backing && !disk->overlay) {
			*cls = PROTO_ERR_PERMISSION;
			snprintf(err, errlen, "disk: %s: a qcow2 image over the "
			    "backing file '%s', which is opened only for a "
			    "disk that allows it: give it \"backing\": true "
			    "(vmctl: --disk PATH,backing)", parent,
			    h->backing_file);
			rc = -EPERM;
			break;
		}
		if (n == VM_FILES_BACKING_MAX) {
			snprintf(err, errlen, "disk: %s: a backing chain of "
			    "more than %d files", disk->path,
			    VM_FILES_BACKING_MAX);
			rc = -E2BIG;
			break;
		}
		/*
		 * Named, never probed: a backing file may be a disk another
		 * guest writes (the raw base of an overlay, say), and what
		 * it begins with is that guest's to choose.  vmmd's own
		 * overlays name it (qcow2_create() always writes the
		 * extension), and qemu-img has since 6.1.
		 */
		if (h->backing_format[0] == '\0') {
			snprintf(err, errlen, "disk: %s: names its backing file "
			    "'%s' but not that file's format, which vmmd does "
			    "not guess (a guest that writes the backing file "
			    "could make it look like any format): name it "
			    "with qemu-img rebase -u -F raw|qcow2 -b '%s' %s "
			    "(or qemu-img create -F raw|qcow2 when making "
			    "such an image)", parent, h->backing_file,
			    h->backing_file, parent);
			rc = -EMEDIUMTYPE;
			break;
		}
		if (strcmp(h->backing_format, "raw") == 0)
			want = VM_DISK_FORMAT_RAW;
		else if (strcmp(h->backing_format, "qcow2") == 0)
			want = VM_DISK_FORMAT_QCOW2;
		else {
			snprintf(err, errlen, "disk: %s: its backing file is "
			    "said to be in format '%s': only raw and qcow2 "
			    "are read", parent, h->backing_format);
			rc = -EMEDIUMTYPE;
			break;
		}
		if (vm_files_backing_path(parent, h->backing_file,
		    chain[n].path, sizeof(chain[n].path)) < 0) {
			snprintf(err, errlen, "disk: %s: the name of its backing "
			    "file is too long", parent);
			rc = -ENAMETOOLONG;
			break;
		}
		chain[n].fd = -1;
		rc = vm_files_open_one("backing file", chain[n].path, false,
		    false, cred, &chain[n].fd, cls, err, errlen);
		if (rc < 0)
			break;
		f->nbacking[i] = n + 1;
		rc = vm_files_format("backing file", chain[n].path,
		    chain[n].fd, want, true, &chain[n].format, cls, err,
		    errlen);
		if (rc < 0)
			break;
		fd = chain[n].fd;
		fmt = chain[n].format;
		parent = chain[n].path;
	}
out:
	free(h);
	return rc;
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
	if (f->cdrom_fd >= 0)
		close(f->cdrom_fd);
	f->cdrom_fd = -1;
	if (f->vars_fd >= 0)
		close(f->vars_fd);
	if (f->nvram_fd >= 0)
		close(f->nvram_fd);
	f->vars_fd = f->nvram_fd = -1;
	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		free(f->overlay_path[i]);
		f->overlay_path[i] = NULL;
	}
	while (f->ndisks > 0) {
		unsigned int i = --f->ndisks;

		if (f->disk_fd[i] >= 0)
			close(f->disk_fd[i]);
		while (f->nbacking[i] > 0)
			close(f->backing[i][--f->nbacking[i]].fd);
		free(f->backing[i]);
		f->backing[i] = NULL;
	}
	for (unsigned int i = 0; i < CONFIG_NICS_MAX; i++) {
		if (f->tap_fd[i] >= 0)
			close(f->tap_fd[i]);
		f->tap_fd[i] = -1;
	}
	if (f->vsock_fd >= 0)
		close(f->vsock_fd);
	f->vsock_fd = -1;
	if (f->fs_fd >= 0)
		close(f->fs_fd);
	f->fs_fd = -1;
}

/*
 * Disk i of def into f->disk_fd[i]: the file it names, for cred, or the
 * overlay of an overlay disk (as the daemon) when overlay_dir is given.
 */
static int
vm_files_open_disk(const struct vm_def *def, unsigned int i,
    const char *overlay_dir, bool creating, const struct access_cred *cred,
    struct vm_files *f, enum proto_error *cls, char *err, size_t errlen)
{
	const struct vm_disk *disk = &def->disks[i];
	char path[PATH_MAX];
	int rc;

	if (disk->nbd) {
		/* A socket, not a file: at vm.create only checked. */
		f->disk_format[i] = VM_FILES_RAW;
		return nbd_connect(disk->path, i, cred, creating,
		    &f->disk_fd[i], cls, err, errlen);
	}
	if (disk->rbd) {
		/* The worker connects; the client's files are read here. */
		f->disk_format[i] = VM_FILES_RAW;
		return rbd_conf_open(disk->path, i, cred, creating,
		    &f->disk_fd[i], cls, err, errlen);
	}
	if (!disk->overlay || overlay_dir == NULL)
		/* An overlay's base is only ever read. */
		return vm_files_open_one("disk", disk->path, false,
		    !disk->readonly && !disk->overlay, cred, &f->disk_fd[i],
		    cls, err, errlen);
	*cls = PROTO_ERR_INTERNAL;
	if (disk_overlay_path(overlay_dir, def->name, i, path,
	    sizeof(path)) < 0) {
		snprintf(err, errlen, "disk %u: overlay path too long", i);
		return -ENAMETOOLONG;
	}
	if ((f->overlay_path[i] = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = disk_overlay_open(path, def->name, i, &f->disk_fd[i], cls, err,
	    errlen);
	if (rc < 0) {
		free(f->overlay_path[i]);
		f->overlay_path[i] = NULL;
	}
	return rc;
}

/* Whether fds a and b are the same file (device and inode). */
static bool
vm_files_same(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	    sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * No file may be two of f's disks (their images, or an image and a file
 * of another's backing chain) when the guest writes one of them: at
 * start the lock of the written one (vm_files_lock_disks()) would keep
 * the other out, so such a VM can never start.  Compared by device and
 * inode: two paths may name one file.
 */
static int
vm_files_check_shared(const struct vm_def *def, const struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < f->ndisks; i++) {
		/* An overlay disk's guest writes its overlay, not this;
		 * an NBD disk's server is its keeper. */
		if (def->disks[i].readonly || def->disks[i].overlay ||
		    def->disks[i].nbd || def->disks[i].rbd ||
		    f->disk_fd[i] < 0)
			continue;
		for (unsigned int j = 0; j < f->ndisks; j++) {
			bool same = j != i &&
			    vm_files_same(f->disk_fd[i], f->disk_fd[j]);

			for (unsigned int k = 0; !same && k < f->nbacking[j];
			    k++)
				same = vm_files_same(f->disk_fd[i],
				    f->backing[j][k].fd);
			if (!same)
				continue;
			*cls = PROTO_ERR_INVALID_ARGUMENT;
			snprintf(err, errlen, "disks %u and %u: %s and %s are "
			    "the same file, and the guest writes disk %u: a "
			    "disk written to is one disk's alone (give the "
			    "file once, or make both readonly)", i < j ? i : j,
			    i < j ? j : i, def->disks[i < j ? i : j].path,
			    def->disks[i < j ? j : i].path, i);
			return -EBUSY;
		}
	}
	return 0;
}

/* How much of each end of a boot disk is read to tell it blank. */
#define VM_FILES_BLANK_SPAN	(1024 * 1024)

/*
 * Whether the bytes [off, off + len) of fd are all zero (a short file
 * ends early: what is not there reads as nothing).  Only compared with
 * zero, never parsed: this runs with the daemon's privileges.  -errno
 * on a read error.
 */
static int
vm_files_zero(int fd, off_t off, size_t len)
{
	static const unsigned char zero[64 * 1024];
	unsigned char buf[sizeof(zero)];
	ssize_t n;

	while (len > 0) {
		n = pread(fd, buf, len < sizeof(buf) ? len : sizeof(buf), off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (memcmp(buf, zero, (size_t)n) != 0)
			return 0;
		off += n;
		len -= (size_t)n;
	}
	return 1;
}

/*
 * At vm.create, a VM that boots from its first disk: a raw image whose
 * first and last VM_FILES_BLANK_SPAN bytes are all zero holds no
 * partition table (MBR, GPT and its backup) and no file system a boot
 * loader could read, so it can never start.  A bounded read of 2 MiB at
 * most; a qcow2 image or one with a backing chain is left to the
 * reader at start.
 */
static int
vm_files_check_blank(const struct vm_def *def, const struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct stat st;
	off_t tail;
	int rc;

	if (config_boot(def) != VM_BOOT_DISK || f->ndisks == 0 ||
	    def->disks[0].nbd || def->disks[0].rbd ||
	    f->disk_format[0] != VM_FILES_RAW || f->nbacking[0] != 0 ||
	    fstat(f->disk_fd[0], &st) < 0)
		return 0;
	rc = vm_files_zero(f->disk_fd[0], 0, VM_FILES_BLANK_SPAN);
	tail = st.st_size > VM_FILES_BLANK_SPAN ?
	    st.st_size - VM_FILES_BLANK_SPAN : 0;
	if (rc == 1 && tail > 0)
		rc = vm_files_zero(f->disk_fd[0], tail, VM_FILES_BLANK_SPAN);
	if (rc == 1) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, errlen, "disk 0: %s is blank (its first and last "
		    "MiB are all zero: no partition table, no file system), "
		    "and the VM boots from it; install a system on it, or "
		    "give a kernel (--kernel, or boot \"kernel\")",
		    def->disks[0].path);
		return -ENOEXEC;
	}
	return 0;
}

/*
 * OVMF's VARS template, open at fd: a firmware volume, whole pages,
 * that fits below an image of code_size bytes (boot-firmware.h's
 * layout, as the worker lays them out).
 */
static int
vm_files_check_vars(int fd, int code_fd, char *err, size_t errlen)
{
	struct boot_firmware_layout l;
	uint8_t head[64];
	struct stat st, cst;
	ssize_t n;

	if (fstat(fd, &st) < 0 || fstat(code_fd, &cst) < 0) {
		snprintf(err, errlen, "fstat: %s", strerror(errno));
		return -errno;
	}
	n = pread(fd, head, sizeof(head), 0);
	if (n < 0 || !vm_nvram_is_volume(head, (size_t)n)) {
		snprintf(err, errlen, "not a firmware volume (no \"_FVH\")");
		return -EINVAL;
	}
	return boot_firmware_layout((uint64_t)cst.st_size,
	    (uint64_t)st.st_size, &l, err, errlen);
}

int
vm_files_open_firmware(const struct vm_def *def, const char *image,
    const char *vars, const char *vgabios, const struct access_cred *cred,
    struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	const char *fw = config_firmware_name(def);
	bool uefi = def->firmware == VM_FIRMWARE_UEFI;
	char reason[512];
	int rc;

	if (def->firmware == VM_FIRMWARE_NONE)
		return 0;
	if (cred != NULL && cred->uid == 0)
		cred = NULL;
	if (image == NULL || (uefi && vars == NULL)) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, errlen, "VM '%s' boots firmware \"%s\" and "
		    "vmmd.conf names none", def->name, fw);
		return -ENOENT;
	}
	rc = vm_files_open_one("firmware", image, false, false, cred,
	    &f->kernel_fd, cls, reason, sizeof(reason));
	if (rc == 0 && uefi)
		rc = vm_files_open_one("UEFI variables' template", vars, false,
		    false, cred, &f->vars_fd, cls, reason, sizeof(reason));
	if (rc == 0 && uefi && (rc = vm_files_check_vars(f->vars_fd,
	    f->kernel_fd, reason, sizeof(reason))) < 0) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, errlen, "VM '%s' boots firmware \"uefi\": %s: "
		    "%s", def->name, vars, reason);
		return rc;
	}
	if (rc < 0) {
		snprintf(err, errlen, "VM '%s' boots firmware \"%s\": %s "
		    "(install the %s package, or name the %s in vmmd.conf's "
		    "%s)", def->name, fw, reason, uefi ? "ovmf" : "seabios",
		    uefi ? "files" : "image", uefi ? "ovmf_code and ovmf_vars" :
		    "bios");
		return rc;
	}
	if (def->vnc_addr == NULL)
		return 0;
	/*
	 * Its display's VGA BIOS, which SeaBIOS runs from the display's
	 * ROM (OVMF drives the display itself and passes the ROM by).
	 */
	if (vgabios == NULL) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, errlen, "VM '%s' boots firmware \"%s\" with a "
		    "display and vmmd.conf names no vgabios", def->name, fw);
		return -ENOENT;
	}
	rc = vm_files_open_one("vgabios", vgabios, false, false, cred,
	    &f->initrd_fd, cls, reason, sizeof(reason));
	if (rc < 0)
		snprintf(err, errlen, "VM '%s' boots firmware \"%s\" with a "
		    "display: %s (install the seabios package, or name the "
		    "image in vmmd.conf's vgabios)", def->name, fw, reason);
	return rc;
}

int
vm_files_open(const struct vm_def *def, const char *default_kernel,
    const char *overlay_dir, bool creating, const struct access_cred *cred,
    struct vm_files *f, enum proto_error *cls, char *err, size_t errlen)
{
	char reason[512];
	int rc;

	memset(f, 0, sizeof(*f));
	f->kvm_fd = f->kernel_fd = f->initrd_fd = f->cdrom_fd = -1;
	f->vsock_fd = f->vars_fd = f->nvram_fd = f->fs_fd = -1;
	for (unsigned int i = 0; i < CONFIG_NICS_MAX; i++)
		f->tap_fd[i] = -1;
	/* root may read anything anyway: no point in checking. */
	if (cred != NULL && cred->uid == 0)
		cred = NULL;

	if (config_boot(def) == VM_BOOT_DISK) {
		/* The worker reads the kernel from the disk opened below. */
	} else if (config_boot(def) == VM_BOOT_FIRMWARE) {
		/* No kernel: vm_files_open_firmware() opens the image. */
	} else if (def->kernel != NULL) {
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
	if (def->cdrom != NULL) {
		/* Read-only: the guest's drive cannot write it. */
		rc = vm_files_open_one("cdrom", def->cdrom, false, false,
		    cred, &f->cdrom_fd, cls, err, errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
	}
	for (unsigned int i = 0; i < def->ndisks; i++) {
		rc = vm_files_open_disk(def, i, overlay_dir, creating, cred, f,
		    cls, err, errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
		f->ndisks = i + 1;
		f->backing[i] = NULL;
		f->nbacking[i] = 0;
		if (def->disks[i].nbd || def->disks[i].rbd)
			continue;
		rc = vm_files_open_chain(def, i, creating, cred, f, cls, err,
		    errlen);
		if (rc < 0) {
			vm_files_close(f);
			return rc;
		}
	}
	rc = vm_files_check_shared(def, f, cls, err, errlen);
	if (rc == 0 && creating)
		rc = vm_files_check_blank(def, f, cls, err, errlen);
	if (rc < 0)
		vm_files_close(f);
	return rc;
}

void
vm_files_record_formats(struct vm_def *def, const struct vm_files *f)
{
	for (unsigned int i = 0; i < f->ndisks && i < def->ndisks; i++)
		if (def->disks[i].format == VM_DISK_FORMAT_PROBED)
			def->disks[i].format = f->disk_format[i] ==
			    VM_FILES_QCOW2 ? VM_DISK_FORMAT_QCOW2 :
			    VM_DISK_FORMAT_RAW;
}

/* /dev/kvm opened and its API checked: the fd, or -errno with err. */
static int
vm_files_kvm(char *err, size_t errlen)
{
	int fd, rc;

	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open /dev/kvm: %s%s",
		    strerror(-rc), rc == -ENOENT ? " (no KVM on this host: "
		    "load kvm_intel or kvm_amd, or enable virtualization in "
		    "the firmware)" : "");
		return rc;
	}
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		close(fd);
		snprintf(err, errlen, "/dev/kvm is not a KVM of API version "
		    "%d", KVM_API_VERSION);
		return -ENOTSUP;
	}
	return fd;
}

int
vm_files_kvm_check(char *err, size_t errlen)
{
	int fd = vm_files_kvm(err, errlen);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int
vm_files_open_kvm(struct vm_files *f, enum proto_error *cls, char *err,
    size_t errlen)
{
	int fd;

	fd = vm_files_kvm(err, errlen);
	if (fd < 0) {
		*cls = PROTO_ERR_KVM_UNAVAILABLE;
		return fd;
	}
	f->kvm_fd = fd;
	return 0;
}

int
vm_files_open_vsock(const struct vm_def *def, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	int fd, rc;

	if (!def->vsock)
		return 0;
	fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "vsock: cannot open /dev/vhost-vsock: "
		    "%s%s", strerror(-rc), rc == -ENOENT ? " (the host's "
		    "kernel needs the vhost_vsock module: modprobe "
		    "vhost_vsock)" : "");
		return rc;
	}
	f->vsock_fd = fd;
	return 0;
}

/* The user's vhost-user server: its socket checked for cred, then
 * connected through the very file checked. */
static int
vm_files_connect_fs(const char *path, const struct access_cred *cred)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char name[NAME_MAX + 1];
	struct stat st;
	int dirfd, pfd, sock, rc;

	dirfd = access_resolve(path, cred, NULL, name, &st);
	if (dirfd < 0)
		return dirfd;
	pfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	rc = pfd < 0 ? -errno : 0;
	close(dirfd);
	if (rc < 0)
		return rc;
	if (fstat(pfd, &st) < 0 || !S_ISSOCK(st.st_mode))
		rc = -ENOTSOCK;
	else if (cred != NULL)
		rc = access_fd_allows(pfd, &st, cred, ACCESS_WRITE);
	if (rc < 0) {
		close(pfd);
		return rc;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", pfd);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa,
	    sizeof(sa)) < 0) {
		rc = -errno;
		if (sock >= 0)
			close(sock);
		close(pfd);
		return rc;
	}
	close(pfd);
	return sock;
}

int
vm_files_open_fs(const struct vm_def *def, const struct access_cred *cred,
    struct vm_files *f, enum proto_error *cls, char *err, size_t errlen)
{
	const char *path = def->fs_dir != NULL ? def->fs_dir : def->fs_socket;
	int fd;

	if (def->fs_tag == NULL)
		return 0;
	if (cred != NULL && cred->uid == 0)
		cred = NULL;
	fd = def->fs_dir != NULL ? access_open_dir(def->fs_dir, cred,
	    !def->fs_readonly) : vm_files_connect_fs(def->fs_socket, cred);
	if (fd < 0) {
		*cls = fd == -EACCES ? PROTO_ERR_PERMISSION :
		    fd == -ECONNREFUSED ? PROTO_ERR_BAD_STATE :
		    PROTO_ERR_INVALID_ARGUMENT;
		if (fd == -EACCES && cred != NULL)
			snprintf(err, errlen, "fs: %s: not accessible to uid "
			    "%u%s", path, (unsigned int)cred->uid,
			    def->fs_dir != NULL && !def->fs_readonly ?
			    " (a share it may write needs write permission; "
			    "or share it read-only)" : "");
		else
			snprintf(err, errlen, "fs: %s: %s", path,
			    strerror(-fd));
		return fd;
	}
	f->fs_fd = fd;
	return 0;
}

/* One whole-file OFD lock; what and path name the file in err. */
static int
vm_files_lock(int fd, bool shared, const char *what, const char *path,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct flock lk;
	int rc;

	memset(&lk, 0, sizeof(lk));
	lk.l_type = shared ? F_RDLCK : F_WRLCK;
	lk.l_whence = SEEK_SET;		/* l_start = l_len = 0: all of it */
	if (fcntl(fd, F_OFD_SETLK, &lk) == 0)
		return 0;
	rc = -errno;
	if (rc == -EAGAIN || rc == -EACCES) {
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "%s: %s: in use by another guest or "
		    "program (it holds a lock on it%s; any process that can "
		    "read the file can lock it: /proc/locks names the "
		    "holder)", what, path, shared ? "" : "; a disk written "
		    "to is one guest's alone");
	} else {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "%s: %s: cannot lock it: %s", what, path,
		    strerror(-rc));
	}
	return rc;
}

/* Backing files are only read: shared, as a read-only disk. */
int
vm_files_lock_disks(const struct vm_def *def, struct vm_files *f,
    bool arriving, enum proto_error *cls, char *err, size_t errlen)
{
	int rc;

	for (unsigned int i = 0; i < f->ndisks; i++) {
		/* An NBD server decides who may write its exports; an
		 * RBD image's exclusive lock is the worker's to take. */
		if (def->disks[i].nbd || def->disks[i].rbd)
			continue;
		f->lock_later[i] = false;
		rc = vm_files_lock(f->disk_fd[i], def->disks[i].readonly,
		    "disk", f->overlay_path[i] != NULL ? f->overlay_path[i] :
		    def->disks[i].path, cls, err, errlen);
		/* The source's lock, until the guest runs here. */
		if (arriving && !def->disks[i].readonly &&
		    (rc == -EAGAIN || rc == -EACCES)) {
			f->lock_later[i] = true;
			rc = 0;
		}
		for (unsigned int k = 0; rc == 0 && k < f->nbacking[i]; k++)
			rc = vm_files_lock(f->backing[i][k].fd, true,
			    "backing file", f->backing[i][k].path, cls, err,
			    errlen);
		if (rc < 0)
			return rc;
	}
	if (f->cdrom_fd >= 0)
		return vm_files_lock(f->cdrom_fd, true, "cdrom", def->cdrom,
		    cls, err, errlen);
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

/* vm_files_check_tap() for one TAP. */
static int
vm_files_check_one_tap(const char *tap, const struct dconf_tap_rule *rules,
    size_t nrules, const struct access_cred *cred, enum proto_error *cls,
    char *err, size_t errlen)
{
	char names[256];
	size_t len = 0, i;
	int n;

	names[0] = '\0';
	for (i = 0; i < nrules; i++) {
		if (!vm_files_in_group(cred, rules[i].gid))
			continue;
		if (dconf_tap_matches(&rules[i], tap))
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
		    tap, (unsigned long)cred->uid);
	else
		snprintf(err, errlen, "net: tap %s: not allowed for uid %lu, "
		    "whose groups may use %s%s (tap_allow in vmmd.conf)",
		    tap, (unsigned long)cred->uid, names,
		    len >= sizeof(names) ? "..." : "");
	return -EACCES;
}

int
vm_files_check_tap(const struct vm_def *def,
    const struct dconf_tap_rule *rules, size_t nrules,
    const struct access_cred *cred, enum proto_error *cls, char *err,
    size_t errlen)
{
	int rc;

	if (cred == NULL || cred->uid == 0)
		return 0;
	for (unsigned int i = 0; i < def->nnics; i++)
		if (def->nics[i].tap[0] != '\0' &&
		    (rc = vm_files_check_one_tap(def->nics[i].tap, rules,
		    nrules, cred, cls, err, errlen)) < 0)
			return rc;
	return 0;
}

int
vm_files_open_net(const struct vm_def *def,
    const struct dconf_tap_rule *rules, size_t nrules,
    const struct access_cred *cred, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	int rc;

	if ((rc = vm_files_check_tap(def, rules, nrules, cred, cls, err,
	    errlen)) < 0)
		return rc;
	for (unsigned int i = 0; i < def->nnics; i++) {
		if (def->nics[i].tap[0] == '\0')
			continue;
		if ((rc = vm_files_open_tap(def->nics[i].tap, cls, err,
		    errlen)) < 0)
			return rc;
		f->tap_fd[i] = rc;
	}
	return 0;
}


int
vm_files_open_media(const char *path, const struct access_cred *cred,
    int *fdp, enum proto_error *cls, char *err, size_t errlen)
{
	*fdp = -1;
	return vm_files_open_one("insert", path, false, false, cred, fdp, cls,
	    err, errlen);
}
