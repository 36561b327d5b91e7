/*
 * A machine that boots firmware (SeaBIOS, OVMF) rather than a kernel:
 * the image in a read-only memory slot at the top of 4 GiB and copied
 * below 1 MiB (boot-firmware.h); for OVMF its variables' flash right
 * below the image, whose store is mapped read-only while the flash
 * reads as its array, so that reads cost no exit and writes exit to the
 * flash (devices/pflash.h); and what the fw_cfg device hands the
 * firmware (fw-cfg.h): the CPU count, the RAM map as etc/e820, the
 * bootorder and boot menu the machine asks for (struct firmware_boot),
 * COM1 as etc/sercon-port (so SeaBIOS writes its screen to the serial
 * console); the ACPI tables with
 * their table loader (boot-table-loader.h), built when the firmware
 * first selects one of those files (fw-cfg.h's prepare), and SMBIOS
 * (boot-smbios.h), built here.
 *
 * Made per machine, so at every reset: the copy below 1 MiB is fresh.
 * The items' data lives here; the fw_cfg device borrows it.
 */
#ifndef VMMD_FIRMWARE_H
#define VMMD_FIRMWARE_H

#include <stdbool.h>
#include <stdint.h>

#include "boot.h"
#include "boot-dev.h"
#include "boot-firmware.h"
#include "boot-smbios.h"
#include "boot-table-loader.h"
#include "fw-cfg.h"
#include "pflash.h"

#define FIRMWARE_ITEMS		14
/* bootorder's size: a device path of up to 63 bytes a line, each device. */
#define FIRMWARE_BOOTORDER_MAX	(BOOT_ORDER_MAX * 64)

/*
 * Which devices the firmware boots first and whether it offers its
 * menu.  order: bootorder's text, device paths a line each (board.h's
 * board_pc_boot_path()), "" for the firmware's own order.  Without
 * menu, no FW_CFG_BOOT_MENU (SeaBIOS reads it as etc/show-boot-menu,
 * 0: no "Press ESC" prompt) and etc/boot-menu-wait 0 (OVMF's timeout).
 */
struct firmware_boot {
	const char *order;
	bool menu;
	unsigned int menu_ms;		/* <= 65535 */
};

struct firmware {
	struct boot_firmware image;
	uint8_t e820[3 * BOOT_FW_E820_ENTRY];
	uint8_t ncpus[2];		/* little-endian, as fw_cfg's are */
	uint8_t sercon[2];
	uint8_t menu_wait[2];
	uint8_t show_menu[2];
	char bootorder[FIRMWARE_BOOTORDER_MAX];	/* device paths, a line each */
	struct fw_cfg_item items[FIRMWARE_ITEMS];
	unsigned int nitems;

	/* What the ACPI tables are built from, when the firmware asks. */
	unsigned int nvcpus;
	uint64_t low_ram, high_ram;
	uint16_t (*pm_base)(void *opaque);
	void *pm_opaque;
	void (*pci_span)(void *opaque, struct boot_pci_span *span);
	void *pci_opaque;
	struct boot_fw_acpi acpi;
	bool has_uuid;			/* firmware_set_uuid() */
	uint8_t uuid[16];
	int smbios_item;		/* its tables' item, or -1: none */
	uint8_t smbios_anchor[BOOT_SMBIOS_ANCHOR_LEN];
	uint8_t smbios[BOOT_SMBIOS_TABLES_MAX];
	/* The VARS flash's slot (vars NULL: none). */
	int vm_fd;
	uint32_t vars_slot;
	struct pflash_store *vars;
	uint64_t vars_map_errors;	/* slot changes KVM refused */
};

/*
 * Load the image at path into mem and a read-only KVM slot (slot, on
 * vm_fd), set cpu to the reset state, and build the fw_cfg items for
 * ncpus vCPUs, boot saying the boot order and menu (a bootorder longer
 * than FIRMWARE_BOOTORDER_MAX is -ENOSPC).  vars, when
 * not NULL, is the store of a flash (the caller's, made on it
 * afterwards) laid out right below the image (fw->image.layout), mapped
 * read-only in KVM slot vars_slot while the flash reads as its array
 * (vars->array is set to do so).  0, or -errno with err saying why
 * (boot_firmware_load()'s codes; a KVM error is the host's).  Free with
 * firmware_free() after the VM is gone.
 */
int firmware_load(struct firmware *fw, int vm_fd, uint32_t slot,
    const struct boot_mem *mem, const char *path,
    struct pflash_store *vars, uint32_t vars_slot, unsigned int ncpus,
    const struct firmware_boot *boot, struct boot_cpu *cpu, char *err,
    size_t errlen);
void firmware_free(struct firmware *fw);

/*
 * Where the ACPI tables take the PM I/O base from (the FADT's PM1a
 * blocks and timer): get(opaque), asked when the firmware first selects
 * an ACPI file, after it programmed the PM function.  Until it is set
 * the tables say PC_ACPI_PM1A_EVT_PORT.
 */
void firmware_set_pm_base(struct firmware *fw, uint16_t (*get)(void *),
    void *opaque);

/*
 * Where the DSDT's PCI windows take the BARs from: get(opaque, span),
 * asked when the firmware first selects an ACPI file, after it placed
 * the BARs (boot_dsdt_fw_windows()).  Until it is set the windows
 * follow the RAM layout alone.
 */
void firmware_set_pci_span(struct firmware *fw,
    void (*get)(void *, struct boot_pci_span *), void *opaque);

/*
 * The VM's UUID (16 bytes, RFC 4122 order), for SMBIOS's system
 * information: the tables are built again with it, before the firmware
 * runs.  Until it is set the UUID is all zero ("not present").
 */
void firmware_set_uuid(struct firmware *fw, const uint8_t uuid[16]);

#endif
