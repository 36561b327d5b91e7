/*
 * What a start gives its worker: the start contract (start-params.h)
 * filled from the VM's definition and the files vm-files.c opened for
 * it, the vsock CID it runs with, and the descriptors the worker
 * inherits at the numbers worker-link.h gives them.  vm.c's vm_start()
 * is the one caller: this file reads the VM list, changes nothing in it,
 * and calls nothing of vm.c's.
 */
#ifndef VMMD_VM_START_H
#define VMMD_VM_START_H

#include <stdint.h>
#include <sys/types.h>

#include "start-params.h"
#include "vm-files.h"
#include "vm.h"
#include "worker-link.h"

/*
 * The CID vm's guest gets at this start (0: it has no vsock): its
 * definition's, unless a running guest of ours has it (bad_state), or
 * else the lowest one no running guest has and no other definition
 * names (limit when none is left).  Another program's guest (QEMU's)
 * may still hold it: the worker says so at its start.  0 or -errno with
 * *cls and err set.
 */
int	vm_start_cid(struct vm *vm, uint32_t *cid, enum proto_error *cls,
	    char *err, size_t errlen);

/*
 * For a "uefi" VM, after vm_files_open_firmware(): its NVRAM file
 * (vm-nvram.h), opened read-write with the daemon's rights and checked
 * against the template files->vars_fd holds, into files->nvram_fd.
 * Nothing for other VMs.  0, or -errno with *cls (invalid_argument) and
 * err naming the file.
 */
int	vm_start_nvram(const struct vm *vm, struct vm_files *files,
	    enum proto_error *cls, char *err, size_t errlen);
/* The image of vm's firmware (vmmd.conf's bios or ovmf_code), or NULL. */
const char *vm_start_firmware_image(const struct vmmd *d,
	    const struct vm_def *def);

/* What the supervisor knows of this run before the worker exists. */
struct vm_start_run {
	const char *console_log;	/* the path the worker appends to */
	off_t log_start;		/* its size now */
	int64_t started_ms;		/* CLOCK_REALTIME */
	int64_t request_ns;		/* CLOCK_MONOTONIC: vm.start came */
	uint32_t vsock_cid;		/* vm_start_cid()'s */
	bool break_lock;		/* RBD disks' locks taken over */
};

/*
 * sp (start_params_init()ed) filled for vm's start with files and run,
 * every descriptor named by the number vm_start_fds() passes it at.  A
 * display gets a password generated for this run unless its definition
 * gives one or says none.  0, or -ENOMEM (sp then to be freed all the
 * same); a password that cannot be made is logged and counts as that.
 */
int	vm_start_params(const struct vm *vm, const struct vm_files *files,
	    const struct vm_start_run *run, struct start_params *sp);

/*
 * The descriptors of files in worker-link.h's order, into passed (-1
 * where a slot has none): how many of its slots to pass.
 */
unsigned int vm_start_fds(const struct vm_files *files,
	    int passed[WLINK_MAX_PASSED]);

/* CLOCK_MONOTONIC in ns: the start's marks (vm.info's "start"). */
int64_t	vm_start_mono_ns(void);

#endif
