/*
 * The RTC end to end, with the rtc test guest (tests/guests/rtc-guest.c):
 * periodic interrupts at 1024 Hz through a 0.5 s stall under each
 * lost-tick policy, the alarm and update-ended interrupts, the clock the
 * guest set surviving a guest reboot, and a guest that never uses the
 * RTC costing no timer.
 *
 * The periodic counts: the guest counts ticks over 3 s of its own (TSC)
 * time with interrupts masked for 0.5 s in the middle, its handler
 * reading register C (IRQ 8 stays asserted until it does).  slew
 * delivers the stall's 512 ticks late, 3072 in all; discard loses them,
 * at most 2560.  The decision does not rest on those 3 s: on a loaded
 * host a tick can still be owed when they end, and clearing PIE would
 * drop it.  So the guest keeps ticking ("drain=host") until the device
 * reports its backlog empty in vm.info, then is told on its console to
 * stop; the device's counters are taken at that moment, and the
 * guest's count when it stopped is held against its clock and against
 * what the device raised by then.  The guest's clock is its TSC,
 * calibrated against the PIT with bounds that a loaded host widens but
 * cannot shift (rtc-guest.c): the counts are due by it.  (The least of
 * plain measurements, as the guest took before, came out a few percent
 * high on a host loaded several times over, the guest's clock as much
 * slow: a discard run at 256 Hz then counted 673 ticks where its clock
 * allowed 644 for the unmasked time, though the device had dropped
 * every masked tick.)  Inside the nested test host CPL0
 * code is emulated and even unmasked delivery may fall behind 1024 Hz:
 * the guest reports the ticks it had before the stall (1280 due), and
 * when those fell short the 1024 Hz figures are only reported, and the
 * same checks run at a rate the guest keeps up with (see
 * test_periodic).  How many ticks a guest took in a fixed window (before
 * the stall; discard's in all) is the host's load, reported, not
 * asserted.  With the counts go the device's
 * counters: under slew the backlog empty afterwards and nothing
 * dropped, under discard nothing reinjected.  slew runs with 32 slices
 * (the default) and with 8 (rtc_slices, as QEMU reinjects): the same
 * counts, and the catch-up times (the guest's) side by side; at 1024
 * Hz the catch-up time is reported (about 20 ms on a quiet host).  And
 * the worker stopped for 0.5 s across the end of the 3 s, as a loaded
 * host may: every tick then owed still reaches the guest.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RTC_RUN_MS	60000	/* calibration, 3 s of ticks, emulation */
#define RTC_DRAIN_MS	60000	/* a backlog reinjected on a loaded host */
#define RTC_DRAIN_LAST_MS 5000	/* still reinjecting at the end: saturated */
#define RTC_STOP_AT_MS	2800	/* test_stopped_at_end: from "start" */
#define RTC_STOP_MS	500
#define TICKS_SLACK	10	/* slew: "give or take a few" */
#define TICKS_SLACK_DISCARD	16
#define CATCHUP_US_MAX	20000	/* at 1024 Hz, 32 slices: about 18 ms */

struct periodic {
	long hz;
	long before, at_unstall, after20, caught_us;
	long window;		/* ticks in the guest's 3 s */
	long total, ms;		/* ticks when it stopped, after ms */
	long irq_ns;		/* what one interrupt costs the guest */
	struct h_rtc_ticks dev;	/* the device's counters, backlog drained */
	struct h_rtc_ticks end;	/* ...and once the guest stopped */
};

/*
 * The integer after prefix on the last line of the log that has prefix,
 * a number and then suffix (NULL: anything), or -1.
 */
static long
log_number(const char *log, const char *prefix, const char *suffix)
{
	char *buf, *p, *q;
	size_t len;
	long v = -1, n;

	buf = h_read_file(log, &len);
	if (buf == NULL)
		return -1;
	for (p = buf; (p = strstr(p, prefix)) != NULL; p++) {
		p += strlen(prefix);
		n = strtol(p, &q, 10);
		if (q != p && (suffix == NULL ||
		    strncmp(q, suffix, strlen(suffix)) == 0))
			v = n;
	}
	free(buf);
	return v;
}

