/*
 * Load: 1000 control clients issuing vm.info in a loop against ten
 * running guests.  Every request must be answered, and the daemon must
 * hold no more descriptors afterwards than before and grow no memory
 * between two equal rounds.  The latencies are printed (p50, p99, max),
 * not asserted: this machine's speed is not the test's business.
 *
 * The clients are raw non-blocking sockets multiplexed with poll(), one
 * request outstanding each, as 1000 processes of a real deployment
 * would be.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"
#include "proto.h"

#define NGUESTS		10
#define NCLIENTS	1000
#define ROUND_MS	8000	/* each of the two rounds */
#define STALL_MS	30000	/* no answer that long: the rest is lost */

struct lclient {
	int fd;
	char buf[65536];
	size_t len;
	double sent_ms;		/* of the outstanding request, 0: none */
	unsigned long id;
};

struct lround {
	unsigned long sent, answered, errors, lost;
	double *lat;		/* ms, one per answer */
	size_t nlat, cap;
};

static struct h_daemon *d;

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
count_fds(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	return h_dir_count(path);
}

/* Whether pid runs with AddressSanitizer's runtime mapped. */
static bool
sanitized(pid_t pid)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, "libasan") != NULL;
	fclose(f);
	return found;
}

/* VmRSS of pid in KiB, or -1. */
static long
rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void
lclient_send(struct lclient *c, struct lround *r)
{
	char req[128];
	int n;

	c->id++;
	n = snprintf(req, sizeof(req), "{\"id\":%lu,\"command\":\"vm.info\","
	    "\"arguments\":{\"name\":\"g%lu\"}}\n", c->id,
	    c->id % NGUESTS);
	/* A fresh request on an idle socket: it fits in its buffer. */
	if (write(c->fd, req, (size_t)n) != n) {
		r->lost++;
		return;
	}
	c->sent_ms = h_now_ms();
	r->sent++;
}

/* Lines in c's buffer: each must be the answer to its request. */
static void
lclient_lines(struct lclient *c, struct lround *r, bool more)
{
	struct json_object *msg;
	char *nl, desc[128];
	size_t n;

	while ((nl = memchr(c->buf, '\n', c->len)) != NULL) {
		n = (size_t)(nl - c->buf);
		if (proto_parse_object(c->buf, n, &msg, desc,
		    sizeof(desc)) == 0) {
			if (json_object_object_get_ex(msg, "greeting", NULL)) {
				/* the first line */
			} else if (h_ret(msg) != NULL &&
			    h_int(msg, "id", -1) == (int64_t)c->id &&
			    c->sent_ms > 0) {
				if (r->nlat == r->cap) {
					r->cap = r->cap ? r->cap * 2 : 4096;
					r->lat = realloc(r->lat,
					    r->cap * sizeof(double));
					if (r->lat == NULL)
						tap_bail("out of memory");
				}
				r->lat[r->nlat++] = h_now_ms() - c->sent_ms;
				r->answered++;
				c->sent_ms = 0;
			} else {
				if (r->errors++ < 3)
					tap_diag("unexpected reply: %.200s",
					    h_text(msg));
				c->sent_ms = 0;
			}
			json_object_put(msg);
		} else if (r->errors++ < 3)
			tap_diag("bad line: %s", desc);
		memmove(c->buf, nl + 1, c->len - n - 1);
		c->len -= n + 1;
		if (more && c->sent_ms == 0)
			lclient_send(c, r);
	}
}

/* One round of ms milliseconds; then every outstanding answer is awaited. */
static void
run_round(struct lclient *cs, struct pollfd *pfds, int ms, struct lround *r)
{
	double end = h_now_ms() + ms, drain_end;
	bool more = true;
	int i, outstanding;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < NCLIENTS; i++)
		lclient_send(&cs[i], r);
	/*
	 * Each vm.info is a round trip to a worker: in an emulated test host
	 * the daemon answers only some hundred a second, fewer while the
	 * machine is shared, so the 1000 last requests may take many
	 * seconds.  Late is not lost: lost is no answer at all for
	 * STALL_MS.
	 */
	drain_end = end + STALL_MS;
	for (;;) {
		if (more && h_now_ms() >= end)
			more = false;
		for (outstanding = 0, i = 0; i < NCLIENTS; i++)
			outstanding += cs[i].sent_ms > 0;
		if (!more && outstanding == 0)
			break;
		if (h_now_ms() >= drain_end) {
			r->lost += (unsigned long)outstanding;
			break;
		}
		if (poll(pfds, NCLIENTS, 100) < 0 && errno != EINTR)
			tap_bail("poll: %s", strerror(errno));
		for (i = 0; i < NCLIENTS; i++) {
			struct lclient *c = &cs[i];

			if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(c->fd, c->buf + c->len,
			    sizeof(c->buf) - c->len);
			if (n <= 0) {
				if (n < 0 && errno == EAGAIN)
					continue;
				if (r->errors++ < 3)
					tap_diag("client %d: connection "
					    "closed", i);
				pfds[i].fd = -1;
				c->sent_ms = 0;
				continue;
			}
			c->len += (size_t)n;
			lclient_lines(c, r, more);
			if (!more)
				drain_end = h_now_ms() + STALL_MS;
		}
	}
}

