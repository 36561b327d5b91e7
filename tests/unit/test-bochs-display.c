/*
 * The bochs-display (devices/bochs-display.c) behind a real host bridge
 * and PCI bus: its IDs and BAR sizes as firmware reads them, the
 * expansion ROM placed, enabled and read back through the MMIO bus, the
 * DISPI registers as SeaBIOS's VGA BIOS and bochs-drm program them, and
 * hostile writes: resolutions beyond the memory, other depths, offsets
 * past the end, unknown IDs, bad sizes, all refused and counted.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bochs-display.h"
#include "fake-host.h"
#include "iobus.h"
#include "pcibus.h"
#include "pci-config.h"
#include "pci-host.h"
#include "tap.h"

#define SLOT		13
#define VRAM		(16u << 20)
#define FB_ADDR		0xc0000000u
#define MMIO_ADDR	0xc1000000u
#define ROM_ADDR	0xc1010000u

static struct iobus pio, mmio;

static void
conf_addr(unsigned int reg)
{
	uint32_t a = 0x80000000u | SLOT << 11 | reg;

	iobus_write(&pio, 0xcf8, &a, 4);
}

static uint32_t
conf_read(unsigned int reg, unsigned int size)
{
	uint32_t v = 0;

	conf_addr(reg & ~3u);
	iobus_read(&pio, 0xcfc + (reg & 3), &v, size);
	return v;
}

static void
conf_write(unsigned int reg, uint32_t v, unsigned int size)
{
	conf_addr(reg & ~3u);
	iobus_write(&pio, 0xcfc + (reg & 3), &v, size);
}

static uint16_t
dispi_read(unsigned int index)
{
	uint16_t v = 0x5a5a;

	iobus_read(&mmio, MMIO_ADDR + 0x500 + 2 * index, &v, 2);
	return v;
}

static void
dispi_write(unsigned int index, uint16_t v)
{
	iobus_write(&mmio, MMIO_ADDR + 0x500 + 2 * index, &v, 2);
}

/* One diagnostic value by key, as vm.info would show it. */
struct diag_find {
	struct device_diag d;
	const char *key;
	uint64_t value;
	bool found;
};

static void
diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_find *f = (struct diag_find *)d;

	(void)fmt;
	if (strcmp(key, f->key) == 0) {
		f->value = value;
		f->found = true;
	}
}

static uint64_t
diag(struct bochs_display *b, const char *key)
{
	struct diag_find f = { .d.put = diag_put, .key = key };

	bochs_display_device_ops.diag(b, &f.d);
	return f.found ? f.value : ~0ULL;
}

/* A mode as SeaBIOS's VGA BIOS sets it: disable, program, enable. */
static void
set_mode(uint16_t x, uint16_t y, uint16_t bpp, uint16_t flags)
{
	dispi_write(BOCHS_DISPI_ENABLE, 0);
	dispi_write(BOCHS_DISPI_XRES, x);
	dispi_write(BOCHS_DISPI_YRES, y);
	dispi_write(BOCHS_DISPI_BPP, bpp);
	dispi_write(BOCHS_DISPI_ENABLE, BOCHS_DISPI_ENABLED |
	    BOCHS_DISPI_LFB_ENABLED | flags);
}

static void
test_config(void)
{
	conf_write(PCI_BAR0, 0xffffffff, 4);
	TAP_EQ(conf_read(PCI_BAR0, 4), ~(VRAM - 1) | 0x8,
	    "BAR 0 sizes as 16 MiB of prefetchable memory");
	TAP_EQ(conf_read(PCI_BAR0 + 4, 4), 0, "BAR 1 absent");
	conf_write(PCI_BAR0 + 8, 0xffffffff, 4);
	TAP_EQ(conf_read(PCI_BAR0 + 8, 4), 0xfffff000,
	    "BAR 2 sizes as 4 KiB of memory");
	conf_write(PCI_ROM_ADDRESS, 0xfffffffe, 4);
	TAP_EQ(conf_read(PCI_ROM_ADDRESS, 4), 0xffff8000,
	    "ROM BAR sizes as 32 KiB for a 28 KiB image, enable bit clear");
	conf_write(PCI_BAR0, FB_ADDR, 4);
	conf_write(PCI_BAR0 + 8, MMIO_ADDR, 4);
	conf_write(PCI_ROM_ADDRESS, ROM_ADDR, 4);
}

