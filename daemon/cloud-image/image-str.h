/*
 * Copying text read from an image into fixed fields: cut to fit, always
 * terminated (such text is untrusted and may be of any length).  And
 * making it fit to show: what leaves the reader for people (where a
 * kernel came from, why it was chosen, errors) passes image_str_show()
 * (text-escape.h: control characters and invalid UTF-8 as \xNN); what
 * the guest is given (its command line) stays byte for byte.
 */
#ifndef VMMD_IMAGE_STR_H
#define VMMD_IMAGE_STR_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text-escape.h"

static inline void
image_strcpy(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memmove(dst, src, n);
	dst[n] = '\0';
}

/*
 * The text in s (a buffer of size bytes) escaped in place for showing,
 * cut to fit; 0 or -ENOMEM (then every byte that needed escaping is
 * replaced by '?').
 */
static inline int
image_str_show(char *s, size_t size)
{
	size_t len = strnlen(s, size);
	char *copy = malloc(len + 1);

	if (copy == NULL) {
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)s[i] < 0x20 ||
			    (unsigned char)s[i] >= 0x7f)
				s[i] = '?';
		return -ENOMEM;
	}
	memcpy(copy, s, len);
	text_escape(s, size, copy, len);
	free(copy);
	return 0;
}

#endif
