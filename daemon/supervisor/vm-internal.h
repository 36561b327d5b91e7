/*
 * What vm.c lends the files that take a part of a VM's life off it
 * (vm-adopt.c): the worker link's callbacks every VM's worker gets, the
 * boot facts a worker's answer carries, and the start of a running
 * VM's vsock socket.  On vmmd's loop, as all of vm.h.  Only those files
 * include this; vm.c never calls into them.
 */
#ifndef VMMD_VM_INTERNAL_H
#define VMMD_VM_INTERNAL_H

#include <json-c/json.h>

#include "vm.h"
#include "worker-link.h"
#include "worker-msg.h"

/* The callbacks of every VM's worker link (arg: the struct vm). */
extern const struct wlink_ops vm_wlink_ops;

/*
 * Record what worker.boot's answer (or worker.adopt's) says of the
 * boot in vm->run: the kernel taken from the disk (field from), the
 * seed's instance-id (field seed).  o NULL: none.
 */
void	vm_run_boot_facts(struct vm *vm, struct json_object *o,
	    enum wmsg_field from, enum wmsg_field seed);
/* Serve a running VM's vsock socket, if it has a CID. */
void	vm_vsock_serve(struct vm *vm);

#endif
