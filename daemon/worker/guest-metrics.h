/*
 * worker.metrics: the guest's numbers for a /metrics scrape, as metric
 * families the supervisor renders (vmmd-protocol(7), THE WORKER LINK).
 * The worker names its own numbers; the supervisor checks every name,
 * adds the vm label and writes the exposition format.
 *
 * Called on the worker's loop thread.  Reads what vm.info reads, plus
 * each vCPU thread's CPU clock and KVM's binary statistics with their
 * types and units; it takes no lock a vCPU holds for long.
 */
#ifndef VMMD_GUEST_METRICS_H
#define VMMD_GUEST_METRICS_H

#include <json-c/json.h>

#include "worker.h"

/* A new object {"families": [...]} (never NULL). */
struct json_object *guest_metrics_json(struct worker *w);

#endif
