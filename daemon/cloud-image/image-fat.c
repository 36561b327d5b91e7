/*
 * FAT12/16/32 for image-fs.h, read-only: what an EFI system partition
 * holds (systemd-boot's loader entries and the kernels they name).
 * Written by hand: no library in Debian reads FAT from anything but a
 * file or a device (mtools and dosfstools are programs), and the part
 * needed, directories with long names and cluster chains, is small.
 *
 * Every number read from the image is checked before use: cluster
 * numbers against the cluster count, chains against looping (a file's
 * chain is never longer than the clusters there are; a directory's
 * never comes back to a cluster it holds nor runs past FAT_DIR_MAX),
 * sizes against the chains that hold them.  Chains are followed from
 * where the reader is, never again from their start.
 *
 * A node is an index into a table of the files looked up so far (0:
 * the root directory): FAT has no inode numbers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image-fs.h"

#define FAT_DIRENT		32
#define FAT_ATTR_DIR		0x10
#define FAT_ATTR_VOLUME		0x08
#define FAT_ATTR_LFN		0x0f
/* Files looked up in one file system, at most. */
#define FAT_MAX_NODES		4096
/*
 * A directory's bytes, at most: the FAT specification's 65536 entries
 * (its entries are numbered in 16 bits).  A longer one is refused.
 */
#define FAT_DIR_MAX		(65536u * FAT_DIRENT)
/* Walks one in another whose maps are kept: a listing's and a lookup's. */
#define FAT_WALK_MAPS		2

struct fat_node {
	uint32_t cluster;	/* first cluster; 0: none (or the root) */
	uint32_t size;		/* bytes, files only */
	bool dir;
};

struct fat_fs {
	struct image_fs base;
	unsigned int bits;		/* 12, 16 or 32 */
	uint32_t sector;		/* bytes per sector */
	uint32_t cluster_bytes;
	uint64_t fat_off;		/* the first FAT, in bytes */
	uint64_t root_off, root_len;	/* FAT12/16's fixed root */
	uint32_t root_cluster;		/* FAT32's root */
	uint64_t data_off;		/* cluster 2 */
	uint32_t clusters;		/* data clusters: 2 .. clusters + 1 */
	struct fat_node *nodes;
	unsigned int nnodes;
	/*
	 * A bit per data cluster, set for those a directory being walked
	 * holds, all clear between walks: one map per walk in progress (a
	 * listing's callback looks files up, walking again inside the
	 * walk), the first FAT_WALK_MAPS kept, made when first needed.
	 * Each at most 32 MiB (2^28 clusters) and never more than a 4096th
	 * of the partition, whose sectors hold the clusters.
	 */
	uint8_t *held_map[FAT_WALK_MAPS];
	unsigned int walking;		/* walks in progress */
};

static struct fat_fs *
fat_of(struct image_fs *fs)
{
	return (struct fat_fs *)fs;
}

static uint16_t
fat_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
fat_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* rc, with why the file system is damaged for the caller's message. */
static int fat_damage(struct fat_fs *f, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fat_damage(struct fat_fs *f, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->base.why, sizeof(f->base.why), fmt, ap);
	va_end(ap);
	return rc;
}

static int
fat_read(struct fat_fs *f, void *buf, size_t len, uint64_t off)
{
	return image_part_read(f->base.disk, f->base.part, buf, len, off);
}

/* The FAT's entry for cluster c: the next cluster, or 0 at the end. */
static int
fat_next(struct fat_fs *f, uint32_t c, uint32_t *next)
{
	uint8_t b[4];
	uint32_t v;
	int rc;

	if (c < 2 || c - 2 >= f->clusters)
		return -EINVAL;
	switch (f->bits) {
	case 12:
		if ((rc = fat_read(f, b, 2, f->fat_off + c + c / 2)) < 0)
			return rc;
		v = fat_le16(b);
		v = (c & 1) ? v >> 4 : v & 0xfff;
		*next = v >= 0xff8 ? 0 : v;
		break;
	case 16:
		if ((rc = fat_read(f, b, 2, f->fat_off + (uint64_t)c * 2)) < 0)
			return rc;
		v = fat_le16(b);
		*next = v >= 0xfff8 ? 0 : v;
		break;
	default:
		if ((rc = fat_read(f, b, 4, f->fat_off + (uint64_t)c * 4)) < 0)
			return rc;
		v = fat_le32(b) & 0x0fffffff;
		*next = v >= 0x0ffffff8 ? 0 : v;
		break;
	}
	/* Free, bad or out of range in the middle of a chain: damage. */
	if (*next != 0 && (*next < 2 || *next - 2 >= f->clusters))
		return -EINVAL;
	return 0;
}