/* A boolean member: 0 or 1, -1 when absent or not a boolean. */
static int
info_bool(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_boolean))
		return -1;
	return json_object_get_boolean(v) ? 1 : 0;
}

enum drain { DRAINED, SATURATED, NOT_DRAINED };

/*
 * Waits, bounded, until the device of name reports no backlog; its
 * counters then in t.  The backlog of a running guest only grows while
 * its vCPU cannot take the ticks, so this waits for an event (the
 * reinjection done), however slow the host.  A backlog at its cap
 * (backlog_max) means a guest that cannot take the rate at all (1024 Hz
 * of emulated CPL0 code in the nested test host): no wait ends that.
 * Nor does it end for a guest that takes ticks just about as fast as
 * they come (seen there: 0.38 ms an interrupt at 1024 Hz, 3004 of 3072
 * ticks in 3 s, the backlog between 1 and 513 for a minute): when the
 * wait runs out with the device still reinjecting, the guest is
 * saturated too; a backlog that stays while nothing is reinjected is a
 * device that stopped owing what it owes, and fails.
 */
static enum drain
drained(struct h_conn *c, const char *name, struct h_rtc_ticks *t)
{
	double deadline = h_now_ms() + RTC_DRAIN_MS;
	double last_look = deadline - RTC_DRAIN_LAST_MS;
	struct json_object *r, *rtc;
	int64_t cap, reinjected = -1;

	for (;;) {
		rtc = h_info_stats(c, name, "devices", "rtc", &r);
		if (rtc != NULL)
			h_rtc_ticks(rtc, t);
		cap = h_int(rtc, "backlog_max", -1);
		json_object_put(r);
		if (rtc != NULL && t->backlog == 0)
			return DRAINED;
		if (rtc != NULL && cap > 0 && t->backlog >= cap) {
			tap_diag("%s: the backlog is at its cap (%lld): the "
			    "guest does not keep up", name, (long long)cap);
			return SATURATED;
		}
		if (rtc != NULL && reinjected < 0 && h_now_ms() >= last_look)
			reinjected = t->reinjected;
		if (h_now_ms() >= deadline) {
			tap_diag("%s: backlog %lld after %d s, %lld ticks "
			    "reinjected in its last %d s", name,
			    (long long)t->backlog, RTC_DRAIN_MS / 1000,
			    reinjected < 0 ? -1LL :
			    (long long)(t->reinjected - reinjected),
			    RTC_DRAIN_LAST_MS / 1000);
			if (reinjected >= 0 && t->reinjected > reinjected)
				return SATURATED;
			return NOT_DRAINED;
		}
		h_sleep_ms(20);
	}
}

/*
 * slices: rtc_slices, 0 for the default (32).  stop_ms: 0, or stop the
 * worker (SIGSTOP) that long from RTC_STOP_AT_MS after the guest said
 * its ticks started.
 */
