/*
 * Screenshots: an x8r8g8b8 framebuffer (little-endian 32-bit pixels) to
 * a PNG file, 8-bit RGB, through libpng.  (Not png.h: that would shadow
 * libpng's own header for everyone using this folder.)
 */
#ifndef VMMD_SCREENSHOT_H
#define VMMD_SCREENSHOT_H

#include <stdint.h>

struct screenshot_image {
	const void *pixels;
	uint32_t width;
	uint32_t height;
	uint32_t stride;	/* bytes, >= 4 * width */
};

/*
 * Write the image to fd (not closed; written from its current offset).
 * 0, or -EINVAL (bad geometry), -ENOMEM, -EIO (libpng failed), or the
 * -errno of a failed write.
 */
int screenshot_write_fd(const struct screenshot_image *img, int fd);

/* Create or truncate path (mode 0600) and write the image.  0 or -errno;
 * a partly written file is removed. */
int screenshot_write_path(const struct screenshot_image *img, const char *path);

#endif
