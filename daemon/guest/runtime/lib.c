/*
 * The C library functions a freestanding compiler may still call for
 * structure copies and initialisers.  String instructions are single
 * instructions to an emulator, so they are used for bulk copies.
 */
#include "rt.h"

void *
memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;

	__asm__ volatile("rep movsb"
	    : "+D"(d), "+S"(src), "+c"(n) : : "memory");
	return dst;
}

void *
memset(void *dst, int c, size_t n)
{
	void *d = dst;

	__asm__ volatile("rep stosb"
	    : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return dst;
}

int
memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *p = a, *q = b;

	for (; n > 0; n--, p++, q++)
		if (*p != *q)
			return *p - *q;
	return 0;
}

size_t
strlen(const char *s)
{
	const char *p = s;

	while (*p != '\0')
		p++;
	return p - s;
}

int
strcmp(const char *a, const char *b)
{
	while (*a != '\0' && *a == *b) {
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int
strncmp(const char *a, const char *b, size_t n)
{
	for (; n > 0; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (*a == '\0')
			break;
	}
	return 0;
}
