/*
 * The public control socket: listening, one buffered connection per
 * client, request dispatch through the command tables it is given
 * (each cmd-*.c exports one), pending replies owned by clients, and
 * event subscriptions.  It knows no command and no VM itself.
 */
#ifndef VMMD_CONTROL_H
#define VMMD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <json-c/json.h>

#include "access.h"
#include "pending.h"
#include "proto.h"

struct client;
struct control;
struct event_base;
struct vmmd;

/* A client's output beyond this means it does not read: drop it. */
#define CONTROL_MAX_OUTPUT	(1024 * 1024)
/*
 * All clients' queued output together: past it, a client with more than
 * CONTROL_FAIR_OUTPUT queued is dropped rather than given more, so that
 * many slow readers cannot hold the daemon's memory between them.
 */
#define CONTROL_MAX_OUTPUT_TOTAL (64 * 1024 * 1024)
#define CONTROL_FAIR_OUTPUT	(64 * 1024)
/* Clients at once; one more is told limit_reached and closed. */
#define CONTROL_MAX_CLIENTS	4096

/* What a command handler gets. */
struct cmd_ctx {
	struct vmmd *d;
	struct client *client;
	struct json_object *id;		/* borrowed; may be NULL */
	struct json_object *args;	/* borrowed; always an object */
	const char *command;		/* the table's name of it */
};

/*
 * A handler returns the complete reply message (proto_reply() or
 * proto_error()), or NULL after taking a pending reply with
 * control_defer() or starting a console handover.
 */
typedef struct json_object *(*cmd_handler)(struct cmd_ctx *ctx);

/* One command; a table ends with { NULL, NULL }. */
struct cmd_def {
	const char *name;
	cmd_handler fn;
};

/*
 * Listen on path, or on fd (>= 0) when it is a listening socket that
 * was passed to vmmd (systemd's socket activation): path then only
 * names it, and is neither made nor removed.  Requests are looked up in tables (a NULL-terminated
 * array of command tables, which must outlive the control socket) and
 * their handlers get d, which the control socket does not look into.
 */
struct control *control_new(struct event_base *base, struct vmmd *d,
    const struct cmd_def *const *tables, const char *path, int fd,
    char *err, size_t errlen);
/*
 * Make path a listening Unix stream socket (non-blocking, close-on-exec)
 * as the control socket is made: in a directory safedir_check() trusts,
 * a stale socket there replaced, mode CONTROL_SOCKET_MODE and group
 * CONTROL_GROUP.  The fd in *fdp; the caller unlinks path when done.
 * 0, or -EINVAL with err set.
 */
int	control_listen_path(const char *path, int *fdp, char *err,
	    size_t errlen);
/* Where requests and connections are counted from now on. */
struct counters;
void	control_set_counters(struct control *ctl, struct counters *counters);
/* Connections the control socket serves now. */
unsigned int control_clients(const struct control *ctl);
/*
 * Serve fd, a connected stream socket (non-blocking, close-on-exec), as
 * a client, exactly as one accepted on the socket: greeting, limits,
 * credentials from SO_PEERCRED.  Takes fd in every case.
 */
void	control_adopt(struct control *ctl, int fd);
/* Close the socket (and remove it), drop every client. */
void	control_free(struct control *ctl);

/* Send an event to every subscriber; takes ev. */
void	control_broadcast(struct control *ctl, struct json_object *ev);

/*
 * Take a pending reply to the request (see pending.h): the handler then
 * returns NULL and the reply is sent when the pending completes.
 */
struct pending *control_defer(struct cmd_ctx *ctx);

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
 * Pass the connection fd of a client to whoever serves target (the
 * callee duplicates fd) for the request id: 0 once passed, 1 if the
 * callee answered the client itself (on its own copy: the connection is
 * done here too), -errno with *cls and err set if it cannot.  mark is
 * the handler's, given back as it was.
 */
typedef int (*control_handover_fn)(struct vmmd *d, const char *target,
    int64_t mark, int fd, struct json_object *id, enum proto_error *cls,
    char *err, size_t errlen);

/*
 * vm.console, vm.screenshot: once the client's queued output is
 * written, hand its connection over with fn (whose receiver sends the
 * reply, and after it whatever the connection becomes).  On failure the
 * client stays an ordinary connection and gets the error reply.  what
 * ("console") names the handover in the log; a string constant.
 */
void	control_handover(struct cmd_ctx *ctx, control_handover_fn fn,
	    const char *target, int64_t mark, const char *what);

#endif
