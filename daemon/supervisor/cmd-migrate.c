/*
 * vm.migrate_in {"definition"}, vm.migrate_out {"name", "downtime_ms"}
 * and vm.migrate_cancel {"name"} (cmd-migrate.h).
 *
 * The stream between the two workers is the client's two connections:
 * each daemon answers its request on the connection and then hands it
 * to the worker (control_handover(), as vm.console does), and the
 * client copies bytes from one to the other.  So no daemon listens for
 * a peer, and whatever can carry bytes carries a migration: a relay
 * between two local sockets, SSH's pipes to a vmctl on another host.
 * (Passing a socketpair's ends by SCM_RIGHTS would save the copy, but
 * the control socket takes no descriptors, and SSH needs the copy
 * anyway.)
 *
 * vm.migrate_in makes the VM from the definition the client gives as
 * vm.create would (the client its owner, its files opened with the
 * client's rights at the start), transient while it arrives: a
 * migration that fails leaves nothing behind.  Once the guest runs
 * here, a definition that was not transient is saved.  A VM of that
 * name refuses the migration (exists).
 *
 * vm.migrate_out: the guest's worker sends the stream; the answer and
 * the figures come as a "vm.migration" event ("phase": "done" or
 * "failed"; the worker's own events say "round").  Once the target
 * runs the guest, the VM here is stopped and its definition removed:
 * whoever moved it (a cluster's agent) expects it on one host only.
 * Until then it is ours, and a failure leaves it running here.
 *
 * vm.migrate_cancel: the worker stops the migration out before the
 * switch (migrate_out_stop()): the guest runs on here, the target is
 * told and drops what it made, and the migration's end is the event
 * "cancelled" rather than "failed".  Once the target has the whole
 * guest it is too late (bad_state).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "access.h"
#include "cmd-migrate.h"
#include "cmd-vm-edit.h"
#include "control.h"
#include "log.h"
#include "pending.h"
#include "proto.h"
#include "vm.h"
#include "vmconfig-store.h"
#include "vmconfig.h"
#include "worker-msg.h"

/* The reply line written on a connection about to be handed over. */
static int
cmd_migrate_answer(int fd, struct json_object *id, const char *name)
{
	struct json_object *ret = json_object_new_object(), *msg;
	char *line;
	size_t len, off = 0;
	ssize_t n;

	if (ret == NULL)
		return -ENOMEM;
	json_object_object_add(ret, "name", json_object_new_string(name));
	msg = proto_reply(json_object_get(id), ret);
	line = msg != NULL ? proto_serialize(msg, &len) : NULL;
	json_object_put(msg);
	if (line == NULL)
		return -ENOMEM;
	/* A fresh connection whose output is written: a line fits. */
	while (off < len) {
		n = write(fd, line + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(line);
			return -errno;
		}
		off += (size_t)n;
	}
	free(line);
	return 0;
}

/* vm.migrate_in --------------------------------------------------------- */

/*
 * The written disks' locks its source still held when the guest came
 * (vm-disklock.h): tried every CMD_MIGRATE_LOCK_MS until taken, for
 * CMD_MIGRATE_LOCK_TRIES turns at most (the source lets them go once it
 * hears that the guest runs here, its worker's end at the latest).
 */
#define CMD_MIGRATE_LOCK_MS	100
#define CMD_MIGRATE_LOCK_TRIES	600

/* Whether vm's pending locks are all taken (or given up on): logs. */
static bool
cmd_migrate_locks_done(struct vm *vm)
{
	int left = vm_disklock_take(&vm->disklock);

	if (left < 0)
		log_error("VM '%s': taking the lock of a disk its source "
		    "held: %s", vm->def->name, strerror(-left));
	else if (left == 0 && vm->disklock_tries > 0)
		log_info("VM '%s': its disks' locks taken over from the "
		    "source", vm->def->name);
	else if (left > 0 && ++vm->disklock_tries >= CMD_MIGRATE_LOCK_TRIES) {
		log_error("VM '%s': %d disk(s) still locked by another holder "
		    "%d s after the guest arrived: it runs without their "
		    "locks (/proc/locks names the holder)", vm->def->name,
		    left, CMD_MIGRATE_LOCK_TRIES * CMD_MIGRATE_LOCK_MS / 1000);
		return true;
	}
	return left <= 0;
}

