/*
 * Pending replies (see pending.h).  Below both the control socket, which
 * owns them through its clients, and the VMs, which complete them: it
 * calls neither, only the owner's send callback.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "counters.h"
#include "pending.h"

void
pending_owner_init(struct pending_owner *o,
    void (*send)(struct pending_owner *o, struct json_object *msg))
{
	o->send = send;
	TAILQ_INIT(&o->pendings);
}

void
pending_owner_detach(struct pending_owner *o)
{
	struct pending *p;

	/* Operations in flight go on; their replies have nowhere to go. */
	while ((p = TAILQ_FIRST(&o->pendings)) != NULL) {
		TAILQ_REMOVE(&o->pendings, p, oentry);
		p->owner = NULL;
	}
}

bool
pending_owner_idle(const struct pending_owner *o)
{
	return TAILQ_EMPTY(&o->pendings);
}

struct pending *
pending_new(struct pending_owner *o, struct json_object *id)
{
	struct pending *p;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->owner = o;
	p->id = json_object_get(id);
	TAILQ_INSERT_TAIL(&o->pendings, p, oentry);
	return p;
}

void
pending_send(struct pending *p, struct json_object *msg)
{
	struct pending_owner *o = p->owner;

	if (p->counters != NULL)
		counters_request(p->counters, p->command, msg);
	if (o != NULL)
		TAILQ_REMOVE(&o->pendings, p, oentry);
	json_object_put(p->id);
	free(p);
	if (o == NULL) {
		json_object_put(msg);
		return;
	}
	/* Removed first: the owner may close itself once nothing pends. */
	o->send(o, msg);
}

void
pending_reply(struct pending *p, struct json_object *ret)
{
	pending_send(p, proto_reply(p->id, ret));
}

void
pending_error(struct pending *p, enum proto_error e, const char *fmt, ...)
{
	char desc[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	pending_send(p, proto_error(p->id, e, "%s", desc));
}

void
pending_forward_error(struct pending *p, struct json_object *error)
{
	struct json_object *v;
	const char *desc = "worker error";
	int cls = PROTO_ERR_INTERNAL;

	if (error != NULL && json_object_object_get_ex(error, "class", &v) &&
	    json_object_is_type(v, json_type_string)) {
		cls = proto_error_lookup(json_object_get_string(v));
		if (cls < 0)
			cls = PROTO_ERR_INTERNAL;
	}
	if (error != NULL && json_object_object_get_ex(error, "desc", &v) &&
	    json_object_is_type(v, json_type_string))
		desc = json_object_get_string(v);
	pending_error(p, (enum proto_error)cls, "%s", desc);
}
