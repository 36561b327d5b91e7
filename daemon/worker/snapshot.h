/*
 * worker.snapshot: the guest paused, its machine's state and its RAM
 * written into the two files vmmd made for it (snap-file.h's
 * snap_write_begin: the worker names no file), and the manifest's
 * text handed back for vmmd to check and commit.
 */
#ifndef VMMD_WORKER_SNAPSHOT_H
#define VMMD_WORKER_SNAPSHOT_H

#include <stdbool.h>

struct json_object;
struct worker;

/*
 * Starts the snapshot asked by request id (borrowed) on memory_fd and
 * state_fd (taken: closed when done).  The reply is sent on the link
 * when the snapshot is written or refused, possibly later, from the
 * loop: a device with work in flight (-EBUSY from its save) is asked
 * again once the loop has run, SNAPSHOT_BUSY_TRIES times at most.
 * Afterwards the guest runs again if resume and it ran before; it
 * stays paused otherwise.  Before the answer every disk written to is
 * flushed (blk_file_flush): what the files hold then is the disk as
 * the RAM expects it, which vmmd freezes (worker.disk_push moves the
 * disk's writes onto a new image while the guest is still paused).
 */
void	snapshot_start(struct worker *w, struct json_object *id,
	    int memory_fd, int state_fd, bool resume);

#endif
