/*
 * The supervisor's link to one worker process: starting it, talking
 * the control protocol to it over a socketpair, passing it descriptors,
 * killing it and reaping it.
 *
 * A link knows nothing of VMs: it reports what the worker says and does
 * to its owner (the VM list) through struct wlink_ops.  Everything here
 * runs on the event loop thread; no callback frees the link it was
 * called for, except the exited callback, which must.
 */
#ifndef VMMD_WORKER_LINK_H
#define VMMD_WORKER_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "worker-exit.h"
#include "worker-fds.h"
#include "worker-msg.h"

struct event_base;
struct wlink;
struct wlink_reaper;

struct wlink_ops {
	/*
	 * An event from the worker, checked against worker-msg.h; data
	 * (NULL: none) is borrowed.
	 */
	void (*event)(void *owner, enum wmsg_event event,
	    struct json_object *data);
	/* The worker closed its socket: no more requests can be sent. */
	void (*hangup)(void *owner);
	/* The deadline set with wlink_deadline_set() has passed. */
	void (*deadline)(void *owner);
	/*
	 * The worker was reaped with wait status: whatever it wrote
	 * before it went has been delivered, and every request it left
	 * unanswered has had its callback with an error.  The owner must
	 * wlink_free() the link here.
	 */
	void (*exited)(void *owner, int status);
};

/*
 * Reply to a request: ret is the "return" object or error the "error"
 * object (both borrowed).  A worker that goes away answers every
 * request still open with an internal error.
 */
typedef void (*wlink_reply_cb)(struct json_object *ret,
    struct json_object *error, void *arg);

/*
 * Where an error a reply callback got comes from.  What matters for a
 * request that passed a client connection: whether the worker may have
 * written to it.
 */
enum wlink_error_origin {
	/* The worker's own error reply. */
	WLINK_ERROR_WORKER,
	/* The worker went away without ever reading the request: it was
	 * never written to it, or the worker exited by itself, which it
	 * does only after answering every request it read. */
	WLINK_ERROR_UNREAD,
	/* The worker went away (killed, crashed) or answered nonsense:
	 * it may have read the request. */
	WLINK_ERROR_LOST,
};
enum wlink_error_origin wlink_error_origin(struct json_object *error);

/*
 * The reaper: SIGCHLD handling for every link of a supervisor, which
 * finds the link of each child reaped.
 */
struct wlink_reaper *wlink_reaper_new(struct event_base *base);
/* Workers spawned from now on run without their sandbox (vmmd -U). */
void	wlink_reaper_set_unconfined(struct wlink_reaper *r, bool unconfined);
/*
 * Workers spawned from now on each become a uid of first..last of their
 * own (vmmd-worker -u): the lowest that no worker of this reaper, spawned
 * or adopted and not reaped yet, runs as.  first 0: none (the default),
 * for a vmmd that is not root or runs its workers unconfined.
 */
void	wlink_reaper_set_uids(struct wlink_reaper *r, uid_t first,
	    uid_t last);
/* Every link must be gone. */
void	wlink_reaper_free(struct wlink_reaper *r);
/* Links whose worker has not been reaped yet. */
unsigned int wlink_reaper_count(const struct wlink_reaper *r);

/*
 * The worker program: vmmd-worker beside the supervisor's own binary
 * (beside, may be NULL), else the installed one.  NULL with err set
 * ("... not found (looked for ...)") if neither is executable.
 */
const char *wlink_program(const char *beside, char *err, size_t errlen);

/*
 * Start the worker program path for the VM name (for its argv and our
 * log messages), with the channel as WLINK_CHANNEL_FD, adopt_fd as
 * WLINK_ADOPT_FD, the sandbox's pipe as WLINK_REPORT_FD and passed[i]
 * as WLINK_KVM_FD + i for i < npassed (-1: none there); the caller
 * keeps its own copies of adopt_fd and passed[].  Nothing can fail after
 * the fork: on error nothing is running and err says why (-EAGAIN: every
 * uid of the range is taken).
 */
