/*
 * How long from vm.start to the guest's first serial byte, with the
 * daemon already running: the time a user waits after `vmctl start`.
 *
 * A private vmmd runs the hello test guest ITERATIONS times (default 20);
 * the first byte is seen through inotify on the console log, which the
 * worker writes as soon as its event loop drains the UART.  Prints the
 * minimum, median and maximum, then the median of each step of the
 * start as the worker timed it (vm.info's stats.start), so that a step
 * that grew shows.  With VMMD_BENCH_QEMU (a qemu-system-x86_64), QEMU
 * boots the same guest as often, each start after one of vmmd's, with
 * -M microvm (QEMU's fastest to start: -M pc spends seconds in SeaBIOS
 * where real mode is emulated), from its exec to the first byte on its
 * serial port, a pipe.  Then a fleet of FLEET guests (default 20) is
 * started twice: all at once, each vm.start on a connection of its own
 * as that many vmctl processes would, and one after another; each time
 * from the first request to the last guest's first serial byte.  A
 * figure, not a test: nothing is asserted.
 *
 *   VMMD_BIN=... VMMD_GUEST_HELLO=... [VMMD_BENCH_QEMU=...]
 *   bench/start-latency [ITERATIONS [FLEET]]
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * QEMU -M microvm from its exec to the first byte of the guest's serial
 * output, in ms; -1 when none came within 10 s.
 */
static double
qemu_first_byte(const char *qemu, const char *guest)
{
	char *argv[] = { (char *)qemu, "-enable-kvm", "-M", "microvm",
		"-cpu", "host,-arch-capabilities", "-m", "32", "-nodefaults",
		"-no-user-config", "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-kernel", (char *)guest, NULL };
	struct pollfd pfd;
	double t0, ms = -1;
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	t0 = h_now_ms();
	if ((pid = fork()) == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(p[1], 1);
		dup2(null, 2);
		execvp(qemu, argv);
		_exit(127);
	}
	close(p[1]);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	if (pid > 0 && poll(&pfd, 1, 10000) == 1 && read(p[0], &c, 1) == 1)
		ms = h_now_ms() - t0;
	close(p[0]);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return ms;
}

/* The steps of vm.info's stats.start, in order. */
static const char *const steps[] = {
	"supervisor_us", "exec_us", "link_us", "sandbox_us", "backends_us",
	"machine_us", "load_us", "thread_us", "guest_us", "total_us",
};
#define NSTEPS	(sizeof(steps) / sizeof(steps[0]))

/* name's steps into us[k][i] (microseconds; -1 when absent). */
static void
start_steps(struct h_conn *c, const char *name, double (*us)[NSTEPS],
    int i)
{
	struct json_object *r, *stats = NULL, *start = NULL;

	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"%s\"}", name);
	if (json_object_object_get_ex(h_ret(r), "stats", &stats))
		json_object_object_get_ex(stats, "start", &start);
	for (size_t k = 0; k < NSTEPS; k++)
		us[i][k] = (double)h_int(start, steps[k], -1);
	json_object_put(r);
}

static double
median_of(double (*us)[NSTEPS], int n, size_t k)
{
	double v[1000];

	for (int i = 0; i < n; i++)
		v[i] = us[i][k];
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/*
 * Console logs that got bytes, as the inotify watch on their directory
 * reports them: wait_logs() passes each modified file's name to got(),
 * which says whether all that is waited for came.
 */
struct log_wait {
	bool (*got)(struct log_wait *, const char *file);
	const char *name;	/* one guest's (wait_first_byte) */
	bool *seen;		/* fleet0..fleet(n-1)'s (wait_fleet_bytes) */
	int n, left;
};

/* Read ifd's events until w->got() says done; 0, or -1 on timeout. */
static int
wait_logs(int ifd, struct log_wait *w, int timeout_ms)
{
	char buf[4096] __attribute__((aligned(8)));
	double deadline = h_now_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = ifd, .events = POLLIN };
		int left = (int)(deadline - h_now_ms());
		ssize_t n;
		char *p;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -1;
		n = read(ifd, buf, sizeof(buf));
		for (p = buf; n > 0 && p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if ((ev->mask & IN_MODIFY) && ev->len > 0 &&
			    w->got(w, ev->name))
				return 0;
			p += sizeof(*ev) + ev->len;
		}
	}
}

