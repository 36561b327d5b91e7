/*
 * VMs and their state machine (see vm.h).
 *
 * A start opens the VM's kernel and initrd as the client who asked
 * (vm-files.h), spawns a worker with them (worker-link.h) and sends it
 * worker.boot; the VM runs once that is answered.  A stop asks the
 * guest to shut down and kills the worker when the deadline passes.
 * The VM's new state is known for sure only when the worker has been
 * reaped, so replies that depend on it (vm.stop, a failed vm.start)
 * are completed from there, after worker-exit.h has said what the end
 * means.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "access.h"
#include "console-log.h"
#include "disk-overlay.h"
#include "log.h"
#include "nbd-dial.h"
#include "vm-files.h"
#include "vm-nvram.h"
#include "vm-start.h"
#include "vm-internal.h"
#include "vm.h"
#include "worker-exit.h"
#include "worker-link.h"
#include "worker-record.h"
#include "worker-sock.h"
#include "vsock-proxy.h"

#define VM_EOF_GRACE		2	/* s between EOF and SIGKILL */

/* A request of vm_worker_request(), until its reply. */
struct vm_request {
	struct vm *vm;
	vm_reply_cb cb;
	void *arg;
};

/*
 * A client connection passed to a worker, until the worker answers:
 * our own copy of it, and what is needed to answer the client should
 * the worker go away without having taken it.  Owns no VM: the VM may
 * be gone by then.
 */
struct vm_handover {
	struct vmmd *d;
	char *name;			/* the VM's */
	const char *what;		/* "console", "screenshot" */
	bool console;
	off_t log_start;		/* of the run, in the console log */
	int fd;
	struct json_object *id;		/* the client's request id */
};

static void	vm_nbd_dials_cancel(struct vm *vm);

static const char *const vm_state_names[] = {
	[VM_DEFINED] = "defined",
	[VM_STARTING] = "starting",
	[VM_RUNNING] = "running",
	[VM_PAUSED] = "paused",
	[VM_STOPPING] = "stopping",
	[VM_STOPPED] = "stopped",
	[VM_CRASHED] = "crashed",
};


const char *
vm_state_name(enum vm_state s)
{
	if ((unsigned int)s >=
	    sizeof(vm_state_names) / sizeof(vm_state_names[0]))
		return "unknown";
	return vm_state_names[s];
}

static void
vm_emit(struct vmmd *d, struct json_object *ev)
{
	if (d->hooks.event != NULL)
		d->hooks.event(d, ev);
	else
		json_object_put(ev);
}

/* Registry ------------------------------------------------------------- */

struct vm *
vm_find(struct vmmd *d, const char *name)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (strcmp(vm->def->name, name) == 0)
			return vm;
	return NULL;
}

struct vm *
vm_add(struct vmmd *d, struct vm_def *def)
{
	struct vm *vm, *it;

	vm = calloc(1, sizeof(*vm));
	if (vm == NULL) {
		config_def_free(def);
		return NULL;
	}
	vm->d = d;
	vm->def = def;
	vm->state = VM_DEFINED;
	vm_disklock_init(&vm->disklock);
	TAILQ_INIT(&vm->stop_waiters);
	/* Kept sorted: vm.list answers in name order. */
	TAILQ_FOREACH(it, &d->vms, entry)
		if (strcmp(it->def->name, def->name) > 0)
			break;
	if (it != NULL)
		TAILQ_INSERT_BEFORE(it, vm, entry);
	else
		TAILQ_INSERT_TAIL(&d->vms, vm, entry);
	return vm;
}

void
vm_overlays_remove(struct vm *vm)
{
	char err[PATH_MAX + 128];

	if (vm->d->disksdir != NULL &&
	    disk_overlay_remove(vm->d->disksdir, vm->def, err,
	    sizeof(err)) < 0)
		log_error("VM '%s': removing its overlays: %s", vm->def->name,
		    err);
}

void
vm_remove(struct vm *vm)
{
	struct pending *p;

	if (vm == NULL)
		return;
	/* Callers only remove VMs without a worker, so nothing waits. */
	if (vm->start_waiter != NULL)
		pending_error(vm->start_waiter, PROTO_ERR_INTERNAL,
		    "VM removed");
	while ((p = TAILQ_FIRST(&vm->stop_waiters)) != NULL) {
		TAILQ_REMOVE(&vm->stop_waiters, p, entry);
		pending_error(p, PROTO_ERR_INTERNAL, "VM removed");
	}
	vm_nbd_dials_cancel(vm);
	TAILQ_REMOVE(&vm->d->vms, vm, entry);
	if (vm->disklock_wait != NULL)
		event_free(vm->disklock_wait);
	vm_disklock_release(&vm->disklock);
	config_def_free(vm->def);
	free(vm->reason);
	free(vm);
}

void
vm_replace_def(struct vm *vm, struct vm_def *def)
{
	struct vm *it;

	config_def_free(vm->def);
	vm->def = def;
	/* Kept sorted, as vm_add() does: the name may be new. */
	TAILQ_REMOVE(&vm->d->vms, vm, entry);
	TAILQ_FOREACH(it, &vm->d->vms, entry)
		if (strcmp(it->def->name, def->name) > 0)
			break;
	if (it != NULL)
		TAILQ_INSERT_BEFORE(it, vm, entry);
	else
		TAILQ_INSERT_TAIL(&vm->d->vms, vm, entry);
}

bool
vm_at_rest(const struct vm *vm)
{
	switch (vm->state) {
	case VM_DEFINED:
	case VM_STOPPED:
	case VM_CRASHED:
		return true;
	default:
		return false;
	}
}

/* The error of an operation the VM's state does not allow: returns rc. */
static int
vm_refuse(const struct vm *vm, int rc, enum proto_error *cls, char *err,
    size_t errlen)
{
	*cls = PROTO_ERR_BAD_STATE;
	/* "not running" says more than "defined" or "stopped". */
	snprintf(err, errlen, "VM '%s' is %s%s%s", vm->def->name,
	    vm_at_rest(vm) ? "not running (" : "", vm_state_name(vm->state),
	    vm_at_rest(vm) ? ")" : "");
	return rc;
}

