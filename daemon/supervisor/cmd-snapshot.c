/*
 * vm.snapshot {"name", "dir", "keep_running"} and vm.restore {"dir",
 * "as", "name"} (cmd-snapshot.h).
 *
 * The worker is sandboxed: it opens no file.  So vmmd opens the
 * directory with the client's rights (access_open_dir), makes the data
 * files there (snap_write_begin, given to the client), passes them with
 * worker.snapshot, and commits the manifest the worker answers only
 * after checking it against the files (snap_write_commit): a worker
 * that lies gets nothing written in its name.  keep_running false:
 * the guest stays paused after the save and is stopped.  The disks:
 * vm-snapdisks.h (frozen overlays, the worker moved onto fresh ones,
 * the records added to the manifest before the commit).
 *
 * vm.restore starts a VM that does not run from a snapshot: vmmd opens
 * its three files with the client's rights, checks them whole (the
 * manifest, sizes, every checksum) and the definition in the manifest
 * against the VM's, saying what differs, before anything starts; then
 * the disk step (vm_snapdisks_restore: fresh overlays over the frozen
 * images); the worker gets the files and restores the guest before it
 * runs.  The VM is the one recorded (made from the recorded definition
 * where none has its name), or with "as" a new one, a clone with its
 * own identity.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "access.h"
#include "cmd-snapshot.h"
#include "cmd-vm-edit.h"
#include "cmd-vm.h"
#include "control.h"
#include "log.h"
#include "pending.h"
#include "proto.h"
#include "snap-file.h"
#include "vm.h"
#include "vm-snapdisks.h"
#include "vmconfig-store.h"
#include "vmconfig.h"
#include "worker-msg.h"

static const char *const cmd_keys_snapshot[] = { "name", "dir",
	"keep_running", NULL };

/*
 * A "vm.progress" event for subscribers: command's phase for vm, and
 * where bytes >= 0, how far (of total).  Phases: vm.snapshot
 * "pausing" (the worker pauses the guest and writes its state and RAM),
 * "memory" (the RAM written: bytes allocated in the memory file, total
 * the RAM's size), "done"; vm.restore "starting" (the snapshot checked
 * and its VM found or made, the worker restores the guest; total: the
 * RAM it maps, lazily), its reply then saying that the guest runs;
 * "failed" for either.  Memory's progress inside the worker's write is
 * not told: the worker writes the RAM in one go.
 */
static void
cmd_snapshot_progress(struct vmmd *d, const char *vm, const char *command,
    const char *phase, int64_t bytes, int64_t total)
{
	struct json_object *data = json_object_new_object();

	json_object_object_add(data, "command",
	    json_object_new_string(command));
	json_object_object_add(data, "phase", json_object_new_string(phase));
	if (bytes >= 0) {
		json_object_object_add(data, "bytes",
		    json_object_new_int64(bytes));
		json_object_object_add(data, "total",
		    json_object_new_int64(total));
	}
	control_broadcast(d->ctl, proto_event("vm.progress", vm, data));
}

/*
 * One vm.snapshot between its request to the worker and the answer.
 * With frozen disks (vm-snapdisks.h) the worker leaves the guest paused
 * after the save: vmmd freezes the overlays, has the worker move each
 * disk onto its fresh overlay (worker.disk_push, one disk at a time),
 * commits, and only then resumes the guest if it ran and should run on.
 */
struct cmd_snapshot {
	struct pending *p;
	char *dir;
	int dirfd;
	int fds[2];		/* memory, state */
	uid_t uid;
	gid_t gid;
	bool keep_running;
	bool was_running;	/* the guest ran when asked */
	bool has_sd;		/* sd was prepared */
	bool push_failed;
	struct vm_snapdisks sd;
	char *text;		/* the manifest, with its disks */
	size_t len;
	unsigned int next;	/* the disk being pushed */
	char err[512];
	struct timespec t0;
};