/*
 * len bytes at off of the chain starting at first (or of the fixed
 * root when first is 0 and the file system has one).
 */
static int
fat_read_chain(struct fat_fs *f, uint32_t first, void *buf, size_t len,
    uint64_t off)
{
	uint8_t *out = buf;
	uint32_t c = first, steps = 0;
	int rc;

	if (first == 0) {
		if (f->bits == 32 || off > f->root_len ||
		    len > f->root_len - off)
			return -EIO;
		return fat_read(f, buf, len, f->root_off + off);
	}
	while (off >= f->cluster_bytes) {
		if ((rc = fat_next(f, c, &c)) < 0)
			return rc;
		if (c == 0 || ++steps > f->clusters)
			return -EIO;
		off -= f->cluster_bytes;
	}
	while (len > 0) {
		size_t n = f->cluster_bytes - off < len ?
		    (size_t)(f->cluster_bytes - off) : len;

		if (c < 2 || c - 2 >= f->clusters)
			return -EIO;
		if ((rc = fat_read(f, out, n, f->data_off + (uint64_t)(c - 2) *
		    f->cluster_bytes + off)) < 0)
			return rc;
		out += n;
		len -= n;
		off = 0;
		if (len > 0) {
			if ((rc = fat_next(f, c, &c)) < 0)
				return rc;
			if (c == 0 || ++steps > f->clusters)
				return -EIO;
		}
	}
	return 0;
}

static uint64_t
fat_root(struct image_fs *fs)
{
	return 0;
}

/*
 * A directory's walk: its entries come a cluster at a time (the fixed
 * root all at once), each cluster read once, the chain followed from
 * where it is, never again from its start.  Long-name pieces are kept
 * across clusters.
 */
struct fat_walker {
	int (*each)(void *arg, const char *name, const uint8_t *e);
	void *arg;
	char lname[256];
	bool have_long;
	uint8_t sum;
	int stop;		/* each's nonzero return; 0 at the end */
};

/* One directory entry: 0 to go on, 1 at the end of the walk. */
static int
fat_entry(struct fat_walker *w, const uint8_t *e)
{
	char sname[13];
	uint8_t s = 0;
	unsigned int i, k = 0;
	int rc;

	if (e[0] == 0x00)
		return 1;
	if (e[0] == 0xe5) {
		w->have_long = false;
		return 0;
	}
	if ((e[11] & 0x3f) == FAT_ATTR_LFN) {
		/* Pieces come last first: 13 UCS-2 characters each. */
		static const uint8_t at[13] = { 1, 3, 5, 7, 9, 14, 16, 18, 20,
			22, 24, 28, 30 };
		unsigned int seq = e[0] & 0x1f, base;

		if (seq == 0 || seq > 20) {
			w->have_long = false;
			return 0;
		}
		if (e[0] & 0x40) {
			memset(w->lname, 0, sizeof(w->lname));
			w->have_long = true;
			w->sum = e[13];
		} else if (!w->have_long || e[13] != w->sum) {
			w->have_long = false;
			return 0;
		}
		base = (seq - 1) * 13;
		for (i = 0; i < 13 && base + i < sizeof(w->lname) - 1; i++) {
			uint16_t ch = fat_le16(&e[at[i]]);

			if (ch == 0 || ch == 0xffff)
				break;
			w->lname[base + i] = ch < 0x80 ? (char)ch : '?';
		}
		return 0;
	}
	if (e[11] & FAT_ATTR_VOLUME) {
		w->have_long = false;
		return 0;
	}
	for (i = 0; i < 11; i++)
		s = (uint8_t)(((s & 1) ? 0x80 : 0) + (s >> 1) + e[i]);
	for (i = 0; i < 8 && e[i] != ' '; i++)
		sname[k++] = (char)((e[12] & 0x08) && e[i] >= 'A' &&
		    e[i] <= 'Z' ? e[i] + 32 : e[i]);
	if (e[8] != ' ') {
		sname[k++] = '.';
		for (i = 8; i < 11 && e[i] != ' '; i++)
			sname[k++] = (char)((e[12] & 0x10) && e[i] >= 'A' &&
			    e[i] <= 'Z' ? e[i] + 32 : e[i]);
	}
	sname[k] = '\0';
	if (sname[0] == 0x05)
		sname[0] = (char)0xe5;
	rc = strcmp(sname, ".") == 0 || strcmp(sname, "..") == 0 ? 0 :
	    w->each(w->arg, w->have_long && s == w->sum &&
	    w->lname[0] != '\0' ? w->lname : sname, e);
	w->have_long = false;
	w->stop = rc;
	return rc != 0;
}

