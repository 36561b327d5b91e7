/* See ext-super.h.  Field offsets are those of struct ext2_super_block. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "ext-super.h"

#define SB_INODES_COUNT		0x00
#define SB_BLOCKS_COUNT_LO	0x04
#define SB_FIRST_DATA_BLOCK	0x14
#define SB_LOG_BLOCK_SIZE	0x18
#define SB_LOG_CLUSTER_SIZE	0x1c
#define SB_BLOCKS_PER_GROUP	0x20
#define SB_CLUSTERS_PER_GROUP	0x24
#define SB_INODES_PER_GROUP	0x28
#define SB_MAGIC		0x38
#define SB_REV_LEVEL		0x4c
#define SB_INODE_SIZE		0x58
#define SB_FEATURE_INCOMPAT	0x60
#define SB_FEATURE_RO_COMPAT	0x64
#define SB_DESC_SIZE		0xfe
#define SB_FIRST_META_BG	0x104
#define SB_BLOCKS_COUNT_HI	0x150

#define SB_MAGIC_EXT2		0xef53
#define SB_INCOMPAT_META_BG	0x0010
#define SB_INCOMPAT_64BIT	0x0080
#define SB_RO_COMPAT_BIGALLOC	0x0200
/* Blocks of 1 KiB to 64 KiB; clusters up to 512 MiB (libext2fs's). */
#define SB_LOG_BLOCK_MAX	6
#define SB_LOG_CLUSTER_MAX	19

static uint16_t
sb16(const uint8_t *sb, unsigned int off)
{
	return (uint16_t)(sb[off] | sb[off + 1] << 8);
}

static uint32_t
sb32(const uint8_t *sb, unsigned int off)
{
	return (uint32_t)sb[off] | (uint32_t)sb[off + 1] << 8 |
	    (uint32_t)sb[off + 2] << 16 | (uint32_t)sb[off + 3] << 24;
}