static void
cmd_snapshot_free(struct cmd_snapshot *s, bool abort)
{
	if (abort)
		snap_write_abort(s->dirfd, &s->fds[0], &s->fds[1]);
	if (s->has_sd && abort)
		vm_snapdisks_abort(&s->sd);
	else if (s->has_sd)
		vm_snapdisks_free(&s->sd);
	if (s->fds[0] >= 0)
		close(s->fds[0]);
	if (s->fds[1] >= 0)
		close(s->fds[1]);
	close(s->dirfd);
	free(s->text);
	free(s->dir);
	free(s);
}

static void
cmd_snapshot_ignore(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	(void)vm;
	(void)ret;
	(void)error;
	(void)arg;
}

/* The guest runs again if it ran and the worker left it paused. */
static bool
cmd_snapshot_held(const struct cmd_snapshot *s)
{
	return s->has_sd && vm_snapdisks_frozen(&s->sd) > 0 && s->was_running;
}

/* A failure after the worker's save: undone, the guest let go. */
static void
cmd_snapshot_fail(struct vm *vm, struct cmd_snapshot *s,
    enum proto_error cls, const char *err)
{
	log_warn("VM '%s': snapshot into %s: %s", vm->def->name, s->dir, err);
	cmd_snapshot_progress(vm->d, vm->def->name, "vm.snapshot", "failed",
	    -1, 0);
	if (cmd_snapshot_held(s) && s->keep_running)
		vm_worker_request(vm, WMSG_REQ_RESUME, NULL,
		    cmd_snapshot_ignore, NULL);
	pending_error(s->p, cls, "%s", err);
	cmd_snapshot_free(s, true);
}

static void
cmd_snapshot_reply(struct cmd_snapshot *s, struct vm *vm)
{
	struct json_object *reply = vm_to_json(vm);

	json_object_object_add(reply, "snapshot",
	    json_object_new_string(s->dir));
	json_object_object_add(reply, "snapshot_disks",
	    vm_snapdisks_json(&s->sd));
	pending_reply(s->p, reply);
	cmd_snapshot_free(s, false);
}

static void
cmd_snapshot_resumed(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	(void)ret;
	if (error != NULL)
		log_warn("VM '%s': resuming after the snapshot: %s",
		    vm->def->name, json_object_to_json_string(error));
	cmd_snapshot_reply(arg, vm);
}

/*
 * Every frozen disk pushed (or one refused): the VM's overlays and
 * definition follow what the worker now writes to, then the manifest.
 */
