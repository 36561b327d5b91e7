/*
 * The vm.* commands.
 *
 * Handlers validate their arguments, check the VM's state, and either
 * answer at once or take a pending reply that vm.c (or a worker reply
 * callback here) completes.  The table at the end is what the control
 * socket knows of them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd-vm.h"
#include "cmd-vm-edit.h"
#include "control.h"
#include "disk-overlay.h"
#include "log.h"
#include "pending.h"
#include "proto.h"
#include "vm-files.h"
#include "vm-nvram.h"
#include "vm-start.h"
#include "vm.h"
#include "vmconfig.h"

#define CMD_STOP_TIMEOUT_DEFAULT	30	/* seconds */
#define CMD_STOP_TIMEOUT_MAX		3600

static const char *const cmd_keys_name[] = { "name", NULL };
static const char *const cmd_keys_start[] = { "name", "break_lock", NULL };
static const char *const cmd_keys_stop[] = { "name", "force", "timeout",
	NULL };
static const char *const cmd_keys_none[] = { NULL };
static const char *const cmd_keys_autostart[] = { "name", "autostart",
	NULL };
static const char *const cmd_keys_reset_disk[] = { "name", "disk", NULL };
static const char *const cmd_keys_delete[] = { "name", "remove_data", NULL };

static struct json_object *
cmd_bad_state(struct cmd_ctx *ctx, const struct vm *vm)
{
	return proto_error(ctx->id, PROTO_ERR_BAD_STATE, "VM '%s' is %s%s%s",
	    vm->def->name, vm_at_rest(vm) ? "not running (" : "",
	    vm_state_name(vm->state), vm_at_rest(vm) ? ")" : "");
}

static struct json_object *
cmd_nomem(struct cmd_ctx *ctx)
{
	return proto_error(ctx->id, PROTO_ERR_INTERNAL, "out of memory");
}

/*
 * Make the overlays of def's overlay disks afresh (all of them, or disk
 * only when it is not -1) in d's overlay directory, each over its base
 * as f opened it (vm_files_open() without an overlay directory: for the
 * client, read-only).  On failure those made so far are left to the
 * caller (vm.create removes them, vm.reset_disk keeps them: fresh
 * either way).
 */
