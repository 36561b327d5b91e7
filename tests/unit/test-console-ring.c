/*
 * The console's output ring (daemon/worker/console.h): the guest's side
 * does no I/O and never waits, however far behind the loop is; a full
 * ring drops the newest bytes and counts them; the loop writes the log
 * (complete and in order while the ring does not fill) and rotates it;
 * a client that attaches gets the last output replayed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <json-c/json.h>

#include "tap.h"
#include "console.h"

/* Byte i of what the guest prints: no short period, so order shows. */
static uint8_t
pat(uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + (i >> 16));
}

static bool
pat_at(const uint8_t *buf, size_t len, uint64_t from)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pat(from + i))
			return false;
	return true;
}

/* The guest's side: bytes from..to of the pattern, one THR write each. */
static void
print_range(struct console *c, uint64_t from, uint64_t to)
{
	uint8_t b;

	for (; from < to; from++) {
		b = pat(from);
		console_output(c, &b, 1);
	}
}

static uint8_t *
slurp(const char *path, size_t *lenp)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	size_t got = 0;
	int fd;

	*lenp = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || (buf = malloc((size_t)st.st_size + 1)) ==
	    NULL) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size &&
	    (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	*lenp = got;
	return buf;
}

static off_t
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char dir[] = "/tmp/vmmd-console-ring.XXXXXX";

static void
paths(const char *name, char *log, char *old, size_t len)
{
	snprintf(log, len, "%s/%s.log", dir, name);
	snprintf(old, len, "%s/%s.log.1", dir, name);
}

static struct console *
new_console(struct event_base *base, const char *log, uint64_t max)
{
	struct console *c;
	int err = 0;

	c = console_new(base, log, max, &err);
	if (c == NULL)
		tap_bail("console_new %s: %s", log, strerror(-err));
	return c;
}

/* --- a full ring, the loop not running -------------------------------- */

struct producer {
	struct console *c;
	uint64_t from, to;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void *
producer_main(void *arg)
{
	struct producer *p = arg;

	print_range(p->c, p->from, p->to);
	pthread_mutex_lock(&p->lock);
	p->done = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Whether the producer thread finished within timeout_ms. */
static bool
producer_run(struct producer *p, int timeout_ms)
{
	struct timespec ts;
	pthread_t t;
	bool done;

	p->done = false;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&t, NULL, producer_main, p) != 0)
		tap_bail("pthread_create");
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	pthread_mutex_lock(&p->lock);
	while (!p->done &&
	    pthread_cond_timedwait(&p->cond, &p->lock, &ts) != ETIMEDOUT)
		;
	done = p->done;
	pthread_mutex_unlock(&p->lock);
	if (!done)
		return false;	/* left blocked: the test ends anyway */
	pthread_join(t, NULL);
	return true;
}

#define OVERFLOW	5000	/* bytes beyond the ring */

static void
test_full_ring(void)
{
	struct event_base *base = event_base_new();
	struct console_stats st;
	struct producer p;
	char log[256], old[256];
	struct console *c;
	uint8_t *buf;
	size_t len;

	paths("full", log, old, sizeof(log));
	c = new_console(base, log, 0);

	/* The loop is stalled (never run): the guest prints on. */
	p = (struct producer){ .c = c, .from = 0,
	    .to = CONSOLE_PENDING_MAX + OVERFLOW };
	if (!producer_run(&p, 10000))
		tap_bail("console_output blocked with the loop stalled");
	tap_ok(1, "%u bytes printed with the loop stalled: the guest's side "
	    "did not wait", CONSOLE_PENDING_MAX + OVERFLOW);
	tap_ok(file_size(log) == 0, "no log written on the guest's thread "
	    "(%lld bytes)", (long long)file_size(log));
	console_get_stats(c, &st);
	tap_ok(st.bytes_out == CONSOLE_PENDING_MAX + OVERFLOW,
	    "bytes_out counts all the guest printed (%llu)",
	    (unsigned long long)st.bytes_out);
	tap_ok(st.bytes_dropped == OVERFLOW, "the %u bytes beyond the ring "
	    "are dropped and counted (%llu)", OVERFLOW,
	    (unsigned long long)st.bytes_dropped);

	/* The loop runs once: the guest's first byte woke it. */
	event_base_loop(base, EVLOOP_NONBLOCK);
	buf = slurp(log, &len);
	tap_ok(buf != NULL && len == CONSOLE_PENDING_MAX &&
	    pat_at(buf, len, 0), "the loop wrote the ring's %u bytes, in "
	    "order (%zu)", CONSOLE_PENDING_MAX, len);
	free(buf);

	/* Room again: what comes next follows the gap. */
	print_range(c, CONSOLE_PENDING_MAX + OVERFLOW,
	    CONSOLE_PENDING_MAX + OVERFLOW + 1000);
	console_get_stats(c, &st);
	tap_ok(st.bytes_dropped == OVERFLOW, "once the loop caught up, "
	    "nothing more is dropped (%llu)",
	    (unsigned long long)st.bytes_dropped);
	console_flush(c);
	buf = slurp(log, &len);
	tap_ok(buf != NULL && len == CONSOLE_PENDING_MAX + 1000 &&
	    pat_at(buf, CONSOLE_PENDING_MAX, 0) &&
	    pat_at(buf + CONSOLE_PENDING_MAX, 1000,
	    CONSOLE_PENDING_MAX + OVERFLOW),
	    "the log: all before the gap, then all after it (%zu)", len);
	free(buf);

	console_free(c);
	event_base_free(base);
}

