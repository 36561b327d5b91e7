/*
 * A guest's disk as the reader of its boot configuration sees it: bytes
 * read at offsets through whatever format the image has (the worker
 * reads through its qcow2 or raw chain, a test through a file), and the
 * partitions and file systems on it, found by libblkid.
 *
 * Everything here reads untrusted bytes: a partition that reaches past
 * the disk is cut to it, one that starts past it is left out, and
 * nothing is trusted beyond what was checked.
 *
 * Threads: any one thread; nothing is shared between calls.
 */
#ifndef VMMD_IMAGE_LAYOUT_H
#define VMMD_IMAGE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* The most partitions looked at on one disk (GPT holds up to 128). */
#define IMAGE_MAX_PARTS		32

struct image_disk {
	/* len bytes at off, within size: 0 or -errno. */
	int (*read)(void *ctx, void *buf, size_t len, uint64_t off);
	void *ctx;
	uint64_t size;		/* bytes */
	const char *name;	/* for messages: the disk as the user named it */
};

struct image_part {
	unsigned int number;	/* as the table numbers it; 0: the whole disk */
	uint64_t start, size;	/* bytes, within the disk */
	char fstype[16];	/* libblkid's TYPE ("ext4", "vfat"); "" unknown */
	char uuid[40];		/* the file system's UUID, as blkid prints it */
	char label[64];
	char partuuid[40];	/* GPT partition GUID or MBR "xxxxxxxx-NN" */
};

/*
 * The partitions of d (or the whole disk as partition 0 when it holds a
 * file system and no table), each with what file system blkid found on
 * it, into parts (at most IMAGE_MAX_PARTS); *n their number, which may
 * be 0.  0, or -errno with a reason in err.
 */
int	image_layout_read(const struct image_disk *d, struct image_part *parts,
	    unsigned int *n, char *err, size_t errlen);

/* The bytes [off, off + len) of partition p: 0 or -errno (-EIO past it). */
int	image_part_read(const struct image_disk *d, const struct image_part *p,
	    void *buf, size_t len, uint64_t off);

#endif
