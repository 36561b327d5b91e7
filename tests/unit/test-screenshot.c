/* PNG screenshots: encode a known image, decode it with libpng. */
#include <errno.h>
#include <stdbool.h>
#include <png.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"
#include "screenshot.h"

#define W	67	/* odd sizes: no accidental alignment */
#define H	41
#define STRIDE	(W * 4 + 12)

static uint32_t
pixel(uint32_t x, uint32_t y)
{
	return (x * 3) << 16 | (y * 5) << 8 | ((x ^ y) & 0xff) | 0xab000000u;
}

int
main(void)
{
	static uint8_t fb[STRIDE * H];
	struct screenshot_image img = { fb, W, H, STRIDE };
	char path[] = "/tmp/test-png.XXXXXX";
	png_image decoded = { .version = PNG_IMAGE_VERSION };
	uint8_t *rgb;
	bool same = true;
	int fd;

	for (uint32_t y = 0; y < H; y++)
		for (uint32_t x = 0; x < W; x++)
			((uint32_t *)(fb + y * STRIDE))[x] = pixel(x, y);
	fd = mkstemp(path);
	if (fd < 0)
		tap_bail("mkstemp");
	close(fd);
	tap_ok(screenshot_write_path(&img, path) == 0, "encode %dx%d", W, H);

	tap_ok(png_image_begin_read_from_file(&decoded, path),
	    "libpng reads it back");
	tap_ok(decoded.width == W && decoded.height == H, "%ux%u",
	    decoded.width, decoded.height);
	decoded.format = PNG_FORMAT_RGB;
	rgb = malloc(PNG_IMAGE_SIZE(decoded));
	tap_ok(rgb != NULL && png_image_finish_read(&decoded, NULL, rgb, 0, NULL),
	    "and decodes it");
	for (uint32_t y = 0; y < H && same; y++)
		for (uint32_t x = 0; x < W && same; x++) {
			const uint8_t *p = rgb + (y * W + x) * 3;
			uint32_t v = pixel(x, y);

			same = p[0] == (uint8_t)(v >> 16) &&
			    p[1] == (uint8_t)(v >> 8) && p[2] == (uint8_t)v;
		}
	tap_ok(same, "every pixel matches");
	free(rgb);
	unlink(path);

	tap_ok(screenshot_write_path(&img, "/nonexistent-dir/x.png") == -ENOENT,
	    "a bad path gives -ENOENT");
	img.stride = W;
	tap_ok(screenshot_write_fd(&img, 1) == -EINVAL, "a bad stride gives -EINVAL");
	img.stride = STRIDE;
	tap_ok(screenshot_write_fd(&img, -1) == -EBADF, "a bad fd gives -EBADF");
	return tap_done();
}
