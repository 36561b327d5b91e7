/*
 * Disk images for the vblk test guest (tests/guests/vblk.c), made and
 * checked with qemu-img (Debian's qemu-utils): the raw base it expects,
 * whether a guest's run went through, and whether an image holds what
 * the guest writes.  Shared by the kvm tests of qcow2 disks and of thin
 * clones.
 */
#ifndef VMMD_VBLK_DISKS_H
#define VMMD_VBLK_DISKS_H

#include <stdbool.h>
#include <sys/types.h>

#include "harness.h"

/* The base's size: 128 sectors. */
#define VDISK_BASE_BYTES	65536

/* qemu-img's path, or NULL when it is not installed. */
const char	*vdisk_qemu_img_path(void);
/*
 * qemu-img ARGS... (NULL-terminated): its exit status; a failure's
 * output is said in a TAP comment.
 */
int		 vdisk_qemu_img(const char *arg, ...);
/* A raw base at path: "vmmd-disk-0" at sector 0, sector 3 all ones. */
int		 vdisk_make_base(const char *path, mode_t mode);
/*
 * Whether the run-th run of the vblk guest of vm (in d) read the base,
 * wrote, flushed and read back, and passed.
 */
bool		 vdisk_guest_passes(struct h_daemon *d, const char *vm, int run);
/*
 * Whether image is clean (qemu-img check) and reads (qemu-img convert,
 * into scratch, removed after) as the base with the guest's pattern in
 * sectors 1-2 and zeroes in sector 3.
 */
bool		 vdisk_holds_writes(const char *image, const char *scratch);

#endif
