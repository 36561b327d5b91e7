/*
 * Changing a VM at rest without losing it: vm.export, vm.redefine,
 * vm.rename and vm.clone; and the VM's data that vm.delete keeps unless
 * asked (cmd-vm-edit.h).
 *
 * vm.redefine takes a whole definition rather than the members that
 * change.  A definition is only ever what config_parse() accepts as a
 * whole, so the daemon validates the new one exactly as vm.create does,
 * with one code path for vmctl set (which merges its options into what
 * vm.export gave) and vmctl edit (which sends back what the user saved);
 * a request of changed members would need rules of its own for taking a
 * member away (a disk, the network) that the whole definition states
 * plainly.  The cost: two clients changing one VM at once, the last one
 * wins.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access.h"
#include "cmd-vm-edit.h"
#include "control.h"
#include "disk-overlay.h"
#include "log.h"
#include "proto.h"
#include "vm-files.h"
#include "vm-nvram.h"
#include "vm.h"
#include "vmconfig.h"

static const char *const cmd_keys_export[] = { "name", NULL };
static const char *const cmd_keys_redefine[] = { "name", "definition",
	NULL };
static const char *const cmd_keys_rename[] = { "name", "new_name", NULL };

struct vm *
cmd_vm_lookup(struct cmd_ctx *ctx, const char *const *keys,
    struct json_object **reply)
{
	const char *name = NULL;
	char err[512];
	struct vm *vm;

	if (proto_args_check(ctx->args, keys, err, sizeof(err)) < 0 ||
	    proto_arg_string(ctx->args, "name", 1, &name, err,
	    sizeof(err)) < 0) {
		*reply = proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
		return NULL;
	}
	if ((vm = vm_find(ctx->d, name)) == NULL)
		*reply = proto_error(ctx->id, PROTO_ERR_NOT_FOUND,
		    "no VM named '%.100s'", name);
	return vm;
}

/* Changes only while no guest runs: bad_state, saying so. */
static struct json_object *
cmd_edit_at_rest(struct cmd_ctx *ctx, const struct vm *vm, const char *what)
{
	if (vm_at_rest(vm))
		return NULL;
	return proto_error(ctx->id, PROTO_ERR_BAD_STATE, "VM '%s' is %s: "
	    "it is %s only while it is stopped", vm->def->name,
	    vm_state_name(vm->state), what);
}

/*
 * A console log to its new name, never over one a deleted VM of that
 * name left (vm.delete keeps it): that one stays, and so does this.
 */
static void
cmd_edit_move_log(const char *name, const char *from, const char *to)
{
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0 &&
	    errno != ENOENT)
		log_warn("VM '%s': console log %s stays where it is (%s%s)",
		    name, from, strerror(errno), errno == EEXIST ? ": a "
		    "deleted VM's log is kept under the new name" : "");
}

/*
 * A VM's definition is its owner's (or root's) to change, rename or
 * clone: another member of group vmm could otherwise point a root-owned
 * VM's disk at a path that passes the check as them and is swapped
 * before the owner's next start (autostart opens files with the owner's
 * rights), or take its secrets into a clone of their own.
 */
static struct json_object *
cmd_edit_owned(struct cmd_ctx *ctx, const struct vm *vm, const char *what)
{
	if (vm_owner_is(vm->def, control_client_cred(ctx->client)))
		return NULL;
	return proto_error(ctx->id, PROTO_ERR_PERMISSION, "VM '%s' belongs "
	    "to uid %ld: only its owner or root may %s it", vm->def->name,
	    vm->def->owner.known ? (long)vm->def->owner.uid : 0L, what);
}

/* "new_name": valid and free, or NULL and *reply. */
static const char *
cmd_edit_new_name(struct cmd_ctx *ctx, struct json_object **reply)
{
	const char *name = NULL;
	char err[512];

	if (proto_arg_string(ctx->args, "new_name", 1, &name, err,
	    sizeof(err)) < 0) {
		*reply = proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
		return NULL;
	}
	if (!config_name_valid(name)) {
		*reply = proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "new_name: '%.80s' is no VM name (letters, digits, '.', "
		    "'_' and '-', at most %d, not starting with '.', '_' or "
		    "'-')", name, CONFIG_NAME_MAX);
		return NULL;
	}
	if (vm_find(ctx->d, name) != NULL) {
		*reply = proto_error(ctx->id, PROTO_ERR_EXISTS,
		    "VM '%s' already exists", name);
		return NULL;
	}
	return name;
}

