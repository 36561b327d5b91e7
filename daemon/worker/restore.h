/*
 * A guest started from a snapshot (vm.restore): the machine is built
 * from the definition as at any start, then, before any vCPU runs, its
 * RAM is mapped from the snapshot's memory file (copy-on-write: the
 * files must stay as they are while the guest runs) and its state
 * loaded in machine-state.h's order.  Anything that does not match the
 * machine (another RAM layout, another vCPU count, another device set,
 * a section a table refuses) is refused with the reason, and the guest
 * does not start.  A restored guest gets a new VM generation ID,
 * announced to it before it runs: it may be one of several clones.  Only the first machine: a reset after it boots the
 * guest afresh.
 */
#ifndef VMMD_WORKER_RESTORE_H
#define VMMD_WORKER_RESTORE_H

#include <stddef.h>

#include <stdint.h>

#include "dev-state.h"

struct start_params;
struct worker;

/*
 * Section "devices.clock": the devices' VM clock at the snapshot
 * (machine_devices_clock), which their saved deadlines count in.
 */
struct restore_devclock {
	uint64_t vm_clock_ns;
};
extern const struct dev_state_table restore_devclock_table;

/*
 * Take the snapshot's descriptors from sp (all three or none; name for
 * messages) for the first machine: 0, or -EINVAL with err.
 */
int	restore_take(struct worker *w, const struct start_params *sp,
	    char *err, size_t errlen);
/*
 * Restore w->machine, built and paused, its vCPU threads not started:
 * 0, or -errno with err; the snapshot is let go either way.  Nothing to
 * do without one.
 */
int	restore_apply(struct worker *w, char *err, size_t errlen);
/*
 * The sections of r (its state only: the RAM is the caller's) into
 * w->machine, paused, and w->nvram: the machine's and the devices' in
 * machine-state.h's order, then the variables.  0, or -errno with err.
 * restore_apply's second half, and a live migration's last
 * (worker/migrate-in.c, whose reader holds the sections it received).
 */
struct snap_reader;
int	restore_sections(struct worker *w, const struct snap_reader *r,
	    char *err, size_t errlen);
/* Let the snapshot go, if it was not used. */
void	restore_free(struct worker *w);
/*
 * A fresh VM generation ID (vmgenid.h): 16 random bytes, at the start
 * and at every restore, so that no two guests, nor a guest and its past,
 * share one.  0 or -errno.
 */
int	restore_vmgenid_fresh(uint8_t id[16]);

#endif
