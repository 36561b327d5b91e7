/*
 * Thin clones: a disk with "overlay": true (vmconfig.h) is a qcow2 image
 * of the daemon's, STATEDIR/disks/NAME.N.qcow2 for disk N of VM NAME,
 * over the base the definition names.  The guest writes to the overlay
 * alone; the base is only read, so any number of VMs start from one.
 *
 * The overlay is made at vm.create and made afresh by vm.reset_disk,
 * from the base the client's rights opened; it lives as long as the VM
 * (across restarts of the guest and of vmmd) and goes with vm.delete,
 * or with a transient VM.  It is the daemon's file, in a directory only
 * the daemon can change (safe-dir.h), mode 0600: the guest's data.
 *
 * Library-like: no logging; errors are -errno with *cls and one line in
 * err for the client's reply, as vm-files.h's.
 */
#ifndef VMMD_DISK_OVERLAY_H
#define VMMD_DISK_OVERLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct vm_def;

/* STATEDIR/DISK_OVERLAY_DIR holds the overlays. */
#define DISK_OVERLAY_DIR	"disks"

/* dir/NAME.N.qcow2 into buf: 0, or -ENAMETOOLONG. */
int	disk_overlay_path(const char *dir, const char *name, unsigned int n,
	    char *buf, size_t len);
/*
 * A temporary name in dir for an overlay of disk n of VM name that is
 * being made, dir/.NAME.N.qcow2.SUFFIX (no VM name starts with '.', so
 * no overlay has it; each maker its own suffix): 0, or -ENAMETOOLONG.
 */
int	disk_overlay_tmp_path(const char *dir, const char *name,
	    unsigned int n, const char *suffix, char *buf, size_t len);
/*
 * A qcow2 image of size bytes over base_path (format qcow2 or raw, by
 * base_qcow2) made at tmp, for disk n: what a crash left at tmp goes
 * first, the file is created (O_EXCL, mode 0600), written and synced,
 * and its descriptor (read-write, O_CLOEXEC) left in *fdp.  A base no
 * qcow2 header can name is -EINVAL (class invalid_argument).  On
 * failure nothing is left at tmp.  The step below disk_overlay_make(),
 * for a maker that renames the file itself (vm-snapdisks.c).
 */
int	disk_overlay_create(const char *tmp, unsigned int n, uint64_t size,
	    const char *base_path, bool base_qcow2, int *fdp,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * Make the overlay of disk n of VM name afresh, over the base at
 * base_path, open (read-only) as base_fd and found to be qcow2 or raw
 * (base_qcow2): a qcow2 image of the base's virtual size (a raw base's
 * size rounded down to 512 bytes; a qcow2 base's header's), naming
 * base_path and its format.  Atomic: written to a temporary file in dir,
 * synced, renamed over the old overlay, and dir synced, so that a crash
 * leaves the old overlay or the new one, whole.  An empty base is
 * -EINVAL (class invalid_argument).
 */
int	disk_overlay_make(const char *dir, const char *name, unsigned int n,
	    int base_fd, bool base_qcow2, const char *base_path,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * Open the overlay at path for a guest: read-write, without following a
 * symbolic link, and only if it is a regular file owned by the daemon's
 * user (root, as vmmd runs), as disk_overlay_make() left it.  The
 * descriptor (O_CLOEXEC) in *fdp.  A missing overlay is -ENOENT, and err
 * says how to make a fresh one.
 */
int	disk_overlay_open(const char *path, const char *vm, unsigned int n,
	    int *fdp, enum proto_error *cls, char *err, size_t errlen);
/*
 * Remove the overlays of def's overlay disks from dir (missing ones are
 * fine), then sync dir.  0, or the first -errno with err naming the file
 * (the others are removed all the same).
 */
int	disk_overlay_remove(const char *dir, const struct vm_def *def,
	    char *err, size_t errlen);

/*
 * Whether dir holds an overlay of disk n of a VM named name: one that
 * vm.delete kept, which a new VM of that name must not overwrite.
 */
bool	disk_overlay_exists(const char *dir, const char *name, unsigned int n);
/*
 * Copy the overlay of disk n of VM from to a new overlay of disk n of VM
 * to (vm.clone): the same base, the guest's writes so far.  As atomic as
 * disk_overlay_make(); an overlay of to's already there is -EEXIST.
 * The copy shares extents where the file system can (FICLONE), else is
 * made by the kernel (copy_file_range), in the caller's thread: an
 * overlay holds only what the guest wrote.
 */
int	disk_overlay_copy(const char *dir, const char *from, const char *to,
	    unsigned int n, enum proto_error *cls, char *err, size_t errlen);
/*
 * All of src into dst (both regular files; dst empty): extents shared
 * where the file system can (FICLONE), else src's data extents copied,
 * its holes kept and its length the same; by the kernel
 * (copy_file_range) where it can, else read and written here, so that
 * src and dst may be on different file systems.  In the caller's
 * thread.  0 or -errno.
 */
int	disk_overlay_copy_fd(int src, int dst);
/*
 * Rename the overlay of disk n of VM from to VM to's (vm.rename): -EEXIST
 * when to has one, 0 when from has none.  dir is synced.
 */
int	disk_overlay_rename(const char *dir, const char *from, const char *to,
	    unsigned int n, enum proto_error *cls, char *err, size_t errlen);

#endif