static void
run_periodic(struct h_daemon *d, struct h_conn *c, const char *policy,
    long hz, int slices, int stop_ms, struct periodic *p)
{
	struct json_object *r, *rtc;
	char name[32], prefix[64], extra[32] = "";
	struct h_console *con;
	const char *log;
	long long retries;
	enum drain drain;

	memset(p, 0xff, sizeof(*p));
	p->hz = hz;
	snprintf(name, sizeof(name), "rtc-%s-%ld%s%s", policy, hz,
	    slices != 0 ? "-s" : "", stop_ms != 0 ? "-stop" : "");
	if (slices != 0)
		snprintf(extra, sizeof(extra), ",\"rtc_slices\":%d", slices);
	snprintf(prefix, sizeof(prefix), "rtc: periodic %ld Hz: ", hz);
	log = h_console_log(d, name);
	tap_ok(h_create(c, name, "\"kernel\":\"%s\",\"cmdline\":"
	    "\"test=periodic hz=%ld drain=host\",\"lost_tick_policy\":"
	    "\"%s\"%s",
	    h_env("VMMD_GUEST_RTC"), hz, policy, extra) == 0, "%s: created",
	    name);
	tap_ok(h_start(c, name) == 0, "%s: started", name);
	if (stop_ms != 0) {
		pid_t pid = h_vm_pid(c, name);

		tap_ok(pid > 0 && h_file_expect(log, "Hz: start", 1,
		    RTC_RUN_MS) == 0, "%s: the guest's ticks started", name);
		h_sleep_ms(RTC_STOP_AT_MS);
		tap_ok(pid > 0 && kill(pid, SIGSTOP) == 0,
		    "%s: its worker stopped for %d ms", name, stop_ms);
		h_sleep_ms(stop_ms);
		if (pid > 0)
			kill(pid, SIGCONT);
	}
	tap_ok(h_file_expect(log, "waiting for the host's word", 1,
	    RTC_RUN_MS) == 0, "%s: the guest counted its 3 s of ticks", name);
	p->before = log_number(log, prefix, " ticks before the stall");
	p->at_unstall = log_number(log, prefix, " ticks at the end");
	p->after20 = log_number(log, prefix, " ticks 20 ms after");
	p->window = log_number(log, prefix, " ticks in");
	/*
	 * A saturated guest's figures are only reported (test_periodic):
	 * it is told to stop with its backlog at the cap.
	 */
	drain = drained(c, name, &p->dev);
	if (drain != SATURATED)
		tap_ok(drain == DRAINED, "%s: the device's backlog drained",
		    name);
	rtc = h_info_stats(c, name, "devices", "rtc", &r);
	tap_ok(rtc != NULL, "%s: vm.info has stats.devices.rtc", name);
	tap_ok(info_bool(rtc, "lost_ticks_slew") ==
	    (strcmp(policy, "slew") == 0) && p->dev.max_slices == (slices != 0 ?
	    slices : 32), "%s: the device runs %s, %lld slices", name, policy,
	    (long long)p->dev.max_slices);
	retries = h_int(rtc, "reinject_retries", -1);
	json_object_put(r);
	con = h_console_open(d, name);
	tap_ok(con != NULL && h_console_write(con, "s", 1) == 0 &&
	    h_file_expect(log, "PASS", 1, RTC_RUN_MS) == 0,
	    "%s: told to stop, the guest stopped", name);
	h_console_close(con);
	rtc = h_info_stats(c, name, "devices", "rtc", &r);
	h_rtc_ticks(rtc, &p->end);
	json_object_put(r);
	snprintf(prefix, sizeof(prefix), "rtc: periodic %ld Hz: stopped: ",
	    hz);
	p->total = log_number(log, prefix, " ticks in");
	snprintf(prefix, sizeof(prefix), "rtc: periodic %ld Hz: stopped: "
	    "%ld ticks in ", hz, p->total);
	p->ms = log_number(log, prefix, " ms");
	snprintf(prefix, sizeof(prefix), "rtc: periodic %ld Hz: caught up ",
	    hz);
	p->caught_us = log_number(log, prefix, " us after");
	p->irq_ns = log_number(log, "rtc: an interrupt costs ", " ns");
	tap_diag("%s: ticks %ld before the stall (%ld due), %ld at its end, "
	    "%ld 20 ms later, %ld in 3 s (%ld due), %ld when it stopped after "
	    "%ld ms; caught up after %ld us; an interrupt costs the guest %ld "
	    "ns", name, p->before, hz * 5 / 4, p->at_unstall, p->after20,
	    p->window, hz * 3, p->total, p->ms, p->caught_us, p->irq_ns);
	tap_diag("%s: device: raised %lld coalesced %lld reinjected %lld "
	    "dropped %lld backlog %lld (high %lld) retries %lld", name,
	    (long long)p->dev.raised, (long long)p->dev.coalesced,
	    (long long)p->dev.reinjected, (long long)p->dev.dropped,
	    (long long)p->dev.backlog, (long long)p->dev.backlog_high,
	    (long long)retries);
	tap_diag("%s: once stopped: raised %lld dropped %lld", name,
	    (long long)p->end.raised, (long long)p->end.dropped);
	/* The two clocks side by side: they must agree (see above). */
	tap_diag("%s: the guest's clock said %ld ms (+- %ld ppm), the "
	    "device's %lld ticks about %lld ms", name, p->ms,
	    log_number(log, "kHz (+- ", " ppm"), (long long)p->end.raised,
	    (long long)p->end.raised * 1000 / hz);
	tap_ok(h_stop(c, name, true, -1, H_REPLY_MS) == 0, "%s: stopped",
	    name);
}

