/*
 * A hostile guest (tests/guests/hostile.c) writes random values to every
 * I/O port, the framebuffer, the local APIC, the IOAPIC and unmapped
 * MMIO, sweep after sweep, for HOSTILE_SECONDS times
 * VMMD_TEST_TIME_SCALE (the nested test host emulates every exit;
 * VMMD_HOSTILE_SECONDS overrides the product).  Throughout, vmmd answers vm.info within H_REPLY_MS,
 * and the VM either keeps running or ends cleanly, as stopped or
 * crashed with a reason in its vm.state event; the guest gets through
 * whole sweeps, the framebuffer reads back what it wrote, no exception
 * reaches the guest, and no sanitizer speaks in vmmd's log (the CI runs
 * this suite with an ASan and UBSan build too).
 *
 * The seed is printed; VMMD_HOSTILE_SEED=N replays one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define HOSTILE_SECONDS	20
#define HOSTILE_W	640
#define HOSTILE_H	480

/* The last vm.state event of the VM so far: state and reason. */
static void
hostile_last_state(struct h_conn *ev, char *state, size_t slen,
    char *reason, size_t rlen)
{
	struct json_object *e, *data, *v;

	while ((e = h_read_event(ev, 200)) != NULL) {
		if (strcmp(h_str(e, "event") ? h_str(e, "event") : "",
		    "vm.state") == 0 &&
		    json_object_object_get_ex(e, "data", &data)) {
			if (json_object_object_get_ex(data, "state", &v))
				snprintf(state, slen, "%s",
				    json_object_get_string(v));
			reason[0] = '\0';
			if (json_object_object_get_ex(data, "reason", &v))
				snprintf(reason, rlen, "%s",
				    json_object_get_string(v));
		}
		json_object_put(e);
	}
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c, *ev;
	struct json_object *r;
	const char *log, *env, *st;
	char state[32] = "", reason[256] = "", *buf;
	unsigned long seed;
	double start, t, worst = 0;
	int seconds, answered = 0, asked = 0;
	bool ended = false;
	size_t len, sweeps;

	h_init();
	c = h_setup(&d);
	env = getenv("VMMD_HOSTILE_SEED");
	seed = env != NULL ? strtoul(env, NULL, 0) : (unsigned long)time(NULL);
	seconds = HOSTILE_SECONDS;
	if ((env = getenv("VMMD_TEST_TIME_SCALE")) != NULL && atoi(env) > 0)
		seconds *= atoi(env);
	if ((env = getenv("VMMD_HOSTILE_SECONDS")) != NULL)
		seconds = atoi(env);
	tap_diag("seed %lu, %d s (VMMD_HOSTILE_SEED, VMMD_HOSTILE_SECONDS)",
	    seed, seconds);

	ev = h_connect(d);
	r = h_call(ev, "events.subscribe", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "events.subscribe (%s)", h_text(r));
	json_object_put(r);

	log = h_console_log(d, "hostile");
	tap_ok(h_create(c, "hostile", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"seed=%lu fb=%dx%d\",\"vnc\":\"auto\",\"display\":\"%dx%d\"",
	    h_env("VMMD_GUEST_HOSTILE"), seed, HOSTILE_W, HOSTILE_H,
	    HOSTILE_W, HOSTILE_H) == 0, "hostile: created, with a display");
	tap_ok(h_start(c, "hostile") == 0, "hostile: started");
	tap_ok(h_vm_filtered(c, "hostile", state, sizeof(state)),
	    "the worker runs under its filter (Seccomp: %s)", state);
	tap_ok(h_file_expect(log, "hostile: framebuffer 640x480", 1,
	    H_BOOT_MS) == 0, "the guest found its framebuffer");

	/* vmmd answers every second, whatever the guest does. */
	start = h_now_ms();
	while (h_now_ms() - start < seconds * 1000.0) {
		t = h_now_ms();
		r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"hostile\"}");
		asked++;
		if (h_ret(r) != NULL) {
			answered++;
			if (h_now_ms() - t > worst)
				worst = h_now_ms() - t;
			st = h_str(h_ret(r), "state");
			if (st == NULL || strcmp(st, "running") != 0)
				ended = true;
		}
		json_object_put(r);
		if (ended || answered != asked)
			break;
		h_sleep_ms(1000);
	}
	tap_ok(answered == asked, "vmmd answered %d of %d vm.info, the "
	    "slowest in %.0f ms", answered, asked, worst);

	hostile_last_state(ev, state, sizeof(state), reason, sizeof(reason));
	if (ended) {
		/* Allowed: a clean end, reported with its reason. */
		tap_ok((strcmp(state, "stopped") == 0 ||
		    strcmp(state, "crashed") == 0) && reason[0] != '\0',
		    "the VM ended cleanly after %.0f s: %s (%s)",
		    (h_now_ms() - start) / 1000, state, reason);
	} else {
		tap_ok(strcmp(state, "running") == 0,
		    "the VM ran for %d s (last state event: %s)", seconds,
		    state);
		tap_ok(h_stop(c, "hostile", true, -1, H_REPLY_MS) == 0,
		    "force stop");
	}

	buf = h_read_file(log, &len);
	sweeps = buf != NULL ? h_count(buf, len, "hostile: sweep ") : 0;
	tap_ok(sweeps >= 1, "the guest finished %zu sweeps (%zu of 65536 "
	    "ports)", sweeps, sweeps >= 16 ? (size_t)65536 : sweeps * 4096);
	tap_ok(buf != NULL && h_count(buf, len, "framebuffer BAD") == 0,
	    "the framebuffer read back what the guest wrote");
	tap_ok(buf != NULL && h_count(buf, len, "EXCEPTION") == 0,
	    "no exception reached the guest");
	free(buf);

	buf = h_read_file(d->log, &len);
	tap_ok(buf != NULL && h_count(buf, len, "Sanitizer") == 0 &&
	    h_count(buf, len, "runtime error") == 0,
	    "no sanitizer report in vmmd's log");

	free(buf);

	/* Still serving. */
	r = h_call(c, "vm.list", NULL, H_REPLY_MS);
	tap_ok(h_ret(r) != NULL, "vm.list afterwards (%s)", h_text(r));
	json_object_put(r);
	h_close(ev);
	h_close(c);
	return h_done();
}