static void
report(const char *what, struct lround *r)
{
	double s = ROUND_MS / 1000.0;

	qsort(r->lat, r->nlat, sizeof(double), cmp_double);
	tap_diag("%s: %lu requests in %.0f s (%.0f/s), p50 %.2f ms, "
	    "p99 %.2f ms, max %.2f ms", what, r->answered, s,
	    r->answered / s, r->nlat ? r->lat[r->nlat / 2] : 0,
	    r->nlat ? r->lat[r->nlat * 99 / 100] : 0,
	    r->nlat ? r->lat[r->nlat - 1] : 0);
	tap_ok(r->answered == r->sent && r->errors == 0 && r->lost == 0,
	    "%s: every request answered (%lu sent, %lu answered, %lu "
	    "errors, %lu lost)", what, r->sent, r->answered, r->errors,
	    r->lost);
}

int
main(void)
{
	static struct lclient cs[NCLIENTS];
	static struct pollfd pfds[NCLIENTS];
	struct lround warm, round;
	struct rlimit rl;
	struct h_conn *c;
	char name[16];
	long rss0, rss1;
	int i, ok, fds0, fds1;

	h_init();
	/* 1000 sockets here; the daemon raises its own limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 &&
	    rl.rlim_max >= 4096) {
		rl.rlim_cur = 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	c = h_setup(&d);
	for (ok = 0, i = 0; i < NGUESTS; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		ok += h_create(c, name, NULL) == 0 && h_start(c, name) == 0;
	}
	tap_ok(ok == NGUESTS, "%d guests running (%d)", NGUESTS, ok);
	fds0 = count_fds(d->pid);

	for (ok = 0, i = 0; i < NCLIENTS; i++) {
		cs[i].fd = h_connect_fd(d);
		if (cs[i].fd < 0)
			break;
		fcntl(cs[i].fd, F_SETFL, O_NONBLOCK);
		pfds[i].fd = cs[i].fd;
		pfds[i].events = POLLIN;
		ok++;
	}
	tap_ok(ok == NCLIENTS, "%d clients connected (%d)", NCLIENTS, ok);
	if (ok != NCLIENTS)
		return h_done();

	/* The first round settles the allocator; the second is measured. */
	run_round(cs, pfds, ROUND_MS, &warm);
	report("round 1", &warm);
	rss0 = rss_kib(d->pid);
	run_round(cs, pfds, ROUND_MS, &round);
	report("round 2", &round);
	rss1 = rss_kib(d->pid);
	if (sanitized(d->pid))
		/* ASan's quarantine holds what is freed: not a leak. */
		tap_diag("vmmd's memory between the rounds: %ld -> %ld KiB "
		    "(a sanitizer build: not checked)", rss0, rss1);
	else
		tap_ok(rss0 > 0 && rss1 > 0 && rss1 - rss0 < 4096,
		    "vmmd's memory does not grow between the rounds "
		    "(%ld -> %ld KiB)", rss0, rss1);
	free(warm.lat);
	free(round.lat);

	for (i = 0; i < NCLIENTS; i++)
		close(cs[i].fd);
	/* The daemon sees the hang-ups on its next loop turns. */
	for (i = 0; i < 300 && (fds1 = count_fds(d->pid)) != fds0; i++)
		h_sleep_ms(100);
	tap_ok(fds0 > 0 && fds1 == fds0, "vmmd holds as many descriptors as "
	    "before the clients (%d, %d)", fds0, fds1);
	tap_ok(h_daemon_alive(d), "vmmd is still running");
	for (ok = 0, i = 0; i < NGUESTS; i++) {
		char st[64];

		snprintf(name, sizeof(name), "g%d", i);
		ok += strcmp(h_state(c, name, st, sizeof(st)), "running") == 0;
	}
	tap_ok(ok == NGUESTS, "the %d guests still run (%d)", NGUESTS, ok);
	h_close(c);
	return h_done();
}