static int
cmd_overlays_make(struct vmmd *d, const struct vm_def *def,
    const struct vm_files *f, int disk, enum proto_error *cls, char *err,
    size_t errlen)
{
	int rc;

	for (unsigned int i = 0; i < def->ndisks; i++) {
		if (!def->disks[i].overlay || (disk >= 0 && i != (unsigned)disk))
			continue;
		rc = disk_overlay_make(d->disksdir, def->name, i, f->disk_fd[i],
		    f->disk_format[i] == VM_FILES_QCOW2, def->disks[i].path,
		    cls, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* What disk_overlay_remove() and config_remove() need of def, into
 * *names (name in name, which has CONFIG_NAME_MAX + 1 bytes). */
static void
cmd_def_names(const struct vm_def *def, struct vm_def *names, char *name)
{
	memset(names, 0, sizeof(*names));
	snprintf(name, CONFIG_NAME_MAX + 1, "%s", def->name);
	names->name = name;
	names->transient = def->transient;
	names->ndisks = def->ndisks;
	for (unsigned int i = 0; i < def->ndisks; i++)
		names->disks[i].overlay = def->disks[i].overlay;
}

/*
 * At vm.create, a "uefi" VM's files opened for the client as a start
 * opens them (vm_files_open_firmware()): its NVRAM file is made from
 * the template, which stays open in f for that.  (A "bios" VM's image
 * is opened at start only.)
 */
static int
cmd_vm_create_firmware(struct vmmd *d, const struct vm_def *def,
    const struct access_cred *cred, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	int rc;

	if (def->firmware != VM_FIRMWARE_UEFI)
		return 0;
	rc = vm_files_open_firmware(def, d->ovmf_code, d->ovmf_vars,
	    d->vgabios, cred, f, cls, err, errlen);
	if (rc < 0)
		return rc;
	/* The image is opened again at each start. */
	if (f->kernel_fd >= 0) {
		close(f->kernel_fd);
		f->kernel_fd = -1;
	}
	return 0;
}

/* A "uefi" VM's NVRAM file made at a create that failed after all. */
static void
cmd_nvram_remove(struct vmmd *d, const char *name)
{
	char path[PATH_MAX];

	if (vm_nvram_path(d->nvramdir, name, path, sizeof(path)) == 0)
		unlink(path);
}

/*
 * vm.create's "exist_ok" (not a member of the definition: taken out of
 * args before they are parsed as one) into *ok; -EINVAL, with err, when
 * it is not a boolean.
 */
static int
cmd_create_exist_ok(struct json_object *args, bool *ok, char *err,
    size_t errlen)
{
	struct json_object *v;

	*ok = false;
	if (args == NULL || !json_object_object_get_ex(args, "exist_ok", &v))
		return 0;
	if (!json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errlen, "exist_ok: expected a boolean");
		return -EINVAL;
	}
	*ok = json_object_get_boolean(v);
	json_object_object_del(args, "exist_ok");
	return 0;
}

/*
 * Whether def (a vm.create's, its owner and disk formats set as they
 * would be stored) is vm's definition exactly: what the daemon would
 * store, secrets included, is the same.
 */
static bool
cmd_create_same(const struct vm *vm, const struct vm_def *def)
{
	struct json_object *a, *b;
	bool same;

	a = config_to_json(vm->def, CONFIG_JSON_SECRETS);
	b = config_to_json(def, CONFIG_JSON_SECRETS);
	same = a != NULL && b != NULL && json_object_equal(a, b);
	json_object_put(a);
	json_object_put(b);
	return same;
}

/*
 * cmd_vm_make()'s work; with exist_ok, a VM of def's name whose stored
 * definition def is exactly (cmd_create_same) is the answer, *existed
 * set, def freed.
 */
static struct vm *
cmd_vm_make_or_find(struct cmd_ctx *ctx, struct vm_def *def, bool exist_ok,
    bool *existed, enum proto_error *clsp, char *err, size_t errlen)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct vm_files files;
	enum proto_error cls;
	struct vm_def gone;
	struct vm *vm;
	char why[512], name[CONFIG_NAME_MAX + 1], what[512];
	bool nvram = false, same;
	int rc;

	*existed = false;
	vm_owner_set(def, cred);
	/* The files def names, and the default guest for a VM without a
	 * kernel: one that could never start is refused now, not at its
	 * first start.  And its TAP: opened only at start, allowed or not
	 * now.  An overlay disk's base is opened, not its overlay: made
	 * below. */
	rc = vm_files_open(def, ctx->d->default_kernel, NULL, true, cred,
	    &files, &cls, err, errlen);
	if (rc == 0 && ((rc = vm_files_check_tap(def, ctx->d->tap_rules,
	    ctx->d->ntap_rules, cred, &cls, err, errlen)) < 0 ||
	    (rc = cmd_vm_create_firmware(ctx->d, def, cred, &files, &cls,
	    err, errlen)) < 0))
		vm_files_close(&files);
	if (rc < 0) {
		if (cls == PROTO_ERR_PERMISSION)
			log_warn("VM '%s': creation refused for uid %lu: %s",
			    def->name, (unsigned long)cred->uid, err);
		config_def_free(def);
		*clsp = cls;
		return NULL;
	}
	if ((vm = vm_find(ctx->d, def->name)) != NULL) {
		vm_files_record_formats(def, &files);
		vm_files_close(&files);
		/* Not given: the VM's own, which a create never changes. */
		if (exist_ok && !def->has_uuid) {
			def->has_uuid = vm->def->has_uuid;
			memcpy(def->uuid, vm->def->uuid, sizeof(def->uuid));
		}
		same = exist_ok && cmd_create_same(vm, def);
		config_def_free(def);
		if (same) {
			*existed = true;
			return vm;
		}
		snprintf(err, errlen, "VM '%s' already exists%s",
		    vm->def->name, exist_ok ?
		    " with another definition or owner" : "");
		*clsp = PROTO_ERR_EXISTS;
		return NULL;
	}
	/* Its UUID: the one given, or a new one, for its whole life. */
	if (!def->has_uuid && (rc = config_uuid_new(def)) < 0) {
		vm_files_close(&files);
		snprintf(err, errlen, "making a UUID: %s", strerror(-rc));
		config_def_free(def);
		*clsp = PROTO_ERR_INTERNAL;
		return NULL;
	}
	/* A deleted VM's kept overlay is not overwritten. */
	if (cmd_vm_kept_overlays(ctx->d, def, err, errlen) < 0) {
		vm_files_close(&files);
		config_def_free(def);
		*clsp = PROTO_ERR_EXISTS;
		return NULL;
	}
	/* What the headers said now, the client naming the images, is
	 * what every start takes them for (vm-files.h). */
	vm_files_record_formats(def, &files);
	/* Its overlays, with the daemon's rights, from the bases the
	 * client's opened; gone again if the VM is not made after all. */
	rc = cmd_overlays_make(ctx->d, def, &files, -1, &cls, err, errlen);
	if (rc < 0) {
		vm_files_close(&files);
		log_error("VM '%s': making its overlays: %s", def->name, err);
		goto remove_overlays;
	}
	/* A "uefi" VM's variables, from the template the client opened. */
	if (files.vars_fd >= 0) {
		rc = vm_nvram_create(ctx->d->nvramdir, def->name,
		    files.vars_fd, err, errlen);
		if (rc < 0) {
			vm_files_close(&files);
			cls = rc == -EEXIST ? PROTO_ERR_EXISTS :
			    PROTO_ERR_INTERNAL;
			log_error("VM '%s': %s", def->name, err);
			goto remove_overlays;
		}
		nvram = true;
	}
	vm_files_close(&files);
	if (!def->transient &&
	    config_save(ctx->d->vmsdir, def, why, sizeof(why)) < 0) {
		log_error("VM '%s': saving the definition: %s", def->name,
		    why);
		cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "cannot save the definition: %s", why);
		goto remove_overlays;
	}
	/* vm_add() frees def when it fails: what the undoing needs. */
	cmd_def_names(def, &gone, name);
	vm = vm_add(ctx->d, def);
	if (vm == NULL) {
		if (!gone.transient)
			config_remove(ctx->d->vmsdir, name, why, sizeof(why));
		disk_overlay_remove(ctx->d->disksdir, &gone, why,
		    sizeof(why));
		if (nvram)
			cmd_nvram_remove(ctx->d, name);
		*clsp = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	log_info("VM '%s': created%s", vm->def->name,
	    vm->def->transient ? " (transient)" : "");
	control_broadcast(ctx->d->ctl, proto_event("vm.created",
	    vm->def->name, NULL));
	return vm;

remove_overlays:
	disk_overlay_remove(ctx->d->disksdir, def, what, sizeof(what));
	if (nvram)
		cmd_nvram_remove(ctx->d, def->name);
	config_def_free(def);
	*clsp = cls;
	return NULL;
}

static struct json_object *
cmd_vm_create(struct cmd_ctx *ctx)
{
	struct json_object *ret;
	enum proto_error cls;
	struct vm_def *def;
	struct vm *vm;
	char err[1024];
	bool exist_ok, existed;
	int rc;

	if (cmd_create_exist_ok(ctx->args, &exist_ok, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	/* The form first; the files are opened by cmd_vm_make(), as the
	 * client. */
	rc = config_parse(ctx->args, 0, &def, err, sizeof(err));
	if (rc < 0)
		return proto_error(ctx->id, rc == -ENOMEM ? PROTO_ERR_INTERNAL :
		    PROTO_ERR_INVALID_ARGUMENT, "%s", err);
	vm = cmd_vm_make_or_find(ctx, def, exist_ok, &existed, &cls, err,
	    sizeof(err));
	if (vm == NULL)
		return proto_error(ctx->id, cls, "%s", err);
	ret = vm_to_json(vm);
	if (existed)
		json_object_object_add(ret, "existed",
		    json_object_new_boolean(1));
	return proto_reply(ctx->id, ret);
}

struct vm *
cmd_vm_make(struct cmd_ctx *ctx, struct vm_def *def, enum proto_error *clsp,
    char *err, size_t errlen)
{
	bool existed;

	return cmd_vm_make_or_find(ctx, def, false, &existed, clsp, err,
	    errlen);
}

static struct json_object *
cmd_vm_start(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply;
	enum proto_error cls;
	struct pending *p;
	struct vm *vm;
	char err[1024];
	int break_lock = 0;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_start, &reply)) == NULL)
		return reply;
	if (proto_arg_bool(ctx->args, "break_lock", 0, &break_lock, err,
	    sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if ((p = control_defer(ctx)) == NULL)
		return cmd_nomem(ctx);
	if (vm_start(vm, cred, break_lock != 0, p, &cls, err,
	    sizeof(err)) < 0) {
		if (cls == PROTO_ERR_PERMISSION)
			log_warn("VM '%s': start refused for uid %lu: %s",
			    vm->def->name, (unsigned long)cred->uid, err);
		else
			log_info("VM '%s': start refused: %s", vm->def->name,
			    err);
		pending_error(p, cls, "%s", err);
	}
	return NULL;
}

static struct json_object *
cmd_vm_stop(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	enum proto_error cls;
	struct pending *p;
	struct vm *vm;
	char err[1024];
	int64_t timeout = CMD_STOP_TIMEOUT_DEFAULT;
	int force = 0;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_stop, &reply)) == NULL)
		return reply;
	if (proto_arg_bool(ctx->args, "force", 0, &force, err,
	    sizeof(err)) < 0 ||
	    proto_arg_int(ctx->args, "timeout", 0, 0, CMD_STOP_TIMEOUT_MAX,
	    &timeout, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if ((p = control_defer(ctx)) == NULL)
		return cmd_nomem(ctx);
	if (vm_stop(vm, force != 0, (unsigned int)timeout, p, &cls, err,
	    sizeof(err)) < 0)
		pending_error(p, cls, "%s", err);
	return NULL;
}

/* vm.pause, vm.resume, vm.reset: one worker request each. */

static void
cmd_pause_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error == NULL && vm->state == VM_RUNNING)
		vm_set_state(vm, VM_PAUSED, "vm.pause");
	vm_reply_object(vm, ret, error, arg);
}

