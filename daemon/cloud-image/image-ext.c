/*
 * ext2/3/4 for image-fs.h through libext2fs, read-only, on a partition
 * of a guest's disk.  libext2fs reads through an I/O manager; ours reads
 * the partition through image_part_read(), so any image format the
 * caller can read works.  libext2fs passes an I/O manager only a name:
 * ours is "vmmd-image:" and the address of the partition's reader,
 * which lives (on the caller's stack or heap) until the channel closes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ext2fs/ext2fs.h>

#include "ext-super.h"
#include "image-fs.h"

#define EXT_IO_PREFIX	"vmmd-image:"

struct ext_io {
	const struct image_disk *disk;
	const struct image_part *part;
};

struct ext_fs {
	struct image_fs base;
	ext2_filsys fs;
	struct ext_io io;
};

static errcode_t ext_io_open(const char *name, int flags, io_channel *out);

static errcode_t
ext_io_close(io_channel ch)
{
	if (--ch->refcount > 0)
		return 0;
	free(ch->name);
	free(ch);
	return 0;
}

static errcode_t
ext_io_set_blksize(io_channel ch, int blksize)
{
	if (blksize <= 0)
		return EXT2_ET_INVALID_ARGUMENT;
	ch->block_size = blksize;
	return 0;
}

static errcode_t
ext_io_read64(io_channel ch, unsigned long long block, int count, void *data)
{
	const struct ext_io *io = ch->private_data;
	uint64_t len, off;

	/* A negative count is a length in bytes (libext2fs's rule). */
	len = count < 0 ? (uint64_t)-(int64_t)count :
	    (uint64_t)count * (uint64_t)ch->block_size;
	if (block > UINT64_MAX / (uint64_t)ch->block_size || len > SIZE_MAX)
		return EXT2_ET_SHORT_READ;
	off = block * (uint64_t)ch->block_size;
	if (image_part_read(io->disk, io->part, data, (size_t)len, off) < 0)
		return EXT2_ET_SHORT_READ;
	return 0;
}

static errcode_t
ext_io_read(io_channel ch, unsigned long block, int count, void *data)
{
	return ext_io_read64(ch, block, count, data);
}

static errcode_t
ext_io_write(io_channel ch, unsigned long block, int count, const void *data)
{
	return EXT2_ET_RO_FILSYS;
}

static errcode_t
ext_io_write64(io_channel ch, unsigned long long block, int count,
    const void *data)
{
	return EXT2_ET_RO_FILSYS;
}

static errcode_t
ext_io_flush(io_channel ch)
{
	return 0;
}

static errcode_t
ext_io_set_option(io_channel ch, const char *option, const char *arg)
{
	return EXT2_ET_INVALID_ARGUMENT;
}

static struct struct_io_manager ext_io_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "vmmd image",
	.open = ext_io_open,
	.close = ext_io_close,
	.set_blksize = ext_io_set_blksize,
	.read_blk = ext_io_read,
	.write_blk = ext_io_write,
	.flush = ext_io_flush,
	.set_option = ext_io_set_option,
	.read_blk64 = ext_io_read64,
	.write_blk64 = ext_io_write64,
};

static errcode_t
ext_io_open(const char *name, int flags, io_channel *out)
{
	io_channel ch;
	void *p = NULL;

	if (name == NULL || strncmp(name, EXT_IO_PREFIX,
	    sizeof(EXT_IO_PREFIX) - 1) != 0 ||
	    sscanf(name + sizeof(EXT_IO_PREFIX) - 1, "%p", &p) != 1 ||
	    p == NULL)
		return EXT2_ET_BAD_DEVICE_NAME;
	if (flags & IO_FLAG_RW)
		return EXT2_ET_RO_FILSYS;
	if ((ch = calloc(1, sizeof(*ch))) == NULL)
		return EXT2_ET_NO_MEMORY;
	if ((ch->name = strdup(name)) == NULL) {
		free(ch);
		return EXT2_ET_NO_MEMORY;
	}
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = &ext_io_manager;
	ch->block_size = 1024;
	ch->refcount = 1;
	ch->private_data = p;
	*out = ch;
	return 0;
}

static struct ext_fs *
ext_of(struct image_fs *fs)
{
	return (struct ext_fs *)fs;
}

static uint64_t
ext_root(struct image_fs *fs)
{
	return EXT2_ROOT_INO;
}

static int
ext_inode(struct ext_fs *e, uint64_t node, struct ext2_inode *inode)
{
	if (node == 0 || node > e->fs->super->s_inodes_count)
		return -EINVAL;
	if (ext2fs_read_inode(e->fs, (ext2_ino_t)node, inode) != 0)
		return -EIO;
	return 0;
}

static int
ext_lookup(struct image_fs *fs, uint64_t dir, const char *name,
    uint64_t *node, enum image_fs_type *type)
{
	struct ext_fs *e = ext_of(fs);
	struct ext2_inode inode;
	ext2_ino_t ino;
	int rc;

	if (ext2fs_lookup(e->fs, (ext2_ino_t)dir, name, (int)strlen(name),
	    NULL, &ino) != 0)
		return -ENOENT;
	if ((rc = ext_inode(e, ino, &inode)) < 0)
		return rc;
	*node = ino;
	*type = LINUX_S_ISDIR(inode.i_mode) ? IMAGE_FS_DIR :
	    LINUX_S_ISLNK(inode.i_mode) ? IMAGE_FS_LINK :
	    LINUX_S_ISREG(inode.i_mode) ? IMAGE_FS_FILE : IMAGE_FS_OTHER;
	return 0;
}