/*
 * Slack on the guest's own "3 s": its TSC is calibrated against the
 * PIT, which inside the nested test host (emulated, run by the
 * VMMD_TEST_TIME_SCALE runner) is off by several percent.
 */
static long
slack(long ticks, long fixed)
{
	const char *scale = getenv("VMMD_TEST_TIME_SCALE");

	if (scale != NULL && atoi(scale) > 1 && ticks / 10 > fixed)
		return ticks / 10;
	return fixed;
}

/*
 * Did the guest take every tick while it did not mask interrupts, with
 * room for the reinjection after the stall?  This decides whether the
 * host keeps up at a rate at all, so it is strict: a guest that falls
 * short by more than a few, or whose own measured interrupt cost leaves
 * it less than four times the rate (the margin the lower rates get
 * below), is saturated.  Natively an interrupt costs the guest about
 * 100 us (room for 10,000 a second); in the nested test host about
 * 400 us, and there a run took 1295 of 1280 before the stall and then
 * could not take the reinjected ticks.
 */
static bool
kept_up(const struct periodic *p)
{
	return p->before >= p->hz * 5 / 4 - TICKS_SLACK &&
	    (p->irq_ns <= 0 || 1000000000L / p->irq_ns >= 4 * p->hz);
}

/*
 * The same, reported at a rate the host was found to keep up with: a
 * figure of the host, which a loaded one makes miss (a discard guest
 * counted 288 of 320 at 256 Hz natively beside two busy loops), not a
 * promise of vmmd's.  The guest's first 1.25 s are its TSC's: in the
 * nested test host one run counted 297 of 320 at 256 Hz because the
 * device itself raised only 709 of 768 in that run's 3 s (the emulated
 * host's clocks apart), so the slack there is slack()'s; natively it is
 * kept_up()'s.
 */
static bool
on_time(const struct periodic *p)
{
	long due = p->hz * 5 / 4;

	return p->before >= due - slack(due, TICKS_SLACK);
}

/*
 * Whether the guest saw the n ticks the device handed on: none lost,
 * give or take the two at the window's ends.  Where /dev/kvm opens
 * natively, none twice either.  In the nested test host a loaded run
 * once showed a guest 3 interrupts more than vmmd raised in all (772
 * of 769, every count of vmmd's own consistent): the emulated SVM
 * below KVM there can deliver one twice, so up to 1% more is a
 * diagnostic there, not a failure.  A lost tick stays one everywhere.
 */
static bool
all_ticks(long got, long n)
{
	const char *scale = getenv("VMMD_TEST_TIME_SCALE");
	long extra = 2;

	if (scale != NULL && atoi(scale) > 1 && n / 100 > extra)
		extra = n / 100;
	if (got > n + 2 && got <= n + extra)
		tap_diag("the guest saw %ld interrupts more than vmmd raised "
		    "(%ld of %ld): more than one delivery below vmmd",
		    got - n, got, n);
	return got >= n - 2 && got <= n + extra;
}

/* The ticks due by the guest's clock when it stopped. */
static long
due(const struct periodic *p)
{
	return p->ms >= 0 ? p->hz * p->ms / 1000 : -1;
}

/*
 * What the device handed on by the time the guest stopped: raised less
 * given up on (under slew nothing is, until the guest clears PIE).
 */
static long
handed_on(const struct periodic *p)
{
	return (long)(p->end.raised - p->end.dropped);
}

