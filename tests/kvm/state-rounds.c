/* The shared steps of the saved-state kvm tests (state-rounds.h). */
#include <stdlib.h>
#include <string.h>

#include "state-rounds.h"

struct h_console *
state_rounds_demo(struct h_daemon *d, struct h_conn *c, const char *name,
    const char *extra)
{
	struct h_console *con;
	int rc;

	rc = extra != NULL ? h_create(c, name, "%s", extra) :
	    h_create(c, name, NULL);
	tap_ok(rc == 0 && h_start(c, name) == 0, "%s: created, started",
	    name);
	if ((con = h_console_open(d, name)) == NULL)
		tap_bail("%s: no console", name);
	tap_ok(h_expect(con, DEMO_BANNER, H_BOOT_MS) == 0 &&
	    h_expect(con, DEMO_TICK, 5000) == 0, "%s: banner and a tick",
	    name);
	return con;
}

void
state_rounds_need_hooks(const char *what)
{
	if (getenv("VMMD_TEST_HOOKS") == NULL ||
	    strcmp(getenv("VMMD_TEST_HOOKS"), "true") != 0)
		tap_skip_all("%s needs -Dtest_hooks=true", what);
}

void
state_rounds_pause_resume(struct h_conn *c, struct h_console *con,
    const char *name, const char *label)
{
	struct json_object *r;

	r = h_callf(c, H_REPLY_MS, "vm.pause", "{\"name\":\"%s\"}", name);
	json_object_put(r);
	if (con != NULL)
		h_console_drain(con, 200);
	r = h_callf(c, H_REPLY_MS, "vm.resume", "{\"name\":\"%s\"}", name);
	tap_ok(h_ret(r) != NULL, "%s: paused and resumed (%s)", label,
	    h_text(r));
	json_object_put(r);
}

void
state_rounds_ran_on(struct h_conn *c, struct h_console *con,
    const char *name, const char *banner)
{
	char st[64];

	h_state(c, name, st, sizeof(st));
	tap_ok(strcmp(st, "running") == 0, "%s: still running (%s)", name,
	    st);
	tap_ok(h_count(con->buf, con->len, banner) == 1,
	    "%s: never restarted: one banner (%zu)", name,
	    h_count(con->buf, con->len, banner));
}