bool
vm_has_display(const struct vm *vm)
{
	return vm->def->vnc_addr != NULL;
}

bool
vm_has_worker(const struct vm *vm)
{
	return vm->w != NULL;
}

pid_t
vm_pid(const struct vm *vm)
{
	return vm->w != NULL ? wlink_pid(vm->w) : 0;
}

int
vm_console_log_path(const struct vmmd *d, const char *name, char *buf,
    size_t size)
{
	return console_log_path(d->consoledir, name, buf, size);
}

/* Where each overlay disk's overlay is, in the disks of obj. */
static void
vm_overlays_json(const struct vm *vm, struct json_object *obj)
{
	struct json_object *disks;
	char path[PATH_MAX];

	if (vm->d->disksdir == NULL ||
	    !json_object_object_get_ex(obj, "disks", &disks))
		return;
	for (unsigned int i = 0; i < vm->def->ndisks; i++)
		if (vm->def->disks[i].overlay &&
		    disk_overlay_path(vm->d->disksdir, vm->def->name, i, path,
		    sizeof(path)) == 0)
			json_object_object_add(json_object_array_get_idx(disks,
			    i), "overlay_path", json_object_new_string(path));
}


/* A firmware VM's files: its image and, for "uefi", its NVRAM file. */
static void
vm_firmware_json(const struct vm *vm, struct json_object *obj)
{
	const char *image = vm_start_firmware_image(vm->d, vm->def);
	char path[PATH_MAX];

	if (image != NULL)
		json_object_object_add(obj, "firmware_image",
		    json_object_new_string(image));
	if (vm->def->firmware == VM_FIRMWARE_UEFI && vm->d->nvramdir != NULL &&
	    vm_nvram_path(vm->d->nvramdir, vm->def->name, path,
	    sizeof(path)) == 0)
		json_object_object_add(obj, "nvram",
		    json_object_new_string(path));
}

/*
 * Whether the worker program a start runs now changed after this guest's
 * worker started: a package upgrade renames a new vmmd-worker into place,
 * and the guest runs the program it started with until its next start.
 * The file's change time says so whoever the worker runs as (its
 * /proc/PID/exe is not ours to read under the unit's sandbox).
 */
static bool
vm_worker_replaced(const struct vm *vm)
{
	char err[128];
	const char *path;
	struct stat st;

	path = wlink_program(vm->d->worker_self, err, sizeof(err));
	if (path == NULL || stat(path, &st) < 0)
		return false;
	return (int64_t)st.st_ctim.tv_sec * 1000 +
	    st.st_ctim.tv_nsec / 1000000 > vm->run.started_ms;
}

struct json_object *
vm_to_json(const struct vm *vm)
{
	char path[PATH_MAX];
	struct json_object *obj;

	obj = config_to_json(vm->def, 0);
	if (obj == NULL)
		return NULL;
	json_object_object_add(obj, "state",
	    json_object_new_string(vm_state_name(vm->state)));
	if (vm->w != NULL) {
		struct timespec now;
		int64_t up;

		json_object_object_add(obj, "pid",
		    json_object_new_int64(wlink_pid(vm->w)));
		/* The worker's, so that an adopted guest keeps its age. */
		clock_gettime(CLOCK_REALTIME, &now);
		up = (int64_t)now.tv_sec - vm->run.started_ms / 1000;
		json_object_object_add(obj, "started",
		    json_object_new_int64(vm->run.started_ms / 1000));
		json_object_object_add(obj, "uptime",
		    json_object_new_int64(up > 0 ? up : 0));
		json_object_object_add(obj, "worker_replaced",
		    json_object_new_boolean(vm_worker_replaced(vm)));
		if (vm->run.vsock_cid != 0)
			json_object_object_add(obj, "vsock_cid",
			    json_object_new_int64(vm->run.vsock_cid));
		if (vm->run.boot_from != NULL)
			json_object_object_add(obj, "boot_from",
			    json_object_get(vm->run.boot_from));
		if (vm->run.seed_iid[0] != '\0')
			json_object_object_add(obj, "seed_instance_id",
			    json_object_new_string(vm->run.seed_iid));
		if (vm->run.vsock_cid != 0 && vm->def->vsock_socket &&
		    vm->d->vsock_proxy != NULL &&
		    vsock_proxy_path(vm->d->vsock_proxy, vm->def->name, path,
		    sizeof(path)) == 0)
			json_object_object_add(obj, "vsock_socket",
			    json_object_new_string(path));
	}
	if (vm->reason != NULL)
		json_object_object_add(obj, "reason",
		    json_object_new_string(vm->reason));
	if (vm_console_log_path(vm->d, vm->def->name, path, sizeof(path)) == 0)
		json_object_object_add(obj, "console_log",
		    json_object_new_string(path));
	vm_overlays_json(vm, obj);
	vm_firmware_json(vm, obj);
	return obj;
}

void
vm_reply_object(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error != NULL) {
		pending_forward_error(arg, error);
		return;
	}
	pending_reply(arg, vm_to_json(vm));
}

void
vm_set_state(struct vm *vm, enum vm_state s, const char *reason)
{
	struct json_object *data;

	if (vm->state == s)
		return;
	log_info("VM '%s': %s -> %s%s%s", vm->def->name,
	    vm_state_name(vm->state), vm_state_name(s),
	    reason != NULL ? ": " : "", reason != NULL ? reason : "");
	vm->state = s;
	free(vm->reason);
	vm->reason = reason != NULL ? strdup(reason) : NULL;
	data = json_object_new_object();
	if (data == NULL)
		return;
	json_object_object_add(data, "state",
	    json_object_new_string(vm_state_name(s)));
	if (reason != NULL)
		json_object_object_add(data, "reason",
		    json_object_new_string(reason));
	vm_emit(vm->d, proto_event("vm.state", vm->def->name, data));
}

