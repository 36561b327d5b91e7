/* See blk-chain.h. */
#include <errno.h>

#include "blk-chain.h"
#include "blk-qcow2.h"
#include "blk-raw.h"

int
blk_image_open_chain(const int *fds, const enum blk_image_format *formats,
    unsigned int n, bool readonly, struct blk_image **out)
{
	struct blk_image *below = NULL, *img;
	int ret;

	if (n == 0 || n > BLK_IMAGE_MAX_CHAIN)
		return -EINVAL;
	/*
	 * Bottom up, so each image is opened on the one below it.  On
	 * failure the images opened so far are taken apart without closing
	 * their descriptors: those stay the caller's.
	 */
	for (unsigned int i = n; i-- > 0;) {
		bool ro = readonly || i > 0;

		switch (formats[i]) {
		case BLK_IMAGE_RAW:
			ret = below != NULL ? -EINVAL :
			    blk_raw_open(fds[i], ro, &img);
			break;
		case BLK_IMAGE_QCOW2:
			ret = blk_qcow2_open(fds[i], ro, below,
			    i + 1 < n ? formats[i + 1] : BLK_IMAGE_RAW, &img);
			break;
		default:
			ret = -EINVAL;
			break;
		}
		if (ret < 0) {
			blk_image_free_disowned(below);
			return ret;
		}
		below = img;
	}
	*out = below;
	return 0;
}

void
blk_image_free_disowned(struct blk_image *img)
{
	for (struct blk_image *i = img; i != NULL; i = i->backing)
		i->ops->disown(i);
	blk_image_free(img);
}
