/*
 * The worker's side of a cloud image (daemon/cloud-image/cloud-module.h): the
 * kernel, initrd and command line a guest's disk's own boot
 * configuration gives, and cloud-init's seed as one more disk.  Both
 * load the cloud module, on the loop's thread while the worker sets the
 * guest up: after it gave up its privileges, before its filter.  The
 * disk itself is read in a reader process of its own (disk-reader.h).
 */
#ifndef VMMD_CLOUD_BOOT_H
#define VMMD_CLOUD_BOOT_H

#include <stddef.h>
#include <json-c/json.h>

#include "blk-image.h"
#include "start-params.h"
#include "worker.h"

/*
 * Load the cloud module into w->cloud, while files can still be opened
 * by name (before the sandbox's filter).  0, or -errno with err filled.
 */
int	cloud_boot_prepare(struct worker *w, char *err, size_t errlen);
/*
 * The start's boot disk (bd), on the disk whose chain is fds (formats,
 * n of them: the descriptors worker.boot passed): a disk reader started
 * (disk-reader.h) into w->reader, before the worker opens any disk of
 * its own and loads its filter; w->cloud prepared.  0, or -errno with
 * err filled.
 */
int	cloud_boot_read_start(struct worker *w,
	    const struct start_boot_disk *bd,
	    const int *fds, const enum blk_image_format *formats,
	    unsigned int n, char *err, size_t errlen);
/*
 * The reader's choice: its kernel and initrd in memory files that
 * w->kernel and w->initrd name (/proc/self/fd/N, read again at each
 * guest reset), w->cmdline and w->kernel_name set, w->reader gone.
 * *choice: an object for worker.boot's answer (the rule, why, the
 * files, the command line).  0, or -errno with err filled (-ENOENT: no
 * kernel found, err naming what was searched).
 */
int	cloud_boot_read_finish(struct worker *w, struct json_object **choice,
	    char *err, size_t errlen);
/*
 * The start's seed, w->cloud prepared: the NoCloud ISO image made
 * in a memory file and added, read-only, as the disk after w's others; its instance-id
 * into iid.  0, or -errno with err filled.
 */
int	cloud_boot_seed(struct worker *w, const struct start_seed *seed,
	    char *iid, size_t iidlen, char *err, size_t errlen);

#endif
