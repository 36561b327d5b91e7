/*
 * Pending replies: a reply to a client's request that is sent later
 * (vm.start, vm.stop, anything a worker answers).
 *
 * A pending belongs to an owner, the client that asked, which says
 * through its send callback how a finished reply reaches it.  It
 * outlives its owner: when the client goes away, pending_owner_detach()
 * leaves its pendings ownerless and completing one just frees it.
 * Exactly one of the pending_*() completions must be called for every
 * pending.  Everything here runs on the event loop thread.
 */
#ifndef VMMD_PENDING_H
#define VMMD_PENDING_H

#include <stdbool.h>
#include <sys/queue.h>
#include <json-c/json.h>

#include "proto.h"

struct counters;

struct pending;
TAILQ_HEAD(pending_list, pending);

struct pending_owner {
	/* Queue msg (taken) as a reply for this owner. */
	void (*send)(struct pending_owner *o, struct json_object *msg);
	struct pending_list pendings;	/* not yet completed */
};

struct pending {
	struct pending_owner *owner;	/* NULL once the client is gone */
	struct json_object *id;		/* the request's id (a reference) */
	TAILQ_ENTRY(pending) oentry;	/* in the owner's list */
	TAILQ_ENTRY(pending) entry;	/* for whoever waits on it */
	/* Where its reply is counted, by command (NULL: not counted). */
	struct counters *counters;
	const char *command;
};

void	pending_owner_init(struct pending_owner *o,
	    void (*send)(struct pending_owner *o, struct json_object *msg));
/* The owner goes away: its pendings complete into nothing. */
void	pending_owner_detach(struct pending_owner *o);
bool	pending_owner_idle(const struct pending_owner *o);

/* A pending reply to the request with id (NULL allowed) for o. */
struct pending *pending_new(struct pending_owner *o, struct json_object *id);

void	pending_send(struct pending *p, struct json_object *msg); /* takes */
void	pending_reply(struct pending *p, struct json_object *ret); /* takes */
void	pending_error(struct pending *p, enum proto_error e,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Forward an error object {"class","desc"} from a worker. */
void	pending_forward_error(struct pending *p, struct json_object *error);

#endif