static void
cmd_resume_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error == NULL && vm->state == VM_PAUSED)
		vm_set_state(vm, VM_RUNNING, "vm.resume");
	vm_reply_object(vm, ret, error, arg);
}

static void
cmd_reset_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error == NULL)
		log_info("VM '%s': reset", vm->def->name);
	vm_reply_object(vm, ret, error, arg);
}

static struct json_object *
cmd_vm_forward(struct cmd_ctx *ctx, enum vm_state need,
    enum wmsg_request command, vm_reply_cb cb)
{
	struct json_object *reply;
	struct pending *p;
	struct vm *vm;
	int rc;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_name, &reply)) == NULL)
		return reply;
	if (vm->state != need || !vm_has_worker(vm))
		return cmd_bad_state(ctx, vm);
	if ((p = control_defer(ctx)) == NULL)
		return cmd_nomem(ctx);
	rc = vm_worker_request(vm, command, NULL, cb, p);
	if (rc < 0)
		pending_error(p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
	return NULL;
}

static struct json_object *
cmd_vm_pause(struct cmd_ctx *ctx)
{
	return cmd_vm_forward(ctx, VM_RUNNING, WMSG_REQ_PAUSE, cmd_pause_done);
}

static struct json_object *
cmd_vm_resume(struct cmd_ctx *ctx)
{
	return cmd_vm_forward(ctx, VM_PAUSED, WMSG_REQ_RESUME,
	    cmd_resume_done);
}

