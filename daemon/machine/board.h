/*
 * A board: the ordered table of the devices a machine has, where they
 * sit and which interrupt lines they drive.  The machine builds its
 * devices by walking it, and walks it again for diagnostics (and, later,
 * to save and restore them), so that those can never disagree.
 */
#ifndef VMMD_BOARD_H
#define VMMD_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "devhost.h"
#include "blk-backend.h"
#include "boot-dev.h"
#include "bochs-display.h"
#include "fw-cfg.h"
#include "net-backend.h"
#include "vhost-backend.h"
#include "vsock-backend.h"
#include "pci-host.h"
#include "pflash.h"
#include "rtc.h"
#include "uart.h"

#define BOARD_MAX_RANGES	2
#define BOARD_MAX_DISKS		4
#define BOARD_MAX_NICS		4
/*
 * The AHCI controller's slot on bus 0, there when the guest has a
 * CD-ROM or a SATA disk; firmware names its drives by it in bootorder.
 * The CD-ROM is on port 0, SATA disk i on port i + 1.
 */
#define BOARD_PC_CDROM_PORT	0
#define BOARD_PC_SLOT_AHCI	11
/* The bochs-display's slot, there for firmware VMs with a display. */
#define BOARD_PC_SLOT_DISPLAY	13
/* The virtio-fs's slot, there for a VM with a shared directory. */
#define BOARD_PC_SLOT_FS	14

/*
 * What the worker hands the machine for its devices: backends that
 * outlive a guest reset (the console, the RTC's battery; the display
 * and disks next) and the definition's device settings.
 */
struct board_backends {
	struct uart_backend com1;
	/* The lost-tick policy, and the battery (owned by the worker). */
	struct rtc_config rtc;
	bool rng;			/* a virtio-rng */
	/* A virtio-balloon when balloon, made with this target (4 KiB
	 * pages) and period of statistics requests (0: none), which the
	 * worker keeps as vm.balloon sets them, so a reset keeps them. */
	bool balloon;
	uint32_t balloon_pages;
	int64_t balloon_stats_ns;
	/* Disks, each a virtio-blk or, where disk_sata[i], on the AHCI
	 * controller (the backends belong to the worker). */
	struct blk_backend disk[BOARD_MAX_DISKS];
	bool disk_sata[BOARD_MAX_DISKS];
	unsigned int ndisks;
	/* Network cards, each a virtio-net (the backends belong to the
	 * worker). */
	struct net_backend net[BOARD_MAX_NICS];
	unsigned int nnics;
	/* A virtio-vsock when has_vsock (the backend belongs to the worker). */
	struct vsock_backend vsock;
	bool has_vsock;
	/*
	 * A virtio-fs when fs_tag is set: the share the guest mounts by
	 * that tag, served by a vhost-user backend (the worker's); the
	 * machine's RAM must then be shareable (machine_config.ram_shared).
	 */
	struct vhost_backend fs;
	const char *fs_tag;
	/* A CD-ROM on the AHCI controller's port 0 when has_cdrom
	 * (read-only; the backend belongs to the worker; without ops the
	 * drive is empty, its medium ejected). */
	struct blk_backend cdrom;
	bool has_cdrom;
	/*
	 * fw_cfg's items when the guest boots firmware (nfw_cfg of them,
	 * owned by the machine); NULL: no fw_cfg device.
	 */
	const struct fw_cfg_item *fw_cfg;
	unsigned int nfw_cfg;
	/*
	 * A bochs-display when has_bochs: a firmware VM's display, its
	 * memory the worker's framebuffer and its ROM the VGA BIOS (both
	 * filled in by the machine, which owns the ROM's copy).
	 */
	struct bochs_display_config bochs;
	bool has_bochs;
	/*
	 * OVMF's variables: a flash on this store (the worker's) at
	 * pflash_base (set by the machine from the firmware's layout);
	 * NULL: no flash.
	 */
	struct pflash_store *pflash;
	uint64_t pflash_base;
	/* The VM generation ID (vmgenid.h) a kernel-loaded VM starts with. */
	uint8_t vmgenid[16];
	/* Filled in by the machine: how the host bridge reaches slots. */
	struct pci_host_ops pci;
};

enum board_bus {
	BOARD_PIO,
	BOARD_MMIO,
	BOARD_PCI,		/* function pci_fn of slot pci_slot, bus 0 */
};

struct board_range {
	uint64_t base;
	uint64_t len;		/* 0 ends the list */
	uint64_t dev_offset;	/* the device's offset at base */
};

struct board_device {
	const char *name;
	/* NULL on ENOMEM; host and be outlive the device. */
	void *(*create)(const struct device_host *host,
	    const struct board_backends *be);
	const struct device_ops *ops;
	enum board_bus bus;
	struct board_range ranges[BOARD_MAX_RANGES];
	unsigned int irqs[DEVHOST_MAX_LINES];	/* GSIs, by device line */
	unsigned int nirqs;
	unsigned int pci_slot;	/* BOARD_PCI: 1..31; INTA# is irqs[0] */
	unsigned int pci_fn;	/* BOARD_PCI: 0..7 */
	/* Optional: does the definition ask for this device?  NULL: yes. */
	bool (*present)(const struct board_backends *be);
	/*
	 * Optional: the one range of a device whose place depends on the
	 * definition (it then has no ranges of its own).
	 */
	struct board_range (*place)(const struct board_backends *be);
};

/* The PC (board-pc.c). */
extern const struct board_device board_pc[];
extern const size_t board_pc_size;

/*
 * dev's OpenFirmware device path on the PC be describes, as QEMU names
 * its devices in fw_cfg's bootorder, which SeaBIOS matches (its
 * boot.c: the PCI part with "*" for the device's name, then
 * "/drive@PORT/disk@0" for an AHCI drive) and OVMF translates (its
 * QemuBootOrderLib: "pci8086,2922" as an AHCI controller's, "scsi" a
 * virtio-blk's, "ethernet" a card's).  Into buf, without a newline: 0,
 * -ENOENT when be has no such device, -ENOSPC.
 */
int	board_pc_boot_path(const struct board_backends *be,
	    const struct boot_dev *dev, char *buf, size_t size);

#endif
