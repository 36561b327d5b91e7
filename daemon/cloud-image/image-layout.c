/*
 * See image-layout.h.  libblkid reads a device or a file through a
 * descriptor; a guest's disk may be qcow2, which it cannot read.  So it
 * is given a sketch: a sparse memfd of the disk's size into which the
 * regions blkid looks at are copied through d->read (the first and the
 * last MiB of the disk for the partition tables, the first MiB of each
 * partition for its file system's superblock); the rest reads as zeroes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <blkid/blkid.h>

#include "image-layout.h"

/* What blkid reads of a table or a superblock lies within this. */
#define LAYOUT_PROBE_BYTES	(1024 * 1024)
#define LAYOUT_SECTOR		512

/* Copy [off, off + len) of the disk into the sketch, at the same place. */
static int
layout_copy(const struct image_disk *d, int fd, uint64_t off, uint64_t len)
{
	static const size_t chunk = 64 * 1024;
	uint8_t *buf;
	int rc = 0;

	if (off >= d->size)
		return 0;
	if (len > d->size - off)
		len = d->size - off;
	if ((buf = malloc(chunk)) == NULL)
		return -ENOMEM;
	while (rc == 0 && len > 0) {
		size_t n = len < chunk ? (size_t)len : chunk;

		rc = d->read(d->ctx, buf, n, off);
		if (rc == 0 && pwrite(fd, buf, n, (off_t)off) != (ssize_t)n)
			rc = -EIO;
		off += n;
		len -= n;
	}
	free(buf);
	return rc;
}

static void
layout_value(blkid_probe pr, const char *name, char *out, size_t outlen)
{
	const char *v = NULL;

	out[0] = '\0';
	if (blkid_probe_lookup_value(pr, name, &v, NULL) == 0 && v != NULL)
		snprintf(out, outlen, "%s", v);
}

/* What file system blkid finds on p (its first MiB in the sketch). */
static void
layout_probe_fs(const struct image_disk *d, int fd, struct image_part *p)
{
	blkid_probe pr;

	if (layout_copy(d, fd, p->start, LAYOUT_PROBE_BYTES) < 0 ||
	    (pr = blkid_new_probe()) == NULL)
		return;
	if (blkid_probe_set_device(pr, fd, (blkid_loff_t)p->start,
	    (blkid_loff_t)p->size) == 0) {
		blkid_probe_enable_partitions(pr, 0);
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE |
		    BLKID_SUBLKS_UUID | BLKID_SUBLKS_LABEL);
		if (blkid_do_safeprobe(pr) == 0) {
			layout_value(pr, "TYPE", p->fstype, sizeof(p->fstype));
			layout_value(pr, "UUID", p->uuid, sizeof(p->uuid));
			layout_value(pr, "LABEL", p->label, sizeof(p->label));
		}
	}
	blkid_free_probe(pr);
}

/* The partition table blkid finds in the sketch, into parts. */
static int
layout_table(const struct image_disk *d, int fd, struct image_part *parts,
    unsigned int *n)
{
	blkid_probe pr;
	blkid_partlist ls;
	int count, i;

	*n = 0;
	if ((pr = blkid_new_probe()) == NULL)
		return -ENOMEM;
	if (blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)d->size) < 0) {
		blkid_free_probe(pr);
		return -EIO;
	}
	blkid_probe_enable_superblocks(pr, 0);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_ENTRY_DETAILS);
	if (blkid_do_safeprobe(pr) != 0 ||
	    (ls = blkid_probe_get_partitions(pr)) == NULL) {
		blkid_free_probe(pr);
		return 0;
	}
	count = blkid_partlist_numof_partitions(ls);
	for (i = 0; i < count && *n < IMAGE_MAX_PARTS; i++) {
		blkid_partition par = blkid_partlist_get_partition(ls, i);
		struct image_part *p = &parts[*n];
		blkid_loff_t start, size;
		const char *uuid;

		if (par == NULL)
			continue;
		start = blkid_partition_get_start(par);
		size = blkid_partition_get_size(par);
		/* Extended partitions hold others, not a file system. */
		if (start < 0 || size <= 0 || blkid_partition_is_extended(par))
			continue;
		if ((uint64_t)start >= d->size / LAYOUT_SECTOR)
			continue;
		memset(p, 0, sizeof(*p));
		p->number = (unsigned int)blkid_partition_get_partno(par);
		p->start = (uint64_t)start * LAYOUT_SECTOR;
		p->size = (uint64_t)size * LAYOUT_SECTOR;
		if (p->size > d->size - p->start)
			p->size = d->size - p->start;
		if ((uuid = blkid_partition_get_uuid(par)) != NULL)
			snprintf(p->partuuid, sizeof(p->partuuid), "%s", uuid);
		(*n)++;
	}
	blkid_free_probe(pr);
	return 0;
}

int
image_layout_read(const struct image_disk *d, struct image_part *parts,
    unsigned int *n, char *err, size_t errlen)
{
	int fd, rc;

	*n = 0;
	if (d->size < LAYOUT_SECTOR) {
		snprintf(err, errlen, "%s: smaller than one sector", d->name);
		return -EINVAL;
	}
	fd = memfd_create("vmmd-disk-sketch", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)d->size) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: a sketch of the disk: %s", d->name,
		    strerror(-rc));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	rc = layout_copy(d, fd, 0, LAYOUT_PROBE_BYTES);
	if (rc == 0 && d->size > LAYOUT_PROBE_BYTES)
		rc = layout_copy(d, fd, d->size - LAYOUT_PROBE_BYTES,
		    LAYOUT_PROBE_BYTES);
	if (rc == 0)
		rc = layout_table(d, fd, parts, n);
	if (rc < 0) {
		snprintf(err, errlen, "%s: reading its partition table: %s",
		    d->name, strerror(-rc));
		close(fd);
		return rc;
	}
	if (*n == 0) {
		/* No table: a file system on the whole disk, or nothing. */
		parts[0] = (struct image_part){ .number = 0, .start = 0,
		    .size = d->size };
		layout_probe_fs(d, fd, &parts[0]);
		*n = parts[0].fstype[0] != '\0' ? 1 : 0;
	} else {
		for (unsigned int i = 0; i < *n; i++)
			layout_probe_fs(d, fd, &parts[i]);
	}
	close(fd);
	return 0;
}

int
image_part_read(const struct image_disk *d, const struct image_part *p,
    void *buf, size_t len, uint64_t off)
{
	if (off > p->size || len > p->size - off)
		return -EIO;
	return d->read(d->ctx, buf, len, p->start + off);
}