/* Requests ------------------------------------------------------------- */

static void
vm_request_reply(struct json_object *ret, struct json_object *error,
    void *arg)
{
	struct vm_request *r = arg;
	struct json_object *e = NULL, *stopped = NULL;

	/*
	 * A worker that went away unanswered because it was being stopped
	 * did what was asked of the VM, not something wrong: the request
	 * lost a race with the stop, and the VM's state says why.
	 */
	if (error != NULL && r->vm->state == VM_STOPPING &&
	    wlink_error_origin(error) != WLINK_ERROR_WORKER) {
		e = proto_error(NULL, PROTO_ERR_BAD_STATE, "VM '%s' was "
		    "stopped before the request was carried out",
		    r->vm->def->name);
		if (e != NULL &&
		    json_object_object_get_ex(e, "error", &stopped))
			error = stopped;
	}
	r->cb(r->vm, ret, error, r->arg);
	json_object_put(e);
	free(r);
}

int
vm_worker_request(struct vm *vm, enum wmsg_request what,
    struct json_object *args, vm_reply_cb cb, void *arg)
{
	return vm_worker_request_fds(vm, what, args, NULL, 0, cb, arg);
}

int
vm_worker_request_fds(struct vm *vm, enum wmsg_request what,
    struct json_object *args, const int *fds, unsigned int nfds,
    vm_reply_cb cb, void *arg)
{
	struct vm_request *r;
	int rc;

	if (vm->w == NULL) {
		json_object_put(args);
		return -EPIPE;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		json_object_put(args);
		return -ENOMEM;
	}
	r->vm = vm;
	r->cb = cb;
	r->arg = arg;
	rc = nfds == 0 ? wlink_request(vm->w, what, args, vm_request_reply,
	    r) : wlink_request_fds(vm->w, what, args, fds, nfds,
	    vm_request_reply, r);
	if (rc < 0)
		free(r);
	return rc;
}