static void
cmd_snapshot_finish(struct vm *vm, struct cmd_snapshot *s)
{
	enum proto_error cls;
	struct timespec t1;
	struct stat st;
	char err[512];
	bool any = false;
	int rc;

	rc = vm_snapdisks_commit(&s->sd, vm->def, &cls, err, sizeof(err));
	for (unsigned int i = 0; i < s->sd.ndisks; i++)
		any |= s->sd.pushed[i];
	/* The pushed disks are on their new overlays whatever follows. */
	if (any && !vm->def->transient) {
		char serr[512];

		if (config_save(vm->d->vmsdir, vm->def, serr,
		    sizeof(serr)) < 0)
			log_error("VM '%s': saving the definition after the "
			    "snapshot: %s", vm->def->name, serr);
	}
	for (unsigned int i = 0; i < s->sd.ndisks; i++)
		s->sd.pushed[i] = false;	/* nothing of them to undo */
	if (s->push_failed || rc < 0) {
		cmd_snapshot_fail(vm, s, PROTO_ERR_INTERNAL,
		    s->push_failed ? s->err : err);
		return;
	}
	if (fstat(s->fds[0], &st) == 0)
		cmd_snapshot_progress(vm->d, vm->def->name, "vm.snapshot",
		    "memory", (int64_t)st.st_blocks * 512 < st.st_size ?
		    (int64_t)st.st_blocks * 512 : (int64_t)st.st_size,
		    (int64_t)st.st_size);
	rc = snap_write_commit(s->dirfd, s->dir, s->fds[0], s->fds[1],
	    s->text, s->len, s->uid, s->gid, err, sizeof(err));
	if (rc < 0) {
		cmd_snapshot_fail(vm, s, PROTO_ERR_INTERNAL, err);
		return;
	}
	cmd_snapshot_progress(vm->d, vm->def->name, "vm.snapshot", "done", -1,
	    0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("VM '%s': snapshot in %s (%lld ms, %u disks frozen)",
	    vm->def->name, s->dir, (long long)((t1.tv_sec - s->t0.tv_sec) *
	    1000 + (t1.tv_nsec - s->t0.tv_nsec) / 1000000),
	    vm_snapdisks_frozen(&s->sd));
	if (!s->keep_running) {
		/* The guest stayed paused: nothing of it runs after the save. */
		if (vm_stop(vm, true, 0, s->p, &cls, err, sizeof(err)) < 0)
			pending_error(s->p, cls, "%s", err);
		cmd_snapshot_free(s, false);
		return;
	}
	if (cmd_snapshot_held(s) && vm_worker_request(vm, WMSG_REQ_RESUME,
	    NULL, cmd_snapshot_resumed, s) == 0)
		return;
	cmd_snapshot_reply(s, vm);
}

static void cmd_snapshot_push_next(struct vm *vm, struct cmd_snapshot *s);

static void
cmd_snapshot_pushed(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct cmd_snapshot *s = arg;
	int rc;

	(void)ret;
	if (error != NULL) {
		s->push_failed = true;
		snprintf(s->err, sizeof(s->err), "disk %u: the guest could "
		    "not move to a new overlay, the snapshot is not made: %s",
		    s->next, json_object_get_string(json_object_object_get(
		    error, "desc")));
		cmd_snapshot_finish(vm, s);
		return;
	}
	s->sd.pushed[s->next] = true;
	/* Nothing writes the old top again: other guests may read it (a
	 * clone over the frozen image beside this one), none write it. */
	if ((rc = vm_disklock_pushed(&vm->disklock, s->next,
	    s->sd.new_fd[s->next])) < 0)
		(rc == -EBADF ? log_info : log_warn)("VM '%s': disk %u: its "
		    "frozen image stays locked as its alone (no clone can "
		    "run over it beside it): %s", vm->def->name, s->next,
		    rc == -EBADF ? "an adopted guest" : strerror(-rc));
	s->next++;
	cmd_snapshot_push_next(vm, s);
}

static void
cmd_snapshot_push_next(struct vm *vm, struct cmd_snapshot *s)
{
	struct json_object *args;
	char base[4200];
	int rc;

	while (s->next < s->sd.ndisks && !s->sd.rec[s->next].frozen)
		s->next++;
	if (s->next == s->sd.ndisks) {
		cmd_snapshot_finish(vm, s);
		return;
	}
	snprintf(base, sizeof(base), "%s/%s", s->dir,
	    s->sd.rec[s->next].path);
	args = json_object_new_object();
	wmsg_put_int(args, WMSG_DISK_PUSH_DISK, s->next);
	wmsg_put_str(args, WMSG_DISK_PUSH_BACKING, base);
	rc = vm_worker_request_fds(vm, WMSG_REQ_DISK_PUSH, args,
	    &s->sd.new_fd[s->next], 1, cmd_snapshot_pushed, s);
	if (rc < 0) {
		s->push_failed = true;
		snprintf(s->err, sizeof(s->err), "cannot reach the worker: %s",
		    strerror(-rc));
		cmd_snapshot_finish(vm, s);
	}
}

static void
cmd_snapshot_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct cmd_snapshot *s = arg;
	enum proto_error cls;
	const char *text;
	char err[512];
	int rc;

	if (error != NULL) {
		if (cmd_snapshot_held(s) && s->keep_running)
			vm_worker_request(vm, WMSG_REQ_RESUME, NULL,
			    cmd_snapshot_ignore, NULL);
		cmd_snapshot_progress(vm->d, vm->def->name, "vm.snapshot",
		    "failed", -1, 0);
		pending_forward_error(s->p, error);
		cmd_snapshot_free(s, true);
		return;
	}
	text = wmsg_str(ret, WMSG_SNAPSHOT_MANIFEST, "");
	/* The disks as the RAM expects them: the guest is still paused. */
	if ((rc = vm_snapdisks_freeze(&s->sd, &cls, err, sizeof(err))) < 0 ||
	    (rc = snap_manifest_set_disks(text, strlen(text), s->sd.rec,
	    s->sd.ndisks, &s->text, &s->len, err, sizeof(err))) < 0) {
		cmd_snapshot_fail(vm, s, PROTO_ERR_INTERNAL, err);
		return;
	}
	s->next = 0;
	cmd_snapshot_push_next(vm, s);
}