/* --- streaming, the loop running on its own thread --------------------- */

static void *
loop_main(void *arg)
{
	event_base_loop(arg, EVLOOP_NO_EXIT_ON_EMPTY);
	return NULL;
}

#define STREAM_TOTAL	(2 * 1024 * 1024)
#define STREAM_BURST	(16 * 1024)

/*
 * Bursts of STREAM_BURST bytes, each once the log has the one before:
 * the ring (CONSOLE_PENDING_MAX) never fills, so nothing may be missing.
 */
static void
test_stream(void)
{
	struct event_base *base = event_base_new();
	struct console_stats st;
	char log[256], old[256];
	struct console *c;
	pthread_t loop;
	uint64_t sent = 0;
	int64_t deadline;
	uint8_t *buf;
	size_t len;
	bool late = false;

	paths("stream", log, old, sizeof(log));
	c = new_console(base, log, 0);
	if (pthread_create(&loop, NULL, loop_main, base) != 0)
		tap_bail("pthread_create");
	while (sent < STREAM_TOTAL && !late) {
		print_range(c, sent, sent + STREAM_BURST);
		sent += STREAM_BURST;
		deadline = now_ms() + 10000;
		while (file_size(log) < (off_t)sent && !late) {
			usleep(500);
			late = now_ms() > deadline;
		}
	}
	tap_ok(!late, "the loop kept up with %u-byte bursts (%llu of %u "
	    "logged)", STREAM_BURST, (unsigned long long)file_size(log),
	    STREAM_TOTAL);
	event_base_loopbreak(base);
	pthread_join(loop, NULL);

	console_get_stats(c, &st);
	tap_ok(st.bytes_out == STREAM_TOTAL && st.bytes_dropped == 0,
	    "bytes_out %llu, bytes_dropped %llu",
	    (unsigned long long)st.bytes_out,
	    (unsigned long long)st.bytes_dropped);
	buf = slurp(log, &len);
	tap_ok(buf != NULL && len == STREAM_TOTAL && pat_at(buf, len, 0),
	    "the log is complete and in order (%zu bytes)", len);
	free(buf);
	console_free(c);
	event_base_free(base);
}

/* --- rotation, by the loop --------------------------------------------- */

static void
test_rotation(void)
{
	struct event_base *base = event_base_new();
	char log[256], old[256];
	struct console *c;
	uint8_t *buf, *buf1;
	size_t len, len1;

	paths("rotate", log, old, sizeof(log));
	c = new_console(base, log, 1000);
	print_range(c, 0, 2500);
	tap_ok(file_size(log) == 0 && file_size(old) == 0,
	    "rotation waits for the loop too");
	console_flush(c);
	buf = slurp(log, &len);
	buf1 = slurp(old, &len1);
	tap_ok(buf1 != NULL && len1 == 1000 && pat_at(buf1, len1, 1000),
	    "log.1: the second 1000 bytes, exactly (%zu)", len1);
	tap_ok(buf != NULL && len == 500 && pat_at(buf, len, 2000),
	    "log: the last 500 (%zu)", len);
	free(buf);
	free(buf1);
	console_free(c);
	event_base_free(base);
}

/* --- replay to a client that attaches ---------------------------------- */

static void
test_replay(void)
{
	struct event_base *base = event_base_new();
	const uint64_t total = CONSOLE_REPLAY_SIZE + 12345;
	char log[256], old[256];
	struct console *c;
	static uint8_t got[CONSOLE_REPLAY_SIZE + 4096];
	struct json_object *id;
	size_t len = 0;
	int64_t deadline;
	uint8_t *nl;
	ssize_t n;
	int sv[2];

	paths("replay", log, old, sizeof(log));
	c = new_console(base, log, 0);
	print_range(c, 0, total);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0, sv) < 0)
		tap_bail("socketpair: %s", strerror(errno));
	id = json_object_new_int(7);
	tap_ok(console_attach(c, sv[1], id) == 0, "a client attaches");
	json_object_put(id);
	deadline = now_ms() + 10000;
	for (;;) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		n = read(sv[0], got + len, sizeof(got) - len);
		if (n > 0)
			len += (size_t)n;
		nl = memchr(got, '\n', len);
		if ((nl != NULL && (size_t)(got + len - (nl + 1)) >=
		    CONSOLE_REPLAY_SIZE) || n == 0 || now_ms() > deadline)
			break;
		if (n < 0)
			usleep(1000);
	}
	tap_ok(nl != NULL, "the reply line comes first");
	if (nl != NULL) {
		size_t rlen = (size_t)(got + len - (nl + 1));

		tap_ok(rlen == CONSOLE_REPLAY_SIZE && pat_at(nl + 1, rlen,
		    total - CONSOLE_REPLAY_SIZE), "then the last %u bytes, "
		    "in order (%zu)", CONSOLE_REPLAY_SIZE, rlen);
	}
	close(sv[0]);
	console_free(c);
	event_base_free(base);
}

int
main(void)
{
	char log[256], old[256];
	const char *names[] = { "full", "stream", "rotate", "replay" };
	unsigned int i;

	evthread_use_pthreads();
	if (mkdtemp(dir) == NULL)
		tap_bail("mkdtemp: %s", strerror(errno));
	test_full_ring();
	test_stream();
	test_rotation();
	test_replay();
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		paths(names[i], log, old, sizeof(log));
		unlink(log);
		unlink(old);
	}
	rmdir(dir);
	return tap_done();
}