/* Log a worker's error answer to a request nobody else waits for. */
static void
vm_log_reply(struct vm *vm, const char *what, struct json_object *error)
{
	if (error != NULL)
		log_warn("VM '%s': %s: %s", vm->def->name, what,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
}

/* Answering clients ourselves -------------------------------------- */

/* vm.console answered from the log of name's run (console-log.h). */
static void
vm_console_answer(struct vmmd *d, const char *name, off_t log_start, int fd,
    struct json_object *id)
{
	console_log_answer(d->base, &d->answers, d->consoledir, name,
	    log_start, fd, id);
}

int
vm_console_answer_gone(struct vmmd *d, const char *name, off_t log_start,
    int fd, struct json_object *id)
{
	int copy;

	if ((copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		log_warn("VM '%s': console: %s", name, strerror(errno));
		return -errno;
	}
	vm_console_answer(d, name, log_start, copy, id);
	return 1;
}

/* Handing client connections over ------------------------------------- */

static void
vm_handover_free(struct vm_handover *h)
{
	free(h->name);
	json_object_put(h->id);
	free(h);
}

/*
 * The worker's answer to worker.console or worker.screenshot.  The
 * client has had nothing from the worker unless it took the connection
 * or may have (it went away after reading the request): then our copy
 * is only closed.  Else we answer the client.
 */
static void
vm_handover_reply(struct json_object *ret, struct json_object *error,
    void *arg)
{
	struct vm_handover *h = arg;
	struct json_object *v;
	const char *desc = "worker error";
	int cls = PROTO_ERR_INTERNAL;

	if (error == NULL) {
		close(h->fd);
		vm_handover_free(h);
		return;
	}
	if (json_object_object_get_ex(error, "desc", &v) &&
	    json_object_is_type(v, json_type_string))
		desc = json_object_get_string(v);
	switch (wlink_error_origin(error)) {
	case WLINK_ERROR_WORKER:
		/* Refused, with nothing written: the client gets why. */
		log_warn("VM '%s': %s handover failed: %s", h->name, h->what,
		    desc);
		if (json_object_object_get_ex(error, "class", &v) &&
		    (cls = proto_error_lookup(json_object_get_string(v))) < 0)
			cls = PROTO_ERR_INTERNAL;
		answer_send(h->d->base, &h->d->answers, h->fd,
		    proto_error(h->id, (enum proto_error)cls, "%s", desc),
		    NULL, 0);
		break;
	case WLINK_ERROR_UNREAD:
		/* The guest ended before the worker got to it. */
		if (h->console) {
			vm_console_answer(h->d, h->name, h->log_start, h->fd,
			    h->id);
			break;
		}
		log_info("VM '%s': %s handover came after the guest's end",
		    h->name, h->what);
		answer_send(h->d->base, &h->d->answers, h->fd,
		    proto_error(h->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is not running", h->name), NULL, 0);
		break;
	case WLINK_ERROR_LOST:
		log_warn("VM '%s': %s handover failed: %s", h->name, h->what,
		    desc);
		close(h->fd);
		break;
	}
	vm_handover_free(h);
}

/*
 * Whether the VM's worker can take a client connection: while the guest
 * runs, is paused, or is shutting down with its worker alive.
 */
static bool
vm_takes_clients(const struct vm *vm)
{
	if (vm->w == NULL || !wlink_connected(vm->w) ||
	    wlink_killed(vm->w) != WORKER_KILL_NONE)
		return false;
	return vm->state == VM_RUNNING || vm->state == VM_PAUSED ||
	    vm->state == VM_STOPPING;
}

/*
 * Pass the client connection fd with worker.console or
 * worker.screenshot {client_id: id}, keeping a copy of it until the
 * worker answers; what names it in messages.
 */
static int
vm_pass_client(struct vm *vm, enum wmsg_request req, const char *what,
    int fd, struct json_object *id, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct vm_handover *h;
	struct json_object *args;
	int rc;

	if (!vm_takes_clients(vm))
		return vm_refuse(vm, -EINVAL, cls, err, errlen);
	*cls = PROTO_ERR_INTERNAL;
	h = calloc(1, sizeof(*h));
	args = json_object_new_object();
	if (h == NULL || args == NULL ||
	    (h->name = strdup(vm->def->name)) == NULL) {
		if (h != NULL)
			free(h->name);
		free(h);
		json_object_put(args);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->d = vm->d;
	h->what = what;
	h->console = req == WMSG_REQ_CONSOLE;
	h->log_start = vm->run.log_start;
	h->id = json_object_get(id);
	h->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (h->fd < 0) {
		rc = -errno;
		json_object_put(args);
		goto fail;
	}
	wmsg_put(args, WMSG_CLIENT_ID, json_object_get(id));
	rc = wlink_request_fd(vm->w, req, args, fd, vm_handover_reply, h);
	if (rc < 0) {
		close(h->fd);
		goto fail;
	}
	return 0;

fail:
	snprintf(err, errlen, "cannot pass the connection: %s",
	    strerror(-rc));
	vm_handover_free(h);
	return rc;
}

int
vm_console_pass(struct vm *vm, int fd, struct json_object *id,
    enum proto_error *cls, char *err, size_t errlen)
{
	int copy;

	/* A new run starting is not the one the client asked about. */
	if (vm_takes_clients(vm) || vm->state == VM_STARTING)
		return vm_pass_client(vm, WMSG_REQ_CONSOLE, "console", fd, id,
		    cls, err,
		    errlen);
	/* The guest ended, or its worker is on its way out. */
	if ((copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "cannot answer: %s", strerror(errno));
		return -errno;
	}
	vm_console_answer(vm->d, vm->def->name, vm->run.log_start, copy, id);
	return 1;
}

int
vm_screenshot_pass(struct vm *vm, int fd, struct json_object *id,
    enum proto_error *cls, char *err, size_t errlen)
{
	if (!vm_has_display(vm)) {
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "VM '%s' has no display", vm->def->name);
		return -EINVAL;
	}
	return vm_pass_client(vm, WMSG_REQ_SCREENSHOT, "screenshot", fd, id,
	    cls, err, errlen);
}

/* What the worker says ------------------------------------------------- */

/* worker.nbd_fd's reply: nothing to do but note a failure. */
static void
vm_nbd_fd_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	(void)ret;
	(void)arg;
	if (error != NULL)
		log_warn("VM '%s': worker.nbd_fd: %s", vm->def->name,
		    json_object_to_json_string_ext(error,
		    JSON_C_TO_STRING_PLAIN));
}

/*
 * A reconnect's outcome (nbd-dial.h): the connection passed with
 * worker.nbd_fd, or why there is none with worker.nbd_refused.
 */
static void
vm_nbd_dialed(struct nbd_dial *nd, int fd, const char *err, void *arg)
{
	struct vm *vm = arg;
	unsigned int i = nbd_dial_disk(nd);
	struct json_object *args;
	int rc;

	/* Done: the VM's no more, freed once err (its text) is used. */
	vm->nbd_dial[i] = NULL;
	if ((args = json_object_new_object()) == NULL) {
		if (fd >= 0)
			close(fd);
		nbd_dial_free(nd);
		return;
	}
	wmsg_put_int(args, WMSG_NBD_FD_DISK, i);
	if (fd < 0) {
		log_info("VM '%s': %s", vm->def->name, err);
		wmsg_put_str(args, WMSG_NBD_FD_ERROR, err);
		rc = vm_worker_request(vm, WMSG_REQ_NBD_REFUSED, args,
		    vm_nbd_fd_done, NULL);
	} else {
		log_info("VM '%s': disk %u: %s connected again",
		    vm->def->name, i, vm->def->disks[i].path);
		rc = vm_worker_request_fds(vm, WMSG_REQ_NBD_FD, args, &fd, 1,
		    vm_nbd_fd_done, NULL);
		close(fd);	/* the worker has its duplicate */
	}
	if (rc < 0)
		log_warn("VM '%s': worker.nbd_fd: %s", vm->def->name,
		    strerror(-rc));
	nbd_dial_free(nd);
}

/*
 * The worker's NBD disk lost its server (disk.nbd_redial): connect it
 * again as at start, with the owner's rights (no client asks now),
 * without holding up the loop (nbd-dial.h); vm_nbd_dialed() answers.
 * The worker retries with a backoff for a bounded time, each try once
 * answered: a request for a disk whose dial is still under way is
 * that dial's to answer.
 */
static void
vm_nbd_redial(struct vm *vm, struct json_object *data)
{
	int64_t i = wmsg_int(data, WMSG_NBD_REDIAL_DISK, -1);
	struct access_cred cred;
	int rc;

	if (i < 0 || (unsigned int)i >= vm->def->ndisks ||
	    !vm->def->disks[i].nbd) {
		log_warn("VM '%s': disk.nbd_redial for disk %lld, not an NBD "
		    "disk", vm->def->name, (long long)i);
		return;
	}
	if (vm->nbd_dial[i] != NULL) {
		log_debug("VM '%s': disk %lld: a reconnect is under way",
		    vm->def->name, (long long)i);
		return;
	}
	vm_owner_cred(vm->def, &cred);
	rc = nbd_dial_start(vm->d->base, vm->def->disks[i].path,
	    (unsigned int)i, cred.uid == 0 ? NULL : &cred, vm_nbd_dialed, vm,
	    &vm->nbd_dial[i]);
	if (rc < 0)
		log_warn("VM '%s': disk %lld: cannot reconnect: %s",
		    vm->def->name, (long long)i, strerror(-rc));
}

/* The worker is gone, or the VM: its reconnects under way with it. */
static void
vm_nbd_dials_cancel(struct vm *vm)
{
	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++) {
		nbd_dial_free(vm->nbd_dial[i]);
		vm->nbd_dial[i] = NULL;
	}
}

static void
vm_worker_event(void *owner, enum wmsg_event event, struct json_object *data)
{
	struct vm *vm = owner;
	const char *state;

	switch (event) {
	case WMSG_EV_STATE:
		state = wmsg_str(data, WMSG_STATE_STATE, "");
		/* Only the running/paused toggle is the worker's to report;
		 * starting and stopping are the supervisor's. */
		if (strcmp(state, "running") == 0 && (vm->state == VM_PAUSED ||
		    (vm->state == VM_STARTING && vm->run.booted)))
			vm_set_state(vm, VM_RUNNING, NULL);
		else if (strcmp(state, "paused") == 0 &&
		    vm->state == VM_RUNNING)
			vm_set_state(vm, VM_PAUSED, NULL);
		return;
	case WMSG_EV_DISPLAY_CONNECTED:
	case WMSG_EV_DISPLAY_DISCONNECTED:
		/* Who watches a guest's screen is worth a line in the log. */
		log_info("VM '%s': VNC viewer %s (%lld now)", vm->def->name,
		    event == WMSG_EV_DISPLAY_CONNECTED ? "connected" :
		    "disconnected", (long long)wmsg_int(data,
		    WMSG_DISPLAY_CLIENTS, 0));
		break;
	case WMSG_EV_REBOOT:
		log_info("VM '%s': guest reset (%s)", vm->def->name,
		    wmsg_str(data, WMSG_REBOOT_REASON, "unknown"));
		break;
	case WMSG_EV_NBD_REDIAL:
		/* The supervisor's business, no client's. */
		vm_nbd_redial(vm, data);
		return;
	default:
		break;
	}
	/* Passed on as it is, named after the VM. */
	vm_emit(vm->d, proto_event(wmsg_event_name(event), vm->def->name,
	    json_object_get(data)));
}

static void
vm_worker_hangup(void *owner)
{
	struct vm *vm = owner;

	/* An exiting worker is reaped in a moment; one that lives on
	 * without its socket is useless and gets killed.  A stopping one
	 * keeps its stop deadline. */
	if (wlink_killed(vm->w) == WORKER_KILL_NONE &&
	    vm->state != VM_STOPPING)
		wlink_deadline_set(vm->w, VM_EOF_GRACE);
}

static void
vm_worker_deadline(void *owner)
{
	struct vm *vm = owner;

	if (vm->state == VM_STOPPING)
		wlink_kill(vm->w, vm->run.daemon_exit ?
		    WORKER_KILL_DAEMON_EXIT : WORKER_KILL_STOP_TIMEOUT);
	else if (!wlink_connected(vm->w))
		wlink_kill(vm->w, WORKER_KILL_EOF);
	else if (vm->state == VM_STARTING)
		wlink_kill(vm->w, WORKER_KILL_BOOT_TIMEOUT);
}

/* Starting ------------------------------------------------------------- */

/* Seconds the worker has to report the guest running (struct vmmd). */
static unsigned int
vm_boot_timeout(const struct vm *vm)
{
	return config_boot(vm->def) == VM_BOOT_DISK ?
	    vm->d->boot_disk_timeout : vm->d->boot_timeout;
}

/*
 * What worker.boot's answer (or worker.adopt's) says of the boot: the
 * kernel the worker chose from the disk, the seed's instance-id.
 */
void
vm_run_boot_facts(struct vm *vm, struct json_object *o, enum wmsg_field from,
    enum wmsg_field seed)
{
	struct json_object *b = o != NULL ? wmsg_get(o, from) : NULL;

	json_object_put(vm->run.boot_from);
	vm->run.boot_from = b != NULL ? json_object_get(b) : NULL;
	snprintf(vm->run.seed_iid, sizeof(vm->run.seed_iid), "%s",
	    o != NULL ? wmsg_str(o, seed, "") : "");
}

static void
vm_boot_reply(struct json_object *ret, struct json_object *error, void *arg)
{
	struct vm *vm = arg;
	struct pending *p;

	if (vm->w == NULL || (wlink_is_reaped(vm->w) && error != NULL))
		return;		/* vm_worker_exited() reports the failure */
	if (error != NULL) {
		/* The reply waits for the exit, so that the client sees
		 * the VM settled when it gets the error. */
		json_object_put(vm->run.boot_error);
		vm->run.boot_error = json_object_get(error);
		log_warn("VM '%s': boot failed: %s", vm->def->name,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
		wlink_kill(vm->w, WORKER_KILL_BOOT_FAILED);
		return;
	}
	vm->run.booted = true;
	vm_run_boot_facts(vm, ret, WMSG_BOOTED_FROM, WMSG_BOOTED_SEED);
	if (vm->state != VM_STARTING)
		return;		/* a stop came first */
	wlink_deadline_clear(vm->w);
	vm_vsock_serve(vm);
	vm_set_state(vm, VM_RUNNING, "booted");
	if ((p = vm->start_waiter) != NULL) {
		vm->start_waiter = NULL;
		pending_reply(p, vm_to_json(vm));
	}
}

/*
 * The guest runs: its vsock socket for users, if its definition asks.
 * A socket that cannot be made is logged; the guest runs on.
 */
void
vm_vsock_serve(struct vm *vm)
{
	char err[512];

	if (!vm->def->vsock_socket || vm->run.vsock_cid == 0 ||
	    vm->d->vsock_proxy == NULL)
		return;
	if (vsock_proxy_add(vm->d->vsock_proxy, vm->def->name,
	    vm->run.vsock_cid, vm->def->owner.known ? vm->def->owner.uid :
	    (uid_t)-1, err, sizeof(err)) < 0)
		log_warn("VM '%s': %s", vm->def->name, err);
}

void
vm_owner_set(struct vm_def *def, const struct access_cred *cred)
{
	struct vm_owner *o = &def->owner;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->known = true;
	o->uid = cred->uid;
	o->gid = cred->gid;
	for (i = 0; i < cred->ngroups && i < CONFIG_OWNER_GROUPS_MAX; i++)
		o->groups[o->ngroups++] = cred->groups[i];
}

bool
vm_owner_is(const struct vm_def *def, const struct access_cred *cred)
{
	if (cred->uid == 0)
		return true;
	return def->owner.known && def->owner.uid == cred->uid;
}

void
vm_owner_cred(const struct vm_def *def, struct access_cred *cred)
{
	const struct vm_owner *o = &def->owner;

	if (!o->known) {
		*cred = (struct access_cred){ .uid = VM_NOBODY, .gid = VM_NOBODY,
		    .root_files_only = true };
		return;
	}
	*cred = (struct access_cred){ .uid = o->uid, .gid = o->gid,
	    .groups = o->groups, .ngroups = o->ngroups };
}

static int vm_start_from(struct vm *vm, const struct access_cred *cred,
    const int *snap_fds, const char *snap_name, int migrate_fd,
    bool break_lock, struct pending *p, enum proto_error *cls, char *err,
    size_t errlen);

int
vm_start(struct vm *vm, const struct access_cred *cred, bool break_lock,
    struct pending *p, enum proto_error *cls, char *err, size_t errlen)
{
	return vm_start_from(vm, cred, NULL, NULL, -1, break_lock, p, cls,
	    err, errlen);
}

int
vm_restore(struct vm *vm, const struct access_cred *cred,
    const int *snap_fds, const char *snap_name, struct pending *p,
    enum proto_error *cls, char *err, size_t errlen)
{
	return vm_start_from(vm, cred, snap_fds, snap_name, -1, false, p, cls,
	    err, errlen);
}

int
vm_migrate_in(struct vm *vm, const struct access_cred *cred, int fd,
    struct pending *p, enum proto_error *cls, char *err, size_t errlen)
{
	return vm_start_from(vm, cred, NULL, NULL, fd, false, p, cls, err,
	    errlen);
}

/* The three above: a start, from a snapshot, or from a stream. */
static int
vm_start_from(struct vm *vm, const struct access_cred *cred,
    const int *snap_fds, const char *snap_name, int migrate_fd,
    bool break_lock, struct pending *p, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct vm_start_run run = { .request_ns = vm_start_mono_ns(),
	    .break_lock = break_lock };
	struct vmmd *d = vm->d;
	struct start_params sp;
	struct json_object *args;
	struct vm_files files;
	const char *path;
	char log[PATH_MAX];
	int passed[WLINK_MAX_PASSED];
	unsigned int npassed;
	struct stat st;
	struct timespec now;
	int rc, adopt_fd;

	if (!vm_at_rest(vm))
		return vm_refuse(vm, -EBUSY, cls, err, errlen);
	if (d->shutting_down) {
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "vmmd is shutting down");
		return -ESHUTDOWN;
	}
	*cls = PROTO_ERR_INTERNAL;
	path = wlink_program(d->worker_self, err, errlen);
	if (path == NULL)
		return -ENOENT;
	if (vm_console_log_path(d, vm->def->name, log, sizeof(log)) < 0) {
		snprintf(err, errlen, "console log path too long");
		return -ENAMETOOLONG;
	}
	run.console_log = log;
	/* The worker appends: this run's output begins here. */
	run.log_start = lstat(log, &st) == 0 && S_ISREG(st.st_mode) ?
	    st.st_size : 0;
	/* Checked again at every start: the definition may have been
	 * created by another client, and paths change. */
	if ((rc = vm_files_open(vm->def, d->default_kernel, d->disksdir,
	    false, cred, &files, cls, err, errlen)) < 0)
		return rc;
	if ((rc = vm_files_open_firmware(vm->def, vm_start_firmware_image(d,
	    vm->def), d->ovmf_vars, d->vgabios, cred, &files, cls, err,
	    errlen)) < 0 ||
	    (rc = vm_start_nvram(vm, &files, cls, err, errlen)) < 0 ||
	    (rc = vm_files_open_kvm(&files, cls, err, errlen)) < 0 ||
	    (rc = vm_files_lock_disks(vm->def, &files, migrate_fd >= 0,
	    cls, err, errlen)) < 0 ||
	    (rc = vm_start_cid(vm, &run.vsock_cid, cls, err, errlen)) < 0 ||
	    (rc = vm_files_open_vsock(vm->def, &files, cls, err,
	    errlen)) < 0 ||
	    (rc = vm_files_open_fs(vm->def, cred, &files, cls, err,
	    errlen)) < 0 ||
	    (rc = vm_files_open_net(vm->def, d->tap_rules, d->ntap_rules,
	    cred, &files, cls, err, errlen)) < 0)
		goto close_files;

	*cls = PROTO_ERR_INTERNAL;
	/* The guest outlives vmmd: a later one finds it there. */
	if ((rc = wsock_listen(d->workersdir, vm->def->name, &adopt_fd, err,
	    errlen)) < 0)
		goto close_files;
	clock_gettime(CLOCK_REALTIME, &now);
	run.started_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	/* What the worker is started with (start-params.h), as it goes. */
	start_params_init(&sp);
	if ((rc = vm_start_params(vm, &files, &run, &sp)) < 0)
		goto free_params;
	npassed = vm_start_fds(&files, passed);
	if (snap_fds != NULL) {
		/* After every other slot, closed or not. */
		while (npassed < (unsigned int)WLINK_SLOT(WLINK_SNAP_FD(0)))
			passed[npassed++] = -1;
		for (int i = 0; i < 3; i++) {
			passed[npassed++] = snap_fds[i];
			sp.snap_fd[i] = WLINK_SNAP_FD(i);
		}
		if (start_params_set(&sp.snap_name, snap_name) < 0) {
			rc = -ENOMEM;
			goto free_params;
		}
	}
	if (migrate_fd >= 0) {
		while (npassed < (unsigned int)WLINK_SLOT(WLINK_MIGRATE_FD))
			passed[npassed++] = -1;
		passed[npassed++] = migrate_fd;
		sp.migrate_fd = WLINK_MIGRATE_FD;
	}
	/* The share after every other slot, closed or not. */
	if (files.fs_fd >= 0) {
		while (npassed < (unsigned int)WLINK_SLOT(WLINK_FS_FD))
			passed[npassed++] = -1;
		passed[npassed++] = files.fs_fd;
	}
	sp.spawn_ns = vm_start_mono_ns();
	if ((rc = start_params_encode(&sp, &args)) < 0)
		goto free_params;
	start_params_free(&sp);
	rc = wlink_spawn(d->reaper, path, vm->def->name, adopt_fd, passed,
	    npassed, &vm_wlink_ops, vm, &vm->w, err, errlen);
	if (rc < 0) {
		if (rc == -EAGAIN)	/* every uid of worker_uids taken */
			*cls = PROTO_ERR_LIMIT;
		goto put_args;
	}
	/* The worker has its own copies now; vmmd keeps a handle on the
	 * written disks' locks, for a snapshot to share a frozen image. */
	vm_disklock_keep(&vm->disklock, vm->def, &files);
	vm_files_close(&files);
	close(adopt_fd);
	/*
	 * What a later vmmd believes of the worker instead of its word.
	 * Without it that one still adopts the guest, believing less of
	 * it (vm_adopt()): not worth failing the start for.
	 */
	if (wrec_write(d->workersdir, vm->def->name, wlink_pid(vm->w),
	    wlink_uid(vm->w), run.vsock_cid, wmsg_get(args,
	    WMSG_BOOT_DEFINITION), err, errlen) < 0)
		log_warn("VM '%s': the worker's record: %s", vm->def->name,
		    err);
	memset(&vm->run, 0, sizeof(vm->run));
	vm->run.log_start = run.log_start;
	vm->run.started_ms = run.started_ms;
	vm->run.vsock_cid = run.vsock_cid;
	vm->prev_state = vm->state;
	vm->start_waiter = p;
	vm_set_state(vm, VM_STARTING, NULL);

	if (wlink_request(vm->w, WMSG_REQ_BOOT, args, vm_boot_reply,
	    vm) < 0) {
		/* Reaped as a crash; the start fails from there. */
		wlink_kill(vm->w, WORKER_KILL_BOOT_FAILED);
		return 0;
	}
	/* A migration's pre-copy takes what it takes: the stream's own
	 * bounds (no byte for a while) end a stalled one. */
	wlink_deadline_set(vm->w, migrate_fd >= 0 ? VM_MIGRATE_TIMEOUT :
	    vm_boot_timeout(vm));
	return 0;

free_params:
	start_params_free(&sp);
	snprintf(err, errlen, "out of memory");
	goto close_adopt;
put_args:
	json_object_put(args);
close_adopt:
	close(adopt_fd);
	wsock_remove(d->workersdir, vm->def->name);
close_files:
	vm_files_close(&files);
	return rc;
}

/* Stopping ------------------------------------------------------------- */

static void
vm_shutdown_reply(struct json_object *ret, struct json_object *error,
    void *arg)
{
	vm_log_reply(arg, "worker.shutdown", error);
}

static void
vm_ignore_reply(struct json_object *ret, struct json_object *error,
    void *arg)
{
}

/* Ask the guest to shut down; SIGKILL after timeout seconds.  kill is
 * what a stop that cannot ask the guest is classified as. */
static void
vm_stop_worker(struct vm *vm, bool force, unsigned int timeout,
    enum worker_kill kill)
{
	struct wlink *w = vm->w;
	struct timeval tv = { timeout, 0 }, left;
	struct json_object *args;

	vm->run.stop_requested = true;
	if (force || timeout == 0 || vm->state == VM_STARTING ||
	    !wlink_connected(w)) {
		/* No guest to ask yet (or no way to ask it). */
		wlink_kill(w, kill);
		return;
	}
	if (vm->state == VM_STOPPING) {
		/* Already asked: only ever bring the deadline closer. */
		if (wlink_deadline_left(w, &left) && timercmp(&left, &tv, <=))
			return;
		wlink_deadline_set(w, timeout);
		return;
	}
	/* A paused guest cannot see Ctrl-Alt-Del: let it run first. */
	if (vm->state == VM_PAUSED)
		wlink_request(w, WMSG_REQ_RESUME, NULL, vm_ignore_reply,
		    NULL);
	/* The worker gives the power button half of the timeout. */
	args = json_object_new_object();
	wmsg_put_int(args, WMSG_SHUTDOWN_TIMEOUT, timeout);
	if (wlink_request(w, WMSG_REQ_SHUTDOWN, args, vm_shutdown_reply,
	    vm) < 0) {
		wlink_kill(w, kill);
		return;
	}
	wlink_deadline_set(w, timeout);
}

int
vm_stop(struct vm *vm, bool force, unsigned int timeout, struct pending *p,
    enum proto_error *cls, char *err, size_t errlen)
{
	if (vm_at_rest(vm))
		return vm_refuse(vm, -EINVAL, cls, err, errlen);
	if (vm->w == NULL) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "VM '%s' has no worker", vm->def->name);
		return -ESRCH;
	}
	vm_stop_worker(vm, force, timeout, WORKER_KILL_STOP_FORCE);
	vm_set_state(vm, VM_STOPPING, force || timeout == 0 ||
	    vm->state == VM_STARTING ? "forced stop" : "shutdown requested");
	/* Every vm.stop while stopping waits for the same exit. */
	if (p != NULL)
		TAILQ_INSERT_TAIL(&vm->stop_waiters, p, entry);
	return 0;
}