static void
check_periodic(const struct periodic *slew, const struct periodic *slew8,
    const struct periodic *discard)
{
	long hz = slew->hz, stall = hz / 2;
	long s1 = slack(due(slew), TICKS_SLACK);
	long s8 = slack(due(slew8), TICKS_SLACK);
	long s2 = slack(due(discard) - stall, TICKS_SLACK_DISCARD);

	/* Exact, whatever the clocks: what the device handed on arrived. */
	tap_ok(all_ticks(slew->total, handed_on(slew)),
	    "slew %ld Hz: the guest got every tick the device raised "
	    "(%ld of %lld - %lld)", hz, slew->total,
	    (long long)slew->end.raised, (long long)slew->end.dropped);
	tap_ok(all_ticks(discard->total, handed_on(discard)),
	    "discard %ld Hz: the guest got every tick not dropped (%ld of "
	    "%lld - %lld)", hz, discard->total,
	    (long long)discard->end.raised, (long long)discard->end.dropped);
	tap_ok(labs(slew->total - due(slew)) <= s1,
	    "slew %ld Hz: %ld ticks in %ld ms (%ld +- %ld)", hz, slew->total,
	    slew->ms, due(slew), s1);
	/*
	 * discard delivers at most the ticks of the unmasked time; fewer
	 * where the host fell behind now and then (each of those ticks
	 * counted as dropped, above): how many fewer is the host's load.
	 */
	tap_ok(discard->total <= due(discard) - stall + s2,
	    "discard %ld Hz: %ld ticks in %ld ms (at most %ld + %ld)", hz,
	    discard->total, discard->ms, due(discard) - stall, s2);
	if (discard->total < (due(discard) - stall) * 9 / 10)
		tap_diag("discard %ld Hz: under 90%% of the unmasked time's "
		    "ticks: the host fell behind", hz);
	tap_ok(slew->dev.backlog == 0 && slew->dev.dropped == 0 &&
	    slew->dev.reinjected >= stall - TICKS_SLACK,
	    "slew %ld Hz: backlog back to 0, %lld reinjected, none dropped",
	    hz, (long long)slew->dev.reinjected);
	tap_ok(discard->dev.coalesced >= stall - TICKS_SLACK_DISCARD &&
	    discard->dev.reinjected == 0 && discard->dev.backlog_high == 0 &&
	    discard->dev.dropped == discard->dev.coalesced,
	    "discard %ld Hz: %lld coalesced, all dropped, none reinjected",
	    hz, (long long)discard->dev.coalesced);
	tap_ok(all_ticks(slew8->total, handed_on(slew8)) &&
	    labs(slew8->total - due(slew8)) <= s8 && slew8->dev.backlog == 0 &&
	    slew8->dev.dropped == 0, "slew, 8 slices, %ld Hz: %ld ticks in "
	    "%ld ms, %lld raised, backlog back to 0, none dropped", hz,
	    slew8->total, slew8->ms, (long long)slew8->end.raised);
	tap_diag("%ld Hz: ticks in the 20 ms after the stall: slew %ld (8 "
	    "slices: %ld), discard %ld", hz, slew->after20 - slew->at_unstall,
	    slew8->after20 - slew8->at_unstall,
	    discard->after20 - discard->at_unstall);
	tap_diag("%ld Hz: catch-up after the stall (the guest's clock): "
	    "%ld us with 32 slices, %ld us with 8", hz, slew->caught_us,
	    slew8->caught_us);
}

/*
 * 1024 Hz, as the guests that count ticks use it.  Where the guest
 * cannot take 1024 interrupts a second even unmasked (emulated CPL0
 * code in the nested test host), both policies are run again at the
 * highest power-of-2 rate under a quarter of what it took before the
 * stall (reinjection needs room on top of the ticks),
 * and the same figures checked there: at 1024 Hz that guest is
 * saturated, and the two policies only differ by what its spare time
 * allows (reported, with slew taking at least as many ticks).
 */
