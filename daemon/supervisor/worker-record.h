/*
 * What the supervisor itself knows of a worker it started, kept where a
 * later supervisor finds it: DIR/NAME.json beside the worker's socket
 * (worker-sock.h; the runtime directory's "workers", mode 0700), owner
 * only, replaced atomically.  The worker never sees the file.
 *
 * A supervisor that adopts the worker believes this record, not the
 * worker's answer to worker.adopt, for the vsock CID it gave the guest
 * and for the definition of a VM it has no stored copy of (a transient
 * one): a worker whose guest took it over could otherwise name another
 * guest's CID, or make itself a definition with another owner.  The
 * worker's uid comes from neither: the kernel says it (worker-sock.h).
 *
 * Written at every start, once the worker exists; removed with its
 * socket.  The worker's pid is kept too, so that a record left beside
 * the socket of a later worker (one an older vmmd started, which writes
 * none) is known for stale.
 */
#ifndef VMMD_WORKER_RECORD_H
#define VMMD_WORKER_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

/* A record as read back. */
struct wrec {
	pid_t pid;			/* the worker's */
	uid_t uid;			/* what it was started as; 0: itself */
	uint32_t vsock_cid;		/* 0: no vsock */
	struct json_object *definition;	/* as config_parse() takes it */
};

/*
 * Write DIR/NAME.json: pid, uid, cid and definition (not taken; the
 * definition with its owner, as config_parse()'s CONFIG_OWNER reads it
 * back).  A temporary file in DIR, mode 0600, renamed over the old
 * record: a reader finds the old record or the new, whole.  No fsync:
 * the runtime directory does not outlive a reboot, nor do the workers.
 * 0, or -errno with err set.
 */
int	wrec_write(const char *dir, const char *name, pid_t pid, uid_t uid,
	    uint32_t vsock_cid, struct json_object *definition, char *err,
	    size_t errlen);

/*
 * Read DIR/NAME.json into *rec (rec->definition is the caller's to
 * put).  -ENOENT when there is none; another -errno (err set) when it
 * is not a regular file of ours that only we can write, is too large,
 * or is not a record.
 */
int	wrec_read(const char *dir, const char *name, struct wrec *rec,
	    char *err, size_t errlen);

/* Remove DIR/NAME.json if it is there; failures are logged. */
void	wrec_remove(const char *dir, const char *name);

#endif
