/*
 * The commands that change a VM at rest without losing it: vm.export,
 * vm.redefine, vm.rename and vm.clone; and what vm.delete keeps or
 * removes of a VM's data.
 */
#ifndef VMMD_CMD_VM_EDIT_H
#define VMMD_CMD_VM_EDIT_H

#include <stdbool.h>
#include <json-c/json.h>

#include "control.h"

struct access_cred;
struct vm;
struct vm_def;
struct vmmd;

extern const struct cmd_def cmd_vm_edit_commands[];

/*
 * Check a request's arguments against keys (NULL-terminated) and look up
 * the VM its "name" names (vm.* requests, here and in cmd-vm.c): the VM,
 * or NULL with *reply the error reply (invalid_argument, not_found).
 */
struct vm	*cmd_vm_lookup(struct cmd_ctx *ctx, const char *const *keys,
		    struct json_object **reply);

/*
 * The data a VM leaves in the state directory (its overlays, its console
 * log and the log's rotated part): removed with remove, else kept.  The
 * reply of vm.delete: {"removed": [PATH...], "kept": [PATH...]}, only
 * files that exist.  A file that cannot be removed is listed as kept and
 * its error put in err (the first one); the return is then -errno.
 * Where none is left, the record of its owner goes too.
 */
int	cmd_vm_data(struct vmmd *d, const struct vm_def *def, bool remove,
	    struct json_object **out, char *err, size_t errlen);

/*
 * After a delete that kept data (cmd_vm_data()'s reply data): def's
 * owner recorded with it, for cmd_vm_data_owned(); a VM with no owner
 * known leaves no record (its data is then root's alone to remove).
 */
void	cmd_vm_data_keep(const struct vmmd *d, const struct vm_def *def,
	    struct json_object *data);

/*
 * Whether cred may remove the data a deleted VM named name left: root
 * may, and the VM's owner, recorded by cmd_vm_data_keep() when its delete
 * kept it; with no owner recorded, root alone.  0, or -EPERM with err
 * saying whose it is.
 */
int	cmd_vm_data_owned(const struct vmmd *d, const char *name,
	    const struct access_cred *cred, char *err, size_t errlen);

/*
 * Whether an overlay that vm.delete kept is where def's overlay disks
 * would have theirs: -EEXIST with err saying which and what to do.
 */
int	cmd_vm_kept_overlays(struct vmmd *d, const struct vm_def *def,
	    char *err, size_t errlen);

#endif
