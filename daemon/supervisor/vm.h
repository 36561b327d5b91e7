/*
 * The supervisor's VMs and their state machine.
 *
 * A struct vm exists for every definition (stored or transient).  While
 * a guest runs, the VM has a worker, reached through its link
 * (worker-link.h).  This module owns the VM state machine: it decides
 * what each start, stop, worker event and worker exit means for the VM,
 * completes the pending replies that wait on it, and reports what
 * happens through the hooks the supervisor's main sets.  Everything
 * here runs on the event loop thread.
 */
#ifndef VMMD_VM_H
#define VMMD_VM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>
#include <json-c/json.h>

#include "client-answer.h"
#include "counters.h"
#include "pending.h"
#include "proto.h"
#include "vm-disklock.h"
#include "vmconfig.h"
#include "worker-msg.h"

struct access_cred;
struct dconf_tap_rule;
struct control;
struct event;
struct event_base;
struct nbd_dial;
struct vmmd;
struct wlink;
struct wlink_reaper;

enum vm_state {
	VM_DEFINED,		/* never started since created or loaded */
	VM_STARTING,		/* worker spawned, guest not running yet */
	VM_RUNNING,
	VM_PAUSED,
	VM_STOPPING,		/* stop requested, worker still alive */
	VM_STOPPED,		/* ran and ended cleanly */
	VM_CRASHED,		/* the worker died */
};

/* Default grace period for guests when the daemon itself is stopped. */
#define VM_EXIT_GRACE		10	/* seconds */

/* What the VM list knows about its current worker's run. */
struct vm_run {
	bool booted;			/* worker.boot answered {} */
	off_t log_start;		/* console log size when it began */
	bool stop_requested;
	bool daemon_exit;		/* the stop is vmmd's own exit */
	int64_t started_ms;		/* CLOCK_REALTIME of the worker's start */
	uint32_t vsock_cid;		/* the guest's, 0: no vsock */
	struct json_object *boot_error;	/* worker.boot's error object */
	/* From the disk: what the worker chose and why (its answer). */
	struct json_object *boot_from;
	char seed_iid[256];		/* cloud-init's instance-id, or "" */
};

struct vm {
	TAILQ_ENTRY(vm) entry;
	struct vmmd *d;
	struct vm_def *def;
	enum vm_state state;
	enum vm_state prev_state;	/* before the current start */
	char *reason;			/* of the last state change, or NULL */
	struct wlink *w;		/* NULL while no worker exists */
	struct vm_run run;		/* of w; reset at every start */
	struct vm_disklock disklock;	/* w's disks' locks (vm-disklock.h) */
	struct pending *start_waiter;	/* vm.start waiting for the boot */
	struct pending_list stop_waiters; /* vm.stop waiting for the exit */
	/* vm.migrate_cancel stopped the migration out under way: its end
	 * says "cancelled" (cmd-migrate.c). */
	bool migrate_cancelled;
	/* Reconnects of w's NBD disks under way (nbd-dial.h), by disk:
	 * the VM's, freed when they answer or when w goes. */
	struct nbd_dial *nbd_dial[CONFIG_DISKS_MAX];
	/* Arrived by migration: retries of the disks' locks its source
	 * still held (cmd-migrate.c), NULL when none are pending. */
	struct event *disklock_wait;
	unsigned int disklock_tries;
};

TAILQ_HEAD(vm_list, vm);

/*
 * How the VM list tells the layer above what happens.  Set by the
 * supervisor's main before the first VM starts.
 */
struct vm_hooks {
	/* An event for subscribers ("vm.state", events a worker sends,
	 * "vm.deleted" for a transient VM that ended); takes ev. */
	void (*event)(struct vmmd *d, struct json_object *ev);
	/* Shutting down, and the last worker is gone. */
	void (*idle)(struct vmmd *d);
};

