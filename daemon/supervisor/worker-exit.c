/*
 * Classifying a worker's end (see worker-exit.h).
 *
 * The order of the checks is the contract: a refused boot wins over
 * everything (the VM never ran), then what happened before the guest
 * booted, then a clean exit, then our own SIGKILLs, and whatever is
 * left is a crash.  An adopted worker's status is known only from its
 * own last words or our SIGKILL: one that went without either crashed.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "worker-exit.h"

void
worker_exit_describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(status),
		    strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status 0x%x", status);
}

void
worker_exit_classify(const struct worker_exit_facts *f,
    struct worker_exit *out)
{
	int status = f->status;
	bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	bool by_us = f->kill != WORKER_KILL_NONE && WIFSIGNALED(status) &&
	    WTERMSIG(status) == SIGKILL;
	char how[128], errdesc[512];
	int c;

	if (f->status_unknown) {
		/* Only a worker that said nothing: it died. */
		clean = by_us = false;
		snprintf(how, sizeof(how), "status unknown: not a child of "
		    "this vmmd");
	} else
		worker_exit_describe(status, how, sizeof(how));
	if (!f->status_unknown && f->violation != NULL &&
	    WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		snprintf(how, sizeof(how), "killed by its sandbox: forbidden "
		    "system call %s", f->violation);
	out->start_class = PROTO_ERR_INTERNAL;
	out->killed = false;
	errdesc[0] = '\0';
	if (f->boot_refused) {
		/* The worker refused to boot: the VM never ran. */
		c = f->boot_error_class != NULL ?
		    proto_error_lookup(f->boot_error_class) : -1;
		out->start_class = c < 0 ? PROTO_ERR_INTERNAL :
		    (enum proto_error)c;
		snprintf(errdesc, sizeof(errdesc), "%s",
		    f->boot_error_desc != NULL ? f->boot_error_desc :
		    "boot failed");
		out->outcome = WORKER_OUTCOME_NEVER_RAN;
		snprintf(out->reason, sizeof(out->reason), "boot failed: %s",
		    errdesc);
	} else if (!f->booted && f->kill == WORKER_KILL_BOOT_TIMEOUT) {
		out->outcome = WORKER_OUTCOME_CRASHED;
		out->start_class = PROTO_ERR_TIMEOUT;
		snprintf(errdesc, sizeof(errdesc), "the worker did not start "
		    "the guest within %u s", f->boot_timeout);
		snprintf(out->reason, sizeof(out->reason), "%s", errdesc);
	} else if (!f->booted && f->stop_requested && (clean || by_us)) {
		out->outcome = WORKER_OUTCOME_STOPPED;
		out->start_class = PROTO_ERR_BAD_STATE;
		snprintf(errdesc, sizeof(errdesc), "stopped before the guest "
		    "started");
		snprintf(out->reason, sizeof(out->reason), "%s", errdesc);
	} else if (!f->booted) {
		out->outcome = WORKER_OUTCOME_CRASHED;
		snprintf(errdesc, sizeof(errdesc), "worker exited during boot "
		    "(%s)", how);
		snprintf(out->reason, sizeof(out->reason), "%s", errdesc);
	} else if (clean) {
		out->outcome = WORKER_OUTCOME_STOPPED;
		snprintf(out->reason, sizeof(out->reason), "%s",
		    f->stop_requested ? "guest shut down" :
		    "guest powered off");
	} else if (by_us && (f->kill == WORKER_KILL_STOP_FORCE ||
	    f->kill == WORKER_KILL_STOP_TIMEOUT ||
	    f->kill == WORKER_KILL_DAEMON_EXIT)) {
		out->outcome = WORKER_OUTCOME_STOPPED;
		out->killed = f->kill != WORKER_KILL_STOP_FORCE;
		snprintf(out->reason, sizeof(out->reason), "%s",
		    f->kill == WORKER_KILL_STOP_FORCE ? "killed (forced stop)" :
		    f->kill == WORKER_KILL_STOP_TIMEOUT ? "killed after the "
		    "stop timeout" : "killed (vmmd exiting)");
	} else if (by_us && f->kill == WORKER_KILL_EOF) {
		out->outcome = WORKER_OUTCOME_CRASHED;
		snprintf(out->reason, sizeof(out->reason), "worker closed its "
		    "control socket");
	} else {
		out->outcome = WORKER_OUTCOME_CRASHED;
		snprintf(out->reason, sizeof(out->reason), "worker %s (%s)",
		    f->status_unknown ? "died" : "exited", how);
	}

	/* Booted, but stopped before the start's reply was sent. */
	if (errdesc[0] == '\0' && f->stop_requested) {
		out->start_class = PROTO_ERR_BAD_STATE;
		snprintf(errdesc, sizeof(errdesc), "stopped before the start "
		    "completed");
	}
	snprintf(out->start_desc, sizeof(out->start_desc), "%s",
	    errdesc[0] != '\0' ? errdesc : out->reason);
}
