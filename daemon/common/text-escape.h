/*
 * Text from outside (a guest's disk image, a guest) made safe to show
 * on a terminal or in a log line: every byte below 0x20, 0x7f, the C1
 * controls U+0080..U+009F (which some terminals obey) and every byte
 * that is not part of valid UTF-8 (RFC 3629) become "\xNN"; the rest,
 * backslashes included, is copied as it is.  The result is valid UTF-8
 * with no control characters.  Header only, so that any program or
 * module can use it without a library of its own.
 */
#ifndef VMMD_TEXT_ESCAPE_H
#define VMMD_TEXT_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence of a printable character at s, 0
 * for a control character or a byte that starts no valid sequence. */
static inline size_t
text_escape_seq(const unsigned char *s, size_t avail)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x20 || s[0] == 0x7f)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, past U+10FFFF, C1 controls. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
	    (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

/*
 * src (len bytes) escaped into dst (dstlen bytes, NUL-terminated, cut
 * at a whole character or escape when it does not fit).  Returns the
 * length written.
 */
static inline size_t
text_escape(char *dst, size_t dstlen, const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, i = 0, n;

	if (dstlen == 0)
		return 0;
	while (i < len) {
		if ((n = text_escape_seq(s + i, len - i)) > 0) {
			if (o + n >= dstlen)
				break;
			for (size_t k = 0; k < n; k++)
				dst[o++] = (char)s[i + k];
			i += n;
			continue;
		}
		if (o + 4 >= dstlen)
			break;
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hex[s[i] >> 4];
		dst[o++] = hex[s[i] & 0xf];
		i++;
	}
	dst[o] = '\0';
	return o;
}

#endif
