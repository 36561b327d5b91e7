/*
 * The RBD backend (blk-rbd.h) as a module the worker loads only for a
 * guest with an RBD disk (module-load.h): librbd and librados cost a
 * process about 19 MB resident, 17 MB proportional, just mapped
 * (relocated C++), far beyond a worker's budget, so no other guest
 * maps them.  Built where meson's "rbd" feature found librbd; where the
 * module is absent, an RBD disk is refused with the reason.  Both sides
 * include this header.
 */
#ifndef VMMD_RBD_MODULE_H
#define VMMD_RBD_MODULE_H

#include <stddef.h>

#include "blk-rbd.h"

#define RBD_MODULE_FILE		"vmmd-rbd.so"
#define RBD_MODULE_SYMBOL	"vmmd_rbd_module"
#define RBD_MODULE_ABI		1

struct rbd_module {
	unsigned int abi;	/* RBD_MODULE_ABI */
	size_t size;		/* sizeof(struct rbd_module) */
	int (*open)(struct blk_rbd **out, const struct blk_rbd_config *cfg,
	    struct blk_backend *be, char *err, size_t errlen);
	void (*stats)(struct blk_rbd *r, struct blk_rbd_stats *st);
	const char *(*state_name)(enum blk_rbd_state s);
	void (*free)(struct blk_rbd *r);
};

/*
 * The module of dir (vmmd-worker's directory), as module_load(); its
 * absence (-ENOENT) said as a build without RBD support.
 */
int	rbd_module_load(const char *dir, const struct rbd_module **out,
	    char *err, size_t errlen);

#endif