/* Exit ----------------------------------------------------------------- */

static void
vm_worker_exited(void *owner, int status)
{
	struct vm *vm = owner;
	struct vmmd *d = vm->d;
	struct worker_exit_facts facts = {
		.status = status,
		.kill = wlink_killed(vm->w),
		.booted = vm->run.booted,
		.stop_requested = vm->run.stop_requested,
		.boot_refused = vm->run.boot_error != NULL,
		.boot_timeout = vm_boot_timeout(vm),
		.status_unknown = !wlink_status_known(vm->w),
		.violation = wlink_violation(vm->w),
	};
	struct worker_exit ex;
	struct pending *p;
	enum vm_state st;

	if (vm->run.boot_error != NULL) {
		facts.boot_error_class = json_object_get_string(
		    json_object_object_get(vm->run.boot_error, "class"));
		facts.boot_error_desc = json_object_get_string(
		    json_object_object_get(vm->run.boot_error, "desc"));
	}
	worker_exit_classify(&facts, &ex);
	switch (ex.outcome) {
	case WORKER_OUTCOME_STOPPED:
		st = VM_STOPPED;
		break;
	case WORKER_OUTCOME_NEVER_RAN:
		st = vm->prev_state;
		break;
	default:
		st = VM_CRASHED;
		counters_crash(&d->counters, &facts);
		break;
	}

	wlink_free(vm->w);
	vm->w = NULL;
	vm_nbd_dials_cancel(vm);
	/* Its disks' locks go with its descriptors, now its last ones. */
	vm_disklock_release(&vm->disklock);
	/* Whatever way it went, its socket and record go with it. */
	wsock_remove(d->workersdir, vm->def->name);
	wrec_remove(d->workersdir, vm->def->name);
	if (d->vsock_proxy != NULL)
		vsock_proxy_remove(d->vsock_proxy, vm->def->name);
	json_object_put(vm->run.boot_error);
	vm->run.boot_error = NULL;
	vm_run_boot_facts(vm, NULL, WMSG_BOOTED_FROM, WMSG_BOOTED_SEED);

	vm_set_state(vm, st, ex.reason);

	if ((p = vm->start_waiter) != NULL) {
		vm->start_waiter = NULL;
		pending_error(p, ex.start_class, "%s", ex.start_desc);
	}
	while ((p = TAILQ_FIRST(&vm->stop_waiters)) != NULL) {
		struct json_object *o = vm_to_json(vm);

		TAILQ_REMOVE(&vm->stop_waiters, p, entry);
		/* The guest did not shut down as asked: the client knows. */
		if (o != NULL)
			json_object_object_add(o, "killed",
			    json_object_new_boolean(ex.killed));
		pending_reply(p, o);
	}

	if (vm->def->transient) {
		vm_overlays_remove(vm);
		log_info("VM '%s': transient, removed", vm->def->name);
		vm_emit(d, proto_event("vm.deleted", vm->def->name, NULL));
		vm_remove(vm);
	}
	if (d->shutting_down && wlink_reaper_count(d->reaper) == 0 &&
	    d->hooks.idle != NULL)
		d->hooks.idle(d);
}

