/* See cloud-module.h: the worker's side, which loads the module. */
#include "cloud-module.h"
#include "module-load.h"

_Static_assert(offsetof(struct cloud_module, abi) == offsetof(struct
    module_head, abi) && offsetof(struct cloud_module, size) ==
    offsetof(struct module_head, size), "the table starts as module_head");

int
cloud_module_load(const char *dir, const struct cloud_module **out,
    char *err, size_t errlen)
{
	return module_load(dir, CLOUD_MODULE_FILE, CLOUD_MODULE_SYMBOL,
	    CLOUD_MODULE_ABI, sizeof(**out), "cloud image",
	    (const void **)out, err, errlen);
}
