/*
 * A bochs-display: the PCI display function QEMU calls so (1234:1111,
 * subsystem 1af4:1100), as a VGA-class function (03.00.00) so that
 * firmware runs its ROM, a linear framebuffer and the
 * VBE DISPI registers that set its mode, with no VGA of its own.
 * SeaBIOS runs its VGA BIOS (vgabios-bochs-display.bin) from the
 * expansion ROM and draws text mode into the framebuffer from then on;
 * Linux's bochs-drm drives it as a plain KMS device.
 *
 *  BAR 0: the framebuffer (prefetchable memory, vram_size bytes).  It is
 *         guest RAM the machine maps wherever the guest places the BAR:
 *         accesses reach the device only where nothing is mapped, and
 *         then read as ones and write nothing.
 *  BAR 2: 4 KiB of registers: the DISPI registers at 0x500, 16 bits
 *         each (index i at 0x500 + 2 * i); QEMU's extended registers at
 *         0x600 (their size, and the framebuffer's byte order: little
 *         endian only).  Where QEMU's standard VGA has its VGA ports
 *         (0x400 to 0x41f) reads give ones and writes do nothing.  At
 *         0x000, as in QEMU, an EDID block (edid.h) whose preferred
 *         mode is the configured size, which firmware (SeaBIOS's VGA
 *         BIOS) and drivers take as theirs; zeros up to 0x3ff, and
 *         zeros throughout without a size (no EDID header: they pick
 *         a mode of their own).  Writes there do nothing.
 *  ROM:   the VGA BIOS image given at creation, if any.
 *
 * The mode the guest sets is validated when it enables it, and again
 * at every write while enabled: 32 bits per pixel only, the visible
 * picture (offsets included) inside the framebuffer.  A mode that fails
 * leaves the display disabled; a register write out of range (a
 * resolution beyond BOCHS_DISPLAY_MAX_XRES/YRES, a bpp but 32, a bank
 * past the memory, an unknown ID) is dropped.  Both are counted.
 *
 * Plain state under the device's lock (device.h).
 */
#ifndef VMMD_BOCHS_DISPLAY_H
#define VMMD_BOCHS_DISPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define BOCHS_DISPLAY_FB_BAR	0
#define BOCHS_DISPLAY_MMIO_BAR	2
#define BOCHS_DISPLAY_MMIO_SIZE	0x1000
#define BOCHS_DISPLAY_VGA	0x400	/* VGA ports elsewhere: none here */
#define BOCHS_DISPLAY_DISPI	0x500	/* the DISPI registers in BAR 2 */
#define BOCHS_DISPLAY_QEXT	0x600	/* QEMU's extended registers */
#define BOCHS_DISPLAY_MAX_XRES	16384
#define BOCHS_DISPLAY_MAX_YRES	16384

/* The DISPI register indexes (bochs' vbe.h). */
enum bochs_dispi_reg {
	BOCHS_DISPI_ID,
	BOCHS_DISPI_XRES,
	BOCHS_DISPI_YRES,
	BOCHS_DISPI_BPP,
	BOCHS_DISPI_ENABLE,
	BOCHS_DISPI_BANK,
	BOCHS_DISPI_VIRT_WIDTH,
	BOCHS_DISPI_VIRT_HEIGHT,
	BOCHS_DISPI_X_OFFSET,
	BOCHS_DISPI_Y_OFFSET,
	BOCHS_DISPI_VIDEO_MEMORY_64K,
	BOCHS_DISPI_NREGS,
};

#define BOCHS_DISPI_ID0		0xb0c0	/* the oldest ID a guest may ask */
#define BOCHS_DISPI_ID5		0xb0c5	/* the newest, and ours */
#define BOCHS_DISPI_ENABLED	0x01
#define BOCHS_DISPI_GETCAPS	0x02
#define BOCHS_DISPI_8BIT_DAC	0x20
#define BOCHS_DISPI_LFB_ENABLED	0x40
#define BOCHS_DISPI_NOCLEARMEM	0x80

/* QEMU's extended registers, offsets from BOCHS_DISPLAY_QEXT. */
#define BOCHS_QEXT_SIZE		0x0	/* their size, read-only */
#define BOCHS_QEXT_ENDIAN	0x4
#define  BOCHS_QEXT_LITTLE	0x1e1e1e1e
#define  BOCHS_QEXT_BIG		0xbebebebe

struct bochs_display_config {
	/*
	 * The framebuffer's size: a power of two, 1 MiB to 1 GiB.  The
	 * device never touches that memory (the host maps it, and the
	 * display may hold writers to it on a fault while this device's
	 * lock is wanted): enabling a mode does not clear it, as if the
	 * guest always set NOCLEARMEM.
	 */
	uint64_t vram_size;
	/*
	 * The monitor's native size its EDID gives, or 0 x 0: no EDID (a
	 * size edid_build() refuses is none too).
	 */
	uint32_t edid_width, edid_height;
	/* The expansion ROM's image, or NULL: none.  Copied. */
	const void *rom;
	size_t rom_len;			/* at most 16 MiB */
};

/* The mode the guest set, as a display shows it. */
struct bochs_display_mode {
	bool enabled;
	uint32_t width, height;
	uint32_t bpp;
	uint32_t stride;		/* bytes: virtual width * 4 */
	uint64_t offset;		/* of the top left visible pixel */
};

struct bochs_display;

/* NULL on ENOMEM or a bad config. */
struct bochs_display *bochs_display_new(const struct device_host *host,
    const struct bochs_display_config *cfg);
void bochs_display_free(struct bochs_display *b);

/* The mode now (enabled false: nothing to show). */
void bochs_display_get_mode(const struct bochs_display *b,
    struct bochs_display_mode *mode);

/* A board entry's ops for what bochs_display_new() returns. */
extern const struct device_ops bochs_display_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table bochs_display_state_table;

#endif
