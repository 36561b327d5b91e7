/*
 * The state section reader (devices/dev-state.c) against each device's
 * table, through the device's own load op (its check() and what it
 * recomputes after a load included).  Input: one byte choosing the
 * device (uart, rtc, i8042, post, port92, pflash, a virtio-rng PCI
 * function over 64 KiB of guest RAM, the PCI host bridge, in that
 * order), or one of the machine's tables read alone (clock, pic,
 * ioapic, pit, vcpu, virtq), or one of the firmware's devices (acpi-pm,
 * fw-cfg with an item built on demand, piix3-isa, piix4-pm,
 * bochs-display, an AHCI HBA with a disk and a CD-ROM whose backend
 * refuses every request) and the VM generation ID, modulo 21, then the
 * section(s).  A state
 * a device takes must save again to bytes a fresh device takes and
 * saves identically; then the loaded device has its registers read
 * (the virtio function: each queue kicked, so that it works from the
 * loaded rings and indices) and a few seconds of VM time pass, so that
 * loaded values reach the code that derives from them (the RTC's
 * timers).  A table read alone must save again to the same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acpi-pm.h"
#include "ahci.h"
#include "bochs-display.h"
#include "dev-state.h"
#include "fake-host.h"
#include "fw-cfg.h"
#include "i8042.h"
#include "machine-state.h"
#include "pci-config.h"
#include "pci-host.h"
#include "vcpu-state.h"
#include "virtio-pci.h"
#include "virtio-rng.h"
#include "pflash.h"
#include "piix3-isa.h"
#include "piix4-pm.h"
#include "port92.h"
#include "post.h"
#include "vmgenid.h"
#include "rtc.h"
#include "uart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_FLASH_SIZE	(2 * 4096)
#define FUZZ_RAM_BASE	0x100000
#define FUZZ_RAM_SIZE	(64 * 1024)
/* The first devices, the tables, then the firmware's devices. */
#define FUZZ_DEVICES	8
#define FUZZ_TABLES	6
#define FUZZ_MORE	7
#define FUZZ_CHOICES	(FUZZ_DEVICES + FUZZ_TABLES + FUZZ_MORE)

struct fuzz_state_dev {
	const struct device_ops *ops;
	uint64_t nregs;			/* offsets read after a load */
};

static const struct fuzz_state_dev fuzz_state_devs[] = {
	{ &uart_device_ops, 8 },
	{ &rtc_device_ops, 2 },
	{ &i8042_device_ops, 5 },
	{ &post_device_ops, 1 },
	{ &port92_device_ops, 1 },
	{ &pflash_device_ops, 0x40 },
	{ &virtio_pci_device_ops, 0 },
	{ &pci_host_device_ops, 8 },
	{ &acpi_pm_device_ops, ACPI_PM_GPE0_OFFSET + ACPI_PM_GPE0_LEN },
	{ &fw_cfg_device_ops, 2 },
	{ &piix3_isa_device_ops, 1 },
	{ &piix4_pm_device_ops, 1 },
	{ &bochs_display_device_ops, 0 },
	{ &ahci_device_ops, 0 },
	{ &vmgenid_device_ops, 0 },
};

/* The machine's tables, read alone: the struct each reads into. */
static const struct {
	const struct dev_state_table *t;
	size_t size;
} fuzz_state_tables[] = {
	{ &machine_clock_table, sizeof(struct machine_clock_state) },
	{ &machine_pic_table, sizeof(struct machine_pic_state) },
	{ &machine_ioapic_table, sizeof(struct machine_ioapic_state) },
	{ &machine_pit_table, sizeof(struct machine_pit_state) },
	{ &vcpu_state_table, sizeof(struct vcpu_state) },
	{ &virtq_state_table, sizeof(struct virtq_state) },
};

static void
fuzz_state_table(unsigned int which, const uint8_t *data, size_t size)
{
	const struct dev_state_table *t = fuzz_state_tables[which].t;
	size_t n = fuzz_state_tables[which].size;
	struct dev_state_buf s1 = { 0 }, s2 = { 0 };
	struct dev_state_error err;
	void *a = calloc(1, n), *b = calloc(1, n);

	if (a == NULL || b == NULL)
		abort();
	if (dev_state_load(t, a, data, size, &err) == 0 &&
	    (dev_state_save(t, a, &s1) != 0 ||
	    dev_state_load(t, b, s1.data, s1.len, &err) != 0 ||
	    dev_state_save(t, b, &s2) != 0 || s1.len != s2.len ||
	    memcmp(s1.data, s2.data, s1.len) != 0))
		abort();
	dev_state_buf_free(&s1);
	dev_state_buf_free(&s2);
	free(a);
	free(b);
}

static const struct pci_host_ops fuzz_pci_host_ops;

static void
fuzz_uart_tx(void *opaque, const uint8_t *buf, size_t len)
{
}

/* fw-cfg's item built on demand, as the ACPI tables are. */
static uint8_t fuzz_built[16];

static int
fuzz_build(void *opaque)
{
	memset(fuzz_built, 0x5a, sizeof(fuzz_built));
	return 0;
}

/* A loaded HBA may take up issued commands: each is refused. */
static int
fuzz_blk_submit(void *ctx, struct blk_io *io)
{
	return -EIO;
}

static void
fuzz_blk_drain(void *ctx)
{
}

