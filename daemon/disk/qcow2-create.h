/*
 * Making an empty qcow2 image over a backing file: what vmmd's thin
 * clones start from (daemon/supervisor/disk-overlay.c).
 *
 * Written here because no library does it: QEMU's block layer is not a
 * library, and libguestfs and the like run qemu-img.  The image is the
 * smallest valid one the reference (docs/interop/qcow2.txt) allows, laid
 * out as qemu-img lays out its own:
 *
 *   cluster 0  the header (version 3), the backing file format extension,
 *              the end of the extensions, the backing file's name
 *   cluster 1  the refcount table: one entry, for the block below
 *   cluster 2  the refcount block: refcount 1 for every metadata cluster
 *   cluster 3  the L1 table, as many clusters as the virtual size needs,
 *              all entries 0 (every guest cluster reads from the backing
 *              file)
 *
 * with 64 KiB clusters and 16-bit refcounts.  Nothing else is allocated,
 * so qemu-img check finds neither leaks nor errors.
 *
 * Pure: pwrite() and ftruncate() on the caller's descriptor, no logging,
 * no globals.
 */
#ifndef VMMD_QCOW2_CREATE_H
#define VMMD_QCOW2_CREATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QCOW2_CREATE_CLUSTER_BITS	16	/* 64 KiB clusters */
#define QCOW2_CREATE_REFCOUNT_ORDER	4	/* 16-bit refcounts */

/*
 * Write the image described above into fd, an empty file open for
 * writing: virtual size size bytes (1 up to what an L1 table of
 * QCOW2_MAX_L1_BYTES maps), over the backing file backing (an absolute
 * path, at most QCOW2_MAX_BACKING_NAME bytes) in format backing_format
 * ("raw" or "qcow2").  0, -EINVAL for arguments outside those bounds,
 * or the -errno of a failed write.  The caller syncs the file.
 */
int	qcow2_create(int fd, uint64_t size, const char *backing,
	    const char *backing_format);
/*
 * The virtual size of an image over the backing file open as fd (read
 * with pread() and fstat(): its offset stays where it was), which is in
 * qcow2 (backing_qcow2) or raw: a qcow2 image's header's size, a raw
 * image's length rounded down to whole 512-byte sectors (what a guest
 * sees of it), possibly 0.  0 with *size set; or -errno with reason (of
 * reasonlen bytes) saying why: a qcow2 header vmmd cannot use is -EINVAL
 * and its reason (qcow2-header.h), any other failure strerror's text.
 */
int	qcow2_create_backing_size(int fd, bool backing_qcow2, uint64_t *size,
	    char *reason, size_t reasonlen);

#endif