/*
 * The prelude of vm.rename and vm.clone: the VM "name" names, which the
 * client owns and no guest runs, and a free "new_name" in *name; or NULL
 * and *reply.  what is the verb of the refusals ("rename"), done its
 * participle ("renamed").
 */
static struct vm *
cmd_edit_target(struct cmd_ctx *ctx, const char *what, const char *done,
    const char **name, struct json_object **reply)
{
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_rename, reply)) == NULL ||
	    (*name = cmd_edit_new_name(ctx, reply)) == NULL ||
	    (*reply = cmd_edit_owned(ctx, vm, what)) != NULL ||
	    (*reply = cmd_edit_at_rest(ctx, vm, done)) != NULL)
		return NULL;
	return vm;
}

/* Add path to the array of key in obj, making the array. */
static void
cmd_data_add(struct json_object *obj, const char *key, const char *path)
{
	struct json_object *a;

	if (!json_object_object_get_ex(obj, key, &a)) {
		a = json_object_new_array();
		json_object_object_add(obj, key, a);
	}
	json_object_array_add(a, json_object_new_string(path));
}

/*
 * path into removed or kept, removed first if remove; 0 or -errno.  A
 * rotated console log (rotated) that is empty holds nothing: the worker
 * makes it at each start, rotation or not, so it goes either way and is
 * not listed.
 */
static int
cmd_data_one(struct json_object *obj, const char *path, bool remove,
    bool rotated, char *err, size_t errlen)
{
	struct stat st;
	int rc;

	if (lstat(path, &st) < 0)
		return 0;
	if (rotated && S_ISREG(st.st_mode) && st.st_size == 0) {
		unlink(path);
		return 0;
	}
	if (!remove) {
		cmd_data_add(obj, "kept", path);
		return 0;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		cmd_data_add(obj, "kept", path);
		return rc;
	}
	cmd_data_add(obj, "removed", path);
	return 0;
}

/* DISKSDIR/NAME.owner: who owned the data a deleted VM left. */
static int
cmd_data_owner_path(const struct vmmd *d, const char *name, char *buf,
    size_t len)
{
	int r = snprintf(buf, len, "%s/%s.owner", d->disksdir, name);

	return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

void
cmd_vm_data_keep(const struct vmmd *d, const struct vm_def *def,
    struct json_object *data)
{
	char path[PATH_MAX], line[32];
	int fd, n;

	if (d->disksdir == NULL || json_object_array_length(
	    json_object_object_get(data, "kept")) == 0 ||
	    cmd_data_owner_path(d, def->name, path, sizeof(path)) < 0)
		return;
	unlink(path);
	if (!def->owner.known)
		return;
	n = snprintf(line, sizeof(line), "%lu\n",
	    (unsigned long)def->owner.uid);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		log_warn("VM '%s': %s: %s: only root may remove its data",
		    def->name, path, strerror(errno));
		if (fd >= 0)
			unlink(path);
	}
	if (fd >= 0)
		close(fd);
}

/* The uid recorded for name's kept data: 0 and *uid, or -errno. */
static int
cmd_data_owner_read(const struct vmmd *d, const char *name, uid_t *uid)
{
	char path[PATH_MAX], line[32], *end;
	unsigned long v;
	ssize_t n;
	int fd;

	if (cmd_data_owner_path(d, name, path, sizeof(path)) < 0)
		return -ENAMETOOLONG;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	line[n] = '\0';
	errno = 0;
	v = strtoul(line, &end, 10);
	if (errno != 0 || end == line || *end != '\n' || v > UINT32_MAX)
		return -EINVAL;
	*uid = (uid_t)v;
	return 0;
}

int
cmd_vm_data_owned(const struct vmmd *d, const char *name,
    const struct access_cred *cred, char *err, size_t errlen)
{
	uid_t uid;

	if (cred->uid == 0)
		return 0;
	if (d->disksdir == NULL || cmd_data_owner_read(d, name, &uid) < 0) {
		snprintf(err, errlen, "the data a deleted VM '%s' left has no "
		    "owner recorded: only root may remove it", name);
		return -EPERM;
	}
	if (uid == cred->uid)
		return 0;
	snprintf(err, errlen, "the data a deleted VM '%s' left belongs to "
	    "uid %lu: only its owner or root may remove it", name,
	    (unsigned long)uid);
	return -EPERM;
}

