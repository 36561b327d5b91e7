/* The vm.* commands: vm.create ... vm.console, vm.display, vm.screenshot,
 * vm.stats. */
#ifndef VMMD_CMD_VM_H
#define VMMD_CMD_VM_H

#include "control.h"

extern const struct cmd_def cmd_vm_commands[];

#endif
