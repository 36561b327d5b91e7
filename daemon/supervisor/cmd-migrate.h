/*
 * vm.migrate_in, vm.migrate_out and vm.migrate_cancel: a running guest
 * moved live from this vmmd to another (daemon/migrate/,
 * worker/migrate-out.h and migrate-in.h), over a stream the client
 * carries, or kept here when the move is cancelled.
 */
#ifndef VMMD_CMD_MIGRATE_H
#define VMMD_CMD_MIGRATE_H

#include "control.h"

extern const struct cmd_def cmd_migrate_commands[];

#endif