int
cmd_vm_data(struct vmmd *d, const struct vm_def *def, bool remove,
    struct json_object **out, char *err, size_t errlen)
{
	struct json_object *obj = json_object_new_object();
	char path[PATH_MAX];
	int rc = 0, r;

	if (obj == NULL)
		return -ENOMEM;
	json_object_object_add(obj, "removed", json_object_new_array());
	json_object_object_add(obj, "kept", json_object_new_array());
	for (unsigned int i = 0; d->disksdir != NULL && i < def->ndisks; i++)
		if (def->disks[i].overlay && disk_overlay_path(d->disksdir,
		    def->name, i, path, sizeof(path)) == 0 &&
		    (r = cmd_data_one(obj, path, remove, false, err,
		    errlen)) < 0 && rc == 0)
			rc = r;
	if (d->consoledir != NULL && vm_console_log_path(d, def->name, path,
	    sizeof(path) - 2) == 0) {
		if ((r = cmd_data_one(obj, path, remove, false, err,
		    errlen)) < 0 && rc == 0)
			rc = r;
		strcat(path, ".1");
		if ((r = cmd_data_one(obj, path, remove, true, err,
		    errlen)) < 0 && rc == 0)
			rc = r;
	}
	/* A "uefi" VM's variables (looked for whatever def says: a
	 * deleted VM's are found too). */
	if (d->nvramdir != NULL && vm_nvram_path(d->nvramdir, def->name, path,
	    sizeof(path)) == 0 && (r = cmd_data_one(obj, path, remove, false,
	    err, errlen)) < 0 && rc == 0)
		rc = r;
	if (remove && d->nvramdir != NULL)
		config_sync_dir(d->nvramdir);
	/* Nothing left: no owner of it either. */
	if (d->disksdir != NULL && json_object_array_length(
	    json_object_object_get(obj, "kept")) == 0 &&
	    cmd_data_owner_path(d, def->name, path, sizeof(path)) == 0)
		unlink(path);
	if (remove && d->disksdir != NULL)
		config_sync_dir(d->disksdir);
	*out = obj;
	return rc;
}

int
cmd_vm_kept_overlays(struct vmmd *d, const struct vm_def *def, char *err,
    size_t errlen)
{
	char path[PATH_MAX];

	for (unsigned int i = 0; d->disksdir != NULL && i < def->ndisks; i++) {
		if (!def->disks[i].overlay ||
		    !disk_overlay_exists(d->disksdir, def->name, i))
			continue;
		disk_overlay_path(d->disksdir, def->name, i, path,
		    sizeof(path));
		snprintf(err, errlen, "disk %u: %s holds the overlay of an "
		    "earlier VM '%s', kept when it was deleted: use another "
		    "name, or remove that VM's data with vm.delete "
		    "{\"name\": \"%s\", \"remove_data\": true}", i, path,
		    def->name, def->name);
		return -EEXIST;
	}
	if (def->firmware == VM_FIRMWARE_UEFI && d->nvramdir != NULL &&
	    vm_nvram_exists(d->nvramdir, def->name)) {
		vm_nvram_path(d->nvramdir, def->name, path, sizeof(path));
		snprintf(err, errlen, "%s holds the UEFI variables of an "
		    "earlier VM '%s', kept when it was deleted: use another "
		    "name, or remove that VM's data with vm.delete "
		    "{\"name\": \"%s\", \"remove_data\": true}", path,
		    def->name, def->name);
		return -EEXIST;
	}
	return 0;
}

/*
 * vm.export: the definition as vm.create takes it back: no state, no
 * owner (the creating client becomes the owner).  The VNC password is
 * given to the VM's owner and root only; to others "withheld" says it
 * is left out.
 */
