/*
 * What a distribution's cloud image needs from vmmd, as a module the
 * worker loads only for a guest that boots from its disk or has a
 * cloud-init seed: the boot loader's choice read from the disk
 * (image-boot.h: libblkid and libext2fs) and the NoCloud seed
 * (nocloud-seed.h: libisofs).  Other guests never map those libraries
 * (module-load.h).  Both sides include this header.
 */
#ifndef VMMD_CLOUD_MODULE_H
#define VMMD_CLOUD_MODULE_H

#include <stddef.h>

#include "image-boot.h"
#include "nocloud-seed.h"

#define CLOUD_MODULE_FILE	"vmmd-cloud.so"
#define CLOUD_MODULE_SYMBOL	"vmmd_cloud_module"
#define CLOUD_MODULE_ABI	1

struct cloud_module {
	unsigned int abi;	/* CLOUD_MODULE_ABI */
	size_t size;		/* sizeof(struct cloud_module) */
	int (*boot_choose)(const struct image_disk *d, const char *append,
	    size_t kernel_max, size_t initrd_max, struct image_boot *out,
	    char *err, size_t errlen);
	void (*boot_free)(struct image_boot *b);
	int (*seed_write)(const struct nocloud_seed *s, int fd, char *iid,
	    size_t iidlen, char *err, size_t errlen);
};

/* The module of dir (vmmd-worker's directory), as module_load(). */
int	cloud_module_load(const char *dir, const struct cloud_module **out,
	    char *err, size_t errlen);

#endif
