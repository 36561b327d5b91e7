/*
 * A guest arriving by live migration (vm.migrate_in): the machine is
 * built from the definition as at any start, then, paused and before
 * any vCPU runs, its RAM and state are read from the stream
 * (migrate/mig-stream.h) the other worker sends: every frame checked
 * before it is used (pages inside guest RAM, checksums, section names
 * and sizes), the sections loaded as a snapshot's are (restore.h) once
 * the stream says it is complete.  Only when the guest runs does the
 * stream hear "running": until then the source keeps its guest, and
 * anything wrong here (a refusal, EOF, no byte for MIGRATE_IN_IDLE_MS,
 * the supervisor gone) fails the start, so the guest runs on exactly
 * one side.  Once it runs, each network card is announced on its link
 * (machine_net_announce()).
 *
 * The stream is read on the loop's thread while worker.boot is
 * answered, blocking it: nothing else runs in this worker yet (no
 * vCPU, no device), and the supervisor's end is watched meanwhile.
 */
#ifndef VMMD_WORKER_MIGRATE_IN_H
#define VMMD_WORKER_MIGRATE_IN_H

#include <stdbool.h>
#include <stddef.h>

struct start_params;
struct worker;

/* No byte on the stream for this long: the source is gone. */
#define MIGRATE_IN_IDLE_MS	30000

/* Take sp's stream for the first machine, if any: 0 or -EINVAL. */
int	migrate_in_take(struct worker *w, const struct start_params *sp,
	    char *err, size_t errlen);
/* Whether the first machine comes from a stream. */
bool	migrate_in_pending(const struct worker *w);
/*
 * Read w->machine's RAM and state from the stream, the machine paused
 * and its vCPUs not started: 0, or -errno with err (the source is told
 * why, and the stream closed).
 */
int	migrate_in_apply(struct worker *w, char *err, size_t errlen);
/* The guest runs: say so on the stream, and let it go. */
void	migrate_in_running(struct worker *w);
/* Let the stream go, if it was not used (the start failed). */
void	migrate_in_free(struct worker *w);

#endif