static struct json_object *
cmd_vm_export(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply, *def, *ret;
	struct vm *vm;
	bool secrets;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_export, &reply)) == NULL)
		return reply;
	secrets = vm_owner_is(vm->def, cred);
	def = config_to_json(vm->def, secrets ? CONFIG_JSON_SECRETS : 0);
	ret = json_object_new_object();
	if (def == NULL || ret == NULL) {
		json_object_put(def);
		json_object_put(ret);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	json_object_object_del(def, "owner");
	if (!secrets) {
		/* Shown as true or false: only false is what it says. */
		json_object_object_del(def, "vnc_password");
		if (vm->def->vnc_no_password)
			json_object_object_add(def, "vnc_password",
			    json_object_new_boolean(0));
		if (vm->def->vnc_password != NULL) {
			struct json_object *w = json_object_new_array();

			json_object_array_add(w,
			    json_object_new_string("vnc_password"));
			json_object_object_add(ret, "withheld", w);
		}
	}
	json_object_object_add(ret, "definition", def);
	return proto_reply(ctx->id, ret);
}

/*
 * Make the overlays of new's overlay disks that old (NULL: none) does
 * not have with the same base at the same index, over the bases f
 * opened.  Each one made is recorded in made[].  0 or -errno.
 */
static int
cmd_edit_overlays(struct vmmd *d, const struct vm_def *old,
    const struct vm_def *new, const struct vm_files *f,
    bool made[CONFIG_DISKS_MAX], enum proto_error *cls, char *err,
    size_t errlen)
{
	int rc;

	for (unsigned int i = 0; i < new->ndisks; i++) {
		if (!new->disks[i].overlay || (old != NULL &&
		    i < old->ndisks && old->disks[i].overlay &&
		    strcmp(old->disks[i].path, new->disks[i].path) == 0))
			continue;
		if (disk_overlay_exists(d->disksdir, new->name, i)) {
			*cls = PROTO_ERR_EXISTS;
			return cmd_vm_kept_overlays(d, new, err, errlen);
		}
		rc = disk_overlay_make(d->disksdir, new->name, i, f->disk_fd[i],
		    f->disk_format[i] == VM_FILES_QCOW2, new->disks[i].path,
		    cls, err, errlen);
		if (rc < 0)
			return rc;
		made[i] = true;
	}
	return 0;
}

/* Remove the overlays made[] of def, after a failure. */
static void
cmd_edit_unmake(struct vmmd *d, const struct vm_def *def,
    const bool made[CONFIG_DISKS_MAX])
{
	char path[PATH_MAX];

	for (unsigned int i = 0; i < def->ndisks; i++)
		if (made[i] && disk_overlay_path(d->disksdir, def->name, i,
		    path, sizeof(path)) == 0)
			unlink(path);
}

/*
 * Open new's files as the client, as vm.create does (the kernel, the
 * disks' bases, the TAP's rule), and record the disks' formats.
 */
static int
cmd_edit_files(struct cmd_ctx *ctx, struct vm_def *def, struct vm_files *f,
    enum proto_error *cls, char *err, size_t errlen)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	int rc;

	rc = vm_files_open(def, NULL, NULL, true, cred, f, cls, err, errlen);
	if (rc == 0 && (rc = vm_files_check_tap(def, ctx->d->tap_rules,
	    ctx->d->ntap_rules, cred, cls, err, errlen)) < 0)
		vm_files_close(f);
	if (rc == 0)
		vm_files_record_formats(def, f);
	return rc;
}

/*
 * vm.redefine {name, definition}: the stopped VM's definition replaced
 * by a whole new one (see the top of the file), checked as vm.create
 * checks one.  Its overlays stay where an overlay disk keeps its base at
 * its index; an overlay disk that would lose its overlay that way is
 * refused (the guest's data is in it); new overlay disks get fresh ones.
 */
