/*
 * worker.migrate_out: the running guest onto a live migration's stream
 * (migrate/mig-stream.h) to a worker on another vmmd, by pre-copy.
 *
 * A thread of its own sends the stream, so that the loop (the devices'
 * timers, the console, the display) and the guest run on meanwhile:
 * KVM logs the guest's writes to its RAM and the devhost the devices'
 * (ram-log.h, on for the migration only), all RAM is sent but its zero pages, then rounds of
 * the pages written since the last, until what is left would take less
 * than the downtime bound at the rate the last round measured, or
 * MIGRATE_OUT_ROUNDS rounds (then the guest is paused anyway: it did
 * not converge, and the answer says so).  Then the loop pauses the
 * guest as a snapshot does (snapshot.h's sections, a busy device waited
 * for), the thread sends the last written pages, every section and
 * END, and waits for the target's "running".
 *
 * Until that word the guest is ours: any error, EOF, refusal or silence
 * before it resumes the guest here (if it ran) and the request is
 * answered with the reason.  After it the guest stays paused, its
 * state is the target's, and the answer gives the figures: vmmd stops
 * the VM.  Each round is reported as a "vm.migration" event.
 */
#ifndef VMMD_WORKER_MIGRATE_OUT_H
#define VMMD_WORKER_MIGRATE_OUT_H

#include <stdbool.h>

struct json_object;
struct worker;

#define MIGRATE_OUT_DOWNTIME_MS	300
#define MIGRATE_OUT_ROUNDS	30
/* No byte moving on the stream for this long: the target is gone. */
#define MIGRATE_OUT_IDLE_MS	30000
/* A stopped migration's word to the target, given up after this. */
#define MIGRATE_OUT_STOP_MS	1000

/*
 * Starts the migration asked by request id (borrowed) onto fd (taken),
 * the guest paused for at most downtime_ms if it can be; the reply is
 * sent when it ends.  One at a time.
 */
void	migrate_out_start(struct worker *w, struct json_object *id, int fd,
	    unsigned int downtime_ms);
/*
 * Whether a migration holds the guest paused: its last step is under
 * way, or it ended and the guest is the target's (w->migrated).  The
 * guest must then not run here again: vm.resume and vm.snapshot are
 * refused.  migrate_out_busy(): any migration under way.
 */
bool	migrate_out_holds(const struct worker *w);
bool	migrate_out_busy(const struct worker *w);

/*
 * vm.migrate_cancel: the migration under way stops before the switch,
 * the guest running on here.  Its thread gives up at its next frame
 * (at once while it waits for the pause), tells the target "cancelled
 * at the source" with an ERROR frame, and the migration's request is
 * answered as failed, "cancelled"; a guest paused for the last step
 * runs again.  0 (also when asked already), -ENOENT (no migration),
 * -EALREADY (it ended, the answer on its way), -EBUSY (END is sent:
 * the target may run the guest already, the switch goes on).  The
 * loop's thread.
 */
int	migrate_out_stop(struct worker *w);

/*
 * The machine is about to go (a reset, the end): a migration under
 * way is ended first, failed, its thread joined.  Nothing without one.
 */
void	migrate_out_cancel(struct worker *w);

#endif
