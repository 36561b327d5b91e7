/*
 * balloon-watch: follows a VMM's resident memory while its guest takes
 * memory and frees it (bench/balloon.sh, inside the nested test host).
 *
 *   balloon-watch LABEL PID CONSOLE_LOG BACK_MIB
 *
 * Samples /proc/PID/status's VmRSS every 100 ms and reads the guest's
 * console log as it grows, for the lines the guest's benchmark script
 * and memhog (tests/linux/memhog.c) print:
 *
 *   balloon-bench: start        RSS "before" (the guest settled)
 *   memhog: holding ...         from here the peak is the highest sample;
 *                               memhog's own time to touch its pages, and
 *                               how much of the RSS transparent huge
 *                               pages back (printed)
 *   memhog: freed ...           the clock of the give-back starts
 *
 * After the free it samples until the RSS has not fallen by 2 MiB for
 * 10 s (at most 300 s).  The samples are printed as TAP comments (at
 * every line seen, and when the RSS moved 4 MiB or every 5 s), then one
 * line
 *
 *   result LABEL BEFORE PEAK AFTER BACK_MS SETTLED_MS TOUCH_MS
 *
 * in KiB, in ms from "freed" to the RSS BACK_MIB below the peak and to
 * its last fall of 2 MiB (-1: never), and the guest's time to touch
 * its pages as memhog measured it (-1: not said).  Prints figures; exit status 1
 * only when a line never came (the guest did not run its part) or the
 * process went away.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_MS	100
#define STILL_KIB	2048L
#define STILL_MS	10000
#define AFTER_MS	300000
/* Boot, settling and memhog's touching, in an emulated test host. */
#define LINES_MS	900000
#define LOG_MAX		(4 << 20)

enum phase { WAIT_START, WAIT_HOLD, HOLDING, FREED };

struct watch {
	const char	*label;
	int		 log_fd;
	char		*text;		/* the log so far, NUL-terminated */
	size_t		 len;
	enum phase	 phase;
	double		 t0;		/* of the watch */
	double		 freed_t;
	long		 before, peak, still, after;
	double		 still_t, back_t, settled_t;
	double		 touch_ms;	/* memhog's own figure */
	long		 shown;
	double		 shown_t;
};

