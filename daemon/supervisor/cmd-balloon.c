/* See cmd-balloon.h. */
#include <string.h>
#include <json-c/json.h>

#include "cmd-balloon.h"
#include "cmd-vm-edit.h"
#include "pending.h"
#include "proto.h"
#include "vm.h"
#include "worker-msg.h"

static const char *const cmd_keys_balloon[] = { "name", "target_mib",
	"stats_interval", NULL };

static struct json_object *
cmd_vm_balloon(struct cmd_ctx *ctx)
{
	struct json_object *reply, *args;
	int64_t mib = 0, every = -1;
	struct pending *p;
	char err[512];
	struct vm *vm;
	int rc;

	if ((vm = cmd_vm_lookup(ctx, cmd_keys_balloon, &reply)) == NULL)
		return reply;
	if (proto_arg_int(ctx->args, "target_mib", 1, 1,
	    PROTO_MEMORY_MIB_MAX, &mib, err, sizeof(err)) < 0 ||
	    proto_arg_int(ctx->args, "stats_interval", 0, 0,
	    WMSG_BALLOON_INTERVAL_MAX, &every, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	if (!vm->def->balloon)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT,
		    "VM '%s' has no balloon (vmctl set %s --balloon, then "
		    "start it again)", vm->def->name, vm->def->name);
	if ((vm->state != VM_RUNNING && vm->state != VM_PAUSED) ||
	    !vm_has_worker(vm))
		return proto_error(ctx->id, PROTO_ERR_BAD_STATE,
		    "VM '%s' is %s: only a running or paused guest's balloon "
		    "takes a target", vm->def->name,
		    vm_state_name(vm->state));
	if ((args = json_object_new_object()) == NULL ||
	    (p = control_defer(ctx)) == NULL) {
		json_object_put(args);
		return proto_error(ctx->id, PROTO_ERR_INTERNAL,
		    "out of memory");
	}
	wmsg_put_int(args, WMSG_BALLOON_TARGET_MIB, mib);
	if (every >= 0)
		wmsg_put_int(args, WMSG_BALLOON_STATS_INTERVAL, every);
	rc = vm_worker_request(vm, WMSG_REQ_BALLOON, args, vm_reply_object,
	    p);
	if (rc < 0)
		pending_error(p, PROTO_ERR_INTERNAL, "cannot reach the "
		    "worker: %s", strerror(-rc));
	return NULL;
}

const struct cmd_def cmd_balloon_commands[] = {
	{ "vm.balloon", cmd_vm_balloon },
	{ NULL, NULL },
};
