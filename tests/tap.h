/*
 * Minimal TAP producer for the test programs: meson runs them with
 * protocol 'tap'.  Header-only so that every test binary is one file.
 */
#ifndef VMMD_TAP_H
#define VMMD_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * One count for the whole program: a test's checks may be made in a
 * helper library's files too (the kvm harness).  Weak definitions in
 * every file that includes this merge into one at link time.
 */
__attribute__((weak)) int tap_count;
__attribute__((weak)) int tap_failed;

static inline void __attribute__((format(printf, 2, 3)))
tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static inline void __attribute__((format(printf, 1, 2)))
tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/*
 * Skip the whole program.  With the TAP protocol, meson (1.0, Debian 12)
 * takes the skip from the plan "1..0 # SKIP" and counts any non-zero
 * exit status, 77 included, as an error: so the status is 0.
 */
static inline void __attribute__((noreturn, format(printf, 1, 2)))
tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	fputs("1..0 # SKIP ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(0);
}

/* Bail out: something the rest of the test depends on failed. */
static inline void __attribute__((noreturn, format(printf, 1, 2)))
tap_bail(const char *fmt, ...)
{
	va_list ap;

	fputs("Bail out! ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(1);
}

static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#define TAP_EQ(a, b, ...) tap_ok((a) == (b), __VA_ARGS__)

#endif
