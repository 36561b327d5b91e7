/* See rbd-module.h: the worker's side, which loads the module. */
#include <errno.h>
#include <stdio.h>

#include "module-load.h"
#include "rbd-module.h"

_Static_assert(offsetof(struct rbd_module, abi) == offsetof(struct
    module_head, abi) && offsetof(struct rbd_module, size) ==
    offsetof(struct module_head, size), "the table starts as module_head");

int
rbd_module_load(const char *dir, const struct rbd_module **out, char *err,
    size_t errlen)
{
	int rc = module_load(dir, RBD_MODULE_FILE, RBD_MODULE_SYMBOL,
	    RBD_MODULE_ABI, sizeof(**out), "Ceph RBD", (const void **)out,
	    err, errlen);

	if (rc == -ENOENT)
		snprintf(err, errlen, "this vmmd was built without Ceph RBD "
		    "support (no %s/%s: librbd-dev, meson's \"rbd\" "
		    "feature)", dir, RBD_MODULE_FILE);
	return rc;
}