static void
test_rom(struct bochs_display *b, const uint8_t *image, size_t len)
{
	uint8_t buf[8];
	uint32_t v = 0;
	bool same = true;

	TAP_EQ(iobus_read(&mmio, ROM_ADDR, &v, 4), -ENOENT,
	    "ROM: not decoded before its enable bit");
	conf_write(PCI_ROM_ADDRESS, ROM_ADDR | PCI_ROM_ENABLE, 4);
	TAP_EQ(iobus_read(&mmio, ROM_ADDR, &v, 4), -ENOENT,
	    "ROM: nor before memory decoding");
	conf_write(PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_IO, 2);
	v = 0;
	iobus_read(&mmio, ROM_ADDR, &v, 2);
	TAP_EQ(v, 0xaa55, "ROM: the image's signature reads back");
	for (size_t off = 0; off < len; off += 4) {
		iobus_read(&mmio, ROM_ADDR + off, &v, 4);
		if (memcmp(&v, image + off, 4) != 0)
			same = false;
	}
	tap_ok(same, "ROM: the whole image reads back by dwords");
	iobus_read(&mmio, ROM_ADDR + len, buf, 8);
	TAP_EQ(buf[0] | buf[7], 0, "ROM: zeros past the image");
	v = 0x12345678;
	iobus_write(&mmio, ROM_ADDR, &v, 4);
	iobus_read(&mmio, ROM_ADDR, &v, 2);
	TAP_EQ(v & 0xffff, 0xaa55, "ROM: writes change nothing");
	conf_write(PCI_ROM_ADDRESS, ROM_ADDR, 4);
	TAP_EQ(iobus_read(&mmio, ROM_ADDR, &v, 4), -ENOENT,
	    "ROM: gone when its enable bit clears");
	(void)b;
}