static long
test_periodic(struct h_daemon *d, struct h_conn *c)
{
	struct periodic slew, slew8, discard;
	long took, hz;

	run_periodic(d, c, "slew", 1024, 0, 0, &slew);
	run_periodic(d, c, "discard", 1024, 0, 0, &discard);
	if (kept_up(&slew) && kept_up(&discard)) {
		/*
		 * How soon: within about 20 ms (32 slices), plus what taking
		 * the stall's ticks costs the guest at its own pace.  A
		 * figure, not a check: a host that deschedules the worker
		 * for longer stretches it, and the exact counts above are
		 * what the device promises.
		 */
		long bound = CATCHUP_US_MAX + (slew.irq_ns > 0 ?
		    512 * slew.irq_ns / 1000 * 3 / 2 : 0);

		run_periodic(d, c, "slew", 1024, 8, 0, &slew8);
		check_periodic(&slew, &slew8, &discard);
		tap_ok(slew.caught_us >= 0, "slew 1024 Hz: every lost tick "
		    "reinjected after the stall (the guest saw its count "
		    "catch up)");
		tap_diag("slew 1024 Hz: caught up %ld us after the stall "
		    "(expected on a quiet host: at most %d ms and 1.5 x 512 "
		    "of the guest's %ld ns interrupts, %ld us)",
		    slew.caught_us, CATCHUP_US_MAX / 1000, slew.irq_ns, bound);
		return 1024;
	}
	took = (slew.before > discard.before ? slew.before :
	    discard.before) * 4 / 5;
	tap_diag("1024 Hz is more than this guest keeps up with (before the "
	    "stall slew %ld, discard %ld of 1280 ticks; an interrupt costs "
	    "it %ld ns): slew %ld, discard %ld ticks in 3 s", slew.before,
	    discard.before, slew.irq_ns, slew.window, discard.window);
	/*
	 * Saturated, the two policies differ only by what spare time the
	 * host had in each run: a figure, not a promise.
	 */
	tap_diag("1024 Hz, saturated: slew took %ld ticks in 3 s, discard %ld",
	    slew.window, discard.window);
	for (hz = 512; hz > 16 && hz > took / 4; hz /= 2)
		;
	tap_diag("running again at %ld Hz (the guest took %ld a second)",
	    hz, took);
	run_periodic(d, c, "slew", hz, 0, 0, &slew);
	run_periodic(d, c, "slew", hz, 8, 0, &slew8);
	run_periodic(d, c, "discard", hz, 0, 0, &discard);
	tap_diag("%ld Hz: the guest %s while unmasked (%ld, %ld, %ld of %ld "
	    "before the stall)", hz, on_time(&slew) && on_time(&slew8) &&
	    on_time(&discard) ? "keeps up" : "fell behind", slew.before,
	    slew8.before, discard.before, hz * 5 / 4);
	check_periodic(&slew, &slew8, &discard);	return hz;
}

/*
 * What a loaded host does at the worst moment, made to happen: the
 * worker (the device's timers and the vCPU alike) stopped across the end
 * of the guest's 3 s, so that ticks fall due while nothing runs and are
 * still owed when the window ends.  Under slew every one of them must
 * still reach the guest: it stops its periodic interrupt only once the
 * backlog drained.  (A guest that cleared PIE when its window ended had
 * the device drop them.)
 */
static void
test_stopped_at_end(struct h_daemon *d, struct h_conn *c, long hz)
{
	struct periodic p;

	run_periodic(d, c, "slew", hz, 0, RTC_STOP_MS, &p);
	tap_ok(p.dev.backlog == 0 && p.dev.dropped == 0 &&
	    all_ticks(p.total, handed_on(&p)),
	    "slew %ld Hz, the worker stopped %d ms across the end of the "
	    "guest's 3 s: backlog drained (high %lld), none dropped, the "
	    "guest got every tick (%ld of %lld)", hz, RTC_STOP_MS,
	    (long long)p.dev.backlog_high, p.total, (long long)p.end.raised);
}

static void
test_alarm(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "rtc-alarm");
	char *buf;
	size_t len;

	tap_ok(h_create(c, "rtc-alarm", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"test=alarm\"", h_env("VMMD_GUEST_RTC")) == 0,
	    "rtc-alarm: created");
	tap_ok(h_start(c, "rtc-alarm") == 0, "rtc-alarm: started");
	tap_ok(h_file_expect(log, "PASS", 1, RTC_RUN_MS) == 0,
	    "rtc-alarm: update-ended and alarm interrupts at their seconds");
	buf = h_read_file(log, &len);
	tap_ok(buf != NULL && h_count(buf, len, "FAIL") == 0 &&
	    h_count(buf, len, "rtc: update at ") == 5 &&
	    h_count(buf, len, "rtc: alarm at ") == 1,
	    "rtc-alarm: 5 updates, one alarm, no failure");
	if (buf != NULL)
		tap_diag("%s", h_flat(buf));
	free(buf);
	tap_ok(h_stop(c, "rtc-alarm", true, -1, H_REPLY_MS) == 0,
	    "rtc-alarm: stopped");
}

