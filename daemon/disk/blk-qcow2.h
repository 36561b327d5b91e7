/*
 * A qcow2 image as a blk_image (blk-image.h), written after QEMU's
 * specification of the format, docs/interop/qcow2.txt (no maintained C
 * library implements it).  Versions 2 and 3; refcounts of any width;
 * zero clusters; compressed clusters (deflate, zstd) read and copied on
 * write; a backing image of any format, read where this one has no
 * data.  Refused at open (qcow2-header.h): internal snapshots,
 * encryption, external data files, extended L2 entries, dirty or
 * corrupt images.
 *
 * Every metadata change is written to the file as it is made, in an
 * order that keeps the image consistent if the process dies at any
 * instant (only leaked clusters, which qemu-img check -r leaks
 * reclaims): a refcount before the table entry that uses its cluster,
 * data before the L2 entry that points at it, an L2 entry before the
 * refcount drop of what it no longer points at.  New clusters are
 * appended to the file; freed ones are punched out, not reused.
 *
 * Damage met at run time (a table entry out of bounds or misaligned, a
 * refcount of 0 under a used cluster, a compressed cluster that does not
 * decompress) fails that request with -EIO and marks the image broken:
 * later writes fail with -EIO too, reads go on.
 *
 * Threads: any number at once.  Metadata lives under one mutex; reads
 * and rewrites of allocated clusters move their data outside it, one
 * preadv/pwritev per run of clusters contiguous in the file.
 */
#ifndef VMMD_BLK_QCOW2_H
#define VMMD_BLK_QCOW2_H

#include <stdbool.h>

#include "blk-image.h"

/*
 * Open the qcow2 image fd (O_RDWR unless readonly) over backing, which
 * must be given exactly when the header names a backing file and then
 * be in backing_format (when the header names one, they must agree).
 * Read-write, the autoclear feature bits are cleared in the file (none
 * is honoured; the specification asks for that).  0 with *out, which
 * then owns fd and backing; or -errno, both still the caller's
 * (-EINVAL for a refused image).
 */
int	blk_qcow2_open(int fd, bool readonly, struct blk_image *backing,
	    enum blk_image_format backing_format, struct blk_image **out);

#endif
