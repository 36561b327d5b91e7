/*
 * worker.snapshot: the guest paused, its machine's state and its RAM
 * written into the two files vmmd made for it (snap-file.h's
 * snap_write_begin: the worker names no file), and the manifest's
 * text handed back for vmmd to check and commit.
 */
#ifndef VMMD_WORKER_SNAPSHOT_H
#define VMMD_WORKER_SNAPSHOT_H

#include <stdbool.h>

struct dev_state_buf;
struct json_object;
struct machine;
struct nvram;
struct snap_section;
struct worker;

/*
 * Every section of the paused machine m (and of nv, a "uefi" VM's
 * variables, or NULL) into bufs, in the order the header comment of
 * snapshot.c gives, each named in secs (names: the vCPUs' names'
 * storage); bufs, names and secs hold SNAPSHOT_SECTIONS(m) entries.
 * *nsecs: how many.  0 or -errno with err: -EBUSY when a device has
 * work in flight (try again later).  A live migration's last step
 * (worker/migrate-out.c) sends the same sections.
 */
#define SNAPSHOT_SECTIONS(m)	(7 + (m)->nvcpus)
int	snapshot_sections(struct machine *m, struct nvram *nv,
	    struct dev_state_buf *bufs, char (*names)[16],
	    struct snap_section *secs, size_t *nsecs, char *err,
	    size_t errlen);

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
 * Meanwhile w->snapshot is the job, and worker.resume is refused.
 */
void	snapshot_start(struct worker *w, struct json_object *id,
	    int memory_fd, int state_fd, bool resume);

#endif
