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

/*
 * Every line a test prints is TAP: a description that holds newlines (a
 * program's output quoted in it) is folded onto its one line, and every
 * line of a diagnostic starts with "# ".  One call's lines go out whole,
 * never mixed with another thread's (a viewer thread's log).
 */
static inline void
tap_emit(const char *first, const char *rest, int fold, const char *fmt,
    va_list ap)
{
	char *s = NULL, *p;
	int n;

	n = vasprintf(&s, fmt, ap);
	if (n < 0) {
		printf("%s(out of memory)\n", first);
		fflush(stdout);
		return;
	}
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
	flockfile(stdout);
	fputs(first, stdout);
	for (p = s; *p != '\0'; p++) {
		if (*p != '\n')
			putchar(*p);
		else if (fold)
			putchar(' ');
		else {
			putchar('\n');
			fputs(rest, stdout);
		}
	}
	putchar('\n');
	fflush(stdout);
	funlockfile(stdout);
	free(s);
}

static inline void __attribute__((format(printf, 2, 3)))
tap_ok(int cond, const char *fmt, ...)
{
	char head[32];
	va_list ap;

	tap_count++;
	if (!cond)
		tap_failed++;
	snprintf(head, sizeof(head), "%sok %d - ", cond ? "" : "not ",
	    tap_count);
	va_start(ap, fmt);
	tap_emit(head, "", 1, fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 1, 2)))
tap_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_emit("# ", "# ", 0, fmt, ap);
	va_end(ap);
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