static struct json_object *
cmd_vm_reset(struct cmd_ctx *ctx)
{
	return cmd_vm_forward(ctx, VM_RUNNING, WMSG_REQ_RESET, cmd_reset_done);
}

/*
 * What a deleted VM named name left, when no VM has that name now: its
 * data as if it had every disk as an overlay disk, for remove_data; the
 * recorded owner's or root's to remove (cmd_vm_data_owned()).
 */
static struct json_object *
cmd_vm_delete_left(struct cmd_ctx *ctx, const char *name)
{
	struct json_object *data = NULL, *removed;
	struct vm_def left;
	char err[1024], copy[CONFIG_NAME_MAX + 1];
	size_t found;
	int rc;

	if (!config_name_valid(name))
		return proto_error(ctx->id, PROTO_ERR_NOT_FOUND,
		    "no VM named '%.100s'", name);
	memset(&left, 0, sizeof(left));
	snprintf(copy, sizeof(copy), "%s", name);
	left.name = copy;
	left.ndisks = CONFIG_DISKS_MAX;
	for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++)
		left.disks[i].overlay = true;
	/* What is there, before whose it is. */
	cmd_vm_data(ctx->d, &left, false, &data, err, sizeof(err));
	if (data == NULL)
		return cmd_nomem(ctx);
	found = json_object_array_length(json_object_object_get(data,
	    "kept"));
	json_object_put(data);
	data = NULL;
	if (found == 0)
		return proto_error(ctx->id, PROTO_ERR_NOT_FOUND,
		    "no VM named '%.100s', and no data of one", name);
	if (cmd_vm_data_owned(ctx->d, name, control_client_cred(ctx->client),
	    err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_PERMISSION, "%s", err);
	rc = cmd_vm_data(ctx->d, &left, true, &data, err, sizeof(err));
	if (data == NULL)
		return cmd_nomem(ctx);
	if (rc < 0) {
		json_object_put(data);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL, "%s", err);
	}
	removed = json_object_object_get(data, "removed");
	if (json_object_array_length(removed) == 0) {
		json_object_put(data);
		return proto_error(ctx->id, PROTO_ERR_NOT_FOUND,
		    "no VM named '%.100s', and no data of one", name);
	}
	log_info("VM '%s': the data it left removed", name);
	return proto_reply(ctx->id, data);
}