static void
cmd_migrate_lock_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vm *vm = arg;
	struct timeval tv = { 0, CMD_MIGRATE_LOCK_MS * 1000 };

	(void)fd;
	(void)what;
	if (!cmd_migrate_locks_done(vm))
		event_add(vm->disklock_wait, &tv);
}

/* The guest runs here: its disks' locks, now or in a while. */
static void
cmd_migrate_take_locks(struct vm *vm)
{
	struct timeval tv = { 0, CMD_MIGRATE_LOCK_MS * 1000 };

	vm->disklock_tries = 0;
	if (cmd_migrate_locks_done(vm))
		return;
	if (vm->disklock_wait == NULL)
		vm->disklock_wait = evtimer_new(vm->d->base,
		    cmd_migrate_lock_cb, vm);
	if (vm->disklock_wait == NULL) {
		log_error("VM '%s': out of memory: it runs without the locks "
		    "of the disks its source held", vm->def->name);
		return;
	}
	event_add(vm->disklock_wait, &tv);
}

/* A guest arriving: told by its start's pending when it runs or not. */
struct cmd_migrate_in {
	struct pending_owner owner;
	struct vmmd *d;
	char *name;
	bool persist;		/* its definition was not transient */
};

/*
 * "vm.migration" on this side: "arriving" (msg NULL), then "arrived" or
 * "failed" with the error's text, from the start's reply msg.
 */
static void
cmd_migrate_in_event(struct vmmd *d, const char *name,
    struct json_object *msg)
{
	struct json_object *data = json_object_new_object(), *e;
	const char *phase = msg == NULL ? "arriving" :
	    json_object_object_get_ex(msg, "return", NULL) ? "arrived" :
	    "failed";

	if (data == NULL)
		return;
	json_object_object_add(data, "phase", json_object_new_string(phase));
	if (msg != NULL && json_object_object_get_ex(msg, "error", &e))
		json_object_object_add(data, "error", json_object_get(
		    json_object_object_get(e, "desc")));
	control_broadcast(d->ctl, proto_event("vm.migration", name, data));
}

static void
cmd_migrate_in_done(struct pending_owner *o, struct json_object *msg)
{
	struct cmd_migrate_in *mi = (struct cmd_migrate_in *)o;
	struct vm *vm = vm_find(mi->d, mi->name);
	char err[512];

	cmd_migrate_in_event(mi->d, mi->name, msg);
	if (json_object_object_get_ex(msg, "return", NULL) && vm != NULL) {
		log_info("VM '%s': arrived by migration, running", mi->name);
		cmd_migrate_take_locks(vm);
		if (mi->persist) {
			vm->def->transient = false;
			if (config_save(mi->d->vmsdir, vm->def, err,
			    sizeof(err)) < 0) {
				vm->def->transient = true;
				log_error("VM '%s': saving the definition of a "
				    "migrated guest: %s (it stays transient)",
				    mi->name, err);
			}
		}
	} else
		log_info("VM '%s': migration in failed: %s", mi->name,
		    json_object_get_string(json_object_object_get(
		    json_object_object_get(msg, "error"), "desc")));
	json_object_put(msg);
	/* The pending is gone from the owner's list: nothing refers to mi. */
	free(mi->name);
	free(mi);
}

static int
cmd_migrate_in_pass(struct vmmd *d, const char *name, int64_t persist,
    int fd, struct json_object *id, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct cmd_migrate_in *mi;
	struct access_cred cred;
	struct pending *p;
	struct vm *vm = vm_find(d, name);
	int rc;

	*cls = PROTO_ERR_INTERNAL;
	if (vm == NULL || !vm_at_rest(vm)) {
		*cls = PROTO_ERR_BAD_STATE;
		snprintf(err, errlen, "VM '%s' went away", name);
		return -ENOENT;
	}
	if ((mi = calloc(1, sizeof(*mi))) == NULL ||
	    (mi->name = strdup(name)) == NULL) {
		free(mi);
		snprintf(err, errlen, "out of memory");
		goto remove;
	}
	mi->d = d;
	mi->persist = persist != 0;
	pending_owner_init(&mi->owner, cmd_migrate_in_done);
	if ((p = pending_new(&mi->owner, NULL)) == NULL) {
		free(mi->name);
		free(mi);
		snprintf(err, errlen, "out of memory");
		goto remove;
	}
	/* The owner is the client (vm_owner_set): its rights. */
	vm_owner_cred(vm->def, &cred);
	if ((rc = vm_migrate_in(vm, &cred, fd, p, cls, err, errlen)) < 0) {
		/* Frees mi. */
		pending_error(p, *cls, "%s", err);
		goto remove;
	}
	cmd_migrate_in_event(d, name, NULL);
	/* Before the worker reads: the client sends nothing until then. */
	if ((rc = cmd_migrate_answer(fd, id, name)) < 0)
		log_warn("VM '%s': answering vm.migrate_in: %s", name,
		    strerror(-rc));
	return 0;
remove:
	if (vm->w == NULL) {
		log_info("VM '%s': migration in refused: %s", name, err);
		vm_remove(vm);
	}
	return -EINVAL;
}