/* The supervisor as a whole: one per process, passed around. */
struct vmmd {
	struct event_base *base;
	char *statedir;
	char *vmsdir;			/* STATEDIR/vms */
	char *consoledir;		/* STATEDIR/console */
	char *disksdir;			/* STATEDIR/disks (disk-overlay.h) */
	char *workersdir;		/* RUNDIR/workers (worker-sock.h) */
	char *default_kernel;		/* for VMs without a kernel */
	char *passt;			/* user-mode networking (vmmd.conf) */
	char *virtiofsd;		/* shared directories (vmmd.conf) */
	char *bios;			/* SeaBIOS's image (vmmd.conf) */
	char *vgabios;			/* its display's ROM (vmmd.conf) */
	char *ovmf_code;		/* OVMF's image (vmmd.conf) */
	char *ovmf_vars;		/* its variables (vmmd.conf) */
	char *nvramdir;			/* STATEDIR/nvram (vm-nvram.h) */
	/* vmmd.conf's tap_allow rules (main's, for the daemon's life). */
	const struct dconf_tap_rule *tap_rules;
	size_t ntap_rules;
	uint64_t console_log_max;	/* bytes; rotated beyond, 0: never */
	char *worker_self;		/* vmmd-worker next to our binary */
	struct control *ctl;		/* NULL while shutting down */
	struct vm_list vms;		/* sorted by name */
	struct wlink_reaper *reaper;	/* every worker's link */
	bool unconfined;		/* -U: workers without a sandbox */
	uid_t worker_uid_first;		/* worker_uids (vmmd.conf(5)) */
	uid_t worker_uid_last;
	/* How long a worker may take to report the guest running, in
	 * seconds (vmmd.conf(5) boot_timeout, boot_disk_timeout). */
	unsigned int boot_timeout;
	unsigned int boot_disk_timeout;	/* booting from the guest's disk */
	struct answer_list answers;	/* client-answer.h */
	bool shutting_down;
	struct vm_hooks hooks;
	struct counters counters;	/* for /metrics (counters.h) */
	/* vsock's Unix sockets for users (vsock-proxy.h); NULL: none. */
	struct vsock_proxy *vsock_proxy;
};

const char *vm_state_name(enum vm_state s);

/* Registry. */
struct vm *vm_find(struct vmmd *d, const char *name);
struct vm *vm_add(struct vmmd *d, struct vm_def *def);	/* takes def */
void	vm_remove(struct vm *vm);	/* no worker allowed */
/*
 * Remove the overlays of the VM's overlay disks (disk-overlay.h), as it
 * goes for good (vm.delete, a transient VM's end); failures are logged.
 * Not part of vm_remove(): a VM is also removed from the list when vmmd
 * exits, and its overlays stay for the next one.
 */
void	vm_overlays_remove(struct vm *vm);
/*
 * Give a VM at rest a new definition (vm.redefine, vm.rename): the old
 * one is freed, def taken, the list kept in name order.
 */
void	vm_replace_def(struct vm *vm, struct vm_def *def);
/* STATEDIR/console/NAME.log (its rotated part: PATH.1): 0 or -errno. */
int	vm_console_log_path(const struct vmmd *d, const char *name, char *buf,
	    size_t size);
/* Defined, stopped or crashed: no worker, free to start or delete. */
bool	vm_at_rest(const struct vm *vm);
bool	vm_has_worker(const struct vm *vm);
pid_t	vm_pid(const struct vm *vm);

/* The VM object of the protocol ("name", "state", ...). */
struct json_object *vm_to_json(const struct vm *vm);

/*
 * A vm_reply_cb for the requests whose answer is the VM's object: arg is
 * the client's pending reply, completed with the worker's error as it
 * is, else with vm_to_json(vm).  On the event loop thread, as every
 * vm_reply_cb.
 */
void	vm_reply_object(struct vm *vm, struct json_object *ret,
	    struct json_object *error, void *arg);

/* Set the state and tell subscribers; reason may be NULL. */
void	vm_set_state(struct vm *vm, enum vm_state s, const char *reason);

/*
 * A VM's owner (vmconfig.h): set from the creating client's credentials;
 * whether cred is its owner or root; and the credentials its files are
 * opened with when no client asks (autostart): the owner's, or for a
 * definition with no owner an unprivileged user's that opens only files
 * root owns (uid VM_NOBODY).  cred's groups point into def.
 */
#define VM_NOBODY	((uid_t)65534)
void	vm_owner_set(struct vm_def *def, const struct access_cred *cred);
bool	vm_owner_is(const struct vm_def *def, const struct access_cred *cred);
void	vm_owner_cred(const struct vm_def *def, struct access_cred *cred);

/*
 * Errors of the operations below: a negative errno, with *cls and err
 * (one line) set for the client's error reply.  On success the pending
 * reply p (if any) is owned by the VM and completed later.
 *
 * vm_start() opens the files with vm_files_open() for cred (the client
 * that asked; NULL for the daemon itself); break_lock: the exclusive
 * lock of an RBD disk that another client holds is broken, that client
 * blocklisted (its host is known dead: vmctl start --break-lock).
 */
