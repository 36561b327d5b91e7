/*
 * events.subscribe: from its reply on, the connection also carries
 * event lines ("vm.state", ...) for every VM.
 */
#include "cmd-events.h"
#include "control.h"
#include "proto.h"

static const char *const cmd_keys_none[] = { NULL };

static struct json_object *
cmd_events_subscribe(struct cmd_ctx *ctx)
{
	char err[512];

	if (proto_args_check(ctx->args, cmd_keys_none, err, sizeof(err)) < 0)
		return proto_error(ctx->id, PROTO_ERR_INVALID_ARGUMENT, "%s",
		    err);
	control_subscribe(ctx->client);
	return proto_reply(ctx->id, NULL);
}

const struct cmd_def cmd_events_commands[] = {
	{ "events.subscribe", cmd_events_subscribe },
	{ NULL, NULL },
};