static struct json_object *
cmd_vm_migrate_in(struct cmd_ctx *ctx)
{
	static const char *const keys[] = { "definition", NULL };
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *o;
	struct vm_def *def;
	struct vm *vm;
	char err[1024];
	bool persist;
	int rc;

	if (proto_args_check(ctx->args, keys, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (!json_object_object_get_ex(ctx->args, "definition", &o) ||
	    !json_object_is_type(o, json_type_object))
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "definition: expected an object, the VM's definition");
	if ((rc = config_parse(o, 0, &def, err, sizeof(err))) < 0)
		return proto_error(ctx->id, rc == -ENOMEM ? PROTO_ERR_INTERNAL :
		    PROTO_ERR_INVALID_ARGUMENT, "%s", err);
	if (vm_find(ctx->d, def->name) != NULL) {
		rc = snprintf(err, sizeof(err), "VM '%s' already exists here",
		    def->name);
		config_def_free(def);
		return proto_error(ctx->id, PROTO_ERR_EXISTS, "%s", err);
	}
	/* What it would make anew would not be the guest's. */
	for (unsigned int i = 0; i < def->ndisks; i++)
		if (def->disks[i].overlay || def->disks[i].nbd ||
		    def->disks[i].rbd) {
			const char *kind = def->disks[i].nbd ? "NBD" :
			    def->disks[i].rbd ? "RBD" : "overlay";

			config_def_free(def);
			return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
			    "a VM with an %s disk cannot migrate (yet)",
			    kind);
		}
	/*
	 * The worker here reads a qcow2 image's tables as it builds the
	 * machine, while the source's guest still writes (and allocates):
	 * a raw image has nothing to read ahead.
	 */
	for (unsigned int i = 0; i < def->ndisks; i++)
		if (!def->disks[i].readonly &&
		    def->disks[i].format == VM_DISK_FORMAT_QCOW2) {
			snprintf(err, sizeof(err), "a VM that writes a "
			    "qcow2 disk cannot migrate (yet): %s",
			    def->disks[i].path);
			config_def_free(def);
			return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
			    "%s", err);
		}
	if (def->firmware == VM_FIRMWARE_UEFI) {
		config_def_free(def);
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "a \"uefi\" VM cannot migrate (yet): its NVRAM file");
	}
	vm_owner_set(def, cred);
	persist = !def->transient;
	def->transient = true;
	if ((vm = vm_add(ctx->d, def)) == NULL)
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	log_info("VM '%s': arriving by migration for uid %lu", vm->def->name,
	    (unsigned long)cred->uid);
	control_handover(ctx, cmd_migrate_in_pass, vm->def->name, persist,
	    "migration in");
	return NULL;
}

/* vm.migrate_out -------------------------------------------------------- */

static void
cmd_migrate_out_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct json_object *data;
	enum proto_error cls;
	char err[512];

	if (error != NULL) {
		data = json_object_new_object();
		json_object_object_add(data, "phase", json_object_new_string(
		    vm->migrate_cancelled ? "cancelled" : "failed"));
		json_object_object_add(data, "error", json_object_get(
		    json_object_object_get(error, "desc")));
		log_warn("VM '%s': migration failed: %s", vm->def->name,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
	} else {
		data = json_object_get(ret);
		log_info("VM '%s': migrated: %s; stopped and removed here",
		    vm->def->name, json_object_to_json_string(ret));
		/* The target takes them: this paused guest writes no more. */
		vm_disklock_drop(&vm->disklock);
		/* It runs there now: here it is gone once stopped. */
		if (!vm->def->transient && config_remove(vm->d->vmsdir,
		    vm->def->name, err, sizeof(err)) < 0)
			log_error("VM '%s': %s", vm->def->name, err);
		vm->def->transient = true;
	}
	vm->migrate_cancelled = false;
	control_broadcast(vm->d->ctl, proto_event("vm.migration",
	    vm->def->name, data));
	if (error == NULL && vm_stop(vm, true, 0, NULL, &cls, err,
	    sizeof(err)) < 0)
		log_error("VM '%s': stopping the migrated guest: %s",
		    vm->def->name, err);
}

