/*
 * The bochs-display (fuzz-device.h): the DISPI registers and QEMU's
 * extended registers in BAR 2, as the I/O bus delivers them; host input
 * reads the expansion ROM (selector even, at the offset of the next two
 * bytes) or checks the mode (odd): whatever the guest wrote, a mode
 * shown lies inside the framebuffer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bochs-display.h"
#include "fuzz-device.h"
#include "pci-config.h"

#define FUZZ_VRAM	(1u << 20)

static void *
fuzz_bochs_create(struct fake_host *fh)
{
	static const uint8_t rom[3000] = { 0x55, 0xaa, 6 };
	const struct bochs_display_config c = {
		.vram_size = FUZZ_VRAM,
		.edid_width = 800,		/* an EDID to read */
		.edid_height = 600,
		.rom = rom,
		.rom_len = sizeof(rom),
	};

	return bochs_display_new(&fh->host, &c);
}

static void
fuzz_bochs_input(void *dev, struct fake_host *fh, uint8_t sel,
    const uint8_t *data, size_t len)
{
	struct bochs_display_mode m;
	uint32_t v;

	if (sel % 2 == 0) {
		uint64_t off = len >= 2 ? (data[0] | data[1] << 8) % 4096 : 0;

		bochs_display_device_ops.read(dev,
		    PCI_BAR_OFFSET(PCI_ROM_BAR) + (off & ~3u), &v, 4);
		return;
	}
	bochs_display_get_mode(dev, &m);
	if (m.enabled && (m.bpp != 32 || m.width == 0 || m.height == 0 ||
	    m.stride < 4ull * m.width || m.offset + (m.height - 1) *
	    (uint64_t)m.stride + 4ull * m.width > FUZZ_VRAM)) {
		fprintf(stderr, "bochs-display: mode %ux%ux%u stride %u "
		    "offset %llu outside the memory\n", m.width, m.height,
		    m.bpp, m.stride, (unsigned long long)m.offset);
		abort();
	}
}

const struct fuzz_device fuzz_device_desc = {
	.ops = &bochs_display_device_ops,
	.ranges = {
	    { PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + BOCHS_DISPLAY_DISPI,
		0x100 },
	    { PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + BOCHS_DISPLAY_QEXT,
		0x100 } },
	.nranges = 2,
	.create = fuzz_bochs_create,
	.input = fuzz_bochs_input,
};
