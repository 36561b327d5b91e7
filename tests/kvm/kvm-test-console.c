/*
 * The serial console through vm.console: input reaches the guest's COM1
 * receiver (the echo guest sends it back), several clients at once all
 * see the output, and a client that attaches late gets the earlier
 * output replayed.  The log, written by the worker's loop, has a burst
 * of output complete and in order, none of it dropped.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* What the echo guest prints (tests/guests/). */
#define ECHO_READY	"echo: ready"

#define BURST_LINES	400

/*
 * BURST_LINES numbered lines echoed at once (some 22 KiB, far less than
 * the console's ring): the log has them all, in order, by the time a
 * client sees the last, and vm.info counts no byte dropped.
 */
static void
test_log_burst(struct h_conn *c, struct h_daemon *d, struct h_console *a)
{
	struct json_object *con, *r;
	size_t len = 0, loglen;
	char *burst, *log;
	int i;

	burst = malloc(BURST_LINES * 80);
	if (burst == NULL)
		tap_bail("out of memory");
	for (i = 0; i < BURST_LINES; i++)
		len += (size_t)snprintf(burst + len, 80, "burst %04d the quick "
		    "brown fox jumps over the lazy dog\n", i);
	tap_ok(h_console_write(a, burst, len) == 0 &&
	    h_expect(a, "burst 0399 the quick brown fox jumps over the lazy "
	    "dog\n", 3 * H_BOOT_MS) == 0,
	    "console A: %d lines echoed (%zu bytes)", BURST_LINES, len);
	log = h_read_file(h_console_log(d, "echo"), &loglen);
	tap_ok(log != NULL && memmem(log, loglen, burst, len) != NULL,
	    "the log has them all, in order, as A saw the last");
	free(log);
	free(burst);

	con = h_info_stats(c, "echo", "console", NULL, &r);
	tap_ok(con != NULL && h_int(con, "bytes_dropped", -1) == 0 &&
	    h_int(con, "bytes_out", -1) >= (int64_t)len,
	    "vm.info: console bytes_out %" PRId64 ", bytes_dropped %" PRId64,
	    h_int(con, "bytes_out", -1), h_int(con, "bytes_dropped", -1));
	json_object_put(r);
}

int
main(void)
{
	struct h_console *a, *b, *late;
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);

	/* Not running yet: no console. */
	tap_ok(h_create(c, "echo", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_ECHO")) == 0, "echo: created");
	h_expect_error(c, "vm.console", "{\"name\":\"echo\"}", "bad_state",
	    "vm.console on a defined VM");

	tap_ok(h_start(c, "echo") == 0, "echo: started");
	a = h_console_open(d, "echo");
	if (a == NULL)
		tap_bail("cannot attach the echo guest's console");
	tap_ok(h_expect(a, ECHO_READY, H_BOOT_MS) == 0,
	    "console A sees '%s'", ECHO_READY);

	tap_ok(h_console_write(a, "ping-one\n", 9) == 0,
	    "console A: input sent");
	tap_ok(h_expect(a, "ping-one", 5000) == 0,
	    "console A: input echoed back");

	/* A second client: the replay, then both see live output. */
	b = h_console_open(d, "echo");
	tap_ok(b != NULL, "console B attaches while A is attached");
	if (b != NULL) {
		tap_ok(h_expect(b, ECHO_READY, 5000) == 0 &&
		    h_expect(b, "ping-one", 5000) == 0,
		    "console B: earlier output replayed");
		tap_ok(h_console_write(a, "pong-two\n", 9) == 0,
		    "console A: more input sent");
		tap_ok(h_expect(a, "pong-two", 5000) == 0,
		    "console A sees the new echo");
		tap_ok(h_expect(b, "pong-two", 5000) == 0,
		    "console B sees the new echo too");
		tap_ok(h_console_write(b, "from-b-3\n", 9) == 0,
		    "console B: input sent");
		tap_ok(h_expect(b, "from-b-3", 5000) == 0 &&
		    h_expect(a, "from-b-3", 5000) == 0,
		    "input from B echoed to both A and B");
		/* A's replay must not have repeated what A already had. */
		tap_ok(h_count(a->buf, a->len, ECHO_READY) == 1,
		    "console A got '%s' once (%zu)", ECHO_READY,
		    h_count(a->buf, a->len, ECHO_READY));
	}
	h_console_close(b);

	/* A client that disconnected does not stop output to the others. */
	tap_ok(h_console_write(a, "after-b-4\n", 10) == 0 &&
	    h_expect(a, "after-b-4", 5000) == 0,
	    "console A still works after B detached");

	test_log_burst(c, d, a);

	/* A late client: all of it replayed, in order. */
	late = h_console_open(d, "echo");
	tap_ok(late != NULL, "a late console attaches");
	if (late != NULL) {
		tap_ok(h_expect(late, ECHO_READY, 5000) == 0 &&
		    h_expect(late, "ping-one", 5000) == 0 &&
		    h_expect(late, "pong-two", 5000) == 0 &&
		    h_expect(late, "from-b-3", 5000) == 0 &&
		    h_expect(late, "after-b-4", 5000) == 0,
		    "late console: earlier output replayed in order");
	}
	h_console_close(late);

	/* Sixteen clients at once, and no more. */
	{
		struct h_console *more[15];
		struct h_conn *c17;
		struct json_object *r;
		int i, n = 0;

		for (i = 0; i < 15; i++)
			if ((more[i] = h_console_open(d, "echo")) != NULL)
				n++;
		tap_ok(n == 15, "sixteen console clients attach (%d)", n + 1);
		if ((c17 = h_connect(d)) == NULL)
			tap_bail("cannot connect to vmmd");
		r = h_callf(c17, H_REPLY_MS, "vm.console",
		    "{\"name\":\"echo\"}");
		h_check_error(r, "limit_reached", "a seventeenth console "
		    "client");
		json_object_put(r);
		h_close(c17);
		tap_ok(h_console_write(a, "cap-5\n", 6) == 0 &&
		    h_expect(a, "cap-5", 5000) == 0 &&
		    (more[14] == NULL || h_expect(more[14], "cap-5", 5000) == 0),
		    "the sixteen still get output");
		h_console_close(more[0]);
		more[0] = NULL;
		late = NULL;
		/* The worker sees the hang-up on its loop, soon after
		 * (on a loaded host, later: up to 30 s). */
		for (i = 0; i < 150 && late == NULL; i++) {
			h_sleep_ms(200);
			late = h_console_open(d, "echo");
		}
		tap_ok(late != NULL, "one left: another attaches");
		h_console_close(late);
		for (i = 1; i < 15; i++)
			h_console_close(more[i]);
	}
	h_console_close(a);

	tap_ok(h_file_expect(h_console_log(d, "echo"), "after-b-4", 1,
	    5000) == 0, "the console log has the echoed input too");

	/* The consoles went away: the control connection is still fine. */
	tap_ok(h_stop(c, "echo", true, -1, H_REPLY_MS) == 0,
	    "echo: force stop");
	h_close(c);
	return h_done();
}
