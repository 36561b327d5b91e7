/*
 * worker.stats, vm.stats's worker side: exit timing statistics on, off
 * or reset, and their table (see exit-stats.h), with KVM's own
 * statistics by name.  Loop thread only.
 */
#ifndef VMMD_STATS_H
#define VMMD_STATS_H

#include <stdbool.h>
#include <json-c/json.h>

#include "worker.h"

struct stats_request {
	int enable;		/* 1 on, 0 off, -1 as it is */
	bool reset;
	int vcpu;		/* one vCPU's table, or -1 for all summed */
	bool segments;		/* shown; collected too when enabling */
	bool kvm;
};

/* A new machine: collection as the worker had it, counting anew. */
void	stats_machine_built(struct worker *w);
/*
 * Does what r asks of the running machine and sets *out to the reply's
 * object.  0, or -EINVAL (no such vCPU) or -ENOMEM with err.
 */
int	stats_json(struct worker *w, const struct stats_request *r,
	    struct json_object **out, char *err, size_t errlen);

#endif
