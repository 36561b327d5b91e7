/*
 * state and events: what a script polls, and what it waits on.  state
 * is one vm.info; events subscribes (events.subscribe) and prints each
 * event as it comes until interrupted or until vmmd goes away.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "vmctl.h"

int
cmd_state(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *args, *ret, *v, *out;
	struct client *cl;
	const char *name, *state, *reason;
	char what[128];
	int r;

	if ((r = ctl_name_only(ctl, argc, argv, &name)) >= 0)
		return r;
	snprintf(what, sizeof(what), "state %s", name);
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	r = client_call(cl, what, "vm.info", args, &ret, 0);
	client_free(cl);
	if (r != 0)
		return r;
	state = json_object_object_get_ex(ret, "state", &v) ?
	    json_object_get_string(v) : "unknown";
	reason = json_object_object_get_ex(ret, "reason", &v) && v != NULL ?
	    json_object_get_string(v) : NULL;
	if (ctl->json) {
		out = json_object_new_object();
		json_object_object_add(out, "name",
		    json_object_new_string(name));
		json_object_object_add(out, "state",
		    json_object_new_string(state));
		json_object_object_add(out, "reason", reason != NULL ?
		    json_object_new_string(reason) : NULL);
		ctl_print_json(out);
		json_object_put(out);
	} else
		printf("%s\n", state);
	json_object_put(ret);
	return CTL_EXIT_OK;
}

/* "2025-06-01T12:00:00.123 web vm.state state=running reason=booted" */
static void
events_print(struct json_object *ev)
{
	struct json_object *v, *data;
	char when[32] = "-";
	double ts;
	time_t t;
	struct tm tm;

	if (json_object_object_get_ex(ev, "timestamp", &v)) {
		ts = json_object_get_double(v);
		t = (time_t)ts;
		if (localtime_r(&t, &tm) != NULL) {
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
			snprintf(when + strlen(when), sizeof(when) -
			    strlen(when), ".%03d", (int)((ts - (double)t) *
			    1000));
		}
	}
	printf("%s %s %s", when, json_object_object_get_ex(ev, "vm", &v) &&
	    v != NULL ? json_object_get_string(v) : "-",
	    json_object_object_get_ex(ev, "event", &v) ?
	    json_object_get_string(v) : "?");
	if (json_object_object_get_ex(ev, "data", &data) &&
	    json_object_is_type(data, json_type_object)) {
		json_object_object_foreach(data, key, val) {
			const char *s = val == NULL ? "null" :
			    json_object_is_type(val, json_type_string) ?
			    json_object_get_string(val) :
			    json_object_to_json_string_ext(val,
			    JSON_C_TO_STRING_PLAIN);
			size_t i;

			printf(" %s=", key);
			/* One event, one line: no control characters. */
			for (i = 0; s[i] != '\0'; i++)
				putchar((unsigned char)s[i] < 0x20 ||
				    s[i] == 0x7f ? ' ' : s[i]);
		}
	}
	putchar('\n');
}

int
cmd_events(struct ctl *ctl, int argc, char **argv)
{
	struct json_object *ev, *v;
	struct client *cl;
	const char *name = NULL;
	int r;

	if ((r = ctl_common_options(ctl, argc, argv)) >= 0)
		return r;
	if (argc - optind > 0) {
		if ((r = ctl_positional(ctl, argc, argv, 1, "NAME")) != 0)
			return r;
		name = argv[optind];
	}
	if ((r = client_open(ctl->socket, &cl)) != 0)
		return r;
	if ((r = client_call(cl, "events", "events.subscribe", NULL, NULL,
	    0)) != 0) {
		client_free(cl);
		return r;
	}
	/* Flushed at each event: a script reads them as they come. */
	while ((r = client_next_event(cl, "events", &ev)) == 0) {
		if (name == NULL || (json_object_object_get_ex(ev, "vm", &v) &&
		    v != NULL && strcmp(json_object_get_string(v), name) ==
		    0)) {
			if (ctl->json)
				printf("%s\n", json_object_to_json_string_ext(
				    ev, JSON_C_TO_STRING_PLAIN |
				    JSON_C_TO_STRING_NOSLASHESCAPE));
			else
				events_print(ev);
			fflush(stdout);
		}
		json_object_put(ev);
	}
	client_free(cl);
	return r;
}