static double
watch_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* VmRSS of pid in KiB, or -1 when the process is gone. */
static long
watch_rss(const char *status)
{
	char line[256];
	long kib = -1;
	FILE *f;

	if ((f = fopen(status, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

/*
 * AnonHugePages of smaps_rollup in KiB, or -1: how much of the RSS
 * transparent huge pages back (a guest's fault then brings 2 MiB).
 */
static long
watch_huge(const char *pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/smaps_rollup", pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "AnonHugePages:", 14) == 0) {
			kib = strtol(line + 14, NULL, 10);
			break;
		}
	fclose(f);
	return kib;
}

/* Appends what the log gained since the last call. */
static void
watch_read_log(struct watch *w)
{
	char buf[4096];
	ssize_t n;
	char *p;

	while ((n = read(w->log_fd, buf, sizeof(buf))) > 0 &&
	    w->len + (size_t)n < LOG_MAX) {
		if ((p = realloc(w->text, w->len + (size_t)n + 1)) == NULL)
			return;
		w->text = p;
		memcpy(w->text + w->len, buf, (size_t)n);
		w->len += (size_t)n;
		w->text[w->len] = '\0';
	}
}

static bool
watch_seen(const struct watch *w, const char *line)
{
	return w->text != NULL && strstr(w->text, line) != NULL;
}

/* "touched in T ms" on memhog's "holding" line, or -1. */
static double
watch_touch_ms(const struct watch *w)
{
	const char *p = strstr(w->text, "memhog: holding");
	const char *nl;

	if (p == NULL)
		return -1;
	nl = strchr(p, '\n');
	p = strstr(p, "touched in ");
	if (p == NULL || (nl != NULL && p > nl))
		return -1;
	return strtod(p + strlen("touched in "), NULL);
}

static void
watch_show(struct watch *w, double t, long rss, const char *what)
{
	printf("# %s: %+8.2f s  VmRSS %7ld KiB%s%s\n", w->label,
	    (t - w->t0) / 1e3, rss, what[0] != '\0' ? "  " : "", what);
	w->shown = rss;
	w->shown_t = t;
}

int
main(int argc, char **argv)
{
	struct watch w = { .phase = WAIT_START, .before = -1, .peak = -1,
		.back_t = -1, .settled_t = -1, .touch_ms = -1, .shown = -1 };
	char status[64];
	long back_kib, rss;
	double t;
	char *end;

	if (argc != 5) {
		fprintf(stderr, "usage: balloon-watch LABEL PID CONSOLE_LOG "
		    "BACK_MIB\n");
		return 2;
	}
	w.label = argv[1];
	snprintf(status, sizeof(status), "/proc/%s/status", argv[2]);
	back_kib = strtol(argv[4], &end, 10) * 1024;
	if (*end != '\0' || back_kib <= 0) {
		fprintf(stderr, "balloon-watch: BACK_MIB '%s'\n", argv[4]);
		return 2;
	}
	/* The VMM may not have made the log yet. */
	w.t0 = watch_ms();
	while ((w.log_fd = open(argv[3], O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno != ENOENT || watch_ms() - w.t0 > LINES_MS) {
			printf("# %s: cannot open %s: %s\n", w.label, argv[3],
			    strerror(errno));
			return 1;
		}
		usleep(SAMPLE_MS * 1000);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		usleep(SAMPLE_MS * 1000);
		t = watch_ms();
		if ((rss = watch_rss(status)) < 0) {
			printf("# %s: process %s went away\n", w.label, argv[2]);
			return 1;
		}
		watch_read_log(&w);
		switch (w.phase) {
		case WAIT_START:
			if (watch_seen(&w, "balloon-bench: start")) {
				w.before = rss;
				w.phase = WAIT_HOLD;
				watch_show(&w, t, rss, "the guest settled: "
				    "memhog starts");
			}
			break;
		case WAIT_HOLD:
			if (watch_seen(&w, "memhog: holding")) {
				w.peak = rss;
				w.phase = HOLDING;
				w.touch_ms = watch_touch_ms(&w);
				watch_show(&w, t, rss, "memhog holds its memory");
				printf("# %s: %ld KiB of it in transparent huge "
				    "pages\n", w.label, watch_huge(argv[2]));
			}
			break;
		case HOLDING:
			if (rss > w.peak)
				w.peak = rss;
			if (watch_seen(&w, "memhog: freed")) {
				w.phase = FREED;
				w.freed_t = t;
				w.still = rss;
				w.still_t = t;
				watch_show(&w, t, rss, "memhog freed it");
			}
			break;
		case FREED:
			if (rss < w.still - STILL_KIB) {
				w.still = rss;
				w.still_t = t;
				w.settled_t = t - w.freed_t;
			}
			if (w.back_t < 0 && w.peak - rss >= back_kib) {
				w.back_t = t - w.freed_t;
				watch_show(&w, t, rss, "the fall wanted");
			}
			if (t - w.still_t >= STILL_MS ||
			    t - w.freed_t >= AFTER_MS) {
				w.after = rss;
				watch_show(&w, t, rss, "settled");
				printf("result %s %ld %ld %ld %.0f %.0f %.0f\n",
				    w.label, w.before, w.peak, w.after,
				    w.back_t, w.settled_t, w.touch_ms);
				return 0;
			}
			break;
		}
		if (w.phase != FREED && t - w.t0 > LINES_MS) {
			printf("# %s: no progress in the guest's log after "
			    "%d s\n", w.label, LINES_MS / 1000);
			return 1;
		}
		if (w.phase >= HOLDING && (labs(rss - w.shown) >= 4096 ||
		    t - w.shown_t >= 5000))
			watch_show(&w, t, rss, "");
	}
}
