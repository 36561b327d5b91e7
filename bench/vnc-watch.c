/*
 * A VNC viewer for benchmarks: connects, keeps an incremental update
 * request outstanding (libvncclient sends the next one as soon as an
 * update is complete) and counts what comes back.  A figure, not a test.
 *
 *   vnc-watch [-e ENCODINGS] [-p PASSWORD-FILE] HOST PORT SECONDS
 *
 * Runs SECONDS seconds, then prints its counters and exits.  SIGUSR1
 * prints them at once (a benchmark marks the start and the end of its
 * window with it).  A line:
 *
 *   vnc-watch: t=T bytes=B updates=U rects=R pixels=P
 *
 * bytes: payload bytes received on the connection (the kernel's
 * tcpi_bytes_received, so every byte the server sent, protocol and
 * encoding included); updates: complete framebuffer updates; rects and
 * pixels: the rectangles in them and their area.  ENCODINGS defaults to
 * libvncclient's own preference list (tight first); give "raw" or
 * "zrle raw" to compare a single encoding.  PASSWORD-FILE's first line is
 * the display's password (vmctl display prints it), for a display that
 * has one: the default.
 */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/tcp.h>

#include "vnc-viewer.h"

static volatile sig_atomic_t report;
static char password[64];
static double t0;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
on_usr1(int sig)
{
	(void)sig;
	report = 1;
}

/* The first line of path into password.  0, or -1 (said why). */
static int
read_password(const char *path)
{
	FILE *f = fopen(path, "re");

	if (f == NULL || fgets(password, sizeof(password), f) == NULL) {
		fprintf(stderr, "vnc-watch: %s: %s\n", path,
		    f == NULL ? strerror(errno) : "empty");
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	password[strcspn(password, "\r\n")] = '\0';
	return 0;
}

static void
print_counters(const struct vview *v)
{
	const rfbClient *c = v->client;
	struct tcp_info ti;
	socklen_t len = sizeof(ti);
	unsigned long long bytes = 0;

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(c->sock, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	    len >= offsetof(struct tcp_info, tcpi_bytes_received) +
	    sizeof(ti.tcpi_bytes_received))
		bytes = ti.tcpi_bytes_received;
	printf("vnc-watch: t=%.3f bytes=%llu updates=%llu rects=%llu "
	    "pixels=%llu\n", now() - t0, bytes,
	    (unsigned long long)v->updates, (unsigned long long)v->rects,
	    (unsigned long long)v->area);
	fflush(stdout);
}

int
main(int argc, char *argv[])
{
	struct vview_opts o = { .password = password };
	struct sigaction sa;
	struct vview v;
	double end;
	int opt, n;

	while ((opt = getopt(argc, argv, "e:p:")) != -1) {
		if (opt == 'e')
			o.encodings = optarg;
		else if (opt != 'p' || read_password(optarg) < 0)
			goto usage;
	}
	if (argc - optind != 3)
		goto usage;
	memset(&sa, 0, sizeof(sa));
	/* Reads restart; select never does, so a wait ends at once. */
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	vview_quiet();

	o.host = argv[optind];
	o.port = atoi(argv[optind + 1]);
	if (password[0] == '\0')
		o.password = NULL;
	t0 = now();
	end = t0 + atof(argv[optind + 2]);
	if (!vview_open(&v, &o)) {
		fprintf(stderr, "vnc-watch: cannot connect to %s:%s\n",
		    argv[optind], argv[optind + 1]);
		return 1;
	}
	while (now() < end) {
		double left = end - now();

		if (report) {
			report = 0;
			print_counters(&v);
		}
		n = vview_step(&v, left > 0.2 ? 200000 :
		    (unsigned)(left * 1e6) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "vnc-watch: connection lost\n");
			print_counters(&v);
			return 1;
		}
	}
	print_counters(&v);
	vview_close(&v);
	return 0;
usage:
	fprintf(stderr, "usage: vnc-watch [-e ENCODINGS] [-p PASSWORD-FILE] "
	    "HOST PORT SECONDS\n");
	return 2;
}