/*
 * vm.delete: the definition goes; the VM's data (overlays, console log)
 * stays unless remove_data, and the reply lists what was removed and
 * what was kept.  With remove_data and no VM of that name, what a VM of
 * that name left at its delete goes, if it was the client's (or the
 * client is root): the data could otherwise be anyone's to destroy.
 */
static struct json_object *
cmd_vm_delete(struct cmd_ctx *ctx)
{
	struct json_object *reply, *data = NULL;
	struct vmmd *d = ctx->d;
	struct vm *vm;
	const char *name0 = NULL;
	char err[1024], name[CONFIG_NAME_MAX + 1];
	int remove = 0;

	if (proto_arg_bool(ctx->args, "remove_data", 0, &remove, err,
	    sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (remove && proto_args_check(ctx->args, cmd_keys_delete, err,
	    sizeof(err)) == 0 && proto_arg_string(ctx->args, "name", 1,
	    &name0, err, sizeof(err)) == 0 && vm_find(d, name0) == NULL)
		return cmd_vm_delete_left(ctx, name0);
	if ((vm = cmd_vm_lookup(ctx, cmd_keys_delete, &reply)) == NULL)
		return reply;
	if (!vm_at_rest(vm))
		return cmd_bad_state(ctx, vm);
	if (!vm->def->transient &&
	    config_remove(d->vmsdir, vm->def->name, err, sizeof(err)) < 0) {
		log_error("VM '%s': removing the definition: %s",
		    vm->def->name, err);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "cannot remove the definition: %s", err);
	}
	snprintf(name, sizeof(name), "%s", vm->def->name);
	if (cmd_vm_data(d, vm->def, remove, &data, err, sizeof(err)) < 0)
		log_error("VM '%s': removing its data: %s", name, err);
	if (!remove && data != NULL)
		cmd_vm_data_keep(d, vm->def, data);
	vm_remove(vm);
	log_info("VM '%s': deleted%s", name, remove ? " with its data" : "");
	control_broadcast(d->ctl, proto_event("vm.deleted", name, NULL));
	return proto_reply(ctx->id, data);
}

/*
 * vm.reset_disk: throw a stopped VM's changes to an overlay disk away
 * (disk N, or every overlay disk without "disk"), by making the overlay
 * afresh over its base, opened again with the client's rights.
 */
static struct json_object *
cmd_vm_reset_disk(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply;
	struct vm_files files;
	enum proto_error cls;
	struct vm_def one;
	struct vm *vm;
	char err[1024];
	int64_t disk = -1;
	unsigned int i, n = 0;
	int rc;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_reset_disk, &reply)) == NULL)
		return reply;
	if (proto_arg_int(ctx->args, "disk", 0, 0, CONFIG_DISKS_MAX - 1,
	    &disk, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (disk >= 0 && ((unsigned int)disk >= vm->def->ndisks ||
	    !vm->def->disks[disk].overlay))
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "VM '%s' has no overlay disk %d (its overlay disks are "
		    "those created with \"overlay\": true)", vm->def->name,
		    (int)disk);
	for (i = 0; i < vm->def->ndisks; i++)
		n += vm->def->disks[i].overlay;
	if (n == 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "VM '%s' has no overlay disk", vm->def->name);
	/* A guest writes to its overlay: only while none runs. */
	if (!vm_at_rest(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE, "VM '%s' is "
		    "%s: its disks are reset only while it is stopped",
		    vm->def->name, vm_state_name(vm->state));
	for (i = 0; i < vm->def->ndisks; i++) {
		if (!vm->def->disks[i].overlay || (disk >= 0 && i != disk))
			continue;
		/* The base alone, as at vm.create: not the kernel too. */
		memset(&one, 0, sizeof(one));
		one.name = vm->def->name;
		one.owner = vm->def->owner;
		one.ndisks = 1;
		one.disks[0] = vm->def->disks[i];
		rc = vm_files_open(&one, NULL, NULL, false, cred, &files, &cls,
		    err, sizeof(err));
		if (rc < 0)
			return proto_error(ctx->id, cls, "%s", err);
		rc = disk_overlay_make(ctx->d->disksdir, vm->def->name, i,
		    files.disk_fd[0], files.disk_format[0] == VM_FILES_QCOW2,
		    vm->def->disks[i].path, &cls, err, sizeof(err));
		vm_files_close(&files);
		if (rc < 0) {
			log_error("VM '%s': resetting disk %u: %s",
			    vm->def->name, i, err);
			return proto_error(ctx->id, cls, "%s", err);
		}
		log_info("VM '%s': disk %u reset to its base %s",
		    vm->def->name, i, vm->def->disks[i].path);
	}
	return proto_reply(ctx->id, vm_to_json(vm));
}

/* vm.autostart: whether the VM starts with vmmd; stored at once. */
static struct json_object *
cmd_vm_autostart(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	struct vm *vm;
	char err[1024];
	bool old;
	int on;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_autostart, &reply)) == NULL)
		return reply;
	if (proto_arg_bool(ctx->args, "autostart", 1, &on, err,
	    sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (on && vm->def->transient)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "VM '%s' is transient: it is gone once it stops and "
		    "cannot start with the daemon", vm->def->name);
	if (on && vm->def->cluster)
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is managed by a cluster (\"managed\": "
		    "\"cluster\"), which decides where and when it starts",
		    vm->def->name);
	/*
	 * An autostart VM's files are opened with its owner's rights:
	 * only the owner (or root) decides that it starts with no client.
	 */
	if (on && !vm_owner_is(vm->def, control_client_cred(ctx->client)))
		return proto_error(ctx->id, PROTO_ERR_PERMISSION,
		    "VM '%s' belongs to uid %ld: only its owner or root may "
		    "turn autostart on", vm->def->name,
		    vm->def->owner.known ? (long)vm->def->owner.uid : 0L);
	old = vm->def->autostart;
	vm->def->autostart = on != 0;
	if (!vm->def->transient && old != vm->def->autostart &&
	    config_save(ctx->d->vmsdir, vm->def, err, sizeof(err)) < 0) {
		vm->def->autostart = old;
		log_error("VM '%s': saving the definition: %s", vm->def->name,
		    err);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "cannot save the definition: %s", err);
	}
	if (old != vm->def->autostart)
		log_info("VM '%s': autostart %s", vm->def->name,
		    on ? "on" : "off");
	return proto_reply(ctx->id, vm_to_json(vm));
}