static void
test_dispi(struct bochs_display *b)
{
	struct bochs_display_mode m;
	uint32_t v = 0;

	TAP_EQ(dispi_read(BOCHS_DISPI_ID), BOCHS_DISPI_ID5, "DISPI ID 0xb0c5");
	TAP_EQ(dispi_read(BOCHS_DISPI_VIDEO_MEMORY_64K), VRAM >> 16,
	    "video memory in 64 KiB units");
	iobus_read(&mmio, MMIO_ADDR + 0x600, &v, 4);
	TAP_EQ(v, 8, "QEMU extended registers: 8 bytes");
	iobus_read(&mmio, MMIO_ADDR + 0x604, &v, 4);
	TAP_EQ(v, BOCHS_QEXT_LITTLE, "framebuffer little endian");
	dispi_write(BOCHS_DISPI_ENABLE, BOCHS_DISPI_GETCAPS);
	tap_ok(dispi_read(BOCHS_DISPI_XRES) == BOCHS_DISPLAY_MAX_XRES &&
	    dispi_read(BOCHS_DISPI_YRES) == BOCHS_DISPLAY_MAX_YRES &&
	    dispi_read(BOCHS_DISPI_BPP) == 32, "GETCAPS: the maxima");
	bochs_display_get_mode(b, &m);
	tap_ok(!m.enabled, "no mode at power-on");

	set_mode(1024, 768, 32, 0);
	bochs_display_get_mode(b, &m);
	tap_ok(m.enabled && m.width == 1024 && m.height == 768 &&
	    m.stride == 4096 && m.offset == 0, "1024x768x32 enabled "
	    "(%ux%u stride %u)", m.width, m.height, m.stride);
	TAP_EQ(dispi_read(BOCHS_DISPI_VIRT_WIDTH), 1024, "virtual width");
	TAP_EQ(dispi_read(BOCHS_DISPI_VIRT_HEIGHT), VRAM / 4096,
	    "virtual height: what the memory holds");
	TAP_EQ(diag(b, "mode_sets"), 1, "diagnostics: one mode set");

	/* bochs-drm pans: virtual width and offsets while enabled. */
	dispi_write(BOCHS_DISPI_VIRT_WIDTH, 2048);
	dispi_write(BOCHS_DISPI_Y_OFFSET, 768);
	dispi_write(BOCHS_DISPI_X_OFFSET, 16);
	bochs_display_get_mode(b, &m);
	tap_ok(m.enabled && m.stride == 8192 &&
	    m.offset == 768ull * 8192 + 64, "panning: stride %u offset 0x%llx",
	    m.stride, (unsigned long long)m.offset);
	dispi_write(BOCHS_DISPI_X_OFFSET, 2048 - 1024 + 1);
	bochs_display_get_mode(b, &m);
	tap_ok(!m.enabled && !(dispi_read(BOCHS_DISPI_ENABLE) &
	    BOCHS_DISPI_ENABLED), "x offset past the virtual width: "
	    "disabled, and reads so");
	dispi_write(BOCHS_DISPI_X_OFFSET, 0);
	dispi_write(BOCHS_DISPI_Y_OFFSET, 0);
	dispi_write(BOCHS_DISPI_VIRT_WIDTH, 0);

	set_mode(800, 600, 32, BOCHS_DISPI_NOCLEARMEM);
	bochs_display_get_mode(b, &m);
	tap_ok(m.enabled && m.width == 800 && m.stride == 3200,
	    "800x600 with NOCLEARMEM");
	TAP_EQ(diag(b, "bad_modes"), 1, "one refusal so far");
}

