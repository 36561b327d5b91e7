/*
 * QEMU's firmware configuration interface (fw_cfg), as SeaBIOS and OVMF
 * read it on a PC (QEMU's docs/specs/fw_cfg.rst): a 16-bit selector
 * written at port 0x510 picks an item, whose bytes are then read one by
 * one at 0x511 (each read advancing the offset), or moved in bulk by the
 * DMA interface at 0x514: the guest writes there the big-endian guest
 * physical address of a descriptor {control, length, address} (all
 * big-endian), which the device carries out and answers in place.
 *
 * Items: the signature "QEMU" (0x00), the features (0x01: traditional
 * interface and DMA), the numbered items the board hands over (such as
 * the CPU count, 0x05) and the board's named files, listed in the file
 * directory (0x19) and selected from 0x20 on.  A key with no item reads
 * as zero bytes; writes to items are refused (a DMA write sets the
 * descriptor's error bit; data port writes are dropped).
 *
 * Everything the guest supplies (selectors, descriptor addresses,
 * lengths) is checked: a descriptor or buffer outside guest RAM fails
 * with the error bit (or, when the descriptor itself cannot be reached,
 * is dropped and counted), never an access outside it.
 */
#ifndef VMMD_FW_CFG_H
#define VMMD_FW_CFG_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* The PC's ports: the selector and data ports, then the DMA address. */
#define FW_CFG_PORT		0x510
#define FW_CFG_PORT_LEN		12	/* 0x510-0x51b */
#define FW_CFG_SEL_OFFSET	0	/* 16-bit write */
#define FW_CFG_DATA_OFFSET	1	/* byte reads */
#define FW_CFG_DMA_OFFSET	4	/* high half, then low half at +4 */

/* Numbered items. */
#define FW_CFG_SIGNATURE	0x00
#define FW_CFG_ID		0x01
#define FW_CFG_RAM_SIZE		0x03
#define FW_CFG_NB_CPUS		0x05
#define FW_CFG_BOOT_MENU	0x0e
#define FW_CFG_MAX_CPUS		0x0f
#define FW_CFG_FILE_DIR		0x19
#define FW_CFG_FILE_FIRST	0x20
#define FW_CFG_WRITE_BIT	0x4000	/* in a selector: the guest would write */

/* The features item's bits. */
#define FW_CFG_F_TRADITIONAL	0x01
#define FW_CFG_F_DMA		0x02

/* A DMA descriptor's control word. */
#define FW_CFG_DMA_ERROR	0x01
#define FW_CFG_DMA_READ		0x02
#define FW_CFG_DMA_SKIP		0x04
#define FW_CFG_DMA_SELECT	0x08
#define FW_CFG_DMA_WRITE	0x10
#define FW_CFG_DMA_DESC_SIZE	16

/* What a read of the DMA port's eight bytes gives, big-endian. */
#define FW_CFG_DMA_SIGNATURE	0x51454d5520434647ULL	/* "QEMU CFG" */

#define FW_CFG_NAME_MAX		56	/* a file name, NUL included */
#define FW_CFG_MAX_ITEMS	32	/* numbered items and files together */

/*
 * One item the board provides: a numbered item at key (name NULL), or a
 * named file (name set; key is ignored: files take 0x20, 0x21, ... in
 * the order given).  data (len bytes) is borrowed: it must outlive the
 * device, as a backend does.
 *
 * An item whose bytes depend on what the firmware did first (the ACPI
 * tables describe the PM base and windows it programmed) has a prepare
 * callback: the device calls it, with opaque, when the guest first
 * selects such an item, and counts it done for every item with the same
 * callback and opaque, so that later selects read the same bytes until
 * the device is made again (at reset).  It fills data in place and may
 * not change len (the guest may have read the directory already);
 * an error (-errno) is counted and the item reads as data holds it.
 * It runs on the vCPU thread under the device's lock: it must not block
 * or take another device's lock but the PCI functions' one at a time
 * (the machine reads where their BARs are), which is safe because no
 * thread takes fw_cfg's lock while it holds a function's.
 */
struct fw_cfg_item {
	uint16_t key;
	const char *name;
	const void *data;
	uint32_t len;
	int (*prepare)(void *opaque);
	void *opaque;
};

/*
 * Make the device with n items (at most FW_CFG_MAX_ITEMS).  NULL with
 * errno: ENOMEM, or EINVAL for a bad item list (too many, a name too
 * long or repeated, a numbered key that collides with one the device
 * owns or lies outside 0x02-0x1f).
 */
struct fw_cfg *fw_cfg_new(const struct device_host *host,
    const struct fw_cfg_item *items, unsigned int n);
void fw_cfg_free(struct fw_cfg *fc);

/*
 * Optional: fn(opaque) at the guest's first DMA transfer (the first
 * since the device was made, not counting a loaded state's), before it
 * is carried out; on the vCPU thread under the device's lock, so it
 * must not block or take a lock.  The test build holds a firmware there
 * (the worker's test-hook.h); nothing else sets it.
 */
void fw_cfg_on_first_dma(struct fw_cfg *fc, void (*fn)(void *opaque),
    void *opaque);

extern const struct device_ops fw_cfg_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table fw_cfg_state_table;

#endif
