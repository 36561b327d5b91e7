/*
 * A guest's RBD disks (start format "rbd"): the RBD module loaded for
 * the first one, the image opened through it with the configuration
 * the supervisor read (a memory file, /proc/self/fd/N: no file is
 * opened by name).  All of it after the worker gave up its privileges
 * and before its sandbox: loading the module maps files, librados reads
 * its configuration by that path and starts its threads.  What librbd
 * reads then is the cluster's metadata of the image, not the guest's
 * bytes.  The sandbox's filter then allows librbd's new TCP connections
 * (sandbox.h's network) and counts its threads.  Loop thread.
 */
#ifndef VMMD_RBD_DISK_H
#define VMMD_RBD_DISK_H

#include <stdbool.h>
#include <stddef.h>

#include "blk-rbd.h"
#include "start-params.h"
#include "worker.h"

/*
 * Each of sp's RBD disks i into w->rbd[i] and w->cfg.backends.disk[i];
 * their descriptors are closed whatever the result.  0 (also with no
 * RBD disk), or -errno with err saying why ("disk rbd:vms/web1: ... is
 * locked by client.4123 at ...").  Before the sandbox.
 */
int	rbd_disk_open_all(struct worker *w, const struct start_params *sp,
	    char *err, size_t errlen);
/* Disk i drained and closed, its lock released; nothing if none. */
void	rbd_disk_close(struct worker *w, unsigned int i);
/* How many RBD disks w has open. */
unsigned int	rbd_disk_count(const struct worker *w);
/* Disk i's state and figures (a zeroed st if it is none).  Any thread. */
void	rbd_disk_stats(const struct worker *w, unsigned int i,
	    struct blk_rbd_stats *st);
/* A state's name: "connected" or "failed". */
const char	*rbd_disk_state_name(const struct worker *w,
	    enum blk_rbd_state s);

#endif
