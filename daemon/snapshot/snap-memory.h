/*
 * Guest RAM to and from a snapshot's memory file, one region at a time.
 * The file is sparse: a page of zeroes is a hole, never written, so a
 * guest's untouched RAM costs no disk and no time to restore.
 */
#ifndef VMMD_SNAP_MEMORY_H
#define VMMD_SNAP_MEMORY_H

#include <stdint.h>

/*
 * Writes size bytes at host to fd at offset, skipping every page of
 * zeroes (SNAP_PAGE_SIZE): the file must already read as zeroes there (a
 * hole after ftruncate).  Reading an anonymous mapping's untouched page
 * allocates nothing (the kernel's zero page).  -errno.
 */
int	snap_memory_save(int fd, uint64_t offset, const void *host,
	    uint64_t size);
/*
 * Reads the file's data (SEEK_DATA/SEEK_HOLE) in [offset, offset + size)
 * into host, which must read as zeroes already (fresh anonymous memory):
 * holes are not copied.  Past the end of the file reads as holes: the
 * caller checks the size first (snap-read.c does).  -errno.
 */
int	snap_memory_load(int fd, uint64_t offset, void *host, uint64_t size);
/*
 * Replaces the pages at host (page-aligned, size bytes, the caller's
 * mapping) with a private, copy-on-write mapping of the file's range:
 * nothing is read until the guest touches it.  The file must not change
 * while the mapping lives (pages not yet copied read the file), and the
 * new mapping has default advice (MADV_DONTDUMP is the caller's to set
 * again).  -errno.
 */
int	snap_memory_map(int fd, uint64_t offset, void *host, uint64_t size);

#endif
