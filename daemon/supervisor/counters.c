/* See counters.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "counters.h"
#include "worker-exit.h"

static const char *const counters_crash_names[COUNTERS_NCRASH] = {
	[COUNTERS_CRASH_SANDBOX] = "sandbox",
	[COUNTERS_CRASH_SIGNAL] = "signal",
	[COUNTERS_CRASH_EXIT] = "exit",
	[COUNTERS_CRASH_BOOT_TIMEOUT] = "boot_timeout",
	[COUNTERS_CRASH_HANGUP] = "hangup",
	[COUNTERS_CRASH_UNKNOWN] = "unknown",
};

const char *
counters_crash_name(enum counters_crash cause)
{
	return cause < COUNTERS_NCRASH ? counters_crash_names[cause] : "unknown";
}

void
counters_fini(struct counters *c)
{
	free(c->req);
	c->req = NULL;
	c->nreq = c->capreq = 0;
}

/* "ok", or the error's class as the reply names it (a static string). */
static const char *
counters_result(struct json_object *msg)
{
	struct json_object *err, *cls;
	const char *s;
	int i;

	if (!json_object_object_get_ex(msg, "error", &err))
		return "ok";
	if (!json_object_object_get_ex(err, "class", &cls) ||
	    (s = json_object_get_string(cls)) == NULL)
		return "other";
	for (i = PROTO_ERR_PARSE; i <= PROTO_ERR_LAST; i++)
		if (strcmp(proto_error_class((enum proto_error)i), s) == 0)
			return proto_error_class((enum proto_error)i);
	return "other";
}

void
counters_request(struct counters *c, const char *command,
    struct json_object *msg)
{
	const char *result = msg != NULL ? counters_result(msg) : "other";
	struct counters_req *r;
	size_t i;

	if (c == NULL)
		return;
	if (command == NULL)
		command = "unknown";
	for (i = 0; i < c->nreq; i++)
		if (strcmp(c->req[i].command, command) == 0 &&
		    strcmp(c->req[i].result, result) == 0) {
			c->req[i].n++;
			return;
		}
	if (c->nreq == COUNTERS_MAX_REQ)
		return;
	if (c->nreq == c->capreq) {
		size_t cap = c->capreq ? 2 * c->capreq : 16;

		if ((r = realloc(c->req, cap * sizeof(*r))) == NULL)
			return;
		c->req = r;
		c->capreq = cap;
	}
	c->req[c->nreq++] = (struct counters_req){ command, result, 1 };
}

void
counters_crash(struct counters *c, const struct worker_exit_facts *f)
{
	enum counters_crash cause;

	if (f->violation != NULL)
		cause = COUNTERS_CRASH_SANDBOX;
	else if (f->kill == WORKER_KILL_BOOT_TIMEOUT)
		cause = COUNTERS_CRASH_BOOT_TIMEOUT;
	else if (f->kill == WORKER_KILL_EOF)
		cause = COUNTERS_CRASH_HANGUP;
	else if (f->status_unknown)
		cause = COUNTERS_CRASH_UNKNOWN;
	else if (WIFSIGNALED(f->status))
		cause = COUNTERS_CRASH_SIGNAL;
	else
		cause = COUNTERS_CRASH_EXIT;
	c->crashes[cause]++;
}
