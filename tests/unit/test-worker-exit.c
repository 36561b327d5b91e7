/*
 * Unit tests for daemon/supervisor/worker-exit.c: what a worker's end
 * means for its VM, from the wait status and what the supervisor knew
 * and did, and what a vm.start still waiting is told.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "tap.h"
#include "worker-exit.h"

#define EXITED(code)	W_EXITCODE(code, 0)
#define SIGNALED(sig)	W_EXITCODE(0, sig)

/* A worker that booted and was not asked to stop. */
static struct worker_exit_facts
facts_booted(int status)
{
	struct worker_exit_facts f = {
		.status = status,
		.booted = true,
		.boot_timeout = 30,
	};

	return f;
}

static struct worker_exit
classify(const struct worker_exit_facts *f)
{
	struct worker_exit ex;

	memset(&ex, 0x5a, sizeof(ex));
	worker_exit_classify(f, &ex);
	return ex;
}

static void
test_describe(void)
{
	char buf[128], want[128];

	worker_exit_describe(EXITED(0), buf, sizeof(buf));
	tap_ok(strcmp(buf, "status 0") == 0, "describe: exit 0 (%s)", buf);
	worker_exit_describe(EXITED(3), buf, sizeof(buf));
	tap_ok(strcmp(buf, "status 3") == 0, "describe: exit 3 (%s)", buf);
	worker_exit_describe(SIGNALED(SIGSEGV), buf, sizeof(buf));
	snprintf(want, sizeof(want), "signal %d (%s)", SIGSEGV,
	    strsignal(SIGSEGV));
	tap_ok(strcmp(buf, want) == 0, "describe: SIGSEGV (%s)", buf);
	worker_exit_describe(W_STOPCODE(SIGSTOP), buf, sizeof(buf));
	snprintf(want, sizeof(want), "wait status 0x%x", W_STOPCODE(SIGSTOP));
	tap_ok(strcmp(buf, want) == 0, "describe: neither exit nor signal "
	    "(%s)", buf);
	worker_exit_describe(EXITED(1), buf, 4);
	tap_ok(strlen(buf) == 3, "describe: truncated to the buffer");
}

static void
test_boot_refused(void)
{
	struct worker_exit_facts f = {
		.status = SIGNALED(SIGKILL),
		.kill = WORKER_KILL_BOOT_FAILED,
		.boot_refused = true,
		.boot_error_class = "invalid_argument",
		.boot_error_desc = "kernel: not an ELF file",
		.boot_timeout = 30,
	};
	struct worker_exit ex;

	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_NEVER_RAN,
	    "boot refused: the VM never ran");
	tap_ok(strcmp(ex.reason, "boot failed: kernel: not an ELF file") == 0,
	    "boot refused: reason (%s)", ex.reason);
	tap_ok(ex.start_class == PROTO_ERR_INVALID_ARGUMENT,
	    "boot refused: the worker's error class is forwarded");
	tap_ok(strcmp(ex.start_desc, "kernel: not an ELF file") == 0,
	    "boot refused: the worker's description is forwarded");

	f.boot_error_class = "no_such_class";
	f.boot_error_desc = NULL;
	ex = classify(&f);
	tap_ok(ex.start_class == PROTO_ERR_INTERNAL,
	    "boot refused: unknown class -> internal");
	tap_ok(strcmp(ex.start_desc, "boot failed") == 0,
	    "boot refused: no description -> \"boot failed\"");

	/* Refusal wins over anything else that happened. */
	f.status = EXITED(0);
	f.kill = WORKER_KILL_NONE;
	f.stop_requested = true;
	f.boot_error_class = NULL;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_NEVER_RAN &&
	    ex.start_class == PROTO_ERR_INTERNAL,
	    "boot refused: wins over a stop and a clean exit");
}

static void
test_before_boot(void)
{
	struct worker_exit_facts f = {
		.status = SIGNALED(SIGKILL),
		.kill = WORKER_KILL_BOOT_TIMEOUT,
		.boot_timeout = 30,
	};
	struct worker_exit ex;
	char want[256];

	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED, "boot timeout: crashed");
	tap_ok(ex.start_class == PROTO_ERR_TIMEOUT,
	    "boot timeout: vm.start fails with timeout");
	tap_ok(strcmp(ex.start_desc, "the worker did not start the guest "
	    "within 30 s") == 0 && strcmp(ex.reason, ex.start_desc) == 0,
	    "boot timeout: says how long (%s)", ex.start_desc);

	f.kill = WORKER_KILL_STOP_FORCE;
	f.stop_requested = true;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED &&
	    ex.start_class == PROTO_ERR_BAD_STATE &&
	    strcmp(ex.start_desc, "stopped before the guest started") == 0,
	    "stopped before boot, killed by us: stopped, bad_state");

	f.kill = WORKER_KILL_NONE;
	f.status = EXITED(0);
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED,
	    "stopped before boot, clean exit: stopped");

	f.status = EXITED(1);
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strcmp(ex.reason, "worker exited during boot (status 1)") == 0,
	    "stop asked before boot, but exit 1: crashed (%s)", ex.reason);

	f.stop_requested = false;
	f.kill = WORKER_KILL_NONE;
	f.status = SIGNALED(SIGSEGV);
	ex = classify(&f);
	snprintf(want, sizeof(want), "worker exited during boot (signal %d "
	    "(%s))", SIGSEGV, strsignal(SIGSEGV));
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strcmp(ex.reason, want) == 0 && strcmp(ex.start_desc, want) == 0 &&
	    ex.start_class == PROTO_ERR_INTERNAL,
	    "crash during boot: crashed, internal (%s)", ex.reason);

	/* A SIGKILL we did not send is not ours to call a stop. */
	f.stop_requested = true;
	f.status = SIGNALED(SIGKILL);
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED,
	    "stop asked before boot, SIGKILL from elsewhere: crashed");
}

