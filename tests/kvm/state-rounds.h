/*
 * The steps the kvm tests of saved state share (kvm-test-vcpu-state.c,
 * kvm-test-machine-state.c, the kvm-test-snapshot*.c): the test build's
 * hook (test-hook.h) runs on each resume of a paused VM, and the guest
 * must run on as if nothing had happened.
 */
#ifndef VMMD_STATE_ROUNDS_H
#define VMMD_STATE_ROUNDS_H

#include "harness.h"

/* The demo guest's first line, and the end of each tick's line. */
#define DEMO_BANNER	"vmmd demo guest"
#define DEMO_TICK	" UTC\r"

/*
 * Creates name, the demo guest, with the JSON members extra (NULL:
 * none), starts it, opens its console and waits for the banner and a
 * first tick: two TAP lines.  Returns the console; bails out without.
 */
struct h_console *state_rounds_demo(struct h_daemon *, struct h_conn *,
	    const char *name, const char *extra);
/* Skips the whole test unless vmmd is built with -Dtest_hooks=true. */
void	state_rounds_need_hooks(const char *what);
/*
 * vm.pause and vm.resume of name (the resume runs the hook once), con
 * drained for 200 ms in between when not NULL; one TAP line, "label:
 * paused and resumed".
 */
void	state_rounds_pause_resume(struct h_conn *, struct h_console *con,
	    const char *name, const char *label);
/*
 * Two TAP lines: name is still running, and con saw banner only once
 * (the guest was never restarted).
 */
void	state_rounds_ran_on(struct h_conn *, struct h_console *con,
	    const char *name, const char *banner);

#endif
