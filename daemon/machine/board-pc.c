/*
 * The PC: the one place that says which chips a guest has, at which
 * ports and on which ISA interrupt lines.  See pc-layout.h for the
 * addresses and the interrupt routing.
 */
#include <errno.h>
#include <stdio.h>

#include "acpi-pm.h"
#include "ahci.h"
#include "board.h"
#include "bochs-display.h"
#include "fw-cfg.h"
#include "i8042.h"
#include "pc-layout.h"
#include "pci-host.h"
#include "piix3-isa.h"
#include "piix4-pm.h"
#include "port92.h"
#include "post.h"
#include "rtc.h"
#include "uart.h"
#include "virtio-balloon.h"
#include "virtio-blk.h"
#include "virtio-net.h"
#include "virtio-pci.h"
#include "virtio-rng.h"
#include "virtio-vsock.h"
#include "virtio-fs.h"
#include "vmgenid.h"

static void *
board_uart_new(const struct device_host *host, const struct board_backends *be)
{
	return uart_new(host, &be->com1);
}

static void *
board_rtc_new(const struct device_host *host, const struct board_backends *be)
{
	return rtc_new_config(host, &be->rtc);
}

static void *
board_i8042_new(const struct device_host *host,
    const struct board_backends *be)
{
	return i8042_new(host);
}

static void *
board_post_new(const struct device_host *host, const struct board_backends *be)
{
	return post_new(host);
}

static void *
board_acpi_pm_new(const struct device_host *host,
    const struct board_backends *be)
{
	return acpi_pm_new(host, PC_ACPI_SLP_TYP_S5);
}

static void *
board_fw_cfg_new(const struct device_host *host,
    const struct board_backends *be)
{
	return fw_cfg_new(host, be->fw_cfg, be->nfw_cfg);
}

static bool
board_has_fw_cfg(const struct board_backends *be)
{
	return be->fw_cfg != NULL;
}

static void *
board_vmgenid_new(const struct device_host *host,
    const struct board_backends *be)
{
	return vmgenid_new(host, PC_VMGENID_ADDR, be->vmgenid);
}

/* Kernel-loaded VMs only: their DSDT is the one that names it. */
static bool
board_has_vmgenid(const struct board_backends *be)
{
	return !board_has_fw_cfg(be);
}

static void *
board_port92_new(const struct device_host *host,
    const struct board_backends *be)
{
	return port92_new(host);
}

static void *
board_pci_host_new(const struct device_host *host,
    const struct board_backends *be)
{
	/* Firmware resets through the PIIX's 0xcf9 (OVMF first of all). */
	if (board_has_fw_cfg(be))
		return pci_host_new_rcr(host, &be->pci);
	return pci_host_new(host, &be->pci);
}

static void *
board_piix3_isa_new(const struct device_host *host,
    const struct board_backends *be)
{
	return piix3_isa_new(host);
}

static void *
board_piix4_pm_new(const struct device_host *host,
    const struct board_backends *be)
{
	return piix4_pm_new(host);
}

static void *
board_rng_new(const struct device_host *host, const struct board_backends *be)
{
	return virtio_pci_new(host, virtio_rng_new(host));
}

/* In slot 1 without firmware, where it always was; slot 12 with. */
static bool
board_has_rng(const struct board_backends *be)
{
	return be->rng && !board_has_fw_cfg(be);
}

static bool
board_has_fw_rng(const struct board_backends *be)
{
	return be->rng && board_has_fw_cfg(be);
}

static void *
board_balloon_new(const struct device_host *host,
    const struct board_backends *be)
{
	struct virtio_dev *d = virtio_balloon_new(host);

	if (d != NULL) {
		virtio_balloon_set_target(d, be->balloon_pages);
		virtio_balloon_stats_every(d, be->balloon_stats_ns);
	}
	return virtio_pci_new(host, d);
}

static bool
board_has_balloon(const struct board_backends *be)
{
	return be->balloon;
}

static void *
board_vsock_new(const struct device_host *host, const struct board_backends *be)
{
	return virtio_pci_new(host, virtio_vsock_new(host, &be->vsock));
}

static bool
board_has_vsock(const struct board_backends *be)
{
	return be->has_vsock;
}

static void *
board_fs_new(const struct device_host *host, const struct board_backends *be)
{
	return virtio_pci_new(host, virtio_fs_new(host, be->fs_tag, &be->fs));
}

