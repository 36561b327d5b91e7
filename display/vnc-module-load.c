/* See vnc-module.h: the worker's side, which loads the module. */
#include "module-load.h"
#include "vnc-module.h"

_Static_assert(offsetof(struct vnc_module, abi) == offsetof(struct
    module_head, abi) && offsetof(struct vnc_module, size) ==
    offsetof(struct module_head, size), "the table starts as module_head");

int
vnc_module_load(const char *dir, const struct vnc_module **out, char *err,
    size_t errlen)
{
	return module_load(dir, VNC_MODULE_FILE, VNC_MODULE_SYMBOL,
	    VNC_MODULE_ABI, sizeof(**out), "VNC", (const void **)out, err,
	    errlen);
}
