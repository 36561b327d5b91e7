/*
 * PC firmware (SeaBIOS) instead of a kernel: the image as a PC has it,
 * read-only at the top of 4 GiB, and its last (up to) 256 KiB copied
 * into RAM below 1 MiB, where a BIOS runs after power-on.  Like the
 * kernel loaders this works on host memory and never touches KVM: it
 * reads the image into a mapping of its own, which the caller maps into
 * the guest (a read-only slot at BOOT_FIRMWARE_TOP - size), and fills
 * the low copy into guest RAM at every (re)build of the machine.
 *
 * Also the guest's memory map in the form QEMU's fw_cfg file
 * "etc/e820" gives it to the firmware: RAM, and the pages KVM keeps for
 * itself; the firmware reserves its own areas.
 */
#ifndef VMMD_BOOT_FIRMWARE_H
#define VMMD_BOOT_FIRMWARE_H

#include <stddef.h>
#include <stdint.h>

#include "boot.h"

#define BOOT_FIRMWARE_TOP	0x100000000ULL	/* the image ends at 4 GiB */
#define BOOT_FIRMWARE_MIN	0x10000ULL	/* 64 KiB */
/* Sizes are whole pages: each part is a KVM memory slot. */
#define BOOT_FIRMWARE_ALIGN	0x1000ULL
/*
 * At most what fits above KVM's own pages as firmware VMs have them
 * (pc-layout.h: they end at 0xff000000), CODE and VARS together: 16 MiB,
 * as QEMU's flash may be.
 */
#define BOOT_FIRMWARE_MAX	\
	(BOOT_FIRMWARE_TOP - (PC_FW_KVM_IDMAP_ADDR + PC_FW_KVM_PAGES_LEN))
/*
 * How much of the image's end is copied to end at 1 MiB: all of
 * bios-256k.bin, which SeaBIOS needs whole at 0xc0000.
 */
#define BOOT_FIRMWARE_LOW_MAX	0x40000ULL
#define BOOT_FIRMWARE_LOW_END	PC_HIGH_MEM_START

/* Bytes of one fw_cfg etc/e820 entry: address, length (LE64), type. */
#define BOOT_FW_E820_ENTRY	20

/*
 * Where a firmware's flash sits, as QEMU maps -drive if=pflash units 0
 * and 1: the code image (or SeaBIOS's whole image) ending at 4 GiB, the
 * variables' store (OVMF_VARS) right below it.
 */
struct boot_firmware_layout {
	uint64_t code_base;
	uint64_t code_size;
	uint64_t vars_base;	/* == code_base when there is no VARS */
	uint64_t vars_size;	/* 0: none */
};

struct boot_firmware {
	uint8_t *image;		/* size bytes, read-only, page-aligned */
	uint64_t size;		/* whole pages */
	struct boot_firmware_layout layout;
};

/*
 * The layout of a code image of code_size bytes and a VARS store of
 * vars_size (0: none) into *l: 0, or -ENOEXEC with err saying why (a
 * code image not whole pages or under BOOT_FIRMWARE_MIN, a VARS store
 * not whole pages, both together over BOOT_FIRMWARE_MAX).
 */
int boot_firmware_layout(uint64_t code_size, uint64_t vars_size,
    struct boot_firmware_layout *l, char *err, size_t errlen);

/*
 * Read the firmware image at path (a file, or /proc/self/fd/N as the
 * supervisor passes it) into fw, laid out over a VARS store of
 * vars_size bytes (0: none; boot_firmware_layout()), copy its low part
 * into mem and set cpu to the PC's reset state (real mode, f000:fff0,
 * CS base 0xffff0000).  -ENOEXEC: not a usable image or layout (as
 * boot_firmware_layout()); -EFBIG: low RAM cannot hold the copy; other
 * -errno from the file; err says why (without the path).  On success
 * free fw with boot_firmware_free().
 */
int boot_firmware_load(const struct boot_mem *mem, const char *path,
    uint64_t vars_size, struct boot_firmware *fw, struct boot_cpu *cpu,
    char *err, size_t errlen);
void boot_firmware_free(struct boot_firmware *fw);

/* The largest option ROM boot_firmware_rom() reads: a PCI ROM BAR's. */
#define BOOT_FIRMWARE_ROM_MAX	(16u << 20)

/*
 * Read a PCI option ROM image (a display's VGA BIOS) at path, as
 * boot_firmware_load() reads its image, into *rom (malloc'd, *len
 * bytes; free() it).  -ENOEXEC: empty, over BOOT_FIRMWARE_ROM_MAX, or
 * without the 55 aa signature; other -errno from the file; err says
 * why (without the path).
 */
int boot_firmware_rom(const char *path, uint8_t **rom, size_t *len,
    char *err, size_t errlen);

/*
 * mem's RAM as etc/e820's entries into out (outlen bytes), with KVM's
 * pages of a firmware VM (PC_FW_KVM_IDMAP_ADDR) reserved between low
 * and high RAM: the number of bytes written, a multiple of
 * BOOT_FW_E820_ENTRY.
 */
size_t boot_firmware_e820(const struct boot_mem *mem, uint8_t *out,
    size_t outlen);

#endif