static bool
board_has_fs(const struct board_backends *be)
{
	return be->fs_tag != NULL;
}

/*
 * The AHCI controller: the CD-ROM on port 0 (empty without one), SATA
 * disk i on port i + 1 (board.h), up to the last drive.
 */
static void *
board_ahci_new(const struct device_host *host, const struct board_backends *be)
{
	struct ahci_drive drives[1 + BOARD_MAX_DISKS] = { 0 };
	unsigned int nports = 1;

	_Static_assert(1 + BOARD_MAX_DISKS <= AHCI_MAX_PORTS,
	    "a port for the CD-ROM and each disk");
	if (be->has_cdrom)
		drives[0] = (struct ahci_drive){ AHCI_DRIVE_CDROM, &be->cdrom };
	for (unsigned int i = 0; i < be->ndisks; i++)
		if (be->disk_sata[i]) {
			drives[i + 1] = (struct ahci_drive){ AHCI_DRIVE_DISK,
			    &be->disk[i] };
			nports = i + 2;
		}
	return ahci_new(host, drives, nports);
}

static void *
board_pflash_new(const struct device_host *host,
    const struct board_backends *be)
{
	return pflash_new(host, be->pflash);
}

static bool
board_has_pflash(const struct board_backends *be)
{
	return be->pflash != NULL;
}

/* Right below the firmware's image (boot-firmware.h's layout). */
static struct board_range
board_pflash_place(const struct board_backends *be)
{
	return (struct board_range){ be->pflash_base, be->pflash->size, 0 };
}

static bool
board_has_ahci(const struct board_backends *be)
{
	for (unsigned int i = 0; i < be->ndisks; i++)
		if (be->disk_sata[i])
			return true;
	return be->has_cdrom;
}

static void *
board_bochs_new(const struct device_host *host,
    const struct board_backends *be)
{
	return bochs_display_new(host, &be->bochs);
}

static bool
board_has_bochs(const struct board_backends *be)
{
	return be->has_bochs;
}

/* net<n>: one function each, made while the worker has n + 1 cards. */
#define BOARD_NET(n)							\
static void *								\
board_net##n##_new(const struct device_host *host,			\
    const struct board_backends *be)					\
{									\
	return virtio_pci_new(host, virtio_net_new(host, &be->net[n]));	\
}									\
									\
static bool								\
board_has_net##n(const struct board_backends *be)			\
{									\
	return be->nnics > n;						\
}
BOARD_NET(0)
BOARD_NET(1)
BOARD_NET(2)
BOARD_NET(3)

/* disk<n>: one function each, made while the definition has n + 1 and
 * disk n is not on SATA (its slot then stays empty). */
#define BOARD_DISK(n)							\
static void *								\
board_disk##n##_new(const struct device_host *host,			\
    const struct board_backends *be)					\
{									\
	return virtio_pci_new(host,					\
	    virtio_blk_new(host, &be->disk[n]));			\
}									\
									\
static bool								\
board_has_disk##n(const struct board_backends *be)			\
{									\
	return be->ndisks > n && !be->disk_sata[n];			\
}
BOARD_DISK(0)
BOARD_DISK(1)
BOARD_DISK(2)
BOARD_DISK(3)

/*
 * PCI slots: each device gets a slot of its own, but for the PIIX's
 * functions, which firmware looks for in slot 1 of a firmware VM (the
 * ISA bridge, function 0; power management, function 3); INTA# of slots
 * 1-4 lands on GSIs 17, 18, 19, 16 and then the swizzle repeats (the
 * device host ORs shared lines).
 */
#define BOARD_SLOT_RNG		1	/* without firmware */
#define BOARD_SLOT_PIIX		1	/* with firmware */
#define BOARD_FN_PIIX3_ISA	0
#define BOARD_FN_PIIX4_PM	3
#define BOARD_SLOT_DISK0	2	/* to 5 */
#define BOARD_SLOT_NET		6	/* card 0, where it always was */
#define BOARD_SLOT_VSOCK	7
#define BOARD_SLOT_NET1		8	/* to 10: cards 1 to 3 */
#define BOARD_SLOT_AHCI		BOARD_PC_SLOT_AHCI	/* 11 */
#define BOARD_SLOT_DISPLAY	BOARD_PC_SLOT_DISPLAY	/* 13 */
#define BOARD_SLOT_FW_RNG	12	/* with firmware */
#define BOARD_SLOT_BALLOON	15
#define BOARD_SLOT_FS		BOARD_PC_SLOT_FS	/* 14 */