static struct json_object *
cmd_vm_list(struct cmd_ctx *ctx)
{
	struct json_object *ret, *vms;
	char err[512];
	struct vm *vm;

	if (proto_args_check(ctx->args, cmd_keys_none, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	ret = json_object_new_object();
	vms = json_object_new_array();
	if (ret == NULL || vms == NULL) {
		json_object_put(ret);
		json_object_put(vms);
		return cmd_nomem(ctx);
	}
	TAILQ_FOREACH(vm, &ctx->d->vms, entry)
		json_object_array_add(vms, vm_to_json(vm));
	json_object_object_add(ret, "vms", vms);
	return proto_reply(ctx->id, ret);
}

static void
cmd_info_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct json_object *obj;

	obj = vm_to_json(vm);
	if (obj != NULL && ret != NULL)
		json_object_object_add(obj, "stats", json_object_get(ret));
	else if (error != NULL)
		log_debug("VM '%s': worker.info: %s", vm->def->name,
		    json_object_get_string(json_object_object_get(error,
		    "desc")));
	pending_reply(arg, obj);
}

static struct json_object *
cmd_vm_info(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	struct pending *p;
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_name, &reply)) == NULL)
		return reply;
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm))
		return proto_reply(ctx->id, vm_to_json(vm));
	if ((p = control_defer(ctx)) == NULL)
		return cmd_nomem(ctx);
	if (vm_worker_request(vm, WMSG_REQ_INFO, NULL, cmd_info_done, p) < 0)
		pending_reply(p, vm_to_json(vm));
	return NULL;
}

