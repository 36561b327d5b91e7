/*
 * Files in a file system of a guest's disk, read-only: ext2/3/4 through
 * libext2fs (image-ext.c) and FAT, the EFI system partition's, by hand
 * (image-fat.c).  Paths are absolute within the file system; symbolic
 * links are followed as the guest would follow them with that file
 * system as its root (at most IMAGE_FS_MAX_LINKS of them per path).
 *
 * A node is a file system's own number for a file (an inode, or a FAT
 * directory entry's place); it means nothing across file systems.
 *
 * Ownership: an image_fs borrows its disk and partition, which must
 * outlive it.  Threads: one at a time.
 */
#ifndef VMMD_IMAGE_FS_H
#define VMMD_IMAGE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image-layout.h"

#define IMAGE_FS_MAX_LINKS	16
#define IMAGE_FS_PATH_MAX	1024

enum image_fs_type {
	IMAGE_FS_FILE,
	IMAGE_FS_DIR,
	IMAGE_FS_LINK,
	IMAGE_FS_OTHER,
};

struct image_fs;

/* What each kind of file system does; every call 0 or -errno. */
struct image_fs_ops {
	uint64_t (*root)(struct image_fs *fs);
	/* name (not "." or "..") in directory dir: its node and type. */
	int (*lookup)(struct image_fs *fs, uint64_t dir, const char *name,
	    uint64_t *node, enum image_fs_type *type);
	/* A link's target, NUL-terminated, into buf. */
	int (*readlink)(struct image_fs *fs, uint64_t node, char *buf,
	    size_t len);
	int (*size)(struct image_fs *fs, uint64_t node, uint64_t *size);
	/* len bytes at off, all of them within the file. */
	int (*read)(struct image_fs *fs, uint64_t node, void *buf, size_t len,
	    uint64_t off);
	/* Each entry of directory dir but "." and "..": cb's nonzero
	 * return ends the walk and is returned. */
	int (*list)(struct image_fs *fs, uint64_t dir,
	    int (*cb)(void *arg, const char *name), void *arg);
	void (*close)(struct image_fs *fs);
};

/* Embedded first in each kind's own state. */
struct image_fs {
	const struct image_fs_ops *ops;
	const struct image_disk *disk;
	const struct image_part *part;
	/* What damage a call last refused, for messages ("": none). */
	char why[160];
};

/*
 * Open the file system on p if it is one of the kinds above (by its
 * blkid TYPE): 0, -ENOTSUP for any other kind, or -errno (a damaged
 * one: -EINVAL) with what is wrong in why (the field at fault; text
 * from the image escaped as image-str.h does).
 */
int	image_fs_open(const struct image_disk *d, const struct image_part *p,
	    struct image_fs **out, char *why, size_t whylen);
void	image_fs_close(struct image_fs *fs);

/*
 * path resolved: its node and type (links followed, the last one too
 * unless nofollow), and in real (if not NULL) the path it resolved to,
 * links replaced by their targets.  -ENOENT, -ELOOP, -ENOTDIR.
 */
int	image_fs_resolve(struct image_fs *fs, const char *path, bool nofollow,
	    uint64_t *node, enum image_fs_type *type, char *real,
	    size_t reallen);
/*
 * The whole of the regular file at path (links followed) into a new
 * buffer (free() it), refused with -EFBIG past max bytes.
 */
int	image_fs_read_file(struct image_fs *fs, const char *path, size_t max,
	    void **buf, size_t *len);
/* Each entry of the directory at path, as ops->list. */
int	image_fs_list(struct image_fs *fs, const char *path,
	    int (*cb)(void *arg, const char *name), void *arg);

/* The kinds' openers, for image_fs_open(). */
int	image_ext_open(const struct image_disk *d, const struct image_part *p,
	    struct image_fs **out, char *why, size_t whylen);
int	image_fat_open(const struct image_disk *d, const struct image_part *p,
	    struct image_fs **out, char *why, size_t whylen);

#endif
