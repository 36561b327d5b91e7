/*
 * ACPI for firmware (SeaBIOS, OVMF) as QEMU hands it over through
 * fw_cfg: the tables in one blob ("etc/acpi/tables"), the RSDP in
 * another ("etc/acpi/rsdp") and a list of commands ("etc/table-loader")
 * that tell the firmware where to put each blob, which pointers in them
 * to patch with the address it chose and which checksums to fix.
 *
 * The command format is QEMU's linker/loader (its
 * hw/acpi/bios-linker-loader.c describes it):
 * entries of BOOT_LOADER_ENTRY bytes, a little-endian 32-bit command
 * first, then
 *   ALLOCATE      file[56], alignment (LE32), zone (1: high, 2: F segment)
 *   ADD_POINTER   dest[56], src[56], offset (LE32), size (1, 2, 4, 8):
 *                 add src's address to the size-byte value at dest+offset
 *   ADD_CHECKSUM  file[56], offset, start, length (LE32 each): subtract
 *                 the sum of file[start, start+length) from file[offset]
 * Names are NUL-padded.  Every file's size is fixed for a VM (the
 * firmware reads the fw_cfg directory before the blob is built), so the
 * tables blob has a fixed size and its tail is zeros.
 */
#ifndef VMMD_BOOT_TABLE_LOADER_H
#define VMMD_BOOT_TABLE_LOADER_H

#include <stdint.h>

#include "boot-tables.h"

#define BOOT_ACPI_TABLES_FILE	"etc/acpi/tables"
#define BOOT_ACPI_RSDP_FILE	"etc/acpi/rsdp"
#define BOOT_TABLE_LOADER_FILE	"etc/table-loader"

/* The tables blob: room for BOOT_MAX_CPUS' MADT with the DSDT to spare. */
#define BOOT_ACPI_BLOB_SIZE	0x8000
#define BOOT_ACPI_BLOB_ALIGN	64		/* the FACS is at offset 0 */

#define BOOT_LOADER_ENTRY	128
#define BOOT_LOADER_NAME	56
#define BOOT_LOADER_ALLOCATE	1
#define BOOT_LOADER_ADD_POINTER	2
#define BOOT_LOADER_ADD_CHECKSUM 3
#define BOOT_LOADER_ZONE_HIGH	1
#define BOOT_LOADER_ZONE_FSEG	2
/* 2 allocations, 6 pointers, 5 checksums: the same for every VM. */
#define BOOT_LOADER_ENTRIES	13
#define BOOT_LOADER_SIZE	(BOOT_LOADER_ENTRIES * BOOT_LOADER_ENTRY)

/* The three files' contents. */
struct boot_fw_acpi {
	uint8_t	tables[BOOT_ACPI_BLOB_SIZE];
	uint8_t	rsdp[BOOT_ACPI_RSDP_V1_LEN];
	uint8_t	loader[BOOT_LOADER_SIZE];
};

/*
 * Build the tables (boot_acpi_blob()) for cfg and the commands that
 * load them: allocate the tables in high memory and the RSDP in the F
 * segment (where a scan finds it), point the RSDP at the RSDT, the RSDT
 * at the FADT and the MADT, the FADT at the FACS and (both fields) the
 * DSDT, then fix the checksums of the RSDP, the RSDT, the FADT, the
 * MADT and the DSDT.  0 or -errno (boot_acpi_blob()'s); on error fa is
 * all zeros, a loader with no commands.
 */
int boot_fw_acpi_build(struct boot_fw_acpi *fa,
    const struct boot_acpi_config *cfg);

#endif