static void
test_after_boot(void)
{
	struct worker_exit_facts f;
	struct worker_exit ex;
	char want[256];
	static const struct {
		enum worker_kill kill;
		const char *reason;
	} ours[] = {
		{ WORKER_KILL_STOP_FORCE, "killed (forced stop)" },
		{ WORKER_KILL_STOP_TIMEOUT, "killed after the stop timeout" },
		{ WORKER_KILL_DAEMON_EXIT, "killed (vmmd exiting)" },
	};
	size_t i;

	f = facts_booted(EXITED(0));
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED &&
	    strcmp(ex.reason, "guest powered off") == 0,
	    "clean exit, no stop asked: powered off");
	tap_ok(ex.start_class == PROTO_ERR_INTERNAL &&
	    strcmp(ex.start_desc, ex.reason) == 0,
	    "clean exit: a waiting start gets the reason");

	f.stop_requested = true;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED &&
	    strcmp(ex.reason, "guest shut down") == 0 && !ex.killed,
	    "clean exit after a stop: shut down, not killed");
	tap_ok(ex.start_class == PROTO_ERR_BAD_STATE &&
	    strcmp(ex.start_desc, "stopped before the start completed") == 0,
	    "stop before the start's reply: bad_state");

	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
		f = facts_booted(SIGNALED(SIGKILL));
		f.kill = ours[i].kill;
		f.stop_requested = true;
		ex = classify(&f);
		tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED &&
		    strcmp(ex.reason, ours[i].reason) == 0,
		    "our SIGKILL: stopped, %s", ex.reason);
		tap_ok(ex.killed == (ours[i].kill != WORKER_KILL_STOP_FORCE),
		    "killed against the guest's will: %s",
		    ex.killed ? "yes" : "no (forced)");
	}

	f = facts_booted(SIGNALED(SIGKILL));
	f.kill = WORKER_KILL_EOF;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strcmp(ex.reason, "worker closed its control socket") == 0,
	    "killed after closing its socket: crashed");

	/* Killed by us, but it died of something else first. */
	f = facts_booted(SIGNALED(SIGSEGV));
	f.kill = WORKER_KILL_STOP_FORCE;
	ex = classify(&f);
	snprintf(want, sizeof(want), "worker exited (signal %d (%s))", SIGSEGV,
	    strsignal(SIGSEGV));
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strcmp(ex.reason, want) == 0,
	    "SIGSEGV despite our SIGKILL: crashed (%s)", ex.reason);

	f = facts_booted(SIGNALED(SIGKILL));
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED,
	    "SIGKILL we did not send: crashed");

	f = facts_booted(SIGNALED(SIGSYS));
	f.violation = "mount";
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strcmp(ex.reason, "worker exited (killed by its sandbox: "
	    "forbidden system call mount)") == 0,
	    "sandbox violation: crashed, the call named (%s)", ex.reason);

	f = facts_booted(SIGNALED(SIGSEGV));
	f.violation = "mount";
	ex = classify(&f);
	tap_ok(strstr(ex.reason, "mount") == NULL, "a report without "
	    "SIGSYS is not believed (%s)", ex.reason);

	f = facts_booted(EXITED(2));
	f.kill = WORKER_KILL_STOP_TIMEOUT;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strcmp(ex.reason, "worker exited (status 2)") == 0,
	    "exit 2 while a kill was pending: crashed (%s)", ex.reason);
}

/*
 * An adopted worker (not our child): the status is known only from its
 * worker.exit event or our SIGKILL; one that died without a word
 * crashed, whatever the meaningless status says.
 */
static void
test_adopted(void)
{
	struct worker_exit_facts f = facts_booted(EXITED(0));
	struct worker_exit ex;

	f.status_unknown = true;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED &&
	    strstr(ex.reason, "status unknown") != NULL,
	    "adopted, died without a word: crashed (%s)", ex.reason);
	f.stop_requested = true;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_CRASHED,
	    "adopted, died without a word while stopping: crashed (%s)",
	    ex.reason);
	f = facts_booted(EXITED(0));
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED,
	    "adopted, announced exit 0: stopped (%s)", ex.reason);
	f = facts_booted(SIGNALED(SIGKILL));
	f.kill = WORKER_KILL_STOP_FORCE;
	f.stop_requested = true;
	ex = classify(&f);
	tap_ok(ex.outcome == WORKER_OUTCOME_STOPPED,
	    "adopted, our SIGKILL for a forced stop: stopped (%s)", ex.reason);
}

int
main(void)
{
	test_describe();
	test_boot_refused();
	test_before_boot();
	test_after_boot();
	test_adopted();
	return tap_done();
}