static void
test_clock(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "rtc-clock");
	struct json_object *r;
	double t_set = 0, t_back = 0;
	long later;
	bool set, back;

	tap_ok(h_create(c, "rtc-clock", "\"kernel\":\"%s\",\"cmdline\":"
	    "\"test=clock\"", h_env("VMMD_GUEST_RTC")) == 0,
	    "rtc-clock: created");
	tap_ok(h_start(c, "rtc-clock") == 0, "rtc-clock: started");
	set = h_file_expect(log, "rtc: resetting via i8042", 1,
	    RTC_RUN_MS) == 0;
	t_set = h_now_ms();
	tap_ok(set, "rtc-clock: the guest set the clock and resets");
	back = h_file_expect(log, "rtc: after reboot", 1, RTC_RUN_MS) == 0;
	t_back = h_now_ms();
	tap_ok(back, "rtc-clock: the guest booted again");
	tap_ok(h_file_expect(log, "PASS", 1, H_BOOT_MS) == 0,
	    "rtc-clock: the clock and the CMOS mark survived the reboot");
	later = log_number(log, "Z epoch=981173", NULL);
	later = later >= 0 ? later - 106 : -1;
	tap_ok(later >= 0 && later <= (long)((t_back - t_set) / 1000) + 2,
	    "rtc-clock: the set time advanced by the reboot's duration "
	    "(%ld s, the reboot took %.1f s)", later,
	    (t_back - t_set) / 1000);
	r = h_callf(c, H_REPLY_MS, "vm.info", "{\"name\":\"rtc-clock\"}");
	tap_ok(h_int(h_ret(r) ? json_object_object_get(h_ret(r), "stats") :
	    NULL, "reboots", -1) == 1, "rtc-clock: one reboot");
	json_object_put(r);
	tap_ok(h_stop(c, "rtc-clock", true, -1, H_REPLY_MS) == 0,
	    "rtc-clock: stopped");
}

/* hello never touches the RTC's interrupts: no timer, no tick. */
static void
test_idle(struct h_daemon *d, struct h_conn *c)
{
	const char *log = h_console_log(d, "rtc-idle");
	struct json_object *r, *o;

	tap_ok(h_create(c, "rtc-idle", "\"kernel\":\"%s\"",
	    h_env("VMMD_GUEST_HELLO")) == 0, "rtc-idle: created");
	tap_ok(h_start(c, "rtc-idle") == 0, "rtc-idle: started");
	tap_ok(h_file_expect(log, "hello: halting", 1, H_BOOT_MS) == 0,
	    "rtc-idle: the guest halted");
	h_sleep_ms(200);
	o = h_info_stats(c, "rtc-idle", "devices", "rtc", &r);
	tap_ok(o != NULL && h_int(o, "ticks_raised", -1) == 0 &&
	    info_bool(o, "irq_level") == 0,
	    "rtc-idle: no tick raised, IRQ 8 low");
	json_object_put(r);
	o = h_info_stats(c, "rtc-idle", "timers", NULL, &r);
	tap_ok(o != NULL && h_int(o, "armed", -1) == 0,
	    "rtc-idle: stats.timers.armed is 0 (%lld)",
	    (long long)h_int(o, "armed", -1));
	json_object_put(r);
	tap_ok(h_stop(c, "rtc-idle", true, -1, H_REPLY_MS) == 0,
	    "rtc-idle: stopped");
}

int
main(void)
{
	struct h_daemon *d;
	struct h_conn *c;

	h_init();
	c = h_setup(&d);
	test_idle(d, c);
	test_stopped_at_end(d, c, test_periodic(d, c));
	test_alarm(d, c);
	test_clock(d, c);
	h_close(c);
	return h_done();
}