static int
cmd_migrate_out_pass(struct vmmd *d, const char *name, int64_t downtime_ms,
    int fd, struct json_object *id, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct json_object *args;
	struct vm *vm = vm_find(d, name);
	int rc;

	*cls = PROTO_ERR_BAD_STATE;
	if (vm == NULL || vm->state != VM_RUNNING || !vm_has_worker(vm)) {
		snprintf(err, errlen, "VM '%s' no longer runs", name);
		return -ESRCH;
	}
	/* First: the worker writes on the connection as soon as it has it. */
	if ((rc = cmd_migrate_answer(fd, id, name)) < 0) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	args = json_object_new_object();
	wmsg_put_int(args, WMSG_MIGRATE_DOWNTIME_MS, downtime_ms);
	vm->migrate_cancelled = false;
	if ((rc = vm_worker_request_fds(vm, WMSG_REQ_MIGRATE_OUT, args, &fd, 1,
	    cmd_migrate_out_done, NULL)) < 0)
		/* Answered already: the client sees the stream end. */
		log_warn("VM '%s': migration: cannot reach the worker: %s",
		    name, strerror(-rc));
	return 0;
}

static struct json_object *
cmd_vm_migrate_out(struct cmd_ctx *ctx)
{
	static const char *const keys[] = { "name", "downtime_ms", NULL };
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply;
	int64_t downtime = 300;
	char err[512];
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, keys, &reply)) == NULL)
		return reply;
	if (proto_arg_int(ctx->args, "downtime_ms", 0, 1, 60000, &downtime,
	    err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (!vm_owner_is(vm->def, cred))
		return proto_error(ctx->id, PROTO_ERR_PERMISSION,
		    "VM '%s' belongs to uid %ld: only its owner or root may "
		    "migrate it", vm->def->name, vm->def->owner.known ?
		    (long)vm->def->owner.uid : 0L);
	if (vm->state != VM_RUNNING || !vm_has_worker(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is %s: only a running VM migrates",
		    vm->def->name, vm_state_name(vm->state));
	control_handover(ctx, cmd_migrate_out_pass, vm->def->name, downtime,
	    "migration out");
	return NULL;
}

/* vm.migrate_cancel ----------------------------------------------------- */

static void
cmd_migrate_cancel_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct json_object *o;

	if (error != NULL) {
		pending_forward_error(arg, error);
		return;
	}
	/* Before the migration's own answer: the worker sends that later. */
	vm->migrate_cancelled = true;
	log_info("VM '%s': migration cancelled; the guest stays here",
	    vm->def->name);
	if ((o = json_object_new_object()) != NULL)
		json_object_object_add(o, "name",
		    json_object_new_string(vm->def->name));
	pending_reply(arg, o);
}

static struct json_object *
cmd_vm_migrate_cancel(struct cmd_ctx *ctx)
{
	static const char *const keys[] = { "name", NULL };
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply;
	struct pending *p;
	struct vm *vm;
	int rc;

	if ((vm = cmd_vm_lookup(ctx, keys, &reply)) == NULL)
		return reply;
	if (!vm_owner_is(vm->def, cred))
		return proto_error(ctx->id, PROTO_ERR_PERMISSION,
		    "VM '%s' belongs to uid %ld: only its owner or root may "
		    "cancel its migration", vm->def->name,
		    vm->def->owner.known ? (long)vm->def->owner.uid : 0L);
	if (!vm_has_worker(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is %s: no migration under way", vm->def->name,
		    vm_state_name(vm->state));
	if ((p = control_defer(ctx)) == NULL)
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	if ((rc = vm_worker_request(vm, WMSG_REQ_MIGRATE_CANCEL, NULL,
	    cmd_migrate_cancel_done, p)) < 0)
		pending_error(p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
	return NULL;
}

const struct cmd_def cmd_migrate_commands[] = {
	{ "vm.migrate_in", cmd_vm_migrate_in },
	{ "vm.migrate_out", cmd_vm_migrate_out },
	{ "vm.migrate_cancel", cmd_vm_migrate_cancel },
	{ NULL, NULL },
};
