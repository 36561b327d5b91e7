/*
 * vm.snapshot: a running or paused VM's RAM and state into a snapshot
 * directory (daemon/snapshot/README.md), which vmmd opens with the
 * client's rights and its worker fills; vm.restore: a VM started from
 * one.
 */
#ifndef VMMD_CMD_SNAPSHOT_H
#define VMMD_CMD_SNAPSHOT_H

#include "control.h"

extern const struct cmd_def cmd_snapshot_commands[];

#endif
