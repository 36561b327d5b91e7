/*
 * A snapshot of the reference guest, stopped and restored (the linux
 * suite's snapshot step).  The guest runs on an overlay disk with a
 * network card; ls_check_restore() starts a shell loop in it that
 * appends numbered lines to a file on an ext2 file system of that disk,
 * lets it run, notes the guest's date and how far the loop got, and
 * takes `vmctl snapshot NAME DIR` (not --keep-running: the VM stops).
 * Two clones of it then run side by side, each restored with `vmctl
 * restore DIR --as NAME-cN --net tap=...` on a TAP of its own: each
 * one's shell answers, and once its virtio_net driver took the device
 * again (the restored kernel keeps the MAC it read at boot) its eth0 has
 * the clone's own MAC; they are deleted.  Then `vmctl restore NAME DIR`:
 * the shell answers on the console, the loop went on from where it was,
 * the file is whole (every line complete, numbered 1 to N without a gap
 * or a repeat), and the guest's `date` did not go backwards.
 */
#ifndef LSNAPSHOT_H
#define LSNAPSHOT_H

#include <stdbool.h>

#include "lguest.h"

/*
 * The above with vm booted (its disk vda, empty) and dir an empty
 * directory for the snapshot: whether it got through (the checks say
 * what failed).
 */
bool	ls_check_restore(struct lg_vm *vm, lg_check_fn check, const char *dir);
/* The snapshot's files in dir, and dir, removed (quietly). */
void	ls_remove(const char *dir);

#endif
