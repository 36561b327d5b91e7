/*
 * PNG encoding with libpng.  libpng reports errors by longjmp(); every
 * object that must survive one is volatile or allocated before setjmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <stdlib.h>
#include <unistd.h>

#include "screenshot.h"

struct screenshot_sink {
	int fd;
	int err;		/* first write error, -errno */
};

static void
screenshot_sink_write(png_structp png, png_bytep data, size_t len)
{
	struct screenshot_sink *sink = png_get_io_ptr(png);

	while (len > 0 && sink->err == 0) {
		ssize_t n = write(sink->fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sink->err = n < 0 ? -errno : -EIO;
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	if (sink->err != 0)
		png_error(png, "write failed");
}

static void
screenshot_sink_flush(png_structp png)
{
}

/* libpng would print; the caller reports the error it gets back. */
static void
screenshot_png_error(png_structp png, png_const_charp msg)
{
	png_longjmp(png, 1);
}

static void
screenshot_png_warning(png_structp png, png_const_charp msg)
{
}

int
screenshot_write_fd(const struct screenshot_image *img, int fd)
{
	struct screenshot_sink sink = { fd, 0 };
	png_structp png;
	png_infop info;
	uint8_t *volatile row = NULL;
	volatile int r = -EIO;

	if (img->pixels == NULL || img->width == 0 || img->height == 0 ||
	    img->width > 0x7fffffffu / 4 || img->stride < img->width * 4u)
		return -EINVAL;
	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
	    screenshot_png_error, screenshot_png_warning);
	if (png == NULL)
		return -ENOMEM;
	info = png_create_info_struct(png);
	if (info == NULL) {
		png_destroy_write_struct(&png, NULL);
		return -ENOMEM;
	}
	row = malloc((size_t)img->width * 3);
	if (row == NULL) {
		r = -ENOMEM;
		goto destroy;
	}
	if (setjmp(png_jmpbuf(png))) {
		r = sink.err != 0 ? sink.err : -EIO;
		goto destroy;
	}
	png_set_write_fn(png, &sink, screenshot_sink_write, screenshot_sink_flush);
	png_set_IHDR(png, info, img->width, img->height, 8, PNG_COLOR_TYPE_RGB,
	    PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
	    PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (uint32_t y = 0; y < img->height; y++) {
		const uint32_t *src = (const uint32_t *)
		    ((const uint8_t *)img->pixels + (size_t)y * img->stride);

		for (uint32_t x = 0; x < img->width; x++) {
			row[3 * x] = (uint8_t)(src[x] >> 16);
			row[3 * x + 1] = (uint8_t)(src[x] >> 8);
			row[3 * x + 2] = (uint8_t)src[x];
		}
		png_write_row(png, row);
	}
	png_write_end(png, NULL);
	r = 0;
destroy:
	png_destroy_write_struct(&png, &info);
	free(row);
	return r;
}

int
screenshot_write_path(const struct screenshot_image *img, const char *path)
{
	int fd, r;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = screenshot_write_fd(img, fd);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlink(path);
	return r;
}
