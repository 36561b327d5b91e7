/*
 * fw_cfg (fuzz-device.h): the selector, data and DMA ports over 64 KiB
 * of guest RAM at address 0, which host input fills (a selector s puts
 * up to 15 bytes at 4 * s) so that descriptors can be built there.
 */
#include <string.h>

#include "fuzz-device.h"
#include "fw-cfg.h"

#define FUZZ_RAM	0x10000

static uint8_t fuzz_ram[FUZZ_RAM];
static const uint8_t fuzz_file[100] = { 1, 2, 3 };
static const uint8_t fuzz_ncpus[2] = { 1, 0 };

static const struct fw_cfg_item fuzz_items[] = {
	{ .key = FW_CFG_NB_CPUS, .data = fuzz_ncpus, .len = 2 },
	{ .name = "etc/e820", .data = fuzz_file, .len = sizeof(fuzz_file) },
	{ .name = "bootorder", .data = fuzz_file, .len = 0 },
};

static void *
fuzz_fw_cfg_create(struct fake_host *fh)
{
	memset(fuzz_ram, 0, sizeof(fuzz_ram));
	fh->mem = fuzz_ram;
	fh->mem_base = 0;
	fh->mem_size = sizeof(fuzz_ram);
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