const struct wlink_ops vm_wlink_ops = {
	.event = vm_worker_event,
	.hangup = vm_worker_hangup,
	.deadline = vm_worker_deadline,
	.exited = vm_worker_exited,
};

/* Supervisor-wide ------------------------------------------------------ */

int
vm_list_init(struct vmmd *d)
{
	TAILQ_INIT(&d->answers);
	d->reaper = wlink_reaper_new(d->base);
	if (d->reaper == NULL)
		return -ENOMEM;
	wlink_reaper_set_unconfined(d->reaper, d->unconfined);
	/* Only root can make its workers someone else. */
	if (geteuid() == 0 && !d->unconfined)
		wlink_reaper_set_uids(d->reaper, d->worker_uid_first,
		    d->worker_uid_last);
	return 0;
}

unsigned int
vm_list_workers(const struct vmmd *d)
{
	return d->reaper != NULL ? wlink_reaper_count(d->reaper) : 0;
}

void
vm_list_stop_all(struct vmmd *d, unsigned int timeout)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry) {
		if (vm->w == NULL)
			continue;
		vm->run.daemon_exit = true;
		if (vm->state == VM_RUNNING || vm->state == VM_STOPPING) {
			vm_stop_worker(vm, false, timeout,
			    WORKER_KILL_DAEMON_EXIT);
			vm_set_state(vm, VM_STOPPING, "vmmd exiting");
		} else {
			/* Paused or still booting: nothing to ask. */
			vm->run.stop_requested = true;
			wlink_kill(vm->w, WORKER_KILL_DAEMON_EXIT);
		}
	}
}