/* Each entry of a block of len bytes, as fat_entry(). */
static int
fat_entries(struct fat_walker *w, const uint8_t *buf, size_t len)
{
	int rc;

	for (size_t off = 0; off + FAT_DIRENT <= len; off += FAT_DIRENT)
		if ((rc = fat_entry(w, buf + off)) != 0)
			return rc;
	return 0;
}

/*
 * Walk directory dir, calling each(name, entry) for every file in it;
 * each's nonzero return ends the walk and is returned.  Long names are
 * used where their checksum matches the short entry, else the short
 * name (lowercased as the entry's flags say).  A directory whose chain
 * comes back to a cluster it holds, or that runs past FAT_DIR_MAX
 * bytes without its end, is refused (-ELOOP, -EFBIG; why says which).
 */
static int
fat_walk(struct fat_fs *f, const struct fat_node *dir,
    int (*each)(void *arg, const char *name, const uint8_t *e), void *arg)
{
	struct fat_walker w = { .each = each, .arg = arg };
	uint32_t c = dir->cluster == 0 ? f->root_cluster : dir->cluster;
	uint32_t *held = NULL, nheld = 0, maxheld;
	unsigned int depth = f->walking;
	uint8_t *buf, *map;
	int rc = 0;

	if (dir->cluster == 0 && f->bits != 32) {
		/* The fixed root: root_len is at most 2 MiB (16 bits). */
		if ((buf = malloc(f->root_len)) == NULL)
			return -ENOMEM;
		if ((rc = fat_read(f, buf, f->root_len, f->root_off)) == 0)
			rc = fat_entries(&w, buf, f->root_len);
		free(buf);
		return rc == 1 ? w.stop : rc;
	}
	if (depth < FAT_WALK_MAPS) {
		if (f->held_map[depth] == NULL && (f->held_map[depth] =
		    calloc(f->clusters / 8 + 1, 1)) == NULL)
			return -ENOMEM;
		map = f->held_map[depth];
	} else if ((map = calloc(f->clusters / 8 + 1, 1)) == NULL) {
		return -ENOMEM;
	}
	maxheld = FAT_DIR_MAX / f->cluster_bytes + 1;
	if ((buf = malloc(f->cluster_bytes)) == NULL ||
	    (held = malloc(maxheld * sizeof(*held))) == NULL) {
		free(buf);
		if (depth >= FAT_WALK_MAPS)
			free(map);
		return -ENOMEM;
	}
	f->walking++;
	/* c is a data cluster: checked at lookup (or at open for the
	 * root) and by fat_next(). */
	while (c != 0) {
		if (map[(c - 2) / 8] & 1u << (c - 2) % 8) {
			rc = fat_damage(f, -ELOOP, "a directory's cluster "
			    "chain loops back to cluster %" PRIu32, c);
			break;
		}
		if (nheld == maxheld) {
			rc = fat_damage(f, -EFBIG, "a directory longer than "
			    "%u entries (%u KiB), the most FAT holds",
			    FAT_DIR_MAX / FAT_DIRENT, FAT_DIR_MAX / 1024);
			break;
		}
		held[nheld++] = c;
		map[(c - 2) / 8] |= (uint8_t)(1u << (c - 2) % 8);
		if ((rc = fat_read(f, buf, f->cluster_bytes, f->data_off +
		    (uint64_t)(c - 2) * f->cluster_bytes)) < 0 ||
		    (rc = fat_entries(&w, buf, f->cluster_bytes)) != 0)
			break;
		if ((rc = fat_next(f, c, &c)) < 0)
			break;
	}
	f->walking--;
	/* Left clear, as it was found, for the next walk. */
	for (uint32_t k = 0; k < nheld; k++)
		map[(held[k] - 2) / 8] = 0;
	if (depth >= FAT_WALK_MAPS)
		free(map);
	free(held);
	free(buf);
	return rc == 1 ? w.stop : rc;
}

