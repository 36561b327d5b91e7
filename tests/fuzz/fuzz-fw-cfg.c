/*
 * fw_cfg (fuzz-device.h): the selector, data and DMA ports over 64 KiB
 * of guest RAM at address 0, which host input fills (a selector s puts
 * up to 15 bytes at 4 * s) so that descriptors can be built there.  The
 * ACPI files are there as a firmware VM has them (built by the real
 * table writers at their first select, as the machine does), and the
 * SMBIOS ones, so that hostile selects and reads reach them too.
 */
#include <string.h>

#include "boot-smbios.h"
#include "boot-table-loader.h"
#include "fuzz-device.h"
#include "fw-cfg.h"

#define FUZZ_RAM	0x10000

static uint8_t fuzz_ram[FUZZ_RAM];
static const uint8_t fuzz_file[100] = { 1, 2, 3 };
static const uint8_t fuzz_ncpus[2] = { 1, 0 };

static struct boot_fw_acpi fuzz_acpi;
static uint8_t fuzz_smbios[BOOT_SMBIOS_TABLES_MAX];
static uint8_t fuzz_anchor[BOOT_SMBIOS_ANCHOR_LEN];

static int
fuzz_acpi_prepare(void *opaque)
{
	struct boot_acpi_config cfg;

	boot_acpi_config_direct(&cfg, 2);
	cfg.dsdt.mmio32_max = 0xfebfffff;
	return boot_fw_acpi_build(opaque, &cfg);
}

static struct fw_cfg_item fuzz_items[] = {
	{ .key = FW_CFG_NB_CPUS, .data = fuzz_ncpus, .len = 2 },
	{ .name = "etc/e820", .data = fuzz_file, .len = sizeof(fuzz_file) },
	{ .name = "bootorder", .data = fuzz_file, .len = 0 },
	{ .name = BOOT_ACPI_TABLES_FILE, .data = fuzz_acpi.tables,
	    .len = sizeof(fuzz_acpi.tables), .prepare = fuzz_acpi_prepare,
	    .opaque = &fuzz_acpi },
	{ .name = BOOT_ACPI_RSDP_FILE, .data = fuzz_acpi.rsdp,
	    .len = sizeof(fuzz_acpi.rsdp), .prepare = fuzz_acpi_prepare,
	    .opaque = &fuzz_acpi },
	{ .name = BOOT_TABLE_LOADER_FILE, .data = fuzz_acpi.loader,
	    .len = sizeof(fuzz_acpi.loader), .prepare = fuzz_acpi_prepare,
	    .opaque = &fuzz_acpi },
	{ .name = BOOT_SMBIOS_ANCHOR_FILE, .data = fuzz_anchor,
	    .len = sizeof(fuzz_anchor) },
	{ .name = BOOT_SMBIOS_TABLES_FILE, .data = fuzz_smbios, .len = 0 },
};

static void *
fuzz_fw_cfg_create(struct fake_host *fh)
{
	struct boot_smbios_config sm = { 2, 0x9000000, 0, NULL, "fuzz" };
	int len;

	memset(fuzz_ram, 0, sizeof(fuzz_ram));
	fh->mem = fuzz_ram;
	fh->mem_base = 0;
	fh->mem_size = sizeof(fuzz_ram);
	/* As a machine made anew: nothing built until it is selected. */
	memset(&fuzz_acpi, 0, sizeof(fuzz_acpi));
	len = boot_smbios_build(&sm, fuzz_smbios, sizeof(fuzz_smbios),
	    fuzz_anchor);
	fuzz_items[7].len = len > 0 ? (uint32_t)len : 0;
	return fw_cfg_new(&fh->host, fuzz_items,
	    sizeof(fuzz_items) / sizeof(fuzz_items[0]));
}

static void
fuzz_fw_cfg_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	memcpy(fuzz_ram + 4 * (size_t)sel, data, len);
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &fw_cfg_device_ops,
	.ranges = { { FW_CFG_SEL_OFFSET, 2 }, { FW_CFG_DMA_OFFSET, 8 } },
	.nranges = 2,
	.create = fuzz_fw_cfg_create,
	.input = fuzz_fw_cfg_input,
};
