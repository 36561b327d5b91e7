/*
 * Unit tests for daemon/supervisor/console-log.c and client-answer.c:
 * what vmmd answers a vm.console client itself once the guest has
 * ended.  Logs are files in a scratch directory; the client is one end
 * of a socket pair, read while a private event base writes the other.
 *
 * The tail is the run's output (from the offset where the run began
 * in the log), at most CONSOLE_REPLAY_SIZE bytes of it, the same size
 * the worker replays (console-replay.h); a log shorter than that offset
 * was rotated, and the run goes on from its beginning; a link is not
 * followed.  The answer is the reply line, the tail, then EOF.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <json-c/json.h>

#include "console-log.h"
#include "scratch.h"
#include "tap.h"

#define WAIT_MS		10000	/* generous: the loop answers at once */

/* Byte i of a log: a pattern that shows where a byte came from. */
static char
pat(size_t i)
{
	return (char)('a' + (i * 7 + i / 251) % 26);
}

/* NAME.log holding len bytes of the pattern. */
static void
write_log(const char *name, size_t len)
{
	char rel[64];
	char *buf;

	if ((buf = malloc(len + 1)) == NULL)
		tap_bail("out of memory");
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(i);
	buf[len] = '\0';
	snprintf(rel, sizeof(rel), "%s.log", name);
	scratch_file(rel, 0644, buf);
	free(buf);
}

/* Whether buf (len bytes) is the pattern's bytes from offset from. */
static bool
pat_at(const char *buf, size_t len, size_t from)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pat(from + i))
			return false;
	return true;
}

static void
test_path(const char *dir)
{
	char buf[4096], small[8];

	TAP_EQ(console_log_path(dir, "vm", buf, sizeof(buf)), 0,
	    "path: 0");
	tap_ok(strlen(buf) == strlen(dir) + strlen("/vm.log") &&
	    strncmp(buf, dir, strlen(dir)) == 0 &&
	    strcmp(buf + strlen(dir), "/vm.log") == 0, "path: DIR/NAME.log "
	    "(%s)", buf);
	TAP_EQ(console_log_path(dir, "vm", small, sizeof(small)),
	    -ENAMETOOLONG, "path: -ENAMETOOLONG when it does not fit");
}

static void
test_tail(const char *dir)
{
	const size_t big = CONSOLE_REPLAY_SIZE + 5000;
	void *buf;
	size_t len;

	console_log_tail(dir, "none", 0, &buf, &len);
	tap_ok(buf == NULL && len == 0, "tail: no log, nothing");

	write_log("small", 100);
	console_log_tail(dir, "small", 0, &buf, &len);
	tap_ok(buf != NULL && len == 100 && pat_at(buf, len, 0),
	    "tail: a run of 100 bytes, all of it (%zu)", len);
	free(buf);
	console_log_tail(dir, "small", 40, &buf, &len);
	tap_ok(buf != NULL && len == 60 && pat_at(buf, len, 40),
	    "tail: a run that began at 40, from there (%zu)", len);
	free(buf);
	console_log_tail(dir, "small", 100, &buf, &len);
	tap_ok(buf == NULL && len == 0, "tail: a run that printed nothing, "
	    "nothing (%zu)", len);
	free(buf);
	console_log_tail(dir, "small", 1000, &buf, &len);
	tap_ok(buf != NULL && len == 100 && pat_at(buf, len, 0),
	    "tail: a log shorter than the run's start was rotated: all of "
	    "it (%zu)", len);
	free(buf);

	write_log("big", big);
	console_log_tail(dir, "big", 0, &buf, &len);
	tap_ok(buf != NULL && len == CONSOLE_REPLAY_SIZE &&
	    pat_at(buf, len, big - CONSOLE_REPLAY_SIZE),
	    "tail: a long run, its last CONSOLE_REPLAY_SIZE (%u) bytes (%zu)",
	    CONSOLE_REPLAY_SIZE, len);
	free(buf);
	console_log_tail(dir, "big", 3000, &buf, &len);
	tap_ok(buf != NULL && len == CONSOLE_REPLAY_SIZE &&
	    pat_at(buf, len, big - CONSOLE_REPLAY_SIZE),
	    "tail: ... whatever offset it began at before them (%zu)", len);
	free(buf);

	scratch_link(scratch_at("small.log"), "linked.log");
	console_log_tail(dir, "linked", 0, &buf, &len);
	tap_ok(buf == NULL && len == 0, "tail: a log that is a link, not "
	    "followed");
	free(buf);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * console_log_answer() for NAME's run from log_start, read to EOF from
 * the client's end: into *got (malloc'd), its length the return; -1 if
 * EOF did not come within WAIT_MS.
 */
static ssize_t
answer(const char *dir, const char *name, off_t log_start, char **got)
{
	struct event_base *base;
	struct answer_list list = TAILQ_HEAD_INITIALIZER(list);
	struct json_object *id = json_object_new_int(7);
	const int64_t deadline = now_ms() + WAIT_MS;
	size_t len = 0, cap = CONSOLE_REPLAY_SIZE + 4096;
	ssize_t n = -1;
	int sv[2];
	char *buf;

	if ((base = event_base_new()) == NULL ||
	    (buf = malloc(cap)) == NULL ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		tap_bail("cannot set up an answer");
	console_log_answer(base, &list, dir, name, log_start, sv[1], id);
	json_object_put(id);
	while (now_ms() < deadline) {
		struct pollfd pfd = { .fd = sv[0], .events = POLLIN };

		event_base_loop(base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		if (len == cap)
			break;		/* more than an answer holds */
		n = read(sv[0], buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	tap_ok(n == 0 && TAILQ_EMPTY(&list), "answer %s: EOF, and the "
	    "answer is gone from its list", name);
	answer_free_all(&list);
	close(sv[0]);
	event_base_free(base);
	*got = buf;
	return n == 0 ? (ssize_t)len : -1;
}

static void
test_answer(const char *dir)
{
	struct json_object *msg, *v;
	char *got, *nl;
	ssize_t len;
	size_t tail;

	len = answer(dir, "big", 0, &got);
	nl = len > 0 ? memchr(got, '\n', (size_t)len) : NULL;
	msg = nl != NULL ? json_tokener_parse((*nl = '\0', got)) : NULL;
	tap_ok(msg != NULL && json_object_object_get_ex(msg, "id", &v) &&
	    json_object_get_int(v) == 7 &&
	    json_object_object_get_ex(msg, "return", &v) &&
	    json_object_is_type(v, json_type_object),
	    "answer: the reply line first (%s)", nl != NULL ? got : "none");
	json_object_put(msg);
	tail = nl != NULL ? (size_t)(got + len - nl - 1) : 0;
	tap_ok(nl != NULL && tail == CONSOLE_REPLAY_SIZE &&
	    pat_at(nl + 1, tail, CONSOLE_REPLAY_SIZE + 5000 -
	    CONSOLE_REPLAY_SIZE), "answer: then the run's last %u bytes "
	    "(%zu)", CONSOLE_REPLAY_SIZE, tail);
	free(got);

	len = answer(dir, "none", 0, &got);
	nl = len > 0 ? memchr(got, '\n', (size_t)len) : NULL;
	tap_ok(nl != NULL && nl == got + len - 1, "answer: without a log, "
	    "the reply line alone");
	free(got);
}

int
main(void)
{
	const char *dir = scratch_new("console-log");

	test_path(dir);
	test_tail(dir);
	test_answer(dir);
	return tap_done();
}
