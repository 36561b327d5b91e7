/*
 * The kernel, initrd and command line a guest's own boot loader would
 * choose from its disk, read without running it (for "boot": "disk",
 * vmmd-vm(5)).  The rules, the first that finds a kernel wins:
 *
 *   1. Boot Loader Specification entries: loader/entries/ on a FAT file
 *      system (the EFI system partition) or an ext one, and
 *      boot/loader/entries/ on ext ones; the first in the
 *      specification's order (bls-entry.h).
 *   2. GRUB's default entry: boot/grub/grub.cfg (or grub/, grub2/) on
 *      an ext file system (grub-cfg.h), its files on the file system
 *      its "search --set=root" names, else the one holding grub.cfg.
 *   3. Debian's links: /vmlinuz and /initrd.img (or in /boot).
 *   4. The newest /boot/vmlinuz-VERSION, with its initrd.img-VERSION
 *      (initramfs-VERSION.img, initrd-VERSION) when there is one.
 *
 * The command line is the entry's; with none, or one with no root=,
 * "root=UUID=<the root file system's UUID> ro" comes first (the root
 * file system: the first ext one with /etc/fstab).  append is added
 * last (the console the user asked for).
 *
 * Untrusted input throughout (image-layout.h); the kernel and initrd
 * are bounded by the caller's limits.  The text meant for people (why,
 * kernel_from, initrd_from, the error) comes with control characters
 * and invalid UTF-8 escaped as \xNN (image-str.h); cmdline is the
 * guest's, byte for byte, and its caller escapes it where it shows it.
 */
#ifndef VMMD_IMAGE_BOOT_H
#define VMMD_IMAGE_BOOT_H

#include <stddef.h>

#include "image-layout.h"

struct image_boot {
	void *kernel;			/* malloc'd */
	size_t kernel_len;
	void *initrd;			/* malloc'd, initrds concatenated */
	size_t initrd_len;		/* 0: none */
	char cmdline[4096];
	/* Where each came from: "partition 1 (ext4): /boot/vmlinuz-6.1" */
	char kernel_from[1100];
	char initrd_from[1100];
	/* The rule that chose them and why: "GRUB's default entry ...". */
	char rule[16];			/* "bls", "grub", "links", "newest" */
	char why[1024];
};

/*
 * Choose from d: 0 with out filled (free with image_boot_free()), or
 * -ENOENT with err naming everything searched, or -errno (-EFBIG: a
 * kernel or initrd past its limit).
 */
int	image_boot_choose(const struct image_disk *d, const char *append,
	    size_t kernel_max, size_t initrd_max, struct image_boot *out,
	    char *err, size_t errlen);
void	image_boot_free(struct image_boot *b);

#endif
