/*
 * A vCPU's state survives being written out and read back: the demo
 * guest (it prints the time once a second from its LAPIC timer) is
 * paused, and on each resume the test build's hook (test-hook.h,
 * VMMD_TEST_VCPU_STATE) captures vCPU 0 into a state section, clobbers
 * its registers, reads the section back and restores it.  The guest
 * goes on ticking, never restarted.
 *
 * VMMD_TEST_VCPU_STATE=clobber in the test's environment makes the hook
 * leave the clobbered registers: the test must then fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "state-rounds.h"

#define HOOK_LINE	"test hook: vcpu 0 state "
#define ROUNDS		3

/* The last hook line in d's log: its numbers; false if there is none. */
static bool
hook_line(struct h_daemon *d, size_t *bytes, unsigned int *msrs,
    unsigned int *xsave, unsigned long long *rip, unsigned long long *junk)
{
	char *log, *p, *last = NULL;
	bool ok = false;

	if ((log = h_read_file(d->log, NULL)) == NULL)
		return false;
	for (p = log; (p = strstr(p, HOOK_LINE)) != NULL; p++)
		last = p;
	if (last != NULL) {
		last = strchr(last + strlen(HOOK_LINE), ':');
		ok = last != NULL && sscanf(last, ": %zu bytes, %u MSRs, %*u "
		    "XCRs, XSAVE %u bytes, rip %llx, clobbered to %llx", bytes,
		    msrs, xsave, rip, junk) == 5;
	}
	free(log);
	return ok;
}

int
main(void)
{
	const char *mode = getenv("VMMD_TEST_VCPU_STATE");
	struct h_console *con;
	struct h_daemon *d;
	struct h_conn *c;
	char label[32];

	h_init();
	state_rounds_need_hooks("the vCPU state hook");
	if (mode == NULL)
		setenv("VMMD_TEST_VCPU_STATE", "restore", 1);
	c = h_setup(&d);

	con = state_rounds_demo(d, c, "demo", NULL);

	for (int i = 1; i <= ROUNDS; i++) {
		size_t bytes = 0;
		unsigned int msrs = 0, xsave = 0;
		unsigned long long rip = 0, junk = 0;
		bool ok;

		snprintf(label, sizeof(label), "round %d", i);
		state_rounds_pause_resume(c, con, "demo", label);
		ok = h_file_expect(d->log, HOOK_LINE, i, 10000) == 0 &&
		    hook_line(d, &bytes, &msrs, &xsave, &rip, &junk) &&
		    bytes > 0 && rip != junk;
		tap_ok(ok, "round %d: vCPU 0 was saved (%zu bytes: %u MSRs, XSAVE %u "
		    "bytes), clobbered (rip %#llx to %#llx) and restored", i,
		    bytes, msrs, xsave, rip, junk);
		con->mark = con->len;
		tap_ok(h_expect(con, DEMO_TICK, 5000) == 0 &&
		    h_expect(con, DEMO_TICK, 5000) == 0,
		    "round %d: the guest ticks on", i);
	}
	state_rounds_ran_on(c, con, "demo", DEMO_BANNER);
	{
		char *log = h_read_file(d->log, NULL);

		tap_ok(log != NULL && strstr(log, "test hook: vcpu 0 state: ")
		    == NULL, "no step of the hook failed");
		free(log);
	}
	h_console_close(con);
	tap_ok(h_stop(c, "demo", true, -1, H_REPLY_MS) == 0, "demo: stopped");
	h_close(c);
	return h_done();
}
