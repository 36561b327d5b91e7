/*
 * A firmware VM's "boot_order" and "boot_menu" (vmconfig.h): which
 * devices the firmware tries first and whether it offers its menu.
 * vmconfig.c calls these; they call nothing of it.
 */
#ifndef VMMD_VMCONFIG_BOOT_H
#define VMMD_VMCONFIG_BOOT_H

#include <stddef.h>
#include <json-c/json.h>

#include "vmconfig.h"

/* SeaBIOS and OVMF read etc/boot-menu-wait as 16 bits of milliseconds. */
#define CONFIG_BOOT_MENU_MS_MAX		65535
/* --boot-menu without a time: SeaBIOS's own default wait. */
#define CONFIG_BOOT_MENU_MS_DEFAULT	2500

/*
 * "boot_order" (an array of names, each a device def has: parse it
 * after the disks, cards and CD-ROM) and "boot_menu" (milliseconds,
 * 0..CONFIG_BOOT_MENU_MS_MAX) of obj into def; both only with
 * firmware.  0 or -EINVAL with err filled.
 */
int	config_parse_boot_order(struct json_object *obj, struct vm_def *def,
	    char *err, size_t errlen);
/* def's members as config_parse_boot_order() reads them back, into obj. */
void	config_boot_order_json(const struct vm_def *def,
	    struct json_object *obj);

#endif
