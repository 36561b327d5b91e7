/*
 * libFuzzer: the cloud-image reader (daemon/cloud-image): what vmmd reads from
 * a guest's disk to boot it the way its boot loader would.  The first
 * byte chooses: even, the rest is a whole disk (raw, its size the
 * input's) given to image_boot_choose(), partition tables, ext and FAT
 * file systems, boot entries and all; odd, the rest is the text of a
 * grub.cfg (bit 1 clear) or of a BLS entry (bit 1 set) given to its
 * parser alone.  Whatever the bytes, no crash, no hang, no leak; a
 * refusal is fine.  Seeds (corpus/image): small disks made with sfdisk,
 * mkfs.ext2 -d and mkfs.vfat, and generated grub.cfg files; and damaged
 * ones: an ext2 superblock claiming 2^24 block groups (ext-sb-groups),
 * a FAT directory whose cluster chain loops back to itself
 * (fat-dir-loop) or runs on into a file's clusters (fat-dir-long), and
 * the longest chain a walk holds, 4097 clusters, looping back at its
 * end (fat-dir-loop-longest).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bls-entry.h"
#include "grub-cfg.h"
#include "image-boot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_disk {
	const uint8_t *p;
	size_t len;
};

static int
fuzz_read(void *ctx, void *buf, size_t len, uint64_t off)
{
	const struct fuzz_disk *d = ctx;

	if (off > d->len || len > d->len - off)
		return -EIO;
	memcpy(buf, d->p + off, len);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[4096], *text;

	if (size < 1)
		return 0;
	if ((data[0] & 1) == 0) {
		struct fuzz_disk fd = { data + 1, size - 1 };
		struct image_disk d = { .read = fuzz_read, .ctx = &fd,
		    .size = size - 1, .name = "fuzz" };
		struct image_boot b;

		if (image_boot_choose(&d, "console=ttyS0", 1 << 20, 1 << 20,
		    &b, err, sizeof(err)) == 0)
			image_boot_free(&b);
		return 0;
	}
	/* The parsers take NUL-terminated text, as the reader gives them. */
	if ((text = malloc(size)) == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if ((data[0] & 2) == 0) {
		struct grub_entry *e = malloc(sizeof(*e));

		if (e != NULL)
			grub_cfg_default(text, NULL, e, err, sizeof(err));
		free(e);
	} else {
		struct bls_entry *e = malloc(sizeof(*e)), *e2 = malloc(
		    sizeof(*e2));

		if (e != NULL && e2 != NULL && bls_entry_parse(text, "fuzz",
		    e) == 0 && bls_entry_parse("linux /x\nversion 1\n", "y",
		    e2) == 0)
			(void)bls_entry_cmp(e, e2);
		free(e);
		free(e2);
	}
	free(text);
	return 0;
}
