/*
 * virtio-fs with the reference guest: a directory of the test host
 * shared through the virtiofsd vmmd starts for the guest (its initramfs
 * loads virtiofs), mounted in the guest with mount -t virtiofs.  Files
 * cross both ways (read back on the other side), dd's conv=fsync
 * succeeds, a rename on either side shows on the other, 64 MiB cross
 * each way whole (CRC-32 on both sides); and a read-only share refuses
 * the guest's writes while its reads go on.
 */
#ifndef LFS_H
#define LFS_H

#include <stdbool.h>

#include "lguest.h"

/* The tag the scenario's share has (the guest mounts it by it). */
#define LF_TAG	"share"

/*
 * Fills dir (the share's directory on the test host) with what the
 * guest reads: 0 or -1 with a diagnostic.
 */
int	lf_prepare(const char *dir);

/*
 * vm runs with dir shared as LF_TAG, writable: every check of the
 * writable share above.  Returns whether they all passed.
 */
bool	lf_check_writable(struct lg_vm *vm, lg_check_fn check,
	    const char *dir);

/*
 * vm runs with the same dir (after lf_check_writable) shared
 * read-only: the guest reads what the writable step left, and its
 * writes fail with EROFS and leave nothing.
 */
bool	lf_check_readonly(struct lg_vm *vm, lg_check_fn check,
	    const char *dir);

#endif