static struct json_object *
cmd_vm_redefine(struct cmd_ctx *ctx)
{
	struct json_object *reply, *obj;
	struct vm_files files;
	enum proto_error cls;
	struct vm_def *def, *old;
	bool made[CONFIG_DISKS_MAX] = { false };
	const char *s;
	char err[3 * PATH_MAX];
	struct vm *vm;
	int rc;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_redefine, &reply)) == NULL)
		return reply;
	old = vm->def;
	if (!json_object_object_get_ex(ctx->args, "definition", &obj) ||
	    !json_object_is_type(obj, json_type_object))
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "definition: expected an object, the whole definition "
		    "(as vm.export gives it)");
	if ((reply = cmd_edit_owned(ctx, vm, "change")) != NULL ||
	    (reply = cmd_edit_at_rest(ctx, vm, "changed")) != NULL)
		return reply;
	if (!json_object_object_get_ex(obj, "name", NULL))
		json_object_object_add(obj, "name",
		    json_object_new_string(old->name));
	s = json_object_get_string(json_object_object_get(obj, "name"));
	if (!json_object_is_type(json_object_object_get(obj, "name"),
	    json_type_string) || strcmp(s, old->name) != 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "definition: name: '%.80s' is not '%s': vm.rename renames "
		    "a VM", s != NULL ? s : "", old->name);
	rc = config_parse(obj, 0, &def, err, sizeof(err));
	if (rc < 0)
		return proto_error(ctx->id, rc == -ENOMEM ? PROTO_ERR_INTERNAL :
		    PROTO_ERR_INVALID_ARGUMENT, "definition: %s", err);
	def->owner = old->owner;
	/* A definition given without its UUID keeps the VM's. */
	if (!def->has_uuid && old->has_uuid) {
		memcpy(def->uuid, old->uuid, sizeof(def->uuid));
		def->has_uuid = true;
	}
	if (def->transient != old->transient) {
		cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, sizeof(err), "definition: transient: a VM is "
		    "transient from its creation to its end, or never");
		goto fail;
	}
	for (unsigned int i = 0; i < old->ndisks; i++) {
		char path[PATH_MAX];

		if (!old->disks[i].overlay || (i < def->ndisks &&
		    def->disks[i].overlay &&
		    strcmp(def->disks[i].path, old->disks[i].path) == 0))
			continue;
		disk_overlay_path(ctx->d->disksdir, old->name, i, path,
		    sizeof(path));
		cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, sizeof(err), "disks: disk %u must stay an "
		    "overlay disk over %s: its overlay %s holds the guest's "
		    "writes (to drop them: delete the VM with its data and "
		    "create it again)", i, old->disks[i].path, path);
		goto fail;
	}
	if ((rc = cmd_edit_files(ctx, def, &files, &cls, err,
	    sizeof(err))) < 0)
		goto fail;
	rc = cmd_edit_overlays(ctx->d, old, def, &files, made, &cls, err,
	    sizeof(err));
	vm_files_close(&files);
	if (rc < 0) {
		cmd_edit_unmake(ctx->d, def, made);
		goto fail;
	}
	if (!def->transient && config_save(ctx->d->vmsdir, def, err,
	    sizeof(err)) < 0) {
		log_error("VM '%s': saving the definition: %s", def->name,
		    err);
		cls = PROTO_ERR_INTERNAL;
		cmd_edit_unmake(ctx->d, def, made);
		goto fail;
	}
	vm_replace_def(vm, def);
	log_info("VM '%s': redefined", def->name);
	return proto_reply(ctx->id, vm_to_json(vm));

fail:
	config_def_free(def);
	return proto_error(ctx->id, cls, "%s", err);
}

/*
 * A definition named a card's MAC only when it was given; one made
 * from the name (config_net_mac()) would change with it: a renamed VM
 * keeps its addresses, so they are written down.
 */
static void
cmd_edit_pin_mac(struct vm_def *def, const struct vm_def *old)
{
	for (unsigned int i = 0; i < def->nnics; i++)
		if (!def->nics[i].has_mac) {
			config_net_mac(old, i, def->nics[i].mac);
			def->nics[i].has_mac = true;
		}
}

/*
 * vm.rename {name, new_name}: a stopped VM under a new name, with its
 * overlays and console log, and its MAC address (cmd_edit_pin_mac()).
 * The new definition is saved before the old one goes: a crash between
 * leaves both, never neither.
 */
