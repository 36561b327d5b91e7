/*
 * A snapshot's disks: which are frozen into the snapshot's directory
 * and which are shared, the freeze itself, and a restore's overlays.
 *
 * Frozen: a disk with "overlay": true that the guest writes to
 * (disk-overlay.h).  Its overlay holds everything the guest wrote over
 * its base; at vm.snapshot, once the worker has saved the RAM and
 * flushed the disks and while the guest is still paused, that overlay
 * becomes DIR/disk-N.qcow2: a hard link when DIR is on the overlay's
 * file system (no byte is copied, whatever the disk's size), else a
 * sparse copy (the overlay's data extents, holes kept; a file cannot be
 * moved across file systems without copying it).  Either way the file
 * is the client's, mode 0400, and nothing writes to it again: a fresh
 * overlay, made beforehand in the disk home over DIR/disk-N.qcow2, is
 * passed to the worker (worker.disk_push), which puts it on top of the
 * disk's chain while the guest is paused, so the guest's next write
 * lands there.  Then the fresh overlay takes the overlay's name and the
 * definition names DIR/disk-N.qcow2 as the disk's base.
 *
 * Shared: every other disk (raw, read-only, or a qcow2 image of the
 * client's that is not an overlay): named in the manifest by its path;
 * the snapshot does not hold it.
 *
 * Restore: a frozen disk's image is checked (below), and the VM gets a
 * new overlay of its own over it, so that a snapshot restored twice
 * gives two VMs writing to two overlays, and the snapshot's files stay
 * as they are.
 *
 * Library-like: no logging; errors are -errno with *cls and one line in
 * err for the client, as vm-files.h's.
 */
#ifndef VMMD_VM_SNAPDISKS_H
#define VMMD_VM_SNAPDISKS_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"
#include "snap-manifest.h"
#include "vmconfig.h"

struct access_cred;
struct json_object;

struct vm_snapdisks {
	char *dir;			/* the snapshot's directory */
	int dirfd;			/* borrowed */
	char *disksdir;			/* borrowed: the disk home */
	const char *vm;			/* borrowed: the VM's name */
	uid_t uid;			/* the frozen files' owner, or -1 */
	gid_t gid;
	unsigned int ndisks;
	struct snap_mdisk rec[CONFIG_DISKS_MAX];
	char path[CONFIG_DISKS_MAX][24];	/* rec[].path's storage */
	char *shared[CONFIG_DISKS_MAX];	/* a shared disk's path, owned */
	/* A frozen disk's overlay (read-only), its fresh one (read-write,
	 * at a temporary name until commit), -1 for a shared disk. */
	int old_fd[CONFIG_DISKS_MAX];
	int new_fd[CONFIG_DISKS_MAX];
	bool made[CONFIG_DISKS_MAX];	/* DIR/disk-N.qcow2 is ours */
	bool pushed[CONFIG_DISKS_MAX];	/* the worker writes to new_fd */
};

/*
 * Before the worker is asked: sd filled for def's disks (what each is,
 * its size and chain's depth, read with cred's rights as a start would),
 * a frozen disk's overlay opened and its fresh overlay made.  dirfd and
 * dir: the snapshot's directory, open.  uid: the owner the frozen files
 * get (-1: the daemon's).  On failure nothing is left made.
 */
int	vm_snapdisks_prepare(struct vm_snapdisks *sd, const struct vm_def *def,
	    const char *disksdir, const char *dir, int dirfd,
	    const struct access_cred *cred, uid_t uid, gid_t gid,
	    enum proto_error *cls, char *err, size_t errlen);
/* How many frozen disks sd has. */
unsigned int vm_snapdisks_frozen(const struct vm_snapdisks *sd);
/*
 * After the worker's answer (the guest paused, its disks flushed): each
 * frozen disk's overlay into DIR/disk-N.qcow2, linked or copied, synced,
 * given to the owner, mode 0400, and its length recorded.
 */
int	vm_snapdisks_freeze(struct vm_snapdisks *sd, enum proto_error *cls,
	    char *err, size_t errlen);
/*
 * After the worker put disk n on its fresh overlay (mark it pushed):
 * for every pushed disk, the fresh overlay takes the overlay's name and
 * def's disk names DIR/disk-N.qcow2 (qcow2) as its base.  The caller
 * saves def.  A disk not pushed keeps its overlay and its DIR file goes.
 */
int	vm_snapdisks_commit(struct vm_snapdisks *sd, struct vm_def *def,
	    enum proto_error *cls, char *err, size_t errlen);
/* Undo what was made (no disk pushed), close and free. */
void	vm_snapdisks_abort(struct vm_snapdisks *sd);
void	vm_snapdisks_free(struct vm_snapdisks *sd);
/*
 * The reply's "snapshot_disks": one line per disk for the user ("disk 0
 * (virtio): frozen into DIR/disk-0.qcow2", "disk 1 (virtio): shared,
 * not frozen: /path (raw)").
 */
struct json_object *vm_snapdisks_json(const struct vm_snapdisks *sd);

/*
 * The restore's disk step, for VM name (the one restored into) whose
 * definition is def: the snapshot's disk records m (its manifest) are
 * checked against def's disks (as many, the same buses) and each frozen
 * image in dir (dirfd) is checked (vm-snapdisks.c says what: not its data); then
 * each frozen disk gets a fresh overlay of name's in disksdir over it,
 * and def's disk names it (absolute, from dir: the directory may have
 * moved) as its base, with "overlay": true.  A shared disk must be the
 * one def has (its path).  The caller saves def.  Nothing is made
 * unless every check passed.
 */
int	vm_snapdisks_restore(const char *name, struct vm_def *def,
	    const struct snap_manifest *m, const char *disksdir,
	    const char *dir, int dirfd, const struct access_cred *cred,
	    enum proto_error *cls, char *err, size_t errlen);

#endif