int	wlink_spawn(struct wlink_reaper *r, const char *path,
	    const char *name, int adopt_fd, const int *passed,
	    unsigned int npassed, const struct wlink_ops *ops, void *owner,
	    struct wlink **wp, char *err, size_t errlen);
/*
 * Take on a worker another supervisor started (worker.adopt answered
 * on fd, with ids up to next_id used): fd is the connection to its own
 * socket and pidfd (pidfd_open(2)) watches its exit, since it is not
 * our child.  Takes both (closed on failure).  0 or -ENOMEM.  uid is the
 * one it runs as, as the kernel says (worker-sock.h), never as it says:
 * one of the reaper's range is handed to no other worker while this one
 * lives, so that no two guests share a uid.
 *
 * Its exit status is not ours to collect: exited() gets the one its
 * worker.exit event announced, SIGKILL if we sent one, or else 0 with
 * wlink_status_known() false.  Signals go through the pidfd, so a pid
 * reused after its exit is never hit.
 */
int	wlink_adopt(struct wlink_reaper *r, int fd, int pidfd, pid_t pid,
	    uid_t uid, const char *name, uint64_t next_id,
	    const struct wlink_ops *ops, void *owner, struct wlink **wp);
bool	wlink_adopted(const struct wlink *w);
/* From the exited callback: whether its status means anything. */
bool	wlink_status_known(const struct wlink *w);
/*
 * Let go of a worker that still runs (its guest outlives us): close the
 * channel, answer the requests still open with an internal error (the
 * worker may have read them), forget it and free the link.  No other
 * callback runs.
 */
void	wlink_release(struct wlink *w);
/* Only once reaped (from the exited callback), or before a spawn. */
void	wlink_free(struct wlink *w);
/*
 * Once reaped: the system call the worker's sandbox killed it for, as
 * the worker named it on WLINK_REPORT_FD, or NULL.
 */
const char *wlink_violation(const struct wlink *w);

pid_t	wlink_pid(const struct wlink *w);
/* The uid of the reaper's range it runs as (once sandboxed), or 0. */
uid_t	wlink_uid(const struct wlink *w);
/* The socket is still open: requests can be sent. */
bool	wlink_connected(const struct wlink *w);
/* Reaped: requests still open are being answered with errors. */
bool	wlink_is_reaped(const struct wlink *w);
/* The SIGKILL sent, WORKER_KILL_NONE if none. */
enum worker_kill wlink_killed(const struct wlink *w);

/* Send command (args taken; NULL = {}); -EPIPE once disconnected. */
int	wlink_request(struct wlink *w, enum wmsg_request what,
	    struct json_object *args, wlink_reply_cb cb, void *arg);
/*
 * The same, with a duplicate of fd (SCM_RIGHTS) on the line: it waits
 * until every line queued before it is written.  The caller keeps fd.
 */
int	wlink_request_fd(struct wlink *w, enum wmsg_request what,
	    struct json_object *args, int fd, wlink_reply_cb cb, void *arg);
/* The same with nfds descriptors, 1 to WMSG_REQ_FDS_MAX, in order. */
int	wlink_request_fds(struct wlink *w, enum wmsg_request what,
	    struct json_object *args, const int *fds, unsigned int nfds,
	    wlink_reply_cb cb, void *arg);

/* One deadline per link: the deadline callback runs once it passes. */
void	wlink_deadline_set(struct wlink *w, unsigned int seconds);
void	wlink_deadline_clear(struct wlink *w);
/* Time left until the deadline; false if none is set. */
bool	wlink_deadline_left(struct wlink *w, struct timeval *left);

/*
 * SIGKILL, once; why decides how the exit is classified.  A kill the
 * kernel refuses is logged as an error and tried again every second
 * until it goes through or the worker is reaped.
 */
void	wlink_kill(struct wlink *w, enum worker_kill why);
/*
 * Kill and wait for the worker, blocking; the exited callback runs.  A
 * refused kill returns at once, the worker still there.
 */
void	wlink_kill_wait(struct wlink *w, enum worker_kill why);

#endif