static void
test_hostile(struct bochs_display *b)
{
	struct bochs_display_mode m;
	uint64_t bad = diag(b, "bad_writes"), modes = diag(b, "bad_modes");
	uint64_t q = 0;
	uint32_t v;

	/* 16384x16384x4 is 1 GiB: the registers take it, the mode not. */
	set_mode(16384, 16384, 32, 0);
	bochs_display_get_mode(b, &m);
	tap_ok(!m.enabled, "a resolution beyond the memory is refused");
	TAP_EQ(diag(b, "bad_modes"), modes + 1, "and counted");
	tap_ok(!(dispi_read(BOCHS_DISPI_ENABLE) & BOCHS_DISPI_ENABLED),
	    "ENABLE reads back disabled");
	set_mode(16385, 8, 32, 0);
	TAP_EQ(dispi_read(BOCHS_DISPI_XRES), 16384,
	    "an x resolution past the maximum is dropped");
	TAP_EQ(diag(b, "bad_writes"), bad + 1, "and counted");
	set_mode(640, 480, 16, 0);
	TAP_EQ(dispi_read(BOCHS_DISPI_BPP), 32, "16 bpp dropped: 32 only");
	set_mode(640, 480, 24, 0);
	TAP_EQ(dispi_read(BOCHS_DISPI_BPP), 32, "24 bpp dropped");
	set_mode(640, 480, 0, 0);
	TAP_EQ(dispi_read(BOCHS_DISPI_BPP), 32, "0 bpp dropped");
	bochs_display_get_mode(b, &m);
	tap_ok(m.enabled && m.width == 640, "640x480x32 still fine");
	TAP_EQ(diag(b, "bad_writes"), bad + 4, "each bad write counted");

	/* The last line past the end, by the y offset. */
	dispi_write(BOCHS_DISPI_Y_OFFSET, (uint16_t)(VRAM / 2560 - 479));
	bochs_display_get_mode(b, &m);
	tap_ok(!m.enabled, "a y offset past the end: disabled");
	dispi_write(BOCHS_DISPI_Y_OFFSET, (uint16_t)(VRAM / 2560 - 480));
	dispi_write(BOCHS_DISPI_ENABLE, BOCHS_DISPI_ENABLED |
	    BOCHS_DISPI_NOCLEARMEM);
	bochs_display_get_mode(b, &m);
	tap_ok(m.enabled && m.offset + 479ull * 2560 + 2560 <= VRAM,
	    "the last lines that fit: enabled");
	dispi_write(BOCHS_DISPI_Y_OFFSET, 0);
	dispi_write(BOCHS_DISPI_VIRT_WIDTH, 0xffff);
	bochs_display_get_mode(b, &m);
	tap_ok(!m.enabled, "a virtual width whose 480 lines overflow the "
	    "memory: disabled");
	dispi_write(BOCHS_DISPI_YRES, 0xffff);
	TAP_EQ(dispi_read(BOCHS_DISPI_YRES), 480, "yres 0xffff dropped");
	dispi_write(BOCHS_DISPI_VIRT_WIDTH, 0);

	bad = diag(b, "bad_writes");
	dispi_write(BOCHS_DISPI_ID, 0x1234);
	TAP_EQ(dispi_read(BOCHS_DISPI_ID), BOCHS_DISPI_ID5, "unknown ID dropped");
	dispi_write(BOCHS_DISPI_ID, BOCHS_DISPI_ID0 + 4);
	TAP_EQ(dispi_read(BOCHS_DISPI_ID), BOCHS_DISPI_ID0 + 4,
	    "an older ID is taken");
	dispi_write(BOCHS_DISPI_VIDEO_MEMORY_64K, 1);
	TAP_EQ(dispi_read(BOCHS_DISPI_VIDEO_MEMORY_64K), VRAM >> 16,
	    "video memory size is read-only");
	dispi_write(BOCHS_DISPI_BANK, VRAM >> 16);
	TAP_EQ(dispi_read(BOCHS_DISPI_BANK), 0, "bank past the memory dropped");
	v = BOCHS_QEXT_BIG;
	iobus_write(&mmio, MMIO_ADDR + 0x604, &v, 4);
	iobus_read(&mmio, MMIO_ADDR + 0x604, &v, 4);
	TAP_EQ(v, BOCHS_QEXT_LITTLE, "big endian refused");
	TAP_EQ(diag(b, "bad_writes"), bad + 4, "all four counted");

	bad = diag(b, "bad_accesses");
	v = 0;
	iobus_write(&mmio, MMIO_ADDR + 0x500 + 2 * BOCHS_DISPI_XRES, &v, 4);
	TAP_EQ(dispi_read(BOCHS_DISPI_XRES), 640, "a dword DISPI write: "
	    "dropped");
	iobus_write(&mmio, MMIO_ADDR + 0x501, &v, 2);
	iobus_write(&mmio, MMIO_ADDR + 0x500 + 2 * BOCHS_DISPI_NREGS, &v, 2);
	iobus_write(&mmio, MMIO_ADDR + 0xff8, &q, 8);
	iobus_read(&mmio, MMIO_ADDR + 0x700, &v, 1);
	tap_ok(diag(b, "bad_accesses") == bad + 5, "odd accesses counted "
	    "(%llu)", (unsigned long long)(diag(b, "bad_accesses") - bad));
	TAP_EQ(diag(b, "bad_offset"), PCI_BAR_OFFSET(2) + 0x700,
	    "the last one's offset in the diagnostics");
	v = 0;
	iobus_read(&mmio, MMIO_ADDR + 0x400, &v, 1);
	q = 0x20;
	iobus_write(&mmio, MMIO_ADDR + 0x400, &q, 1);
	tap_ok(v == 0xff && diag(b, "bad_accesses") == bad + 5 &&
	    diag(b, "vga_accesses") == 2, "the VGA ports' place: ones, "
	    "writes ignored, counted apart");
	v = 0x5a;
	iobus_read(&mmio, MMIO_ADDR + 0x8, &v, 1);
	tap_ok(v == 0 && diag(b, "edid_reads") == 1 &&
	    diag(b, "bad_accesses") == bad + 5, "no EDID: zeros, counted "
	    "apart");

	set_mode(640, 480, 32, 0);
	bochs_display_get_mode(b, &m);
	tap_ok(m.enabled, "enabled again after all that");
	dispi_write(BOCHS_DISPI_ENABLE, 0);
	bochs_display_get_mode(b, &m);
	tap_ok(!m.enabled, "disabled again");
}

