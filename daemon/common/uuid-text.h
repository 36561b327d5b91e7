/*
 * A VM's UUID (RFC 4122) as text, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
 * with lowercase hex digits, and as its 16 bytes in the RFC's order
 * (most significant first: the text's digits left to right).  Which
 * fields SMBIOS stores byte-swapped is boot-smbios.h's business.
 * Header only, so that the supervisor, the worker and their tests use
 * one definition without a library of their own.
 */
#ifndef VMMD_UUID_TEXT_H
#define VMMD_UUID_TEXT_H

#include <stdbool.h>
#include <stdint.h>

#define UUID_TEXT_LEN	36	/* without the NUL */

static inline int
uuid_text_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * s in the form above (either case, nothing before or after) into
 * out: true, or false and out unspecified.
 */
static inline bool
uuid_text_parse(const char *s, uint8_t out[16])
{
	unsigned int i, n = 0;
	int hi, lo;

	for (i = 0; i < UUID_TEXT_LEN; ) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i++] != '-')
				return false;
			continue;
		}
		if ((hi = uuid_text_digit(s[i])) < 0 ||
		    (lo = uuid_text_digit(s[i + 1])) < 0)
			return false;
		out[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	return s[UUID_TEXT_LEN] == '\0';
}

/* u as text, lowercase, into buf (UUID_TEXT_LEN + 1 bytes). */
static inline void
uuid_text_format(const uint8_t u[16], char buf[UUID_TEXT_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned int i, n = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf[n++] = '-';
		buf[n++] = hex[u[i] >> 4];
		buf[n++] = hex[u[i] & 15];
	}
	buf[n] = '\0';
}

/* Random bytes (16 of them) made a version 4, RFC 4122 variant UUID. */
static inline void
uuid_text_make_v4(uint8_t u[16])
{
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

#endif
