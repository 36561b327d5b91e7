/*
 * The memory balloon with the reference guest (the linux suite's balloon
 * step): a guest of LB_GUEST_MIB with "balloon": true, whose
 * virtio_balloon driver takes free page reporting.  memhog (memhog.c,
 * in the guest's initramfs) takes LB_HOG_MIB and the worker's resident
 * memory (VmRSS) rises by about that; memhog frees it, and once the
 * guest's kernel has reported the free pages (whole blocks of its
 * pageblock order, about 2 s after they came free, in batches) the
 * worker's RSS falls by at least LB_BACK_MIB: the samples are printed as
 * they come, as a timeline.  A second memhog gets the memory again.
 * Then vm.info's balloon statistics against the guest's /proc/meminfo,
 * and `vmctl balloon NAME SIZE`: the guest's available memory falls by
 * about what the balloon took, and comes back when it deflates.
 */
#ifndef LBALLOON_H
#define LBALLOON_H

#include <stdbool.h>

#include "lguest.h"

/*
 * The guest's RAM: room for memhog's 400 MiB with the busybox system
 * beside it, and small enough for the nested test host (2 GiB, with its
 * own initramfs and programs in RAM).
 */
#define LB_GUEST_MIB	768
#define LB_HOG_MIB	400
/* What must come back once memhog has freed its memory. */
#define LB_BACK_MIB	300

/*
 * vm runs the reference guest with LB_GUEST_MIB and a balloon: every
 * check above.  Returns whether they all passed.
 */
bool	lb_check_guest(struct lg_vm *vm, lg_check_fn check);

#endif
