/*
 * The supervisor's VMs and their worker processes.
 *
 * A struct vm exists for every definition (stored or transient).  While
 * a guest runs, the VM has a worker: a vmmd-worker process started with
 * fork+exec, to which the supervisor talks the control protocol over a
 * socketpair.  This module owns the VM state machine; it reports state
 * changes to subscribers through control.c and completes the pending
 * replies that wait on a worker.
 */
#ifndef VMMD_PROC_H
#define VMMD_PROC_H

#include <stdbool.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "proto.h"
#include "vmconfig.h"

struct access_cred;
struct event;
struct event_base;
struct control;
struct pending;
struct worker;

enum vm_state {
	VM_DEFINED,		/* never started since created or loaded */
	VM_STARTING,		/* worker spawned, guest not running yet */
	VM_RUNNING,
	VM_PAUSED,
	VM_STOPPING,		/* stop requested, worker still alive */
	VM_STOPPED,		/* ran and ended cleanly */
	VM_CRASHED,		/* the worker died */
};

/* How long a worker may take to report the guest running. */
#define PROC_BOOT_TIMEOUT	30	/* seconds */
/* Grace period for guests when the daemon itself is stopped. */
#define PROC_EXIT_GRACE		10	/* seconds */

TAILQ_HEAD(pending_list, pending);

struct vm {
	TAILQ_ENTRY(vm) entry;
	struct vmmd *d;
	struct vm_def *def;
	enum vm_state state;
	enum vm_state prev_state;	/* before the current start */
	struct worker *w;		/* NULL while no worker exists */
	struct pending *start_waiter;	/* vm.start waiting for the boot */
	struct pending_list stop_waiters; /* vm.stop waiting for the exit */
};

TAILQ_HEAD(vm_list, vm);

/* The supervisor as a whole: one per process, passed around. */
struct vmmd {
	struct event_base *base;
	char *statedir;
	char *vmsdir;			/* STATEDIR/vms */
	char *consoledir;		/* STATEDIR/console */
	char *default_kernel;		/* for VMs without a kernel */
	char *worker_self;		/* vmmd-worker next to our binary */
	struct control *ctl;		/* NULL while shutting down */
	struct vm_list vms;		/* sorted by name */
	unsigned int nworkers;
	struct event *sigchld_ev;
	bool shutting_down;
	/* Called once shutting down and the last worker is gone. */
	void (*idle_cb)(struct vmmd *d);
};

const char *vm_state_name(enum vm_state s);

/* Registry. */
struct vm *vm_find(struct vmmd *d, const char *name);
struct vm *vm_add(struct vmmd *d, struct vm_def *def);	/* takes def */
void	vm_remove(struct vm *vm);	/* no worker allowed */
bool	vm_has_worker(const struct vm *vm);
pid_t	vm_pid(const struct vm *vm);

/* The VM object of the protocol ("name", "state", ...). */
struct json_object *vm_to_json(const struct vm *vm);

/* Set the state and tell subscribers; reason may be NULL. */
void	vm_set_state(struct vm *vm, enum vm_state s, const char *reason);

/*
 * The kernel and initrd of a VM, opened by the supervisor (O_CLOEXEC)
 * and handed to its worker as descriptors, so that the worker loads
 * exactly the files that were checked.  -1 when absent.
 */
struct vm_files {
	int kernel_fd;
	int initrd_fd;
};

/*
 * Open def's kernel and initrd for a client with credentials cred.
 * Unless cred is NULL or uid 0, the client must be able to read them
 * itself (see access.h): if not, the error class is permission_denied
 * and err says "kernel: PATH: not readable by uid N".  The kernel must
 * be one the boot loaders accept.  With start, a VM without a kernel
 * gets the daemon's default guest (trusted: not checked against cred);
 * without it (vm.create) only the files def names are opened.
 * Errors as below; on success close f with vm_files_close().
 */
int	vm_files_open(struct vmmd *d, const struct vm_def *def,
	    const struct access_cred *cred, bool start, struct vm_files *f,
	    enum proto_error *cls, char *err, size_t errlen);
void	vm_files_close(struct vm_files *f);

/*
 * Errors of the operations below: a negative errno, with *cls and err
 * (one line) set for the client's error reply.  On success the pending
 * reply p (if any) is owned by the VM and completed later.
 *
 * vm_start() opens the files with vm_files_open() for cred (the client
 * that asked; NULL for the daemon itself).
 */
int	vm_start(struct vm *vm, const struct access_cred *cred,
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
typedef void (*worker_reply_cb)(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg);
int	vm_worker_request(struct vm *vm, const char *command,
	    struct json_object *args, worker_reply_cb cb, void *arg);

/*
 * Hand the client connection fd over to the worker for vm.console: fd
 * is duplicated and sent with worker.console {client_id: id}; the
 * caller then closes its own copy.
 */
int	vm_console_pass(struct vm *vm, int fd, struct json_object *id,
	    enum proto_error *cls, char *err, size_t errlen);

/* Supervisor-wide. */
int	proc_init(struct vmmd *d);		/* SIGCHLD handling */
void	proc_shutdown(struct vmmd *d);		/* stop every guest */
void	proc_kill_all(struct vmmd *d);		/* SIGKILL every worker */
void	proc_fini(struct vmmd *d);		/* free VMs, reap workers */
const char *proc_worker_path(struct vmmd *d);	/* NULL if none found */

#endif
