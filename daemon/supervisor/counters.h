/*
 * The supervisor's own counters for /metrics: requests by command and
 * result, adoptions, worker crashes by cause, scrapes and the workers
 * left out of them.  Plain numbers bumped on the event loop thread;
 * counting costs an increment (a short search for requests), never a
 * system call.  One per supervisor, in struct vmmd.
 */
#ifndef VMMD_COUNTERS_H
#define VMMD_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

struct worker_exit_facts;

/* Why a worker crashed (the "cause" label). */
enum counters_crash {
	COUNTERS_CRASH_SANDBOX,		/* killed by its system call filter */
	COUNTERS_CRASH_SIGNAL,		/* a signal (SIGKILL, SIGSEGV...) */
	COUNTERS_CRASH_EXIT,		/* exited with an error status */
	COUNTERS_CRASH_BOOT_TIMEOUT,	/* never said the guest ran */
	COUNTERS_CRASH_HANGUP,		/* closed its link */
	COUNTERS_CRASH_UNKNOWN,		/* an adopted worker, without a word */
	COUNTERS_NCRASH
};

/* How many distinct (command, result) pairs are kept; more: "other". */
#define COUNTERS_MAX_REQ	256

struct counters_req {
	const char *command;		/* static: the command table's */
	const char *result;		/* static: "ok" or an error class */
	uint64_t n;
};

struct counters {
	struct counters_req *req;
	size_t nreq, capreq;
	uint64_t clients;		/* control connections accepted */
	uint64_t adoptions;		/* workers a previous vmmd left */
	uint64_t crashes[COUNTERS_NCRASH];
	uint64_t scrapes;		/* /metrics answered */
	uint64_t scrape_timeouts;	/* workers left out of a scrape */
	uint64_t scrape_errors;		/* workers whose answer was refused */
};

void	counters_fini(struct counters *c);
/*
 * A reply (the whole message) sent for command (a string that lives as
 * long as c; NULL: a request that named no known command).
 */
void	counters_request(struct counters *c, const char *command,
	    struct json_object *msg);
/* A worker that ended so that its VM is crashed. */
void	counters_crash(struct counters *c, const struct worker_exit_facts *f);
const char *counters_crash_name(enum counters_crash cause);

#endif
