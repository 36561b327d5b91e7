/*
 * vmctl stats' human output from a vm.stats reply (vmmd.7): the exit
 * table, its segments, and KVM's statistics.  Pure formatting, no I/O
 * but the stream it is given, so that it is unit-tested on its own.
 */
#ifndef VMCTL_STATS_TABLE_H
#define VMCTL_STATS_TABLE_H

#include <stdio.h>

#include <json-c/json.h>

/*
 * The header line and one row per exit row of the reply, in its order
 * (by time), then TIMEINGUEST: count, min, max, sum, avg, stddev (in
 * microseconds) and time%; with segments, each row's average split
 * into its segments instead.  Columns are aligned to the widest cell.
 */
void	stats_table_print(FILE *, struct json_object *, int segments);
/*
 * The reply's "kvm" member, if any: the VM's statistics, then one
 * column per vCPU (the first nine); statistics that are zero everywhere
 * are left out.
 */
void	stats_kvm_print(FILE *, struct json_object *);

#endif
