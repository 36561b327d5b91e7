/*
 * memhog: takes memory in the reference guest and gives it back, for the
 * linux suite's balloon step (lballoon.c) and bench/balloon.sh.  Built
 * static by build-guest.sh into the guest's initramfs as /usr/bin/memhog.
 *
 *   memhog MIB [SECONDS]
 *	mallocs MIB MiB and writes every page of it (a word per page: its
 *	number and this run's salt), so that the guest's kernel backs each
 *	page and the host behind it faults each one in; reads them back,
 *	prints
 *	    memhog: holding MIB MiB (pid PID, touched in T ms)
 *	and holds them until SIGUSR1, SIGTERM or SIGINT or, with SECONDS,
 *	that long.  Then it reads every page again (none may have changed
 *	while held: the host takes back only pages the guest freed),
 *	prints
 *	    memhog: MIB MiB intact
 *	frees them (one munmap: glibc maps so large a block on its own)
 *	and prints
 *	    memhog: freed MIB MiB
 *
 * Exit status 0, or 1 with a message on stderr (no memory, a page that
 * changed, bad arguments).  The guest's kernel may kill it instead when
 * it cannot back the pages (out of memory): the caller looks for the
 * "holding" line.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB_MAX		(64 * 1024)

static void die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "memhog: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static long
memhog_number(const char *s, long max, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 1 || v > max)
		die("%s '%s': want 1 to %ld", what, s, max);
	return v;
}

static double
memhog_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The word page i holds. */
static uint64_t
memhog_word(size_t i, uint64_t salt)
{
	return ((uint64_t)i << 20) ^ salt;
}

/* The first page of n that does not hold its word, or n. */
static size_t
memhog_check(const unsigned char *p, size_t n, size_t page, uint64_t salt)
{
	uint64_t w;

	for (size_t i = 0; i < n; i++) {
		memcpy(&w, p + i * page, sizeof(w));
		if (w != memhog_word(i, salt))
			return i;
	}
	return n;
}

int
main(int argc, char **argv)
{
	long mib, secs = 0;
	size_t page, n, bad;
	unsigned char *p;
	uint64_t salt, w;
	struct timespec wait;
	sigset_t set;
	double t0;

	if (argc != 2 && argc != 3)
		die("usage: memhog MIB [SECONDS]");
	mib = memhog_number(argv[1], MIB_MAX, "MIB");
	if (argc == 3)
		secs = memhog_number(argv[2], 86400, "SECONDS");
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Blocked before anything is held: a signal waits for sigwait. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		die("sigprocmask failed");

	page = (size_t)sysconf(_SC_PAGESIZE);
	n = ((size_t)mib << 20) / page;
	salt = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL;
	t0 = memhog_ms();
	if ((p = malloc((size_t)mib << 20)) == NULL)
		die("cannot allocate %ld MiB", mib);
	for (size_t i = 0; i < n; i++) {
		w = memhog_word(i, salt);
		memcpy(p + i * page, &w, sizeof(w));
	}
	if ((bad = memhog_check(p, n, page, salt)) != n)
		die("page %zu of %zu reads back wrong after the write", bad, n);
	printf("memhog: holding %ld MiB (pid %ld, touched in %.0f ms)\n", mib,
	    (long)getpid(), memhog_ms() - t0);

	if (secs > 0) {
		wait.tv_sec = secs;
		wait.tv_nsec = 0;
		/* A signal ends the wait early; the time running out too. */
		(void)sigtimedwait(&set, NULL, &wait);
	} else {
		int sig;

		if (sigwait(&set, &sig) != 0)
			die("sigwait failed");
	}
	if ((bad = memhog_check(p, n, page, salt)) != n)
		die("page %zu of %zu changed while held", bad, n);
	printf("memhog: %ld MiB intact\n", mib);
	free(p);
	printf("memhog: freed %ld MiB\n", mib);
	return 0;
}
