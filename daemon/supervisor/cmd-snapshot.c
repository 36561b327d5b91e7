/*
 * vm.snapshot {"name", "dir", "keep_running"} (cmd-snapshot.h).
 *
 * The worker is sandboxed: it opens no file.  So vmmd opens the
 * directory with the client's rights (access_open_dir), makes the data
 * files there (snap_write_begin, given to the client), passes them with
 * worker.snapshot, and commits the manifest the worker answers only
 * after checking it against the files (snap_write_commit): a worker
 * that lies gets nothing written in its name.  keep_running false:
 * the guest stays paused after the save and is stopped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "access.h"
#include "cmd-snapshot.h"
#include "cmd-vm-edit.h"
#include "control.h"
#include "log.h"
#include "pending.h"
#include "proto.h"
#include "snap-file.h"
#include "vm.h"
#include "vmconfig.h"
#include "worker-msg.h"

static const char *const cmd_keys_snapshot[] = { "name", "dir",
	"keep_running", NULL };

/* One vm.snapshot between its request to the worker and the answer. */
struct cmd_snapshot {
	struct pending *p;
	char *dir;
	int dirfd;
	int fds[2];		/* memory, state */
	uid_t uid;
	gid_t gid;
	bool keep_running;
	struct timespec t0;
};

static void
cmd_snapshot_free(struct cmd_snapshot *s, bool abort)
{
	if (abort)
		snap_write_abort(s->dirfd, &s->fds[0], &s->fds[1]);
	if (s->fds[0] >= 0)
		close(s->fds[0]);
	if (s->fds[1] >= 0)
		close(s->fds[1]);
	close(s->dirfd);
	free(s->dir);
	free(s);
}

static void
cmd_snapshot_done(struct vm *vm, struct json_object *ret,
    struct json_object *error, void *arg)
{
	struct cmd_snapshot *s = arg;
	struct json_object *reply;
	enum proto_error cls;
	const char *text;
	struct timespec t1;
	char err[512];
	int rc;

	if (error != NULL) {
		cmd_snapshot_free(s, true);
		pending_forward_error(s->p, error);
		return;
	}
	text = wmsg_str(ret, WMSG_SNAPSHOT_MANIFEST, "");
	rc = snap_write_commit(s->dirfd, s->dir, s->fds[0], s->fds[1], text,
	    strlen(text), s->uid, s->gid, err, sizeof(err));
	if (rc < 0) {
		log_warn("VM '%s': snapshot into %s: %s", vm->def->name,
		    s->dir, err);
		cmd_snapshot_free(s, true);
		pending_error(s->p, PROTO_ERR_INTERNAL, "%s", err);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_info("VM '%s': snapshot in %s (%lld ms)", vm->def->name, s->dir,
	    (long long)((t1.tv_sec - s->t0.tv_sec) * 1000 +
	    (t1.tv_nsec - s->t0.tv_nsec) / 1000000));
	if (!s->keep_running) {
		/* The guest stayed paused: nothing of it runs after the save. */
		if (vm_stop(vm, true, 0, s->p, &cls, err, sizeof(err)) < 0)
			pending_error(s->p, cls, "%s", err);
		cmd_snapshot_free(s, false);
		return;
	}
	reply = vm_to_json(vm);
	json_object_object_add(reply, "snapshot",
	    json_object_new_string(s->dir));
	pending_reply(s->p, reply);
	cmd_snapshot_free(s, false);
}

static struct json_object *
cmd_vm_snapshot(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	struct json_object *reply, *args;
	struct cmd_snapshot *s;
	const char *dir = NULL;
	char err[512];
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
	s->uid = cred != NULL ? cred->uid : (uid_t)-1;
	s->gid = cred != NULL ? cred->gid : (gid_t)-1;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	s->dirfd = access_open_dir(dir, cred != NULL && cred->uid == 0 ?
	    NULL : cred);
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
	if ((s->p = control_defer(ctx)) == NULL) {
		cmd_snapshot_free(s, true);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	args = json_object_new_object();
	wmsg_put_bool(args, WMSG_SNAPSHOT_RESUME, s->keep_running);
	rc = vm_worker_request_fds(vm, WMSG_REQ_SNAPSHOT, args, s->fds, 2,
	    cmd_snapshot_done, s);
	if (rc < 0) {
		pending_error(s->p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
		cmd_snapshot_free(s, true);
	}
	return NULL;
}

const struct cmd_def cmd_snapshot_commands[] = {
	{ "vm.snapshot", cmd_vm_snapshot },
	{ NULL, NULL },
};