struct fat_find {
	const char *name;
	uint8_t e[FAT_DIRENT];
	bool found;
};

static int
fat_find_each(void *arg, const char *name, const uint8_t *e)
{
	struct fat_find *ff = arg;

	if (strcasecmp(name, ff->name) != 0)
		return 0;
	memcpy(ff->e, e, FAT_DIRENT);
	ff->found = true;
	return 1;
}

static int
fat_node_of(struct fat_fs *f, uint64_t node, struct fat_node **out)
{
	if (node >= f->nnodes)
		return -EINVAL;
	*out = &f->nodes[node];
	return 0;
}

static int
fat_lookup(struct image_fs *fs, uint64_t dir, const char *name,
    uint64_t *node, enum image_fs_type *type)
{
	struct fat_fs *f = fat_of(fs);
	struct fat_find ff = { .name = name };
	struct fat_node *d, n;
	int rc;

	if ((rc = fat_node_of(f, dir, &d)) < 0)
		return rc;
	if (!d->dir)
		return -ENOTDIR;
	if ((rc = fat_walk(f, d, fat_find_each, &ff)) < 0)
		return rc;
	if (!ff.found)
		return -ENOENT;
	n = (struct fat_node){
		.cluster = (uint32_t)fat_le16(&ff.e[26]) |
		    (f->bits == 32 ? (uint32_t)fat_le16(&ff.e[20]) << 16 : 0),
		.size = fat_le32(&ff.e[28]),
		.dir = (ff.e[11] & FAT_ATTR_DIR) != 0,
	};
	/* A ".." naming the root says cluster 0, as does an empty file. */
	if (n.cluster != 0 && (n.cluster < 2 || n.cluster - 2 >= f->clusters))
		return -EINVAL;
	if (n.dir && n.cluster == 0)
		return -EINVAL;
	if (f->nnodes == FAT_MAX_NODES)
		return -ENOMEM;
	f->nodes[f->nnodes] = n;
	*node = f->nnodes++;
	*type = n.dir ? IMAGE_FS_DIR : IMAGE_FS_FILE;
	return 0;
}

static int
fat_readlink(struct image_fs *fs, uint64_t node, char *buf, size_t len)
{
	return -EINVAL;		/* FAT has no links */
}

static int
fat_size(struct image_fs *fs, uint64_t node, uint64_t *size)
{
	struct fat_node *n;
	int rc;

	if ((rc = fat_node_of(fat_of(fs), node, &n)) < 0)
		return rc;
	*size = n->size;
	return 0;
}

static int
fat_read_file(struct image_fs *fs, uint64_t node, void *buf, size_t len,
    uint64_t off)
{
	struct fat_fs *f = fat_of(fs);
	struct fat_node *n;
	int rc;

	if ((rc = fat_node_of(f, node, &n)) < 0)
		return rc;
	if (n->dir || off > n->size || len > n->size - off)
		return -EIO;
	if (len == 0)
		return 0;
	if (n->cluster == 0)
		return -EIO;
	return fat_read_chain(f, n->cluster, buf, len, off);
}

struct fat_list {
	int (*cb)(void *arg, const char *name);
	void *arg;
};

static int
fat_list_each(void *arg, const char *name, const uint8_t *e)
{
	struct fat_list *l = arg;

	return l->cb(l->arg, name);
}

