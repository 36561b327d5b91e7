/*
 * An EDID 1.4 base block (VESA E-EDID Release A, Revision 2) for a
 * virtual monitor whose native mode is the display's size: the first
 * detailed timing descriptor is that mode at 60 Hz with reduced
 * blanking (in the manner of VESA CVT 1.2's, section 3.4), marked
 * preferred; a range limits descriptor that covers it, the monitor's
 * name ("vmmd"), sRGB colour.  SeaBIOS's bochs-display VGA BIOS and
 * Linux's bochs-drm take their mode from that first descriptor.
 */
#ifndef VMMD_EDID_H
#define VMMD_EDID_H

#include <stdint.h>

#define EDID_BLOCK_LEN		128
/* A detailed timing holds 12 bits of each size. */
#define EDID_MAX_SIZE		4095
#define EDID_MIN_SIZE		64

/*
 * The block for a width x height monitor into out: 0, or -EINVAL for a
 * size outside EDID_MIN_SIZE..EDID_MAX_SIZE.
 */
int	edid_build(uint8_t out[EDID_BLOCK_LEN], uint32_t width,
	    uint32_t height);

#endif
