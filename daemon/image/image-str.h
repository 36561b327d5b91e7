/*
 * Copying text read from an image into fixed fields: cut to fit, always
 * terminated (such text is untrusted and may be of any length).
 */
#ifndef VMMD_IMAGE_STR_H
#define VMMD_IMAGE_STR_H

#include <string.h>

static inline void
image_strcpy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memmove(dst, src, n);
	dst[n] = '\0';
}

#endif
