/*
 * Unit tests for devices/edid.c and the bochs-display's EDID: the block
 * is EDID 1.4 (header, version, checksum), its first detailed timing is
 * the size asked for, read back as SeaBIOS's VGA BIOS reads it (bytes
 * 56-58 and 59-61, 12 bits each), marked preferred, with a refresh of
 * 60 Hz (more where the clock would be under 10 MHz) and at least
 * 460 us of vertical blanking; the range limits
 * descriptor covers that timing; sizes a timing cannot hold are
 * refused.  The device serves the block at 0 in BAR 2 (zeros after it,
 * zeros throughout without a size), as QEMU's bochs-display does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bochs-display.h"
#include "edid.h"
#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"

static uint8_t
sum(const uint8_t *e)
{
	uint8_t s = 0;

	for (int i = 0; i < EDID_BLOCK_LEN; i++)
		s += e[i];
	return s;
}

static void
check_size(uint32_t w, uint32_t h)
{
	static const uint8_t header[8] = {
		0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0,
	};
	uint8_t e[EDID_BLOCK_LEN];
	const uint8_t *d = e + 54, *r = e + 72;
	uint32_t xres, yres, hblank, vblank, htotal, vtotal;
	uint64_t clock, line_ns;
	double hz, khz;

	if (edid_build(e, w, h) < 0) {
		tap_ok(0, "%ux%u: built", w, h);
		return;
	}
	/* SeaBIOS's vgasrc/bochsdisplay.c: edid[56], [58] >> 4, ... */
	xres = e[56] | (e[58] & 0xf0) << 4;
	yres = e[59] | (e[61] & 0xf0) << 4;
	hblank = e[57] | (e[58] & 0x0f) << 8;
	vblank = e[60] | (e[61] & 0x0f) << 8;
	clock = (uint64_t)(d[0] | d[1] << 8) * 10000;
	htotal = xres + hblank;
	vtotal = yres + vblank;
	hz = (double)clock / ((double)htotal * vtotal);
	khz = (double)clock / htotal / 1000;
	line_ns = 1000000000ULL * htotal / clock;
	tap_ok(memcmp(e, header, 8) == 0 && e[18] == 1 && e[19] == 4 &&
	    sum(e) == 0 && e[126] == 0, "%ux%u: EDID 1.4 header, checksum, "
	    "no extension", w, h);
	tap_ok(xres == w && yres == h, "%ux%u: the first detailed timing "
	    "says %ux%u", w, h, xres, yres);
	tap_ok((e[24] & 0x02) && (e[20] & 0x80) && clock != 0,
	    "%ux%u: digital, the first timing preferred (native)", w, h);
	tap_ok(hz > 59.5 && (hz < 60.5 || clock == 10000000) &&
	    vblank * line_ns >= 460000,
	    "%ux%u: %.2f Hz, %u blank lines of %llu ns", w, h, hz, vblank,
	    (unsigned long long)line_ns);
	tap_ok(r[0] == 0 && r[1] == 0 && r[3] == 0xfd && r[5] <= hz &&
	    r[6] >= hz && r[7] <= khz && r[8] >= (khz > 255 ? 255 : khz) &&
	    r[9] * 10e6 >= clock, "%ux%u: range limits cover it (%u-%u Hz, "
	    "%u-%u kHz, %u MHz)", w, h, r[5], r[6], r[7], r[8], r[9] * 10);
	tap_ok(e[90 + 3] == 0xfc && memcmp(e + 95, "vmmd\n", 5) == 0,
	    "%ux%u: named vmmd", w, h);
}

/* One diagnostic value by key, as vm.info would show it. */
struct diag_find {
	struct device_diag d;
	const char *key;
	uint64_t value;
};

static void
diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_find *f = (struct diag_find *)d;

	(void)fmt;
	if (strcmp(key, f->key) == 0)
		f->value = value;
}

static uint64_t
diag(struct bochs_display *b, const char *key)
{
	struct diag_find f = { .d.put = diag_put, .key = key, .value = ~0ULL };

	bochs_display_device_ops.diag(b, &f.d);
	return f.value;
}

static void
test_device(struct fake_host *fh)
{
	struct bochs_display_config c = { .vram_size = 16u << 20,
	    .edid_width = 800, .edid_height = 600 };
	struct bochs_display *b;
	uint8_t e[EDID_BLOCK_LEN], got[EDID_BLOCK_LEN];
	uint64_t q = 0x5a5a5a5a5a5a5a5aULL;
	uint32_t v;
	bool same = true;

	b = bochs_display_new(&fh->host, &c);
	if (b == NULL)
		tap_bail("bochs_display_new");
	edid_build(e, 800, 600);
	for (unsigned int off = 0; off < EDID_BLOCK_LEN; off += 4) {
		bochs_display_device_ops.read(b,
		    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + off, &v, 4);
		memcpy(got + off, &v, 4);
	}
	tap_ok(memcmp(got, e, sizeof(e)) == 0, "BAR 2 at 0: the EDID for the "
	    "configured 800x600 (32-bit reads)");
	for (unsigned int off = 0; off < EDID_BLOCK_LEN; off++) {
		uint8_t byte;

		bochs_display_device_ops.read(b,
		    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + off, &byte, 1);
		same = same && byte == e[off];
	}
	tap_ok(same, "and byte by byte");
	bochs_display_device_ops.read(b,
	    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + 0x80, &q, 8);
	tap_ok(q == 0, "zeros after it");
	q = ~0ULL;
	bochs_display_device_ops.write(b,
	    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + 0x38, &q, 8);
	bochs_display_device_ops.read(b,
	    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR) + 0x38, &v, 4);
	tap_ok(memcmp(&v, e + 0x38, 4) == 0 && diag(b, "edid_reads") ==
	    EDID_BLOCK_LEN / 4 + EDID_BLOCK_LEN + 2,
	    "a guest's write leaves it as it was; reads counted");
	bochs_display_free(b);

	c.edid_width = 4096;
	c.edid_height = 2160;
	b = bochs_display_new(&fh->host, &c);
	q = 0x5a;
	bochs_display_device_ops.read(b,
	    PCI_BAR_OFFSET(BOCHS_DISPLAY_MMIO_BAR), &q, 8);
	tap_ok(b != NULL && q == 0, "4096 wide: no EDID, zeros (firmware "
	    "picks its own mode)");
	bochs_display_free(b);
}

int
main(void)
{
	struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
	uint8_t e[EDID_BLOCK_LEN];

	check_size(800, 600);
	check_size(1024, 768);
	check_size(1280, 1024);
	check_size(1920, 1080);
	check_size(320, 200);
	check_size(4095, 2160);
	tap_ok(edid_build(e, 4096, 2160) == -EINVAL, "4096 wide refused");
	tap_ok(edid_build(e, 800, 4096) == -EINVAL, "4096 high refused");
	tap_ok(edid_build(e, 0, 0) == -EINVAL, "0x0 refused");
	test_device(&fh);
	return tap_done();
}
