/*
 * vmmd's own handle on each written disk's lock while a worker runs the
 * guest, so that a snapshot can turn the exclusive lock on the image it
 * froze into a shared one (vm-files.h's locks, vm-snapdisks.h's freeze).
 *
 * Why a handle kept from the start: an OFD lock belongs to the open
 * file description, and only a descriptor of that same description can
 * change it; a file opened again is another description, whose shared
 * lock the exclusive one refuses.  The worker cannot change it either:
 * its sandbox allows no lock command, since seccomp sees fcntl's
 * arguments but not the struct flock they point to, and a worker
 * allowed F_OFD_SETLK to downgrade could as well F_UNLCK its disks
 * and its backing files, letting another guest write what it reads.
 * Nor is the frozen image made another inode (a reflink where the file
 * system has them, else a copy): a copy costs the paused guest time in
 * proportion to what it wrote, where the hard link costs nothing.  So
 * vmmd keeps, from the start, a duplicate of the worker's descriptor of
 * each disk the guest writes, and after worker.disk_push moved the
 * disk onto a fresh overlay, converts the old top's lock to shared
 * (F_OFD_SETLK converts in place: at no moment is the image unlocked)
 * and keeps the fresh overlay's instead.  Nothing writes the frozen
 * image again, so other guests may read it beside the original: a
 * clone restored from the snapshot takes a shared lock on it as its
 * backing file.  Every image written to stays one guest's alone.
 *
 * The handles go when the worker is reaped: the lock then goes with the
 * worker's last descriptor, as before.  A vmmd that adopted a running
 * guest (vm-adopt.c) has no handle on its disks: a snapshot of it keeps
 * the exclusive lock, and a clone beside it is refused as "in use", as
 * ever (never the other way round).
 *
 * A guest that arrives by migration (vm_files_lock_disks() arriving)
 * may find a written disk still locked by its source, on the same host
 * or through shared storage's locks: that disk's handle is kept without
 * a lock ("pending") and vm_disklock_take() takes the exclusive lock
 * once the source let it go (vm_disklock_drop() there, when the target
 * said the guest runs; its worker's end at the latest).  Until then the
 * source's paused guest writes nothing, and the lock keeps others off.
 * The migration trusts that the holder is its source: a disk another
 * guest on the target writes is only found then, and logged.
 *
 * Library-like: no logging.
 */
#ifndef VMMD_VM_DISKLOCK_H
#define VMMD_VM_DISKLOCK_H

#include <stdbool.h>

#include "vmconfig.h"

struct vm_files;

struct vm_disklock {
	int fd[CONFIG_DISKS_MAX];	/* -1: no handle */
	/* fd[i] holds no lock yet: its source's still does. */
	bool pending[CONFIG_DISKS_MAX];
};

/* No handles. */
void	vm_disklock_init(struct vm_disklock *l);
/*
 * At a start, once the worker has its descriptors: a duplicate of f's
 * descriptor of each disk of def the guest writes.  A duplicate that
 * cannot be made is left out (that disk's lock then stays exclusive).
 */
void	vm_disklock_keep(struct vm_disklock *l, const struct vm_def *def,
	    const struct vm_files *f);
/*
 * The exclusive lock of each pending disk, where its holder let it go:
 * how many are still pending (0: none), or -errno of another failure
 * (that disk is no longer pending then).
 */
int	vm_disklock_take(struct vm_disklock *l);
/*
 * The guest runs on elsewhere (a migration's source): every handle's
 * lock dropped, and the handles closed, so that the target may take the
 * locks before this worker is gone.
 */
void	vm_disklock_drop(struct vm_disklock *l);
/*
 * Disk i moved onto the fresh overlay new_fd (the descriptor the worker
 * was given, locked exclusively): its old top image's lock becomes
 * shared, and the handle is new_fd's duplicate from now on.  0, or
 * -errno (the old lock stays as it was; no handle is kept then).
 */
int	vm_disklock_pushed(struct vm_disklock *l, unsigned int i, int new_fd);
/* The worker is gone: every handle closed. */
void	vm_disklock_release(struct vm_disklock *l);

#endif
