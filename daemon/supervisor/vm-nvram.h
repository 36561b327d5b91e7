/*
 * A "firmware": "uefi" VM's UEFI variables: its NVRAM file
 * STATEDIR/nvram/NAME.fd, made from OVMF's VARS template at vm.create,
 * kept with the VM (across stops and host reboots), renamed and copied
 * with it, and removed with its data.  The daemon's file, mode 0600,
 * as the VM's overlays are; the worker gets it as a descriptor and
 * writes what the guest changes (the worker's nvram.h).
 *
 * At start the file must still be what OVMF's flash can hold: as large
 * as the template, and a firmware volume (its header's "_FVH" at byte
 * 40, the PI specification's EFI_FIRMWARE_VOLUME_HEADER), else the start
 * fails naming it.
 */
#ifndef VMMD_VM_NVRAM_H
#define VMMD_VM_NVRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_NVRAM_DIR		"nvram"

/* dir/NAME.fd into buf: 0, -ENAMETOOLONG, or -ENOENT for no dir. */
int	vm_nvram_path(const char *dir, const char *name, char *buf,
	    size_t len);
/* Whether name has an NVRAM file in dir. */
bool	vm_nvram_exists(const char *dir, const char *name);
/*
 * name's NVRAM file in dir, a copy of the template open at template_fd
 * (read from offset 0), made whole under a temporary name and renamed:
 * 0, -EEXIST when name has one already (a deleted VM's, kept), or
 * -errno; err says why, naming the file.  dir is synced.
 */
int	vm_nvram_create(const char *dir, const char *name, int template_fd,
	    char *err, size_t errlen);
/* from's NVRAM file copied to to's (vm.clone): as vm_nvram_create(),
 * -ENOENT with err when from has none. */
int	vm_nvram_copy(const char *dir, const char *from, const char *to,
	    char *err, size_t errlen);
/* from's NVRAM file renamed to's (vm.rename): 0 also when from has
 * none; -EEXIST when to has one.  dir is synced. */
int	vm_nvram_rename(const char *dir, const char *from, const char *to,
	    char *err, size_t errlen);
/*
 * At start: name's NVRAM file opened read-write (O_CLOEXEC) into *fd,
 * checked against the template's size: 0, or -ENOENT (none: it was
 * removed), -EINVAL (wrong size, or no firmware volume), -errno; err
 * says why, naming the file and what to do.
 */
int	vm_nvram_open(const char *dir, const char *name, uint64_t size,
	    int *fd, char *err, size_t errlen);
/* Whether the first bytes of a file (len of them) are a firmware
 * volume's header. */
bool	vm_nvram_is_volume(const uint8_t *head, size_t len);

#endif