int	vm_start(struct vm *vm, const struct access_cred *cred,
	    bool break_lock, struct pending *p, enum proto_error *cls,
	    char *err, size_t errlen);
/*
 * vm_start() from a snapshot: snap_fds are its manifest, memory and
 * state files (the caller keeps them; the worker gets copies), which
 * the worker checks and restores before the guest runs; snap_name
 * names the snapshot in messages.
 */
int	vm_restore(struct vm *vm, const struct access_cred *cred,
	    const int *snap_fds, const char *snap_name, struct pending *p,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * vm_start() of a guest arriving by live migration on fd (the caller
 * keeps it; the worker gets a copy): its RAM and state come on the
 * stream before it runs (worker/migrate-in.c), and it is running once
 * they are all there, the stream said so and the worker said
 * "running" on it.  The worker must answer within VM_MIGRATE_TIMEOUT
 * seconds.
 */
#define VM_MIGRATE_TIMEOUT	3600
int	vm_migrate_in(struct vm *vm, const struct access_cred *cred, int fd,
	    struct pending *p, enum proto_error *cls, char *err,
	    size_t errlen);
int	vm_stop(struct vm *vm, bool force, unsigned int timeout,
	    struct pending *p, enum proto_error *cls, char *err,
	    size_t errlen);

/*
 * Send command (with args, taken; NULL = {}) to the VM's worker; cb runs
 * with the "return" object or the "error" object (both borrowed) once
 * the reply comes, or with an internal error if the worker goes away.
 */
typedef void (*vm_reply_cb)(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg);
int	vm_worker_request(struct vm *vm, enum wmsg_request what,
	    struct json_object *args, vm_reply_cb cb, void *arg);
/* The same with descriptors (duplicated; the caller keeps its own). */
int	vm_worker_request_fds(struct vm *vm, enum wmsg_request what,
	    struct json_object *args, const int *fds, unsigned int nfds,
	    vm_reply_cb cb, void *arg);

/*
 * Hand the client connection fd over to the worker for vm.console: fd
 * is duplicated and sent with worker.console {client_id: id}; the
 * caller then closes its own copy.  Returns 0 then.
 *
 * The request came while the guest ran, and the connection is passed
 * once the client's output is written: should the guest have ended by
 * then, or end before the worker takes the connection, vmmd answers the
 * client itself as the worker would have just before the end: the
 * reply, the last CONSOLE_REPLAY_SIZE bytes of the run's console log,
 * then EOF.  Returns 1 when that is done at once (on a copy of fd).
 */
int	vm_console_pass(struct vm *vm, int fd, struct json_object *id,
	    enum proto_error *cls, char *err, size_t errlen);
/*
 * The same answer for a VM that is gone (removed since), whose run's
 * output began at log_start in its log: returns 1.
 */
int	vm_console_answer_gone(struct vmmd *d, const char *name,
	    off_t log_start, int fd, struct json_object *id);
/*
 * The same for vm.screenshot, with worker.screenshot {client_id: id}:
 * the worker writes the reply line and the PNG on the connection.  A
 * VM without a display is refused here (bad_state).  Should the worker
 * go away without taking the connection, vmmd writes a bad_state error
 * line on it and closes it.
 */
int	vm_screenshot_pass(struct vm *vm, int fd, struct json_object *id,
	    enum proto_error *cls, char *err, size_t errlen);


/* Whether the definition gives the guest a screen (vnc). */
bool	vm_has_display(const struct vm *vm);

/* Where noVNC's page is served from (Debian's novnc package). */
#define VM_NOVNC_DIR		"/usr/share/novnc"

/*
 * Take on a worker a previous vmmd started (worker-sock.h; takes f's
 * descriptors and info): the VM of that name, or, when its definition
 * is gone (a transient VM), a transient one made from the definition
 * the worker kept, runs again under this supervisor.  0 or -errno.
 */
struct wsock_found;
int	vm_adopt(struct vmmd *d, struct wsock_found *f);

/* Supervisor-wide. */
int	vm_list_init(struct vmmd *d);		/* SIGCHLD handling */
unsigned int vm_list_workers(const struct vmmd *d);	/* not reaped yet */
/* Ask every guest to shut down, kill what still runs timeout s later. */
void	vm_list_stop_all(struct vmmd *d, unsigned int timeout);
void	vm_list_kill_all(struct vmmd *d);	/* SIGKILL every worker */
/* Let go of every worker, leaving its guest running (SIGQUIT). */
void	vm_list_release(struct vmmd *d);
void	vm_list_fini(struct vmmd *d);		/* free VMs, reap workers */

#endif
