/*
 * vm.restore of a snapshot against vm.start of the same guest, for
 * several RAM sizes, pair by pair in one run (snapshot-restore.sh runs
 * it).  The guest is the demo guest (PVH), a VM of MEMORY_MIB MiB:
 *
 *   start     vm.start to the guest's first console line (its banner,
 *             seen through inotify on the console log, which the worker
 *             writes as soon as its loop drains the UART);
 *   snapshot  once a size, of the started guest after its first tick
 *             (vm.snapshot without keep_running: the VM stops), timed
 *             for information;
 *   restore   vm.restore of that snapshot to its reply (the guest runs),
 *             and to the guest's next console line: a carriage return
 *             typed on a console attached right after the reply comes
 *             back as "\r\n" (the demo guest's echo; its ticks end in
 *             "\r" only), so that this includes the attach.
 *
 * Each pair is a start then a restore of the same VM (stopped between);
 * the table has every pair and the medians, with the ratio restore /
 * start.  A figure, not a test: nothing is asserted.
 *
 *   VMMD_BIN=... VMMD_GUEST_DEMO=... bench/restore-start PAIRS MIB...
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

#define LINE_MS		30000	/* a line that takes longer is lost */

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static off_t
file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? sb.st_size : 0;
}

/* Whether path has a '\n' at or after from. */
static bool
newline_after(const char *path, off_t from)
{
	char buf[4096];
	ssize_t n;
	bool found = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	while (!found && (n = pread(fd, buf, sizeof(buf), from)) > 0) {
		found = memchr(buf, '\n', (size_t)n) != NULL;
		from += n;
	}
	close(fd);
	return found;
}

/*
 * Waits until the console log path has a line ending at or after from,
 * reading ifd's events (a watch on the log's directory); 0, or -1 on
 * timeout.
 */
static int
wait_line(int ifd, const char *path, off_t from, int timeout_ms)
{
	char buf[4096] __attribute__((aligned(8)));
	double deadline = h_now_ms() + timeout_ms;

	while (!newline_after(path, from)) {
		struct pollfd pfd = { .fd = ifd, .events = POLLIN };
		int left = (int)(deadline - h_now_ms());

		if (left <= 0 || poll(&pfd, 1, left) < 0)
			return -1;
		/* The events only wake us: the file says what came. */
		while (read(ifd, buf, sizeof(buf)) > 0)
			;
	}
	return 0;
}

struct pair {
	double start, running, line;
};

int
main(int argc, char *argv[])
{
	int pairs = argc > 1 ? atoi(argv[1]) : 0;
	int nsizes = argc - 2;
	struct pair *p;
	struct h_daemon *d;
	struct h_conn *c;
	struct h_console *con;
	struct json_object *r;
	char logdir[4096], log[4096], name[32], dir[4096], label[16];
	double t0, snap_ms, med[3], *v;
	int i, k, ifd;
	off_t at;

	if (pairs < 1 || pairs > 100 || nsizes < 1) {
		fprintf(stderr, "usage: restore-start PAIRS MIB...\n");
		return 2;
	}
	h_init();
	d = h_daemon_start();
	c = h_connect(d);
	p = calloc(pairs, sizeof(*p));
	v = calloc(pairs, sizeof(*v));
	if (d == NULL || c == NULL || p == NULL || v == NULL)
		tap_bail("cannot start a private vmmd");
	snprintf(logdir, sizeof(logdir), "%s", h_console_log(d, "x"));
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ifd < 0 || inotify_add_watch(ifd, dirname(logdir), IN_MODIFY) < 0)
		tap_bail("inotify: %s", strerror(errno));

	printf("%-8s %4s %12s %12s %12s %9s %9s\n", "RAM", "pair",
	    "start:line", "restore:run", "restore:line", "run/start",
	    "line/start");
	for (k = 0; k < nsizes; k++) {
		int mib = atoi(argv[2 + k]);

		snprintf(name, sizeof(name), "ram%d", mib);
		snprintf(label, sizeof(label), "%d MiB", mib);
		snprintf(log, sizeof(log), "%s", h_console_log(d, name));
		snprintf(dir, sizeof(dir), "%s", h_in_dir(d, name));
		if (mkdir(dir, 0700) < 0 || h_create(c, name,
		    "\"memory_mib\":%d", mib) != 0)
			tap_bail("%s: cannot make the VM or %s", name, dir);

		/* The snapshot: of the guest once it has ticked. */
		if (h_start(c, name) != 0 || (con = h_console_open(d,
		    name)) == NULL || h_expect(con, " UTC\r", LINE_MS) != 0)
			tap_bail("%s: the guest does not tick", name);
		h_console_close(con);
		t0 = h_now_ms();
		r = h_callf(c, 120000, "vm.snapshot", "{\"name\":\"%s\","
		    "\"dir\":\"%s\"}", name, dir);
		snap_ms = h_now_ms() - t0;
		if (h_ret(r) == NULL ||
		    h_wait_state(c, name, "stopped", H_REPLY_MS) != 0)
			tap_bail("%s: snapshot: %s", name, h_text(r));
		json_object_put(r);

		for (i = 0; i < pairs; i++) {
			struct json_object *args = json_object_new_object();
			int64_t id;

			json_object_object_add(args, "name",
			    json_object_new_string(name));
			at = file_size(log);
			t0 = h_now_ms();
			id = h_send_request(c, "vm.start", args);
			if (wait_line(ifd, log, at, LINE_MS) < 0)
				tap_bail("%s: no console line after vm.start",
				    name);
			p[i].start = h_now_ms() - t0;
			json_object_put(h_wait_reply(c, id, H_REPLY_MS));
			h_stop(c, name, true, 10, H_REPLY_MS);

			t0 = h_now_ms();
			r = h_callf(c, 120000, "vm.restore", "{\"name\":\"%s\","
			    "\"dir\":\"%s\"}", name, dir);
			p[i].running = h_now_ms() - t0;
			if (h_ret(r) == NULL)
				tap_bail("%s: restore: %s", name, h_text(r));
			json_object_put(r);
			if ((con = h_console_open(d, name)) == NULL)
				tap_bail("%s: no console", name);
			con->mark = con->len;
			if (h_console_write(con, "\r", 1) != 0 ||
			    h_expect(con, "\n", LINE_MS) != 0)
				tap_bail("%s: no echo after the restore", name);
			p[i].line = h_now_ms() - t0;
			h_console_close(con);
			h_stop(c, name, true, 10, H_REPLY_MS);
			printf("%-8s %4d %9.1f ms %9.1f ms %9.1f ms %9.2f %9.2f\n",
			    label, i + 1, p[i].start, p[i].running, p[i].line,
			    p[i].running / p[i].start, p[i].line / p[i].start);
			fflush(stdout);
		}
		for (int f = 0; f < 3; f++) {
			for (i = 0; i < pairs; i++)
				v[i] = f == 0 ? p[i].start : f == 1 ?
				    p[i].running : p[i].line;
			qsort(v, pairs, sizeof(*v), cmp_double);
			med[f] = v[pairs / 2];
		}
		printf("%-8s %4s %9.1f ms %9.1f ms %9.1f ms %9.2f %9.2f"
		    "   (snapshot %.0f ms)\n", label, "med", med[0],
		    med[1], med[2], med[1] / med[0], med[2] / med[0], snap_ms);
		fflush(stdout);
		h_delete(c, name);
	}
	free(v);
	free(p);
	close(ifd);
	h_close(c);
	h_finish(0);
	return 0;
}
