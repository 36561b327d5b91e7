/*
 * SMBIOS tables (DMTF DSP0134 3.0) for firmware, as QEMU hands them
 * over through fw_cfg: the 64-bit entry point in "etc/smbios/smbios-
 * anchor" (its table address left 0: the firmware places the tables and
 * fills it in) and the structures in "etc/smbios/smbios-tables".  The
 * firmware (SeaBIOS, OVMF) installs them where an OS looks; Linux's
 * dmidecode and Windows read them.
 *
 * Structures: BIOS (type 0), system (1), chassis (3), one processor (4)
 * per vCPU, the physical memory array (16), one memory device (17), the
 * mapped address ranges of low and high RAM (19), system boot (32) and
 * the end (127).  Handles: 0x0000 for type 0, 0x0100 for 1, 0x0300 for
 * 3, 0x0400 + i for processor i, 0x1000 for 16, 0x1100 for 17, 0x1300 +
 * i for 19, 0x2000 for 32, 0x7f00 for 127.
 */
#ifndef VMMD_BOOT_SMBIOS_H
#define VMMD_BOOT_SMBIOS_H

#include <stddef.h>
#include <stdint.h>

#define BOOT_SMBIOS_ANCHOR_FILE	"etc/smbios/smbios-anchor"
#define BOOT_SMBIOS_TABLES_FILE	"etc/smbios/smbios-tables"
#define BOOT_SMBIOS_ANCHOR_LEN	24	/* the 3.0 entry point, "_SM3_" */
/* The structures of BOOT_MAX_CPUS vCPUs fit. */
#define BOOT_SMBIOS_TABLES_MAX	0x6000

struct boot_smbios_config {
	unsigned int	ncpus;
	uint64_t	low_ram;	/* bytes from 0 */
	uint64_t	high_ram;	/* bytes from 4 GiB */
	/*
	 * 16 bytes in RFC 4122 order (uuid-text.h), or NULL: all zero.
	 * Type 1 stores it as SMBIOS 2.6 and later say (7.2.1): its first
	 * three fields little-endian, the rest as they are, so that
	 * dmidecode and Windows show the UUID the user sees.
	 */
	const uint8_t	*uuid;
	const char	*version;	/* the BIOS version string */
};

/*
 * Write the structures into tables (cap bytes) and the entry point into
 * anchor (BOOT_SMBIOS_ANCHOR_LEN bytes, its checksum right with the
 * table address 0).  Returns the structures' length or -errno (-EINVAL:
 * no vCPU or no RAM; -ENOSPC).
 */
int boot_smbios_build(const struct boot_smbios_config *cfg, uint8_t *tables,
    size_t cap, uint8_t *anchor);

#endif
