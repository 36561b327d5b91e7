/* The vm.* commands: vm.create ... vm.console, vm.display, vm.screenshot,
 * vm.stats. */
#ifndef VMMD_CMD_VM_H
#define VMMD_CMD_VM_H

#include "control.h"

struct vm;
struct vm_def;

extern const struct cmd_def cmd_vm_commands[];

/*
 * vm.create's work on a definition already parsed (taken: freed on
 * failure): def owned by the client, its files opened with the client's
 * rights, its overlays and a "uefi" VM's NVRAM file made, saved unless
 * transient, added, and vm.created told.  The VM, or NULL with *cls and
 * err (exists where the name is taken).
 */
struct vm	*cmd_vm_make(struct cmd_ctx *ctx, struct vm_def *def,
		    enum proto_error *cls, char *err, size_t errlen);

#endif
