/*
 * The public control socket: listening, one buffered connection per
 * client, request dispatch through a command table, pending replies and
 * event subscriptions.
 */
#ifndef VMMD_CONTROL_H
#define VMMD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>
#include <json-c/json.h>

#include "access.h"
#include "proto.h"

struct vmmd;
struct control;
struct client;

/* A client's output beyond this means it does not read: drop it. */
#define CONTROL_MAX_OUTPUT	(1024 * 1024)

/*
 * A reply that is sent later (vm.start, vm.stop, anything the worker
 * answers).  It outlives its client: when the client goes away, client
 * becomes NULL and completing the reply just frees it.  Exactly one of
 * the pending_*() completions must be called for every pending.
 */
struct pending {
	struct client *client;		/* NULL once the client is gone */
	struct json_object *id;		/* the request's id (a reference) */
	TAILQ_ENTRY(pending) centry;	/* in the client's list */
	TAILQ_ENTRY(pending) entry;	/* for whoever waits on it */
};

/* What a command handler gets. */
struct cmd_ctx {
	struct vmmd *d;
	struct client *client;
	struct json_object *id;		/* borrowed; may be NULL */
	struct json_object *args;	/* borrowed; always an object */
};

/*
 * A handler returns the complete reply message (proto_reply() or
 * proto_error()), or NULL after taking a pending reply with
 * control_defer() or starting a console handover.
 */
typedef struct json_object *(*cmd_handler)(struct cmd_ctx *ctx);

struct control *control_new(struct vmmd *d, const char *path, char *err,
    size_t errlen);
/* Close the socket (and remove it), drop every client. */
void	control_free(struct control *ctl);

/* Send an event to every subscriber; takes ev. */
void	control_broadcast(struct control *ctl, struct json_object *ev);

struct pending *control_defer(struct cmd_ctx *ctx);
void	pending_send(struct pending *p, struct json_object *msg); /* takes */
void	pending_reply(struct pending *p, struct json_object *ret); /* takes */
void	pending_error(struct pending *p, enum proto_error e,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Forward an error object {"class","desc"} from a worker. */
void	pending_forward_error(struct pending *p, struct json_object *error);

/*
 * The client's credentials, read from its socket when it connected
 * (SO_PEERCRED, and SO_PEERGROUPS for the supplementary groups).  If
 * they could not be read, uid and gid are (uid_t)-1 and there are no
 * supplementary groups: only the "other" permission bits apply.
 */
const struct access_cred *control_client_cred(const struct client *c);

/* events.subscribe: start sending events to this client. */
void	control_subscribe(struct client *c);

/*
 * vm.console: once the client's queued output is written, pass its
 * connection to the VM's worker (which sends the reply).
 */
void	control_console_handover(struct cmd_ctx *ctx, const char *vm);

/* Command handlers (cmd-*.c). */
struct json_object *cmd_vm_create(struct cmd_ctx *ctx);
struct json_object *cmd_vm_start(struct cmd_ctx *ctx);
struct json_object *cmd_vm_stop(struct cmd_ctx *ctx);
struct json_object *cmd_vm_pause(struct cmd_ctx *ctx);
struct json_object *cmd_vm_resume(struct cmd_ctx *ctx);
struct json_object *cmd_vm_reset(struct cmd_ctx *ctx);
struct json_object *cmd_vm_delete(struct cmd_ctx *ctx);
struct json_object *cmd_vm_list(struct cmd_ctx *ctx);
struct json_object *cmd_vm_info(struct cmd_ctx *ctx);
struct json_object *cmd_vm_console(struct cmd_ctx *ctx);
struct json_object *cmd_events_subscribe(struct cmd_ctx *ctx);

#endif