static int
fat_list(struct image_fs *fs, uint64_t dir,
    int (*cb)(void *arg, const char *name), void *arg)
{
	struct fat_fs *f = fat_of(fs);
	struct fat_list l = { .cb = cb, .arg = arg };
	struct fat_node *d;
	int rc;

	if ((rc = fat_node_of(f, dir, &d)) < 0)
		return rc;
	if (!d->dir)
		return -ENOTDIR;
	return fat_walk(f, d, fat_list_each, &l);
}

static void
fat_close(struct image_fs *fs)
{
	struct fat_fs *f = fat_of(fs);

	for (unsigned int k = 0; k < FAT_WALK_MAPS; k++)
		free(f->held_map[k]);
	free(f->nodes);
	free(f);
}

static const struct image_fs_ops fat_ops = {
	.root = fat_root,
	.lookup = fat_lookup,
	.readlink = fat_readlink,
	.size = fat_size,
	.read = fat_read_file,
	.list = fat_list,
	.close = fat_close,
};

/* The boot sector's numbers, checked; the layout they give in f. */
static int
fat_geometry(struct fat_fs *f, const uint8_t *b, uint64_t part_size)
{
	uint32_t bps = fat_le16(&b[11]), spc = b[13];
	uint32_t reserved = fat_le16(&b[14]), nfats = b[16];
	uint32_t root_entries = fat_le16(&b[17]);
	uint64_t total = fat_le16(&b[19]) != 0 ? fat_le16(&b[19]) :
	    fat_le32(&b[32]);
	uint64_t fat_size = fat_le16(&b[22]) != 0 ? fat_le16(&b[22]) :
	    fat_le32(&b[36]);
	uint64_t root_sectors, first_data, clusters;

	if ((bps != 512 && bps != 1024 && bps != 2048 && bps != 4096) ||
	    spc == 0 || (spc & (spc - 1)) != 0 || reserved == 0 ||
	    nfats == 0 || fat_size == 0 || total == 0 ||
	    total * bps > part_size)
		return -EINVAL;
	root_sectors = ((uint64_t)root_entries * FAT_DIRENT + bps - 1) / bps;
	first_data = reserved + nfats * fat_size + root_sectors;
	if (first_data >= total)
		return -EINVAL;
	clusters = (total - first_data) / spc;
	if (clusters == 0 || clusters > 0x0ffffff0)
		return -EINVAL;
	f->bits = clusters < 4085 ? 12 : clusters < 65525 ? 16 : 32;
	/* The FAT must have an entry for every cluster. */
	if (fat_size * bps * 8 < (clusters + 2) * f->bits)
		return -EINVAL;
	f->sector = bps;
	f->cluster_bytes = bps * spc;
	f->clusters = (uint32_t)clusters;
	f->fat_off = (uint64_t)reserved * bps;
	f->root_off = (reserved + nfats * fat_size) * bps;
	f->root_len = root_sectors * bps;
	f->data_off = first_data * bps;
	if (f->bits == 32) {
		f->root_cluster = fat_le32(&b[44]);
		if (f->root_cluster < 2 || f->root_cluster - 2 >= f->clusters)
			return -EINVAL;
	} else if (root_entries == 0) {
		return -EINVAL;
	}
	return 0;
}

int
image_fat_open(const struct image_disk *d, const struct image_part *p,
    struct image_fs **out, char *why, size_t whylen)
{
	uint8_t boot[512];
	struct fat_fs *f;
	int rc;

	if ((rc = image_part_read(d, p, boot, sizeof(boot), 0)) < 0) {
		snprintf(why, whylen, "its boot sector cannot be read");
		return rc;
	}
	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -ENOMEM;
	f->base = (struct image_fs){ .ops = &fat_ops, .disk = d, .part = p };
	if ((rc = fat_geometry(f, boot, p->size)) < 0 ||
	    (f->nodes = calloc(FAT_MAX_NODES, sizeof(*f->nodes))) == NULL) {
		snprintf(why, whylen, "%s", rc < 0 ? "its boot sector's "
		    "geometry does not fit the partition" : "out of memory");
		free(f);
		return rc < 0 ? rc : -ENOMEM;
	}
	f->nodes[0] = (struct fat_node){ .dir = true };
	f->nnodes = 1;
	*out = &f->base;
	return 0;
}