static int sb_refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
sb_refuse(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int
ext_super_check(const uint8_t *sb, uint64_t part_size, char *why,
    size_t whylen)
{
	uint32_t incompat = sb32(sb, SB_FEATURE_INCOMPAT);
	uint32_t ro_compat = sb32(sb, SB_FEATURE_RO_COMPAT);
	bool is64 = (incompat & SB_INCOMPAT_64BIT) != 0;
	uint32_t log_block = sb32(sb, SB_LOG_BLOCK_SIZE);
	uint32_t log_cluster = sb32(sb, SB_LOG_CLUSTER_SIZE);
	uint32_t bpg = sb32(sb, SB_BLOCKS_PER_GROUP);
	uint32_t cpg = sb32(sb, SB_CLUSTERS_PER_GROUP);
	uint32_t ipg = sb32(sb, SB_INODES_PER_GROUP);
	uint32_t inodes = sb32(sb, SB_INODES_COUNT);
	uint32_t first = sb32(sb, SB_FIRST_DATA_BLOCK);
	uint64_t blocks = sb32(sb, SB_BLOCKS_COUNT_LO) |
	    (is64 ? (uint64_t)sb32(sb, SB_BLOCKS_COUNT_HI) << 32 : 0);
	uint64_t bs, part_blocks, groups, desc_size, desc_bytes;
	uint64_t inode_size = 128, itables;

	if (sb16(sb, SB_MAGIC) != SB_MAGIC_EXT2)
		return sb_refuse(why, whylen, "s_magic %#x: not ext2/3/4",
		    sb16(sb, SB_MAGIC));
	if (log_block > SB_LOG_BLOCK_MAX)
		return sb_refuse(why, whylen, "s_log_block_size %" PRIu32
		    ": blocks of 1 KiB to 64 KiB are read", log_block);
	bs = (uint64_t)1024 << log_block;
	if (ro_compat & SB_RO_COMPAT_BIGALLOC) {
		if (log_cluster < log_block || log_cluster >
		    SB_LOG_CLUSTER_MAX)
			return sb_refuse(why, whylen, "s_log_cluster_size %"
			    PRIu32 " with s_log_block_size %" PRIu32,
			    log_cluster, log_block);
	} else if (log_cluster != log_block) {
		return sb_refuse(why, whylen, "s_log_cluster_size %" PRIu32
		    " is not s_log_block_size %" PRIu32 " (no bigalloc)",
		    log_cluster, log_block);
	}
	/* A group's clusters and inodes each fit one bitmap block. */
	if (cpg < 8 || cpg > 8 * bs || (uint64_t)cpg << (log_cluster -
	    log_block) != bpg)
		return sb_refuse(why, whylen, "s_blocks_per_group %" PRIu32
		    " (s_clusters_per_group %" PRIu32 "): not a group of "
		    "8 to %" PRIu64 " clusters", bpg, cpg, 8 * bs);
	if (ipg == 0 || ipg > 8 * bs)
		return sb_refuse(why, whylen, "s_inodes_per_group %" PRIu32
		    ": not 1 to %" PRIu64, ipg, 8 * bs);
	if (sb32(sb, SB_REV_LEVEL) >= 1) {
		inode_size = sb16(sb, SB_INODE_SIZE);
		if (inode_size < 128 || inode_size > bs ||
		    (inode_size & (inode_size - 1)) != 0)
			return sb_refuse(why, whylen, "s_inode_size %" PRIu64
			    ": not a power of two from 128 to the block "
			    "size", inode_size);
	}
	desc_size = 32;
	if (is64) {
		desc_size = sb16(sb, SB_DESC_SIZE);
		if (desc_size < 64 || desc_size > 1024 ||
		    (desc_size & (desc_size - 1)) != 0)
			return sb_refuse(why, whylen, "s_desc_size %" PRIu64
			    ": not a power of two from 64 to 1024",
			    desc_size);
	}
	part_blocks = part_size / bs;
	if (blocks == 0 || blocks > part_blocks)
		return sb_refuse(why, whylen, "s_blocks_count %" PRIu64 " of "
		    "%" PRIu64 " bytes: the partition holds %" PRIu64 " bytes",
		    blocks, bs, part_size);
	if (first > (log_block == 0 ? 1u : 0u) || first >= blocks)
		return sb_refuse(why, whylen, "s_first_data_block %" PRIu32,
		    first);
	groups = (blocks - first + bpg - 1) / bpg;
	/* Each group needs at least a block (implied: bpg >= 8). */
	if (groups > part_blocks)
		return sb_refuse(why, whylen, "s_blocks_per_group %" PRIu32
		    ": %" PRIu64 " block groups in a partition of %" PRIu64
		    " blocks", bpg, groups, part_blocks);
	/* groups <= part_size / 1024, desc_size <= 1024: no overflow. */
	desc_bytes = groups * desc_size;
	if (desc_bytes > EXT_SUPER_DESC_MAX || desc_bytes > part_size)
		return sb_refuse(why, whylen, "s_blocks_per_group %" PRIu32
		    ": %" PRIu64 " block groups need a descriptor table of %"
		    PRIu64 " KiB, more than the %u KiB read", bpg, groups,
		    desc_bytes >> 10, EXT_SUPER_DESC_MAX >> 10);
	if ((uint64_t)inodes != groups * ipg)
		return sb_refuse(why, whylen, "s_inodes_count %" PRIu32 " is "
		    "not %" PRIu64 " groups of s_inodes_per_group %" PRIu32,
		    inodes, groups, ipg);
	/* groups below 2^20 now, ipg below 2^20, inode_size 2^16. */
	itables = groups * ipg * inode_size;
	if (itables > part_size)
		return sb_refuse(why, whylen, "s_inodes_per_group %" PRIu32
		    ": inode tables of %" PRIu64 " KiB in a partition of %"
		    PRIu64 " KiB", ipg, itables >> 10, part_size >> 10);
	if ((incompat & SB_INCOMPAT_META_BG) && sb32(sb, SB_FIRST_META_BG) >
	    (desc_bytes + bs - 1) / bs)
		return sb_refuse(why, whylen, "s_first_meta_bg %" PRIu32
		    ": past the %" PRIu64 " descriptor blocks",
		    sb32(sb, SB_FIRST_META_BG), (desc_bytes + bs - 1) / bs);
	return 0;
}
