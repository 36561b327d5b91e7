/*
 * Modules the worker loads only for the guests that need them (the VNC
 * server, the cloud-image reader): a shared object next to vmmd-worker
 * whose one exported symbol is a table of functions.  Every table starts
 * with its ABI number and its size, so that a module from another build
 * is refused with a reason rather than called.
 */
#ifndef VMMD_MODULE_LOAD_H
#define VMMD_MODULE_LOAD_H

#include <stddef.h>

/* The head of every module's table. */
struct module_head {
	unsigned int abi;
	size_t size;
};

/*
 * dir/file loaded (bound now, so that nothing is resolved later under
 * the sandbox) and its table symbol found and checked against abi and
 * size: *out the table.  what names the module in messages.  dlopen()
 * counts references, so a second load finds the same module, which
 * stays loaded for the life of the process.  0, or -errno with a reason
 * in err (-ENOENT: no module there; -EINVAL: not one of this build).
 * Before the sandbox (it opens and maps files).
 */
int	module_load(const char *dir, const char *file, const char *symbol,
	    unsigned int abi, size_t size, const char *what,
	    const void **out, char *err, size_t errlen);

/*
 * The directory of the running program (/proc/self/exe's), where its
 * modules are: into dir.  0 or -errno.
 */
int	module_dir_self(char *dir, size_t len);

#endif