static int
ext_size(struct image_fs *fs, uint64_t node, uint64_t *size)
{
	struct ext2_inode inode;
	int rc;

	if ((rc = ext_inode(ext_of(fs), node, &inode)) < 0)
		return rc;
	*size = EXT2_I_SIZE(&inode);
	return 0;
}

static int
ext_read(struct image_fs *fs, uint64_t node, void *buf, size_t len,
    uint64_t off)
{
	struct ext_fs *e = ext_of(fs);
	ext2_file_t f;
	unsigned int got;
	size_t done = 0;
	int rc = 0;

	if (ext2fs_file_open(e->fs, (ext2_ino_t)node, 0, &f) != 0)
		return -EIO;
	if (ext2fs_file_llseek(f, off, EXT2_SEEK_SET, NULL) != 0)
		rc = -EIO;
	while (rc == 0 && done < len) {
		unsigned int want = len - done > (1u << 30) ? 1u << 30 :
		    (unsigned int)(len - done);

		if (ext2fs_file_read(f, (char *)buf + done, want, &got) != 0)
			rc = -EIO;
		else if (got == 0)
			rc = -EIO;	/* shorter than its size said */
		else
			done += got;
	}
	ext2fs_file_close(f);
	return rc;
}

static int
ext_readlink(struct image_fs *fs, uint64_t node, char *buf, size_t len)
{
	struct ext_fs *e = ext_of(fs);
	struct ext2_inode inode;
	uint64_t size;
	int rc;

	if ((rc = ext_inode(e, node, &inode)) < 0)
		return rc;
	size = EXT2_I_SIZE(&inode);
	if (size == 0 || size >= len)
		return -ENAMETOOLONG;
	if (ext2fs_is_fast_symlink(&inode)) {
		if (size >= sizeof(inode.i_block))
			return -EINVAL;
		memcpy(buf, inode.i_block, (size_t)size);
	} else if ((rc = ext_read(fs, node, buf, (size_t)size, 0)) < 0) {
		return rc;
	}
	buf[size] = '\0';
	if (strlen(buf) != size)
		return -EINVAL;		/* a NUL inside a link's target */
	return 0;
}

struct ext_list {
	int (*cb)(void *arg, const char *name);
	void *arg;
	int rc;
};

static int
ext_list_entry(struct ext2_dir_entry *d, int offset, int blocksize,
    char *buf, void *priv)
{
	struct ext_list *l = priv;
	char name[256];
	int len = ext2fs_dirent_name_len(d);

	if (len <= 0 || len > 255)
		return 0;
	memcpy(name, d->name, (size_t)len);
	name[len] = '\0';
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    memchr(name, '\0', (size_t)len) != NULL)
		return 0;
	if ((l->rc = l->cb(l->arg, name)) != 0)
		return DIRENT_ABORT;
	return 0;
}

static int
ext_list(struct image_fs *fs, uint64_t dir,
    int (*cb)(void *arg, const char *name), void *arg)
{
	struct ext_list l = { .cb = cb, .arg = arg };

	if (ext2fs_dir_iterate(ext_of(fs)->fs, (ext2_ino_t)dir, 0, NULL,
	    ext_list_entry, &l) != 0 && l.rc == 0)
		return -EIO;
	return l.rc;
}

static void
ext_close(struct image_fs *fs)
{
	struct ext_fs *e = ext_of(fs);

	ext2fs_close_free(&e->fs);
	free(e);
}

static const struct image_fs_ops ext_ops = {
	.root = ext_root,
	.lookup = ext_lookup,
	.readlink = ext_readlink,
	.size = ext_size,
	.read = ext_read,
	.list = ext_list,
	.close = ext_close,
};

/*
 * The superblock is checked here, against the partition, before
 * libext2fs reads it (ext-super.h); then libext2fs reads only it and
 * the group descriptors at open, and inodes, directories and files as
 * they are asked for: never the bitmaps (ext2fs_read_bitmaps), whose
 * size is per group too.
 */
int
image_ext_open(const struct image_disk *d, const struct image_part *p,
    struct image_fs **out, char *why, size_t whylen)
{
	uint8_t sb[EXT_SUPER_SIZE];
	char name[64];
	struct ext_fs *e;
	errcode_t ec;
	int rc;

	if ((rc = image_part_read(d, p, sb, sizeof(sb),
	    EXT_SUPER_OFFSET)) < 0) {
		snprintf(why, whylen, "its superblock cannot be read");
		return rc == -EIO ? -EINVAL : rc;
	}
	if (ext_super_check(sb, p->size, why, whylen) < 0)
		return -EINVAL;
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return -ENOMEM;
	e->base = (struct image_fs){ .ops = &ext_ops, .disk = d, .part = p };
	e->io = (struct ext_io){ .disk = d, .part = p };
	snprintf(name, sizeof(name), EXT_IO_PREFIX "%p", (void *)&e->io);
	/* Read-only, and no journal replayed: the image is never written. */
	ec = ext2fs_open2(name, NULL, EXT2_FLAG_64BITS |
	    EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0, &ext_io_manager, &e->fs);
	if (ec != 0) {
		snprintf(why, whylen, "libext2fs: %s", ec == EXT2_ET_NO_MEMORY ?
		    "out of memory" : ec == EXT2_ET_SHORT_READ ?
		    "a read past the partition" : "a damaged superblock or "
		    "group descriptors");
		free(e);
		return ec == EXT2_ET_NO_MEMORY ? -ENOMEM : -EINVAL;
	}
	*out = &e->base;
	return 0;
}
