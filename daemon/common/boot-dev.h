/*
 * The names a boot order gives the guest's boot devices: "cdromN",
 * "diskN" and "netN", N counting from 0 in the order the definition
 * lists its CD-ROMs, disks and network cards, whatever bus each is on
 * (a disk keeps its name when it moves from virtio to SATA).  The same
 * words in the definition ("boot_order"), vmctl's --boot-order and the
 * message that starts a worker, which turns them into the firmware's
 * device paths (board.h).
 */
#ifndef VMMD_BOOT_DEV_H
#define VMMD_BOOT_DEV_H

#include <stddef.h>
#include <stdint.h>

enum boot_dev_kind {
	BOOT_DEV_CDROM,
	BOOT_DEV_DISK,
	BOOT_DEV_NET,
};

struct boot_dev {
	uint8_t kind;			/* enum boot_dev_kind */
	uint8_t index;			/* < BOOT_DEV_INDEX_MAX */
};

#define BOOT_DEV_INDEX_MAX	8
/* Every device once: two CD-ROMs, four disks, four cards (and spare). */
#define BOOT_ORDER_MAX		12
/* "cdrom7" and its NUL. */
#define BOOT_DEV_NAME_MAX	8
/* A whole list as text: every name and a comma. */
#define BOOT_ORDER_TEXT_MAX	(BOOT_ORDER_MAX * BOOT_DEV_NAME_MAX)

/* name ("disk1") into *dev: 0, or -EINVAL for anything else. */
int	boot_dev_parse(const char *name, struct boot_dev *dev);
/* dev's name into buf (BOOT_DEV_NAME_MAX bytes). */
void	boot_dev_name(const struct boot_dev *dev, char *buf, size_t size);

/*
 * A comma-separated list ("cdrom0,disk0,net1") into devs (at most
 * BOOT_ORDER_MAX), the count into *n; a name twice, an empty name or
 * one too many is -EINVAL.  "" is the empty list.
 */
int	boot_order_parse(const char *text, struct boot_dev *devs,
	    unsigned int *n);
/* The list as boot_order_parse() reads it, into buf: 0 or -ENOSPC. */
int	boot_order_text(const struct boot_dev *devs, unsigned int n,
	    char *buf, size_t size);

#endif