#define BOARD_NET_ENTRY(n, label, slot)					\
	{ .name = label, .create = board_net##n##_new,			\
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,		\
	    .pci_slot = slot, .irqs = { PC_PCI_INTX_GSI(slot, 0) },	\
	    .nirqs = 1, .present = board_has_net##n }

#define BOARD_DISK_ENTRY(n)						\
	{ .name = "disk" #n, .create = board_disk##n##_new,		\
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,		\
	    .pci_slot = BOARD_SLOT_DISK0 + n,				\
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_DISK0 + n, 0) },	\
	    .nirqs = 1, .present = board_has_disk##n }

const struct board_device board_pc[] = {
	{ .name = "com1", .create = board_uart_new, .ops = &uart_device_ops,
	    .bus = BOARD_PIO, .ranges = { { PC_COM1_PORT, 8, 0 } },
	    .irqs = { PC_COM1_IRQ }, .nirqs = 1 },
	{ .name = "rtc", .create = board_rtc_new, .ops = &rtc_device_ops,
	    .bus = BOARD_PIO, .ranges = { { PC_RTC_PORT, 2, 0 } },
	    .irqs = { PC_RTC_IRQ }, .nirqs = 1 },
	{ .name = "i8042", .create = board_i8042_new,
	    .ops = &i8042_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_I8042_DATA_PORT, 1, 0 },
		{ PC_I8042_CMD_PORT, 1, 4 } },
	    .irqs = { PC_I8042_KBD_IRQ, PC_I8042_AUX_IRQ }, .nirqs = 2 },
	{ .name = "post", .create = board_post_new, .ops = &post_device_ops,
	    .bus = BOARD_PIO, .ranges = { { PC_POST_PORT, 1, 0 } } },
	/*
	 * The PM1a event block, then the control block right after it;
	 * the PM timer and the GPE0 block after it.  Where a firmware VM's PIIX4 PM function places
	 * them, at the same distances from its PMBA (pmio.h).
	 */
	{ .name = "acpi-pm", .create = board_acpi_pm_new,
	    .ops = &acpi_pm_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_ACPI_PM1A_EVT_PORT, ACPI_PM_LEN, 0 },
		{ PC_ACPI_PM_TMR_PORT, ACPI_PM_TMR_LEN + ACPI_PM_GPE0_LEN,
		    ACPI_PM_TMR_OFFSET } },
	    .irqs = { PC_ACPI_SCI_IRQ }, .nirqs = 1 },
	/* PCI bus 0 and its host bridge in slot 0 (pci-host.h). */
	{ .name = "pci-host", .create = board_pci_host_new,
	    .ops = &pci_host_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_PCI_CONFIG_ADDR_PORT, 8, 0 } } },
	{ .name = "virtio-rng", .create = board_rng_new,
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_RNG,
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_RNG, 0) }, .nirqs = 1,
	    .present = board_has_rng },
	BOARD_DISK_ENTRY(0),
	BOARD_DISK_ENTRY(1),
	BOARD_DISK_ENTRY(2),
	BOARD_DISK_ENTRY(3),
	/* Card 0 keeps the name saved state and metrics know it by. */
	BOARD_NET_ENTRY(0, "virtio-net", BOARD_SLOT_NET),
	{ .name = "virtio-vsock", .create = board_vsock_new,
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_VSOCK,
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_VSOCK, 0) }, .nirqs = 1,
	    .present = board_has_vsock },
	BOARD_NET_ENTRY(1, "virtio-net1", BOARD_SLOT_NET1),
	BOARD_NET_ENTRY(2, "virtio-net2", BOARD_SLOT_NET1 + 1),
	BOARD_NET_ENTRY(3, "virtio-net3", BOARD_SLOT_NET1 + 2),
	{ .name = "virtio-fs", .create = board_fs_new,
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_FS,
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_FS, 0) }, .nirqs = 1,
	    .present = board_has_fs },
	/*
	 * Last, firmware VMs' own: a board without them keeps every other
	 * device's index.
	 */
	{ .name = "fw-cfg", .create = board_fw_cfg_new,
	    .ops = &fw_cfg_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_FW_CFG_PORT, FW_CFG_PORT_LEN, 0 } },
	    .present = board_has_fw_cfg },
	/* The PIIX's system control port A: A20 and the fast reset. */
	{ .name = "port92", .create = board_port92_new,
	    .ops = &port92_device_ops, .bus = BOARD_PIO,
	    .ranges = { { PC_PORT92_PORT, 1, 0 } },
	    .present = board_has_fw_cfg },
	/* After it, for the same reason; MSI once the driver enables it,
	 * else INTA#. */
	{ .name = "ahci", .create = board_ahci_new, .ops = &ahci_device_ops,
	    .bus = BOARD_PCI, .pci_slot = BOARD_SLOT_AHCI,
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_AHCI, 0) }, .nirqs = 1,
	    .present = board_has_ahci },
	/*
	 * A firmware VM's screen, whose ROM SeaBIOS runs: after the
	 * others, for the same reason.  No interrupt.
	 */
	{ .name = "bochs-display", .create = board_bochs_new,
	    .ops = &bochs_display_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_DISPLAY, .present = board_has_bochs },
	/*
	 * OVMF's variables, last for the same reason: its writes, and its
	 * reads while not in read-array mode (firmware.h maps the rest).
	 */
	{ .name = "pflash", .create = board_pflash_new,
	    .ops = &pflash_device_ops, .bus = BOARD_MMIO,
	    .present = board_has_pflash, .place = board_pflash_place },
	/* The PIIX's functions firmware hard-codes, after it likewise. */
	{ .name = "piix3-isa", .create = board_piix3_isa_new,
	    .ops = &piix3_isa_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_PIIX, .pci_fn = BOARD_FN_PIIX3_ISA,
	    .present = board_has_fw_cfg },
	{ .name = "piix4-pm", .create = board_piix4_pm_new,
	    .ops = &piix4_pm_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_PIIX, .pci_fn = BOARD_FN_PIIX4_PM,
	    .present = board_has_fw_cfg },
	{ .name = "virtio-rng", .create = board_rng_new,
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_FW_RNG,
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_FW_RNG, 0) }, .nirqs = 1,
	    .present = board_has_fw_rng },
	/*
	 * The VM generation ID: no ports, 16 bytes of reserved RAM
	 * (pc-layout.h).  Last: the others keep their indices.
	 */
	{ .name = "vmgenid", .create = board_vmgenid_new,
	    .ops = &vmgenid_device_ops, .bus = BOARD_MMIO,
	    .present = board_has_vmgenid },
	/* After it, for the same reason; in the same slot either way. */
	{ .name = "virtio-balloon", .create = board_balloon_new,
	    .ops = &virtio_pci_device_ops, .bus = BOARD_PCI,
	    .pci_slot = BOARD_SLOT_BALLOON,
	    .irqs = { PC_PCI_INTX_GSI(BOARD_SLOT_BALLOON, 0) }, .nirqs = 1,
	    .present = board_has_balloon },
};