static struct json_object *
cmd_vm_snapshot(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	const struct access_cred *as;
	struct json_object *reply, *args;
	struct cmd_snapshot *s;
	enum proto_error cls;
	const char *dir = NULL;
	char err[1024];
	int keep = 0, rc;
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_snapshot, &reply)) == NULL)
		return reply;
	if (proto_arg_string(ctx->args, "dir", 1, &dir, err,
	    sizeof(err)) < 0 ||
	    proto_arg_bool(ctx->args, "keep_running", 0, &keep, err,
	    sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (dir[0] != '/')
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "dir: not an absolute path");
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is %s: only a running or paused VM has a state "
		    "to save", vm->def->name, vm_state_name(vm->state));
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->dir = strdup(dir)) == NULL) {
		free(s);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	s->fds[0] = s->fds[1] = -1;
	s->keep_running = keep != 0;
	s->was_running = vm->state == VM_RUNNING;
	s->uid = cred != NULL ? cred->uid : (uid_t)-1;
	s->gid = cred != NULL ? cred->gid : (gid_t)-1;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	as = cred != NULL && cred->uid == 0 ? NULL : cred;
	s->dirfd = access_open_dir(dir, as, true);
	if (s->dirfd < 0) {
		rc = s->dirfd;
		free(s->dir);
		free(s);
		return proto_error(ctx->id, rc == -EACCES ?
		    PROTO_ERR_PERMISSION : PROTO_ERR_INVALID_ARGUMENT,
		    "%s: %s", dir, strerror(-rc));
	}
	if (snap_write_begin(s->dirfd, dir, &s->fds[0], &s->fds[1], err,
	    sizeof(err)) < 0) {
		cmd_snapshot_free(s, false);
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	}
	if (s->uid != (uid_t)-1 && (fchown(s->fds[0], s->uid, s->gid) < 0 ||
	    fchown(s->fds[1], s->uid, s->gid) < 0)) {
		rc = -errno;
		cmd_snapshot_free(s, true);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "%s: chown: %s", dir, strerror(-rc));
	}
	if (vm_snapdisks_prepare(&s->sd, vm->def, vm->d->disksdir, dir,
	    s->dirfd, as, s->uid, s->gid, &cls, err, sizeof(err)) < 0) {
		cmd_snapshot_free(s, true);
		return proto_error(ctx->id, cls, "%s", err);
	}
	s->has_sd = true;
	if ((s->p = control_defer(ctx)) == NULL) {
		cmd_snapshot_free(s, true);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	cmd_snapshot_progress(ctx->d, vm->def->name, "vm.snapshot", "pausing",
	    -1, 0);
	/* With frozen disks the guest waits, paused, for its new overlays. */
	args = json_object_new_object();
	wmsg_put_bool(args, WMSG_SNAPSHOT_RESUME, s->keep_running &&
	    vm_snapdisks_frozen(&s->sd) == 0);
	rc = vm_worker_request_fds(vm, WMSG_REQ_SNAPSHOT, args, s->fds, 2,
	    cmd_snapshot_done, s);
	if (rc < 0) {
		cmd_snapshot_progress(ctx->d, vm->def->name, "vm.snapshot",
		    "failed", -1, 0);
		pending_error(s->p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
		cmd_snapshot_free(s, true);
	}
	return NULL;
}

/* vm.restore ------------------------------------------------------------ */

static const char *const cmd_keys_restore[] = { "name", "dir", "as",
	"settings", NULL };

/*
 * The settings of a definition a clone may have of its own ("settings"
 * of vm.restore with "as"): its connections to the host, which two
 * guests cannot share.  The snapshot's devices stay: "net" replaces
 * the recorded cards' backends, as many cards as were recorded.
 */
static const char *const cmd_keys_restore_settings[] = { "net", NULL };

/* Settings of a definition that a snapshot's RAM and state do not hold. */
static bool
cmd_restore_key_free(const char *key)
{
	static const char *const free_keys[] = { "name", "autostart", "managed",
	    "owner", "transient", "console_log", NULL };

	for (size_t i = 0; free_keys[i] != NULL; i++)
		if (strcmp(key, free_keys[i]) == 0)
			return true;
	return false;
}

/*
 * The settings in which the snapshot's definition (was) and the VM's
 * (now) differ, listed in err ("memory_mib: 32 in the snapshot, 64
 * here; ..."): 0 when none, -EINVAL otherwise.  With disk records
 * (format version 2) "disks" is theirs to compare: a VM that took a
 * snapshot runs on over its frozen images, so its disks' paths are not
 * those its definition had at the snapshot.
 */
static int
cmd_restore_compare(struct json_object *was, struct json_object *now,
    bool disk_records, char *err, size_t errlen)
{
	struct json_object *sides[2] = { was, now }, *a, *b;
	size_t len = 0;
	int n = 0;

	err[0] = '\0';
	for (int side = 0; side < 2; side++) {
		json_object_object_foreach(sides[side], key, v) {
			(void)v;
			if (cmd_restore_key_free(key) || (disk_records &&
			    strcmp(key, "disks") == 0))
				continue;
			/* Keys of both sides: counted from the first. */
			if (side == 1 && json_object_object_get_ex(was, key,
			    NULL))
				continue;
			a = json_object_object_get(was, key);
			b = json_object_object_get(now, key);
			if (json_object_equal(a, b))
				continue;
			if (len < errlen)
				len += (size_t)snprintf(err + len, errlen - len,
				    "%s%s: %.80s in the snapshot, %.80s here",
				    n++ > 0 ? "; " : "", key,
				    a != NULL ? json_object_to_json_string(a) :
				    "none", b != NULL ?
				    json_object_to_json_string(b) : "none");
		}
	}
	return n > 0 ? -EINVAL : 0;
}

/* name in dirfd, a regular file cred may read: its fd, or -errno. */
static int
cmd_restore_open(int dirfd, const char *name, const struct access_cred *cred)
{
	struct stat st;
	int fd, rc;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL;
	else
		rc = cred != NULL ? access_fd_allows(fd, &st, cred,
		    ACCESS_READ) : 0;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/*
 * The restore's disk step for vm (vm-snapdisks.h): each frozen disk on
 * a new overlay of the VM's over the snapshot's image, the definition
 * saved naming them.  Restoring under another name goes through the
 * same vm_snapdisks_restore() with that name.
 */
static int
cmd_restore_disks(struct vm *vm, const struct snap_manifest *m,
    const char *dir, int dirfd, const struct access_cred *cred,
    enum proto_error *cls, char *err, size_t errlen)
{
	int rc;

	rc = vm_snapdisks_restore(vm->def->name, vm->def, m,
	    vm->d->disksdir, dir, dirfd, cred, cls, err, errlen);
	if (rc < 0 || vm->def->transient)
		return rc;
	if ((rc = config_save(vm->d->vmsdir, vm->def, err, errlen)) < 0)
		*cls = PROTO_ERR_INTERNAL;
	return rc;
}

/*
 * Checked before anything starts: the snapshot's files (as the worker
 * will check them again: its manifest, sizes and every checksum).
 * fds: the three files, opened; r: a reader of copies of them, left
 * open for the recorded definition and disks (the caller closes it
 * when this returned 0).
 */
static int
cmd_restore_files(const char *dir, int dirfd, const struct access_cred *cred,
    int fds[3], struct snap_reader *r, enum proto_error *cls, char *err,
    size_t errlen)
{
	static const char *const names[3] = { SNAP_MANIFEST_FILE,
	    SNAP_MEMORY_FILE, SNAP_STATE_FILE };
	int copy[3], i, rc;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	for (i = 0; i < 3; i++) {
		if ((fds[i] = cmd_restore_open(dirfd, names[i], cred)) >= 0)
			continue;
		rc = fds[i];
		if (rc == -EACCES)
			*cls = PROTO_ERR_PERMISSION;
		snprintf(err, errlen, "%s/%s: %s", dir, names[i],
		    rc == -ENOENT && i == 0 ? "no manifest: not a snapshot, "
		    "or one whose writing did not finish" : rc == -EINVAL ?
		    "not a regular file" : strerror(-rc));
		return rc;
	}
	for (i = 0; i < 3; i++)
		if ((copy[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) < 0) {
			rc = -errno;
			while (i-- > 0)
				close(copy[i]);
			*cls = PROTO_ERR_INTERNAL;
			snprintf(err, errlen, "%s", strerror(-rc));
			return rc;
		}
	return snap_open_fds(r, dir, copy[0], copy[1], copy[2], NULL, 0, err,
	    errlen);
}

/* The recorded definition (m's) against vm's: 0, or -EINVAL and err. */
static int
cmd_restore_same(const struct vm *vm, const struct snap_manifest *m,
    enum proto_error *cls, char *err, size_t errlen)
{
	struct json_object *now;
	char what[512];
	int rc;

	if ((now = config_to_json(vm->def, CONFIG_JSON_SECRETS)) == NULL) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = cmd_restore_compare(m->definition, now, m->format_version >= 2,
	    what, sizeof(what));
	json_object_put(now);
	if (rc < 0) {
		*cls = PROTO_ERR_INVALID_ARGUMENT;
		snprintf(err, errlen, "the snapshot is of another VM: %s",
		    what);
	}
	return rc;
}

/* The cards of a definition's "net" (object, array or none). */
static size_t
cmd_restore_nics(struct json_object *def)
{
	struct json_object *net;

	if (!json_object_object_get_ex(def, "net", &net) || net == NULL)
		return 0;
	return json_object_is_type(net, json_type_array) ?
	    json_object_array_length(net) : 1;
}

/*
 * The definition of a VM made from a snapshot: the recorded one (was),
 * named name, with the keys of settings (cmd_keys_restore_settings,
 * checked by the caller; NULL: none) in place of the recorded ones,
 * the whole parsed as vm.create's definition is.  A clone (clone:
 * under another name than the recorded one) gets an identity of its
 * own: the MAC vmmd derives from its name (unless settings' "net" gives
 * one), a vsock CID picked at each start among the free ones, and no
 * autostart, and a UUID of its own (made by vm.create's code); its
 * console log and NVRAM file are its name's.  Its disks are the
 * recorded ones here; a snapshot with frozen disks puts them on
 * overlays of its own (cmd_restore_disks()).  NULL with *cls and err.
 */
static struct vm_def *
cmd_restore_new_def(struct json_object *was, const char *name, bool clone,
    struct json_object *settings, enum proto_error *cls, char *err,
    size_t errlen)
{
	struct json_object *obj = NULL;
	struct vm_def *def;
	size_t nics = cmd_restore_nics(was);
	bool net = false;
	char why[512];
	int rc;

	*cls = PROTO_ERR_INVALID_ARGUMENT;
	if (json_object_deep_copy(was, &obj, NULL) != 0) {
		*cls = PROTO_ERR_INTERNAL;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	json_object_object_add(obj, "name", json_object_new_string(name));
	if (settings != NULL) {
		json_object_object_foreach(settings, key, v)
			json_object_object_add(obj, key, json_object_get(v));
		net = json_object_object_get_ex(settings, "net", NULL);
	}
	if (net && cmd_restore_nics(obj) != nics) {
		json_object_put(obj);
		snprintf(err, errlen, "settings: net: %zu network card%s, the "
		    "snapshot's guest has %zu: a restore changes what they "
		    "connect to, not how many there are",
		    cmd_restore_nics(settings), cmd_restore_nics(settings) ==
		    1 ? "" : "s", nics);
		return NULL;
	}
	rc = config_parse(obj, 0, &def, why, sizeof(why));
	json_object_put(obj);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", settings != NULL ?
		    "the snapshot's definition with settings" :
		    "the snapshot's definition", why);
		return NULL;
	}
	if (clone) {
		def->autostart = false;
		for (unsigned int i = 0; !net && i < def->nnics; i++)
			def->nics[i].has_mac = false;
		def->vsock_cid = 0;
		def->has_uuid = false;
	}
	return def;
}

/*
 * The VM a restore goes to (cmd_vm_restore()): "name" (an existing VM,
 * the older form), "as" (a new VM, a clone), or the recorded name (the
 * VM, made when missing).  Whichever exists must be at rest and have
 * the recorded definition.  NULL with *reply.
 */
static struct vm *
cmd_restore_target(struct cmd_ctx *ctx, const struct snap_manifest *m,
    struct json_object **reply)
{
	struct json_object *was = m->definition, *settings = NULL;
	const char *name = NULL, *as = NULL, *recorded;
	struct json_object *o;
	enum proto_error cls;
	struct vm_def *def;
	char err[1024], why[256];
	struct vm *vm;

	if (proto_arg_string(ctx->args, "name", 0, &name, err,
	    sizeof(err)) < 0 || proto_arg_string(ctx->args, "as", 0, &as,
	    err, sizeof(err)) < 0)
		goto invalid;
	if (name != NULL && as != NULL) {
		snprintf(err, sizeof(err), "name and as: a restore goes to "
		    "an existing VM or makes a new one, not both");
		goto invalid;
	}
	if (json_object_object_get_ex(ctx->args, "settings", &settings)) {
		if (as == NULL) {
			snprintf(err, sizeof(err), "settings: only a clone "
			    "(as) has settings of its own");
			goto invalid;
		}
		if (!json_object_is_type(settings, json_type_object)) {
			snprintf(err, sizeof(err), "settings: not an object");
			goto invalid;
		}
		if (proto_args_check(settings, cmd_keys_restore_settings, why,
		    sizeof(why)) < 0) {
			snprintf(err, sizeof(err), "settings: %s (a clone "
			    "sets only net)", why);
			goto invalid;
		}
	}
	if (as != NULL && !config_name_valid(as)) {
		snprintf(err, sizeof(err), "as: '%.80s' is no VM name "
		    "(letters, digits, '.', '_' and '-', at most %d, not "
		    "starting with '.', '_' or '-')", as, CONFIG_NAME_MAX);
		goto invalid;
	}
	recorded = json_object_object_get_ex(was, "name", &o) &&
	    json_object_is_type(o, json_type_string) ?
	    json_object_get_string(o) : NULL;
	if (as == NULL && name == NULL) {
		if (recorded == NULL || !config_name_valid(recorded)) {
			snprintf(err, sizeof(err), "the snapshot names no VM");
			goto invalid;
		}
		name = recorded;
	}
	if ((vm = vm_find(ctx->d, as != NULL ? as : name)) != NULL) {
		if (as != NULL) {
			*reply = proto_error(ctx->id, PROTO_ERR_EXISTS,
			    "VM '%s' already exists", as);
			return NULL;
		}
		if (!vm_at_rest(vm)) {
			*reply = proto_error(ctx->id, PROTO_ERR_BAD_STATE,
			    "VM '%s' is %s: only a VM that does not run is "
			    "restored", vm->def->name,
			    vm_state_name(vm->state));
			return NULL;
		}
		if (cmd_restore_same(vm, m, &cls, err, sizeof(err)) < 0) {
			log_info("VM '%s': restore refused: %s",
			    vm->def->name, err);
			*reply = proto_error(ctx->id, cls, "%s", err);
			return NULL;
		}
		return vm;
	}
	/*
	 * The older form ("name" given: name is not the recorded string
	 * itself, whatever it says) restores into an existing VM only.
	 */
	if (as == NULL && name != recorded) {
		*reply = proto_error(ctx->id, PROTO_ERR_NOT_FOUND,
		    "no VM named '%.100s'", name);
		return NULL;
	}
	def = cmd_restore_new_def(was, as != NULL ? as : name, as != NULL &&
	    (recorded == NULL || strcmp(as, recorded) != 0), settings, &cls,
	    err, sizeof(err));
	if (def == NULL || (vm = cmd_vm_make(ctx, def, &cls, err,
	    sizeof(err))) == NULL) {
		*reply = proto_error(ctx->id, cls, "%s", err);
		return NULL;
	}
	return vm;

invalid:
	*reply = proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s", err);
	return NULL;
}

/*
 * vm.restore {dir, name?, as?, settings?}: the snapshot in dir checked
 * whole with the client's rights, then its VM found or made (with
 * settings, cmd_restore_target()), its frozen disks put on overlays of
 * its own (cmd_restore_disks()), and it is started from the snapshot.
 * A VM made here stays, stopped, if a later step fails.
 */
static struct json_object *
cmd_vm_restore(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	const struct access_cred *as;
	struct json_object *reply = NULL;
	struct snap_reader r;
	enum proto_error cls;
	struct pending *p;
	const char *dir = NULL;
	char err[1024];
	int dirfd, fds[3] = { -1, -1, -1 }, rc, i;
	bool opened = false;
	struct vm *vm;

	if (proto_args_check(ctx->args, cmd_keys_restore, err,
	    sizeof(err)) < 0 || proto_arg_string(ctx->args, "dir", 1, &dir,
	    err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (dir[0] != '/')
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "dir: not an absolute path");
	as = cred != NULL && cred->uid == 0 ? NULL : cred;
	if ((dirfd = access_open_dir(dir, as, false)) < 0)
		return proto_error(ctx->id, dirfd == -EACCES ?
		    PROTO_ERR_PERMISSION : PROTO_ERR_INVALID_ARGUMENT,
		    "%s: %s", dir, strerror(-dirfd));
	rc = cmd_restore_files(dir, dirfd, as, fds, &r, &cls, err,
	    sizeof(err));
	if (rc < 0) {
		log_info("restore from %s refused: %s", dir, err);
		reply = proto_error(ctx->id, cls, "%s", err);
		goto out;
	}
	opened = true;
	if ((vm = cmd_restore_target(ctx, &r.m, &reply)) == NULL)
		goto out;
	if (r.m.format_version >= 2 && (rc = cmd_restore_disks(vm, &r.m, dir,
	    dirfd, as, &cls, err, sizeof(err))) < 0) {
		log_info("VM '%s': restore from %s refused: %s", vm->def->name,
		    dir, err);
		reply = proto_error(ctx->id, cls, "%s", err);
		goto out;
	}
	cmd_snapshot_progress(ctx->d, vm->def->name, "vm.restore", "starting",
	    0, (int64_t)vm->def->memory_mib << 20);
	if ((p = control_defer(ctx)) == NULL) {
		reply = proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
		goto out;
	}
	if (vm_restore(vm, cred, fds, dir, p, &cls, err, sizeof(err)) < 0) {
		log_info("VM '%s': restore refused: %s", vm->def->name, err);
		cmd_snapshot_progress(ctx->d, vm->def->name, "vm.restore",
		    "failed", -1, 0);
		pending_error(p, cls, "%s", err);
	}
out:
	if (opened)
		snap_close(&r);
	close(dirfd);
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return reply;
}

const struct cmd_def cmd_snapshot_commands[] = {
	{ "vm.snapshot", cmd_vm_snapshot },
	{ "vm.restore", cmd_vm_restore },
	{ NULL, NULL },
};
