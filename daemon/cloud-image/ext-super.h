/*
 * An ext2/3/4 superblock checked against the partition that holds it,
 * before libext2fs sees it.  libext2fs trusts the superblock's geometry:
 * it allocates the group descriptor table (one descriptor per block
 * group) whole at open, and walks groups and inode tables by the
 * superblock's numbers.  A handful of changed fields can ask it for
 * gigabytes (millions of tiny groups on a large sparse disk).  What
 * passes here is a geometry a real file system of that partition could
 * have, and one whose descriptor table fits EXT_SUPER_DESC_MAX.
 *
 * Untrusted input; no allocation, no I/O.
 */
#ifndef VMMD_EXT_SUPER_H
#define VMMD_EXT_SUPER_H

#include <stddef.h>
#include <stdint.h>

/* Where the superblock is in its partition, and its size. */
#define EXT_SUPER_OFFSET	1024
#define EXT_SUPER_SIZE		1024
/*
 * The largest group descriptor table read: 512 Ki groups of 64 bytes,
 * a 64 TiB file system of 4 KiB blocks made as mkfs makes them.
 */
#define EXT_SUPER_DESC_MAX	(32u * 1024 * 1024)

/*
 * Whether sb (the EXT_SUPER_SIZE bytes at EXT_SUPER_OFFSET of a
 * partition of part_size bytes) describes a file system that fits it:
 * 0, or -EINVAL with the superblock field at fault and why in why
 * ("s_blocks_per_group 8: 16777216 block groups need ...").
 */
int	ext_super_check(const uint8_t *sb, uint64_t part_size, char *why,
	    size_t whylen);

#endif