const size_t board_pc_size = sizeof(board_pc) / sizeof(board_pc[0]);

/* A card's slot: card 0 where it always was, then 8 to 10. */
static unsigned int
board_net_slot(unsigned int n)
{
	return n == 0 ? BOARD_SLOT_NET : BOARD_SLOT_NET1 + n - 1;
}

int
board_pc_boot_path(const struct board_backends *be,
    const struct boot_dev *dev, char *buf, size_t size)
{
	int n;

	switch (dev->kind) {
	case BOOT_DEV_CDROM:
		if (dev->index != 0 || !be->has_cdrom)
			return -ENOENT;
		n = snprintf(buf, size, "/pci@i0cf8/pci8086,2922@%x/drive@0/"
		    "disk@0", BOARD_SLOT_AHCI);
		break;
	case BOOT_DEV_DISK:
		if (dev->index >= be->ndisks)
			return -ENOENT;
		if (be->disk_sata[dev->index])
			n = snprintf(buf, size, "/pci@i0cf8/pci8086,2922@%x/"
			    "drive@%x/disk@0", BOARD_SLOT_AHCI,
			    dev->index + 1u);
		else
			n = snprintf(buf, size, "/pci@i0cf8/scsi@%x/disk@0,0",
			    BOARD_SLOT_DISK0 + dev->index);
		break;
	case BOOT_DEV_NET:
		if (dev->index >= be->nnics)
			return -ENOENT;
		n = snprintf(buf, size, "/pci@i0cf8/ethernet@%x/"
		    "ethernet-phy@0", board_net_slot(dev->index));
		break;
	default:
		return -ENOENT;
	}
	return n > 0 && (size_t)n < size ? 0 : -ENOSPC;
}