static bool
got_name(struct log_wait *w, const char *file)
{
	size_t len = strlen(w->name);

	return strncmp(file, w->name, len) == 0 &&
	    strcmp(file + len, ".log") == 0;
}

/* Wait until the console log of NAME gets bytes; -1 on timeout. */
static int
wait_first_byte(int ifd, const char *name, int timeout_ms)
{
	struct log_wait w = { .got = got_name, .name = name };

	return wait_logs(ifd, &w, timeout_ms);
}

static bool
got_fleet(struct log_wait *w, const char *file)
{
	int k;
	char end;

	if (sscanf(file, "fleet%d.lo%c", &k, &end) == 2 && end == 'g' &&
	    k >= 0 && k < w->n && !w->seen[k]) {
		w->seen[k] = true;
		w->left--;
	}
	return w->left == 0;
}

/*
 * Wait until the console logs of fleet0..fleet(n-1) all got bytes;
 * seen[] says which did.  0, or -1 on timeout.
 */
static int
wait_fleet_bytes(int ifd, bool *seen, int n, int timeout_ms)
{
	struct log_wait w = { .got = got_fleet, .seen = seen, .n = n,
	    .left = n };

	for (int i = 0; i < n; i++)
		w.left -= seen[i];
	return w.left == 0 ? 0 : wait_logs(ifd, &w, timeout_ms);
}

/*
 * Start fleet0..fleet(n-1), all at once (parallel) or one after another,
 * until each printed its first byte; the ms that took, or -1.  Stops
 * them again.
 */
static double
fleet_start(struct h_daemon *d, struct h_conn *c, int ifd, int n,
    bool parallel)
{
	struct h_conn **conns = calloc((size_t)n, sizeof(*conns));
	int64_t *ids = calloc((size_t)n, sizeof(*ids));
	bool *seen = calloc((size_t)n, sizeof(*seen));
	char stale[4096] __attribute__((aligned(8)));
	double t0, ms = -1;
	char name[32];
	int i;

	if (conns == NULL || ids == NULL || seen == NULL)
		tap_bail("out of memory");
	/* What the logs got before (the last round's stops) is not news. */
	usleep(200000);
	while (read(ifd, stale, sizeof(stale)) > 0)
		;
	for (i = 0; i < n; i++)
		if ((conns[i] = h_connect(d)) == NULL)
			tap_bail("cannot connect %d clients", n);
	t0 = h_now_ms();
	for (i = 0; i < n; i++) {
		struct json_object *args = json_object_new_object();

		snprintf(name, sizeof(name), "fleet%d", i);
		json_object_object_add(args, "name",
		    json_object_new_string(name));
		ids[i] = h_send_request(conns[i], "vm.start", args);
		if (!parallel && wait_fleet_bytes(ifd, seen, i + 1, 10000) < 0)
			goto out;
	}
	if (wait_fleet_bytes(ifd, seen, n, 20000) == 0)
		ms = h_now_ms() - t0;
out:
	for (i = 0; i < n; i++) {
		json_object_put(h_wait_reply(conns[i], ids[i], H_REPLY_MS));
		h_close(conns[i]);
		snprintf(name, sizeof(name), "fleet%d", i);
		h_stop(c, name, true, 10, H_REPLY_MS);
	}
	free(seen);
	free(ids);
	free(conns);
	return ms;
}