void
vm_list_kill_all(struct vmmd *d)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &d->vms, entry)
		if (vm->w != NULL) {
			vm->run.stop_requested = true;
			wlink_kill(vm->w, WORKER_KILL_DAEMON_EXIT);
		}
}

void
vm_list_release(struct vmmd *d)
{
	struct wlink *w;
	struct vm *vm;

	/* Requests in flight fail (their replies find no worker). */
	TAILQ_FOREACH(vm, &d->vms, entry)
		if ((w = vm->w) != NULL) {
			vm->w = NULL;
			vm_nbd_dials_cancel(vm);
			wlink_release(w);
		}
}

void
vm_list_fini(struct vmmd *d)
{
	struct vm *vm;

	/* Normally every worker is gone by now; make sure of it. */
	while ((vm = TAILQ_FIRST(&d->vms)) != NULL) {
		if (vm->w != NULL) {
			wlink_kill_wait(vm->w, WORKER_KILL_DAEMON_EXIT);
			if (TAILQ_FIRST(&d->vms) != vm)
				continue;	/* transient, removed */
		}
		vm_remove(vm);
	}
	/* Clients still taking an answer get no more of it. */
	answer_free_all(&d->answers);
	wlink_reaper_free(d->reaper);
	d->reaper = NULL;
}
