/*
 * The kernel, initrd, disk and CD-ROM images of a VM, and its TAP, opened by the
 * supervisor
 * (O_CLOEXEC) and handed to its worker as descriptors, so that the
 * worker uses exactly the files that were checked, with the rights of
 * the client who started it.
 */
#ifndef VMMD_VM_FILES_H
#define VMMD_VM_FILES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "proto.h"
#include "vmconfig.h"

struct access_cred;
struct dconf_tap_rule;

/* Backing files below one disk's image, at most. */
#define VM_FILES_BACKING_MAX	15

/* The format a disk's file was found in. */
enum vm_files_format {
	VM_FILES_RAW,
	VM_FILES_QCOW2,
};

/* A qcow2 image's backing file, and that file's own, and so on. */
struct vm_files_backing {
	int fd;				/* read-only */
	enum vm_files_format format;
	char path[PATH_MAX];		/* as resolved, for messages */
};

struct vm_files {
	int kvm_fd;			/* -1 until vm_files_open_kvm() */
	int kernel_fd;			/* -1 when absent */
	int initrd_fd;			/* -1 when absent */
	int cdrom_fd;			/* read-only; -1 when absent */
	/* "uefi": OVMF's VARS template (read-only, for the client) and,
	 * at start, the VM's NVRAM file (read-write, the daemon's). */
	int vars_fd;
	int nvram_fd;
	int disk_fd[CONFIG_DISKS_MAX];	/* def's disks, in order */
	enum vm_files_format disk_format[CONFIG_DISKS_MAX];
	/* disk i's backing chain, top first: nbacking[i] of them */
	struct vm_files_backing *backing[CONFIG_DISKS_MAX];
	unsigned int nbacking[CONFIG_DISKS_MAX];
	/* disk i's overlay when it is the top image, else NULL */
	char *overlay_path[CONFIG_DISKS_MAX];
	unsigned int ndisks;
	/* card i's TAP, -1 for user-mode networking or no card */
	int tap_fd[CONFIG_NICS_MAX];
	int vsock_fd;			/* /dev/vhost-vsock, or -1 */
	/* The shared directory, or the vhost-user socket connected, -1 */
	int fs_fd;
	/* Disk i arrives by migration locked by its source: its exclusive
	 * lock is taken once the source lets it go (vm-disklock.h). */
	bool lock_later[CONFIG_DISKS_MAX];
};

/*
 * Open def's kernel, initrd and disks for a client with credentials
 * cred.  Unless cred is NULL or uid 0, the client must be able to read
 * them itself, and write the disks that are not read-only (see
 * access.h): if not, the error class is permission_denied and err says
 * "kernel: PATH: not readable by uid N".  The kernel must
 * be one the boot loaders accept.  A disk is raw or qcow2: as its
 * "format" says, or, where it says none, as its header shows; one whose
 * header is another image format's (disk-format.h) is refused (class
 * invalid_argument, -EMEDIUMTYPE, err naming the format and how to
 * convert it or say it is raw), and so is a qcow2 image vmmd cannot use
 * (qcow2-header.h: -EINVAL and the reason).  creating is true at
 * vm.create only, where the client names the image, and the caller
 * records the format found with vm_files_record_formats(): a guest can
 * write its raw disk's header, so from then on the recorded format
 * decides, never the header.  A disk with no format otherwise (a
 * definition from an older vmmd) is still probed, but a qcow2 header
 * found so may not name a backing file (-EPERM, class invalid_argument,
 * err saying how to record the format).  A qcow2 image's backing file
 * is opened read-only for the same client, resolved relative to the
 * image's directory, and its own backing file after it, up to
 * VM_FILES_BACKING_MAX, in raw or qcow2 as the image names it (its
 * backing format extension; an image that names none is refused:
 * -EMEDIUMTYPE, class invalid_argument, err saying how to name it):
 * only if the disk has "backing": true (else -EPERM and class
 * permission_denied, naming the file); a chain that comes back to a
 * file of its own is -ELOOP.  A VM without a kernel gets
 * default_kernel, the daemon's default guest (trusted: not checked
 * against cred), if given; one that cannot be opened or loaded is an
 * error naming -g (vm.create gives it too: a VM that could never start
 * is refused).  No two disks may be one file (device and inode) that
 * the guest writes through one of them (-EBUSY, class
 * invalid_argument): the start's locks would refuse it.  creating, a
 * VM that boots from a raw first disk whose first and last MiB are all
 * zero is refused (-ENOEXEC, class invalid_argument): nothing there
 * for a boot loader.
 * An overlay disk (disk-overlay.h): with overlay_dir (vm.start), its
 * overlay there is the top image, opened by the daemon (read-write,
 * disk_overlay_open()), and must name the disk's base as its backing
 * file; the base and its chain are opened for cred as backing files.
 * Without (vm.create, vm.reset_disk), the base is the disk's file,
 * opened read-only for cred with its chain, to make the overlay from.
 * Either way the base's chain is opened as if the disk said "backing".
 * Errors: a negative errno, with *cls and err (one line) set for the
 * client's error reply; on success close f with vm_files_close().
 */
