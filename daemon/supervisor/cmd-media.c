/* See cmd-media.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "access.h"
#include "boot-dev.h"
#include "cmd-media.h"
#include "cmd-vm-edit.h"
#include "pending.h"
#include "proto.h"
#include "vm.h"
#include "vm-files.h"
#include "worker-msg.h"

static const char *const cmd_keys_media[] = { "name", "device", "eject",
	"insert", "force", NULL };

static struct json_object *
cmd_vm_media(struct cmd_ctx *ctx)
{
	const struct access_cred *cred = control_client_cred(ctx->client);
	const char *device = NULL, *insert = NULL;
	struct json_object *reply, *args;
	enum proto_error cls;
	struct pending *p;
	struct boot_dev d;
	int eject = 0, force = 0, fd = -1, rc;
	char err[512];
	struct vm *vm;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_media, &reply)) == NULL)
		return reply;
	if (proto_arg_string(ctx->args, "device", 1, &device, err,
	    sizeof(err)) < 0 ||
	    proto_arg_bool(ctx->args, "eject", 0, &eject, err,
	    sizeof(err)) < 0 ||
	    proto_arg_string(ctx->args, "insert", 0, &insert, err,
	    sizeof(err)) < 0 ||
	    proto_arg_bool(ctx->args, "force", 0, &force, err,
	    sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if ((eject != 0) == (insert != NULL))
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "eject or insert, one of them");
	if (insert != NULL && insert[0] != '/')
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "insert: '%.200s' is not an absolute path", insert);
	if (boot_dev_parse(device, &d) < 0 || d.kind != BOOT_DEV_CDROM ||
	    d.index != 0 || vm->def->cdrom == NULL)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "device: VM '%s' has no CD-ROM drive '%.16s'",
		    vm->def->name, device);
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is %s: only a running or paused guest's drive "
		    "changes its medium (the next start takes \"cdrom\")",
		    vm->def->name, vm_state_name(vm->state));
	if (insert != NULL && vm_files_open_media(insert, cred, &fd, &cls,
	    err, sizeof(err)) < 0)
		return proto_error(ctx->id, cls, "%s", err);
	if ((args = json_object_new_object()) == NULL ||
	    (p = control_defer(ctx)) == NULL) {
		json_object_put(args);
		if (fd >= 0)
			close(fd);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	wmsg_put_str(args, WMSG_MEDIA_DEVICE, device);
	if (force)
		wmsg_put_bool(args, WMSG_MEDIA_FORCE, true);
	wmsg_put_str(args, WMSG_MEDIA_NAME, insert);
	rc = insert != NULL ? vm_worker_request_fds(vm, WMSG_REQ_MEDIA_INSERT,
	    args, &fd, 1, vm_reply_object, p) : vm_worker_request(vm,
	    WMSG_REQ_MEDIA_EJECT, args, vm_reply_object, p);
	if (fd >= 0)
		close(fd);		/* the worker has its duplicate */
	if (rc < 0)
		pending_error(p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
	return NULL;
}

const struct cmd_def cmd_media_commands[] = {
	{ "vm.media", cmd_vm_media },
	{ NULL, NULL },
};