/* The console handover, once the client's output is written: the VM
 * may have stopped by then, or be gone (a transient one); the client
 * then gets its last output all the same.  log_start: the run's. */
static int
cmd_vm_console_pass(struct vmmd *d, const char *name, int64_t log_start,
    int fd, struct json_object *id, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct vm *vm;

	vm = vm_find(d, name);
	if (vm == NULL)
		return vm_console_answer_gone(d, name, (off_t)log_start, fd,
		    id);
	return vm_console_pass(vm, fd, id, cls, err, errlen);
}

static struct json_object *
cmd_vm_console(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_name, &reply)) == NULL)
		return reply;
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm))
		return cmd_bad_state(ctx, vm);
	/* The worker sends the reply, on the connection it takes over. */
	control_handover(ctx, cmd_vm_console_pass, vm->def->name,
	    (int64_t)vm->run.log_start, "console");
	return NULL;
}

/*
 * vm.display and vm.screenshot: the VM must have a display (that comes
 * first: it says more than the state) and a running or paused guest.
 * Returns NULL when it may go on, else the error reply.
 */
static struct json_object *
cmd_display_check(struct cmd_ctx *ctx, const struct vm *vm)
{
	if (!vm_has_display(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' has no display", vm->def->name);
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm))
		return cmd_bad_state(ctx, vm);
	return NULL;
}

