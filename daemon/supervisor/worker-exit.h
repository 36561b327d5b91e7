/*
 * How a worker ended: from its wait status and what the supervisor knew
 * and did (it asked for a stop, it sent SIGKILL and why, the boot was
 * refused), the outcome for the VM and the words for the client and the
 * log.  Pure: no I/O, no state; the VM list acts on the verdict.
 */
#ifndef VMMD_WORKER_EXIT_H
#define VMMD_WORKER_EXIT_H

#include <stdbool.h>
#include <stddef.h>

#include "proto.h"

/* Why the supervisor sent SIGKILL, which decides the final state. */
enum worker_kill {
	WORKER_KILL_NONE,		/* no SIGKILL sent */
	WORKER_KILL_STOP_FORCE,		/* vm.stop force/timeout 0 → stopped */
	WORKER_KILL_STOP_TIMEOUT,	/* vm.stop timed out → stopped */
	WORKER_KILL_BOOT_FAILED,	/* worker.boot answered an error */
	WORKER_KILL_BOOT_TIMEOUT,	/* no worker.boot answer in time → crashed */
	WORKER_KILL_EOF,		/* worker closed its socket → crashed */
	WORKER_KILL_DAEMON_EXIT,	/* vmmd is stopping → stopped */
};

/* What was known when the worker was reaped. */
struct worker_exit_facts {
	int status;			/* from waitpid() */
	enum worker_kill kill;		/* the SIGKILL we sent, if any */
	bool booted;			/* worker.boot answered {} */
	bool stop_requested;		/* a stop was asked for */
	/* worker.boot answered an error: its class and desc (NULL: none) */
	bool boot_refused;
	const char *boot_error_class;
	const char *boot_error_desc;
	unsigned int boot_timeout;	/* s, for the message */
	/* An adopted worker (not our child) that died without a word:
	 * status means nothing. */
	bool status_unknown;
	/* The system call the worker's sandbox refused, or NULL. */
	const char *violation;
};

enum worker_outcome {
	WORKER_OUTCOME_STOPPED,		/* the VM ends stopped */
	WORKER_OUTCOME_CRASHED,		/* the VM ends crashed */
	WORKER_OUTCOME_NEVER_RAN,	/* boot refused: back where it was */
};

struct worker_exit {
	enum worker_outcome outcome;
	/* Why, for the vm.state event and the log. */
	char reason[512];
	/* The guest was asked to stop, did not, and was killed. */
	bool killed;
	/* A vm.start still waiting fails with this. */
	enum proto_error start_class;
	char start_desc[512];
};

/* "status N", "signal N (Name)", or the raw wait status. */
void	worker_exit_describe(int status, char *buf, size_t len);

void	worker_exit_classify(const struct worker_exit_facts *f,
	    struct worker_exit *out);

#endif