static const struct blk_backend_ops fuzz_blk_ops = {
	.submit = fuzz_blk_submit,
	.drain = fuzz_blk_drain,
};

static void *
fuzz_state_new(unsigned int which, struct fake_host *fh,
    struct pflash_store *st)
{
	static uint8_t image[FUZZ_FLASH_SIZE];
	static const struct uart_backend ube = { .tx = fuzz_uart_tx };
	static const struct fw_cfg_item items[] = {
		{ .name = "plain", .data = image, .len = 4 },
		{ .name = "etc/built", .data = fuzz_built,
		    .len = sizeof(fuzz_built), .prepare = fuzz_build },
	};
	static const struct bochs_display_config bc = {
		.vram_size = 1u << 20 };
	static const struct blk_backend be = { .ops = &fuzz_blk_ops,
		.size = 1u << 20, .serial = "fuzz" };
	static const uint8_t vmgenid_id[VMGENID_LEN] = { 0 };
	static const struct ahci_drive drives[2] = {
		{ AHCI_DRIVE_DISK, &be }, { AHCI_DRIVE_CDROM, &be },
	};

	switch (which) {
	case 0:
		return uart_new(&fh->host, &ube);
	case 1:
		return rtc_new(&fh->host);
	case 2:
		return i8042_new(&fh->host);
	case 3:
		return post_new(&fh->host);
	case 4:
		return port92_new(&fh->host);
	case 6:
		return virtio_pci_new(&fh->host, virtio_rng_new(&fh->host));
	case 7:
		return pci_host_new_rcr(&fh->host, &fuzz_pci_host_ops);
	case 8:
		return acpi_pm_new(&fh->host, 5);
	case 9:
		return fw_cfg_new(&fh->host, items, 2);
	case 10:
		return piix3_isa_new(&fh->host);
	case 11:
		return piix4_pm_new(&fh->host);
	case 12:
		return bochs_display_new(&fh->host, &bc);
	case 13:
		return ahci_new(&fh->host, drives, 2);
	case 14:
		return vmgenid_new(&fh->host, FUZZ_RAM_BASE, vmgenid_id);
	default:
		if (pflash_store_init(st, image, sizeof(image), 4096,
		    false) != 0)
			abort();
		return pflash_new(&fh->host, st);
	}
}

static void
fuzz_state_host(struct fake_host *fh)
{
	static uint8_t ram[FUZZ_RAM_SIZE];

	fake_host_init(fh);
	/* One RAM for both devices, as a restored guest's is its own. */
	fh->mem = ram;
	fh->mem_base = FUZZ_RAM_BASE;
	fh->mem_size = sizeof(ram);
	fh->vm_now = 1000000000000LL;
	fh->wall.tv_sec = 1700000000;
	fh->wall_follows_vm = true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fake_host fa, fb;
	struct pflash_store sa, sb;
	struct dev_state_buf s1 = { 0 }, s2 = { 0 };
	struct dev_state_error err;
	const struct fuzz_state_dev *d;
	unsigned int which;
	void *a, *b;
	uint8_t reg[8];

	if (size < 1)
		return 0;
	which = data[0] % FUZZ_CHOICES;
	if (which >= FUZZ_DEVICES && which < FUZZ_DEVICES + FUZZ_TABLES) {
		fuzz_state_table(which - FUZZ_DEVICES, data + 1, size - 1);
		return 0;
	}
	if (which >= FUZZ_DEVICES)
		which -= FUZZ_TABLES;
	d = &fuzz_state_devs[which];
	fuzz_state_host(&fa);
	fuzz_state_host(&fb);
	a = fuzz_state_new(which, &fa, &sa);
	b = fuzz_state_new(which, &fb, &sb);
	if (a == NULL || b == NULL)
		abort();

	if (d->ops->load(a, data + 1, size - 1, &err) == 0) {
		/* What was taken saves to what a fresh device takes alike. */
		if (d->ops->save(a, &s1) != 0 ||
		    d->ops->load(b, s1.data, s1.len, &err) != 0 ||
		    d->ops->save(b, &s2) != 0 || s1.len != s2.len ||
		    memcmp(s1.data, s2.data, s1.len) != 0)
			abort();
		for (uint64_t r = 0; r < d->nregs; r++)
			d->ops->read(a, r, reg, 1);
		for (unsigned int q = 0; which == 6 && q < 2; q++) {
			uint16_t v = (uint16_t)q;

			d->ops->write(a, PCI_BAR_OFFSET(VIRTIO_PCI_BAR) +
			    VIRTIO_PCI_NOTIFY + VIRTIO_PCI_NOTIFY_MULT * q,
			    &v, 2);
		}
		/* bochs-display: each DISPI register read, as a mode shows. */
		for (unsigned int r = 0; which == 12 &&
		    r < BOCHS_DISPI_NREGS; r++)
			d->ops->read(a, PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) +
			    BOCHS_DISPLAY_DISPI + 2 * r, reg, 2);
		fake_host_advance(&fa, 3000000000LL);
	}

	dev_state_buf_free(&s1);
	dev_state_buf_free(&s2);
	d->ops->free(a);
	d->ops->free(b);
	if (which == 5) {
		pflash_store_fini(&sa);
		pflash_store_fini(&sb);
	}
	return 0;
}
