/* See rbd-module.h: the module's side, its one exported symbol. */
#include "rbd-module.h"

const struct rbd_module vmmd_rbd_module = {
	.abi = RBD_MODULE_ABI,
	.size = sizeof(struct rbd_module),
	.open = blk_rbd_new,
	.stats = blk_rbd_stats,
	.state_name = blk_rbd_state_name,
	.free = blk_rbd_free,
};
