/* See cloud-module.h: the module's side, its one exported symbol. */
#include "cloud-module.h"

const struct cloud_module vmmd_cloud_module = {
	.abi = CLOUD_MODULE_ABI,
	.size = sizeof(struct cloud_module),
	.boot_choose = image_boot_choose,
	.boot_free = image_boot_free,
	.seed_write = nocloud_seed_write,
};