int	vm_files_open(const struct vm_def *def, const char *default_kernel,
	    const char *overlay_dir, bool creating,
	    const struct access_cred *cred, struct vm_files *f,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * After vm_files_open(), for a VM with "firmware": its image (vmmd.conf's
 * bios or ovmf_code, the caller's choice), opened for cred as the kernel
 * would be, into f's kernel_fd (the worker finds it in the kernel's
 * slot); for "uefi" also the template of its variables (ovmf_vars) into
 * f's vars_fd, checked to be a firmware volume that fits below the
 * image; for such a VM with a display its display's ROM, vgabios, into
 * initrd_fd (such a VM has no initrd).  Nothing for other VMs.  Errors
 * as vm_files_open()'s, err naming the VM.
 */
int	vm_files_open_firmware(const struct vm_def *def, const char *image,
	    const char *vars, const char *vgabios,
	    const struct access_cred *cred, struct vm_files *f,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * An image a running guest's CD-ROM takes (vm.media): path opened
 * read-only with cred's rights (NULL: the daemon's), into *fdp.  0, or
 * -errno with *cls and err as vm_files_open()'s.
 */
int	vm_files_open_media(const char *path, const struct access_cred *cred,
	    int *fdp, enum proto_error *cls, char *err, size_t errlen);

/*
 * At vm.create, after vm_files_open(): the format found for each of
 * def's disks that names none, into its definition (an overlay disk's
 * is its base's), to be saved with it.
 */
void	vm_files_record_formats(struct vm_def *def, const struct vm_files *f);
/*
 * Then, at start only, /dev/kvm into f->kvm_fd, opened by the daemon:
 * the worker creates its VM on it and never opens a device itself.
 * Errors as above (class kvm_unavailable: the host has no usable KVM,
 * an open /dev/kvm that is not KVM's API version 12 included).
 */
int	vm_files_open_kvm(struct vm_files *f, enum proto_error *cls,
	    char *err, size_t errlen);
/* Whether guests can run here, as above: 0, or -errno with err filled. */
int	vm_files_kvm_check(char *err, size_t errlen);
/*
 * Then, at start only, lock f's disks for the guest: an open file
 * description lock (F_OFD_SETLK) on the whole image, shared for a
 * read-only disk and exclusive otherwise, so that no two guests write
 * one image, nor read one another writes (QEMU takes locks of the same
 * kind, on parts of the file, so it is kept out too).  The lock lives
 * with the open file the worker inherits: it goes when the guest ends
 * (vmmd's own handle on a written disk's, vm-disklock.h, closed when
 * the worker is reaped; a snapshot turns a frozen image's lock shared
 * through it).  A lock held elsewhere:
 * -EAGAIN with class bad_state and err naming the image.
 *
 * arriving: the guest comes by migration, whose source holds its written
 * disks' exclusive locks until the guest runs here (on shared storage
 * the same lock, seen from both hosts): such a disk found locked is
 * marked lock_later instead of refused, and vm-disklock.h takes its
 * lock once the source let it go.  Read-only disks and backing files
 * are locked shared as at any start (the source's are shared too).
 */
int	vm_files_lock_disks(const struct vm_def *def, struct vm_files *f,
	    bool arriving, enum proto_error *cls, char *err, size_t errlen);
/*
 * Whether cred may have def's guest use its TAPs (a VM without one: yes).
 * The host's network is the administrator's: root (or cred NULL, the
 * daemon itself) may name any TAP, another client only one that a rule
 * of rules[0..nrules) (vmmd.conf's tap_allow) gives one of its groups,
 * primary or supplementary.  Without rules only root may.  Refused:
 * -EACCES, class permission_denied, err naming the TAP, the uid and the
 * names its groups may use.  vm.create checks it, and so does
 * vm_files_open_net() at every start, for whoever starts the VM.
 */
int	vm_files_check_tap(const struct vm_def *def,
	    const struct dconf_tap_rule *rules, size_t nrules,
	    const struct access_cred *cred, enum proto_error *cls, char *err,
	    size_t errlen);
/*
 * Then, at start only, each card's TAP into f->tap_fd[i], if
 * vm_files_check_tap() lets cred use them: attached, or created if there is none of that name,
 * by the daemon itself (TUNSETIFF needs CAP_NET_ADMIN, or a persistent
 * TAP the daemon owns), with IFF_TAP | IFF_NO_PI | IFF_VNET_HDR (see
 * daemon/machine/net-tap.h).  A TAP the daemon created goes when the
 * worker exits.  Errors as above; f is left for vm_files_close() either
 * way.
 */
int	vm_files_open_net(const struct vm_def *def,
	    const struct dconf_tap_rule *rules, size_t nrules,
	    const struct access_cred *cred, struct vm_files *f,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * At start only: /dev/vhost-vsock into f->vsock_fd for a VM with vsock
 * (opened by the daemon: the worker becomes its owner).  A host without
 * vhost_vsock: -ENOENT, err saying which module to load.
 */
int	vm_files_open_vsock(const struct vm_def *def, struct vm_files *f,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * At start only, for a VM with a shared directory: into f->fs_fd the
 * directory (O_RDONLY | O_DIRECTORY) opened for cred, who must be able
 * to read and search it, and write to it unless the share is
 * read-only; or for a server the user runs, a stream socket connected
 * to its Unix socket, which cred must be able to reach and write.  cred
 * NULL or uid 0: the daemon's own rights.  0 or -errno, cls and err
 * set.
 */
int	vm_files_open_fs(const struct vm_def *def,
	    const struct access_cred *cred, struct vm_files *f,
	    enum proto_error *cls, char *err, size_t errlen);
void	vm_files_close(struct vm_files *f);

#endif