int
main(int argc, char *argv[])
{
	int iterations = argc > 1 ? atoi(argv[1]) : 20;
	int nfleet = argc > 2 ? atoi(argv[2]) : 20;
	double par, seq;
	struct h_daemon *d;
	struct h_conn *c;
	const char *qemu = getenv("VMMD_BENCH_QEMU");
	double *ms, *qms, (*us)[NSTEPS];
	int qdone = 0;
	char logdir[4096], name[32];
	int i, ifd, done = 0;

	if (iterations < 1 || iterations > 1000 || nfleet < 0 ||
	    nfleet > 200) {
		fprintf(stderr, "usage: start-latency [ITERATIONS 1..1000 "
		    "[FLEET 0..200]]\n");
		return 2;
	}
	h_init();
	d = h_daemon_start();
	c = h_connect(d);
	ms = calloc(iterations, sizeof(*ms));
	us = calloc(iterations, sizeof(*us));
	qms = calloc(iterations, sizeof(*qms));
	if (d == NULL || c == NULL || ms == NULL || us == NULL || qms == NULL)
		tap_bail("cannot start a private vmmd");

	snprintf(logdir, sizeof(logdir), "%s", h_console_log(d, "x"));
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0 || inotify_add_watch(ifd, dirname(logdir), IN_MODIFY) < 0)
		tap_bail("inotify: %s", strerror(errno));

	for (i = 0; i < iterations; i++) {
		struct json_object *args;
		double t0;
		int64_t id;

		snprintf(name, sizeof(name), "lat%d", i);
		if (h_create(c, name, "\"kernel\":\"%s\",\"memory_mib\":32",
		    h_env("VMMD_GUEST_HELLO")) != 0)
			tap_bail("vm.create %s failed", name);
		args = json_object_new_object();
		json_object_object_add(args, "name",
		    json_object_new_string(name));
		t0 = h_now_ms();
		id = h_send_request(c, "vm.start", args);
		if (wait_first_byte(ifd, name, 10000) < 0)
			tap_bail("%s: no console output within 10 s", name);
		ms[done] = h_now_ms() - t0;
		json_object_put(h_wait_reply(c, id, H_REPLY_MS));
		start_steps(c, name, us, done++);
		if (qemu != NULL && *qemu != '\0' && (qms[qdone] =
		    qemu_first_byte(qemu, h_env("VMMD_GUEST_HELLO"))) >= 0)
			qdone++;
		h_stop(c, name, true, 10, H_REPLY_MS);
		h_delete(c, name);
	}
	qsort(ms, done, sizeof(*ms), cmp_double);
	printf("vm.start to first serial byte over %d starts: "
	    "min %.2f ms, median %.2f ms, max %.2f ms\n", done, ms[0],
	    ms[done / 2], ms[done - 1]);
	if (qdone > 0) {
		qsort(qms, qdone, sizeof(*qms), cmp_double);
		printf("QEMU -M microvm, exec to first serial byte over %d "
		    "starts: min %.2f ms, median %.2f ms, max %.2f ms\n",
		    qdone, qms[0], qms[qdone / 2], qms[qdone - 1]);
	}
	printf("where it went, median of each step (ms):\n");
	for (size_t k = 0; k < NSTEPS; k++)
		printf("  %-14.*s %8.3f\n", (int)(strlen(steps[k]) - 3),
		    steps[k], median_of(us, done, k) / 1000);
	if (nfleet > 0) {
		for (i = 0; i < nfleet; i++) {
			snprintf(name, sizeof(name), "fleet%d", i);
			if (h_create(c, name, "\"kernel\":\"%s\","
			    "\"memory_mib\":32", h_env("VMMD_GUEST_HELLO")) != 0)
				tap_bail("vm.create %s failed", name);
		}
		par = fleet_start(d, c, ifd, nfleet, true);
		seq = fleet_start(d, c, ifd, nfleet, false);
		printf("%d guests to their first serial bytes: all at once "
		    "%.1f ms, one after another %.1f ms (-1: not all came)\n",
		    nfleet, par, seq);
	}
	free(qms);
	free(us);
	free(ms);
	close(ifd);
	h_close(c);
	h_finish(0);
	return 0;
}