static void
test_new(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct bochs_display_config c = { .vram_size = 3u << 20 };
	uint8_t rom[4] = { 0x55, 0xaa };

	tap_ok(bochs_display_new(&fh.host, &c) == NULL,
	    "memory not a power of two: refused");
	c.vram_size = 1u << 19;
	tap_ok(bochs_display_new(&fh.host, &c) == NULL, "512 KiB: refused");
	c.vram_size = 1u << 20;
	c.rom = rom;
	tap_ok(bochs_display_new(&fh.host, &c) == NULL,
	    "a ROM without a length: refused");
	c.rom_len = sizeof(rom);
	struct bochs_display *b = bochs_display_new(&fh.host, &c);
	tap_ok(b != NULL && diag(b, "rom_size") == 2048,
	    "a tiny ROM gets the smallest ROM BAR, 2 KiB");
	bochs_display_free(b);
}

int
main(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	struct bochs_display_config c = { .vram_size = VRAM };
	struct pci_host_ops ops;
	struct pci_host *ph;
	struct bochs_display *b;
	struct pcibus pb;
	struct vdev hv, bv;
	uint8_t *image;
	size_t len = 28 * 1024;

	image = malloc(len);
	if (image == NULL)
		tap_bail("out of memory");
	for (size_t i = 0; i < len; i++)
		image[i] = (uint8_t)(i * 7 + 3);
	image[0] = 0x55;
	image[1] = 0xaa;
	c.rom = image;
	c.rom_len = len;
	if (iobus_init(&pio) < 0 || iobus_init(&mmio) < 0)
		tap_bail("out of memory");
	pcibus_init(&pb, &pio, &mmio);
	pcibus_host_ops(&pb, &ops);
	ph = pci_host_new(NULL, &ops);
	vdev_init(&hv, &pci_host_device_ops, ph);
	if (iobus_register(&pio, 0xcf8, 8, &hv, 0) < 0)
		tap_bail("cannot register the host bridge");
	b = bochs_display_new(&fh.host, &c);
	if (b == NULL)
		tap_bail("cannot make the device");
	vdev_init(&bv, &bochs_display_device_ops, b);
	TAP_EQ(pcibus_add(&pb, SLOT, 0, &bv), 0, "in slot 13");
	TAP_EQ(conf_read(0, 4), 0x11111234, "IDs 1234:1111");
	TAP_EQ(conf_read(0x08, 4) >> 8, 0x030000, "class: VGA display");
	TAP_EQ(conf_read(PCI_SUBSYSTEM_VENDOR_ID, 4), 0x11001af4,
	    "subsystem 1af4:1100");
	TAP_EQ(conf_read(PCI_INTERRUPT_PIN, 1), 0, "no interrupt pin");

	test_config();
	test_rom(b, image, len);
	test_dispi(b);
	test_hostile(b);
	test_new();
	conf_write(PCI_COMMAND, 0, 2);
	TAP_EQ(iobus_read(&mmio, MMIO_ADDR + 0x500, &len, 2), -ENOENT,
	    "registers gone with memory decoding off");

	vdev_destroy(&bv);	/* frees b */
	vdev_destroy(&hv);	/* frees ph */
	free(image);
	return tap_done();
}
