/*
 * blk-rbd.h in a build without librbd (meson's "rbd" feature off or
 * librbd-dev absent): every image is refused with the reason, the rest
 * of the interface does nothing.
 */
#include <errno.h>
#include <stdio.h>

#include "blk-rbd.h"

const char *
blk_rbd_state_name(enum blk_rbd_state s)
{
	return s == BLK_RBD_CONNECTED ? "connected" : "failed";
}

int
blk_rbd_new(struct blk_rbd **out, const struct blk_rbd_config *cfg,
    struct blk_backend *be, char *err, size_t errlen)
{
	*out = NULL;
	snprintf(err, errlen, "this vmmd was built without Ceph RBD "
	    "support (librbd-dev; meson's \"rbd\" feature)");
	return -EOPNOTSUPP;
}

void
blk_rbd_stats(struct blk_rbd *r, struct blk_rbd_stats *st)
{
}

void
blk_rbd_free(struct blk_rbd *r)
{
}