static struct json_object *
cmd_vm_rename(struct cmd_ctx *ctx)
{
	struct json_object *reply;
	enum proto_error cls = PROTO_ERR_INTERNAL;
	struct vm_def *def;
	char err[3 * PATH_MAX], oldname[CONFIG_NAME_MAX + 1], from[PATH_MAX],
	    to[PATH_MAX];
	const char *name;
	unsigned int i, n = 0;
	struct vm *vm;
	int rc = 0;

	if ((vm = cmd_edit_target(ctx, "rename", "renamed", &name,
	    &reply)) == NULL)
		return reply;
	if ((def = config_def_dup(vm->def)) == NULL)
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	free(def->name);
	if ((def->name = strdup(name)) == NULL) {
		config_def_free(def);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	cmd_edit_pin_mac(def, vm->def);
	if (cmd_vm_kept_overlays(ctx->d, def, err, sizeof(err)) < 0) {
		cls = PROTO_ERR_EXISTS;
		goto fail;
	}
	if (!def->transient && config_save(ctx->d->vmsdir, def, err,
	    sizeof(err)) < 0)
		goto fail;
	for (i = 0; i < def->ndisks; i++) {
		if (!def->disks[i].overlay)
			continue;
		if ((rc = disk_overlay_rename(ctx->d->disksdir, vm->def->name,
		    name, i, &cls, err, sizeof(err))) < 0)
			break;
		n++;
	}
	if (i == def->ndisks && def->firmware == VM_FIRMWARE_UEFI &&
	    (rc = vm_nvram_rename(ctx->d->nvramdir, vm->def->name, name,
	    err, sizeof(err))) < 0)
		cls = PROTO_ERR_INTERNAL;
	if (i < def->ndisks || rc < 0) {
		enum proto_error first = cls, undo;

		/* Those moved go back; the new definition goes.  The
		 * answer is the first failure's. */
		for (i = 0; n > 0 && i < def->ndisks; i++)
			if (def->disks[i].overlay && n-- > 0)
				disk_overlay_rename(ctx->d->disksdir, name,
				    vm->def->name, i, &undo, from,
				    sizeof(from));
		cls = first;
		if (!def->transient)
			config_remove(ctx->d->vmsdir, name, from,
			    sizeof(from));
		goto fail;
	}
	/* The console log follows, its rotated part too; a VM never
	 * started has none. */
	if (vm_console_log_path(ctx->d, vm->def->name, from,
	    sizeof(from) - 2) == 0 && vm_console_log_path(ctx->d, name, to,
	    sizeof(to) - 2) == 0) {
		cmd_edit_move_log(name, from, to);
		strcat(from, ".1");
		strcat(to, ".1");
		cmd_edit_move_log(name, from, to);
	}
	if (!def->transient && config_remove(ctx->d->vmsdir, vm->def->name,
	    err, sizeof(err)) < 0)
		log_error("VM '%s': removing the definition of its old name "
		    "'%s': %s", name, vm->def->name, err);
	snprintf(oldname, sizeof(oldname), "%s", vm->def->name);
	vm_replace_def(vm, def);
	log_info("VM '%s': renamed '%s'", oldname, name);
	control_broadcast(ctx->d->ctl, proto_event("vm.deleted", oldname,
	    NULL));
	control_broadcast(ctx->d->ctl, proto_event("vm.created", name, NULL));
	return proto_reply(ctx->id, vm_to_json(vm));

fail:
	config_def_free(def);
	return proto_error(ctx->id, cls, "%s", err);
}

/* A clone's NVRAM file, after a failure. */
static void
cmd_edit_nvram_unmake(struct vmmd *d, const struct vm_def *def)
{
	char path[PATH_MAX];

	if (def->firmware == VM_FIRMWARE_UEFI &&
	    vm_nvram_path(d->nvramdir, def->name, path, sizeof(path)) == 0)
		unlink(path);
}

/* The lowest vsock CID no definition names and no guest has. */
static uint32_t
cmd_edit_free_cid(struct vmmd *d)
{
	struct vm *vm;
	uint64_t c;

	for (c = CONFIG_VSOCK_CID_MIN; c <= CONFIG_VSOCK_CID_MAX; c++) {
		TAILQ_FOREACH(vm, &d->vms, entry)
			if ((vm->def->vsock && vm->def->vsock_cid == c) ||
			    (vm->w != NULL && vm->run.vsock_cid == c))
				break;
		if (vm == NULL)
			return (uint32_t)c;
	}
	return 0;
}

/*
 * vm.clone {name, new_name}: a new VM with a stopped VM's definition,
 * owned by the client (who must be able to open its files), not
 * autostarted, with a MAC of its own (made from its name) and, where the
 * VM's CID was fixed, the lowest one free.  Each overlay disk gets a
 * copy of the VM's overlay, over the same base: the clone starts with
 * what the guest wrote so far, and the two go their own ways.  A
 * writable disk that is no overlay would be written by both: refused.
 */
static struct json_object *
cmd_vm_clone(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply;
	struct vm_files files;
	enum proto_error cls = PROTO_ERR_INTERNAL;
	bool made[CONFIG_DISKS_MAX] = { false };
	struct vm_def *def;
	const char *name;
	char err[3 * PATH_MAX];
	struct vm *vm, *nvm;
	int rc;

	if ((vm = cmd_edit_target(ctx, "clone", "cloned", &name,
	    &reply)) == NULL)
		return reply;
	for (unsigned int i = 0; i < vm->def->ndisks; i++)
		if (!vm->def->disks[i].overlay && !vm->def->disks[i].readonly)
			return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
			    "disk %u: %s is written by VM '%s': a clone "
			    "could share only overlay and read-only disks",
			    i, vm->def->disks[i].path, vm->def->name);
	if ((def = config_def_dup(vm->def)) == NULL)
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	free(def->name);
	if ((def->name = strdup(name)) == NULL) {
		config_def_free(def);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	vm_owner_set(def, cred);
	def->autostart = false;
	def->transient = false;
	/* Another machine: its own UUID, as its own MACs below. */
	if ((rc = config_uuid_new(def)) < 0) {
		snprintf(err, sizeof(err), "making a UUID: %s",
		    strerror(-rc));
		goto fail;
	}
	for (unsigned int i = 0; i < def->nnics; i++)
		def->nics[i].has_mac = false;
	if (def->vsock && def->vsock_cid != 0 &&
	    (def->vsock_cid = cmd_edit_free_cid(ctx->d)) == 0) {
		cls = PROTO_ERR_LIMIT;
		snprintf(err, sizeof(err), "vsock: no CID left");
		goto fail;
	}
	if (cmd_vm_kept_overlays(ctx->d, def, err, sizeof(err)) < 0) {
		cls = PROTO_ERR_EXISTS;
		goto fail;
	}
	/* The client's rights over the files, as at vm.create. */
	if ((rc = cmd_edit_files(ctx, def, &files, &cls, err,
	    sizeof(err))) < 0)
		goto fail;
	vm_files_close(&files);
	for (unsigned int i = 0; i < def->ndisks; i++) {
		if (!def->disks[i].overlay)
			continue;
		if ((rc = disk_overlay_copy(ctx->d->disksdir, vm->def->name,
		    name, i, &cls, err, sizeof(err))) < 0) {
			cmd_edit_unmake(ctx->d, def, made);
			goto fail;
		}
		made[i] = true;
	}
	/* Its UEFI variables as they are now: the clone's own from here. */
	if (def->firmware == VM_FIRMWARE_UEFI && (rc = vm_nvram_copy(
	    ctx->d->nvramdir, vm->def->name, name, err, sizeof(err))) < 0) {
		cls = rc == -EEXIST ? PROTO_ERR_EXISTS : PROTO_ERR_INTERNAL;
		cmd_edit_unmake(ctx->d, def, made);
		goto fail;
	}
	if (config_save(ctx->d->vmsdir, def, err, sizeof(err)) < 0) {
		cls = PROTO_ERR_INTERNAL;
		cmd_edit_unmake(ctx->d, def, made);
		cmd_edit_nvram_unmake(ctx->d, def);
		goto fail;
	}
	if ((nvm = vm_add(ctx->d, def)) == NULL) {
		char path[PATH_MAX];

		/* def is freed: the names again from the request, and
		 * the copies go too (they would block the name). */
		config_remove(ctx->d->vmsdir, name, err, sizeof(err));
		for (unsigned int i = 0; i < CONFIG_DISKS_MAX; i++)
			if (made[i] && disk_overlay_path(ctx->d->disksdir,
			    name, i, path, sizeof(path)) == 0)
				unlink(path);
		if (vm->def->firmware == VM_FIRMWARE_UEFI &&
		    vm_nvram_path(ctx->d->nvramdir, name, path,
		    sizeof(path)) == 0)
			unlink(path);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	log_info("VM '%s': cloned from '%s'", name, vm->def->name);
	control_broadcast(ctx->d->ctl, proto_event("vm.created", name, NULL));
	return proto_reply(ctx->id, vm_to_json(nvm));

fail:
	config_def_free(def);
	return proto_error(ctx->id, cls, "%s", err);
}

const struct cmd_def cmd_vm_edit_commands[] = {
	{ "vm.export", cmd_vm_export },
	{ "vm.redefine", cmd_vm_redefine },
	{ "vm.rename", cmd_vm_rename },
	{ "vm.clone", cmd_vm_clone },
	{ NULL, NULL },
};
