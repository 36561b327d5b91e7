/*
 * A chain of disk images opened from descriptors, whatever their
 * formats: the one place that knows every format (blk-raw.h,
 * blk-qcow2.h).  blk-file.c opens a guest's disks through it; the
 * formats know only blk-image.h.
 */
#ifndef VMMD_BLK_CHAIN_H
#define VMMD_BLK_CHAIN_H

#include "blk-image.h"

/*
 * Open a chain of images given as descriptors, the top image first,
 * then its backing image, its backing image's, and so on: fds[i] is in
 * format formats[i], as the caller resolved the chain from each qcow2
 * header's backing file name and format (qcow2-header.h).  1 <= n <=
 * BLK_IMAGE_MAX_CHAIN; only fds[0] is written, and only if !readonly
 * (it must then be open O_RDWR); the others are opened read-only.
 *
 * Every qcow2 image but the last must name a backing file, and the last
 * must not; where a qcow2 header names its backing image's format it
 * must be formats[i + 1].  A raw image ends the chain.
 *
 * 0 with *out the top image, which then owns every fd; or -errno, with
 * every fd still the caller's (-EINVAL: a refused or inconsistent image
 * or chain).
 */
int	blk_image_open_chain(const int *fds, const enum blk_image_format *formats,
	    unsigned int n, bool readonly, struct blk_image **out);

/* Free img and its backing images, leaving every fd open. */
void	blk_image_free_disowned(struct blk_image *img);

#endif
