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

#include <rfb/rfbclient.h>

static volatile sig_atomic_t report;
static char password[64];
static uint64_t updates, rects, pixels;
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

static void
quiet(const char *fmt, ...)
{
	(void)fmt;
}

static char *
get_password(rfbClient *c)
{
	(void)c;
	return password[0] != '\0' ? strdup(password) : NULL;
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
got_rect(rfbClient *c, int x, int y, int w, int h)
{
	(void)c; (void)x; (void)y;
	rects++;
	pixels += (uint64_t)w * (uint64_t)h;
}

static void
finished(rfbClient *c)
{
	(void)c;
	updates++;
}

static void
print_counters(rfbClient *c)
{
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
	    (unsigned long long)updates, (unsigned long long)rects,
	    (unsigned long long)pixels);
	fflush(stdout);
}

int
main(int argc, char *argv[])
{
	const char *encodings = NULL;
	struct sigaction sa;
	rfbClient *c;
	double end;
	int opt, n;

	while ((opt = getopt(argc, argv, "e:p:")) != -1) {
		if (opt == 'e')
			encodings = optarg;
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
	rfbClientLog = quiet;
	rfbClientErr = quiet;

	c = rfbGetClient(8, 3, 4);
	if (encodings != NULL)
		c->appData.encodingsString = encodings;
	c->appData.useRemoteCursor = FALSE;
	c->GotFrameBufferUpdate = got_rect;
	c->FinishedFrameBufferUpdate = finished;
	c->GetPassword = get_password;
	free(c->serverHost);
	c->serverHost = strdup(argv[optind]);
	c->serverPort = atoi(argv[optind + 1]);
	t0 = now();
	end = t0 + atof(argv[optind + 2]);
	if (!rfbInitClient(c, NULL, NULL)) {	/* frees c */
		fprintf(stderr, "vnc-watch: cannot connect to %s:%s\n",
		    argv[optind], argv[optind + 1]);
		return 1;
	}
	while (now() < end) {
		double left = end - now();

		if (report) {
			report = 0;
			print_counters(c);
		}
		n = WaitForMessage(c, left > 0.2 ? 200000 :
		    (unsigned)(left * 1e6) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && !HandleRFBServerMessage(c))) {
			fprintf(stderr, "vnc-watch: connection lost\n");
			print_counters(c);
			return 1;
		}
	}
	print_counters(c);
	free(c->frameBuffer);
	rfbClientCleanup(c);
	return 0;
usage:
	fprintf(stderr, "usage: vnc-watch [-e ENCODINGS] [-p PASSWORD-FILE] "
	    "HOST PORT SECONDS\n");
	return 2;
}
