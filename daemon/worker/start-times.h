/*
 * Where a guest's start went, from vm.start to its first serial byte:
 * the marks each step leaves (CLOCK_MONOTONIC nanoseconds, xs_mono_ns():
 * one clock for the supervisor and its workers on one host) and the segments between
 * them, which vm.info shows as "start" and bench/start-latency prints.
 * Only the worker's first machine is timed: a reset is not a start.
 *
 * The loop's thread sets and reads the marks, except START_RUN, which
 * vCPU 0's thread stores (atomically) through machine_config.times.
 */
#ifndef VMMD_START_TIMES_H
#define VMMD_START_TIMES_H

#include <stdint.h>
#include <json-c/json.h>

#include "machine.h"

enum start_mark {
	START_REQUEST,		/* vmmd took vm.start (worker.boot says) */
	START_SPAWN,		/* vmmd forks the worker (worker.boot says) */
	START_MAIN,		/* the worker's main(): exec'd and linked */
	START_BOOT,		/* worker.boot arrived */
	START_NMARKS_OWN,	/* the rest are the machine's (machine.h) */
};

struct start_times {
	int64_t own[START_NMARKS_OWN];	/* 0: not reached (yet) */
	struct machine_times machine;
	int64_t sandboxed;		/* the sandbox is on */
	int64_t first_output;		/* the console's first flush */
};

/*
 * The segments in microseconds, named by what runs in each ("exec":
 * fork, exec and dynamic linking), and "total"; a segment whose ends
 * are not both known is left out.
 */
struct json_object *start_times_json(const struct start_times *t);

#endif