/* The worker's answer, or its error, as it is. */
static void
cmd_worker_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	if (error != NULL) {
		pending_forward_error(arg, error);
		return;
	}
	/* vm.display: only the worker knows the ports. */
	pending_reply(arg, ret != NULL ? json_object_get(ret) :
	    json_object_new_object());
}

static struct json_object *
cmd_vm_display(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	struct pending *p;
	struct vm *vm;
	int rc;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_name, &reply)) == NULL)
		return reply;
	if ((reply = cmd_display_check(ctx, vm)) != NULL)
		return reply;
	if ((p = control_defer(ctx)) == NULL)
		return cmd_nomem(ctx);
	rc = vm_worker_request(vm, WMSG_REQ_DISPLAY, NULL, cmd_worker_done,
	    p);
	if (rc < 0)
		pending_error(p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
	return NULL;
}

/*
 * vm.stats: the worker's exit statistics, switched and read there.  Its
 * arguments but the name are worker.stats's own, checked here against
 * the link's vocabulary (the values of the guest's, like a vCPU it does
 * not have, by the worker); the worker's answer goes back as is.
 */
static struct json_object *
cmd_vm_stats(struct cmd_ctx *ctx)
{
	static const char *const keys[] = { "name", "enable", "reset",
		"vcpu", "segments", "kvm", NULL };
	struct json_object *reply, *args = NULL;
	struct pending *p;
	struct vm *vm;
	char err[256];
	int rc;

	if ((vm = cmd_vm_lookup(ctx, keys, &reply)) == NULL)
		return reply;
	if (json_object_deep_copy(ctx->args, &args, NULL) != 0)
		return cmd_nomem(ctx);
	json_object_object_del(args, "name");
	if (wmsg_check(WMSG_S_STATS, args, err, sizeof(err)) < 0) {
		json_object_put(args);
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	}
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm)) {
		json_object_put(args);
		return cmd_bad_state(ctx, vm);
	}
	if ((p = control_defer(ctx)) == NULL) {
		json_object_put(args);
		return cmd_nomem(ctx);
	}
	rc = vm_worker_request(vm, WMSG_REQ_STATS, args, cmd_worker_done, p);
	if (rc < 0)
		pending_error(p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
	return NULL;
}

/* The screenshot handover, once the client's output is written. */
static int
cmd_vm_screenshot_pass(struct vmmd *d, const char *name, int64_t mark,
    int fd, struct json_object *id, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct vm *vm;

	vm = vm_find(d, name);
	if (vm == NULL) {
		*cls = PROTO_ERR_NOT_FOUND;
		snprintf(err, errlen, "no VM named '%s'", name);
		return -ENOENT;
	}
	return vm_screenshot_pass(vm, fd, id, cls, err, errlen);
}

static struct json_object *
cmd_vm_screenshot(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_name, &reply)) == NULL)
		return reply;
	if ((reply = cmd_display_check(ctx, vm)) != NULL)
		return reply;
	/* The worker sends the reply line and the PNG, then closes. */
	control_handover(ctx, cmd_vm_screenshot_pass, vm->def->name, 0,
	    "screenshot");
	return NULL;
}

const struct cmd_def cmd_vm_commands[] = {
	{ "vm.create", cmd_vm_create },
	{ "vm.start", cmd_vm_start },
	{ "vm.stop", cmd_vm_stop },
	{ "vm.pause", cmd_vm_pause },
	{ "vm.resume", cmd_vm_resume },
	{ "vm.reset", cmd_vm_reset },
	{ "vm.delete", cmd_vm_delete },
	{ "vm.reset_disk", cmd_vm_reset_disk },
	{ "vm.autostart", cmd_vm_autostart },
	{ "vm.list", cmd_vm_list },
	{ "vm.info", cmd_vm_info },
	{ "vm.console", cmd_vm_console },
	{ "vm.display", cmd_vm_display },
	{ "vm.screenshot", cmd_vm_screenshot },
	{ "vm.stats", cmd_vm_stats },
	{ NULL, NULL },
};
