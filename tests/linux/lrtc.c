/*
 * The reference guest's RTC; see lrtc.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lrtc.h"

/*
 * The periodic interrupt's rate and duration: the guest inside the
 * nested test host takes a few hundred interrupts a second in all, and
 * each RTC tick costs rtc-cmos's handler and the RTC core's work (which
 * reads the clock: a dozen port exits); 32 Hz leaves it room to take
 * every tick and the reinjected ones on top.  10 s makes 320 ticks.
 */
#define LR_PIE_HZ	32
#define LR_PIE_SECONDS	10
#define LR_UIE_COUNT	3
#define LR_SET_DATE	"2031-05-06 07:08:09"
#define LR_SET_EPOCH	1935817689L

/* The device's periodic tick counters now; false if vm.info has none. */
static bool
lr_ticks(struct lg_vm *vm, struct h_rtc_ticks *t)
{
	struct json_object *r, *rtc;
	bool ok;

	rtc = h_info_stats(vm->c, vm->name, "devices", "rtc", &r);
	ok = rtc != NULL;
	if (ok)
		h_rtc_ticks(rtc, t);
	json_object_put(r);
	return ok;
}

/*
 * busybox hwclock -r -u's date ("Tue Dec  1 14:29:25 2026  0.000000
 * seconds": ctime in the guest's zone, UTC) as an epoch second, or -1.
 */
static long
lr_hwclock_epoch(const char *out)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char mon[4];
	const char *m;
	struct tm tm;
	int n = 0;

	memset(&tm, 0, sizeof(tm));
	if (out == NULL || sscanf(out, "%*3s %3s %d %d:%d:%d %d%n", mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &tm.tm_year,
	    &n) != 6 || strlen(mon) != 3 || (m = strstr(months, mon)) == NULL ||
	    (m - months) % 3 != 0)
		return -1;
	tm.tm_mon = (int)(m - months) / 3;
	tm.tm_year -= 1900;
	return (long)timegm(&tm);
}

/* The host's clock, ms since the epoch: what the RTC's time follows. */
static double
lr_host_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs hwclock -r -u; the epoch second it showed, or -1. */
static long
lr_hwclock(struct lg_vm *vm, double *t0, double *t1)
{
	char *out;
	long g;
	int st;

	*t0 = lr_host_now();
	out = lg_cmd(vm, "hwclock -r -u", &st, LG_CMD_MS);
	*t1 = lr_host_now();
	g = st == 0 ? lr_hwclock_epoch(out) : -1;
	if (g < 0)
		tap_diag("%s: hwclock -r -u: status %d: %s", vm->name, st,
		    out ? h_flat(out) : "(no answer)");
	free(out);
	return g;
}

void
lr_check_read(struct lg_vm *vm, lg_check_fn check)
{
	double t0, t1;
	long g;

	g = lr_hwclock(vm, &t0, &t1);
	/* hwclock shows whole seconds: the second it read in, truncated. */
	check(vm, g >= (long)(t0 / 1e3) - 1 && g <= (long)(t1 / 1e3) + 1,
	    "hwclock -r (%ld) agrees with the host's clock within 1 s "
	    "(%ld..%ld, the command took %.1f s)", g, (long)(t0 / 1e3),
	    (long)(t1 / 1e3), (t1 - t0) / 1e3);
}

/*
 * A failed rtc-ticks command: 127 is a reference guest built before
 * rtc-ticks was in it.
 */
static void
lr_ticks_failed(struct lg_vm *vm, int status)
{
	if (status == 127)
		tap_diag("%s: no rtc-ticks in the guest: rebuild the reference "
		    "guest (tests/linux/build-guest.sh)", vm->name);
}

/* "rtc-ticks: ... N interrupts in T us": N and T, false if absent. */
static bool
lr_parse_ticks(const char *out, unsigned long long *n,
    unsigned long long *us)
{
	const char *start = out ? strstr(out, "rtc-ticks: ") : NULL;
	const char *p = start ? strstr(start, " interrupts in ") : NULL;

	if (p == NULL)
		return false;
	while (p > start && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return sscanf(p, "%llu interrupts in %llu us", n, us) == 2;
}

/*
 * Runs "rtc-ticks ARGS" (for about secs seconds) as a check; the
 * interrupts it counted and over how long, false if it failed.
 */
static bool
lr_run_ticks(struct lg_vm *vm, lg_check_fn check, const char *args,
    int secs, unsigned long long *n, unsigned long long *us)
{
	char cmd[64], *out;
	bool ok;
	int st;

	snprintf(cmd, sizeof(cmd), "rtc-ticks %s", args);
	out = lg_cmd(vm, cmd, &st, LG_CMD_MS + secs * 1000);
	ok = check(vm, st == 0 && lr_parse_ticks(out, n, us), "%s: %s", cmd,
	    out ? h_flat(out) : "no answer");
	if (!ok)
		lr_ticks_failed(vm, st);
	free(out);
	return ok;
}

static void
lr_check_pie(struct lg_vm *vm, lg_check_fn check)
{
	struct h_rtc_ticks a, b;
	unsigned long long n = 0, us = 0;
	char args[32];
	long want, tol, got;
	int64_t took, raised, dropped;
	bool have, ran;

	snprintf(args, sizeof(args), "pie %d %d", LR_PIE_HZ, LR_PIE_SECONDS);
	have = lr_ticks(vm, &a);
	ran = lr_run_ticks(vm, check, args, LR_PIE_SECONDS, &n, &us);
	have = lr_ticks(vm, &b) && have;
	if (!ran || !check(vm, have, "vm.info has the RTC's tick counters"))
		return;
	/*
	 * The ticks due over the guest's window (its monotonic clock, the
	 * device's VM clock: both the host's).  Tolerance: a tick at each
	 * end of the window (the first one is due a period after PIE goes
	 * on; the write that clears it may cross one), plus 2% for the
	 * emulated test host's jitter.  The guest takes them all but those
	 * a slew backlog still held when it turned PIE off, which the
	 * device drops then, by design, and counts: on a loaded test host
	 * its guest falls behind at times (119 of 321 coalesced, 11 left
	 * at the end, seen with four test hosts on two cores).
	 */
	want = (long)((unsigned long long)LR_PIE_HZ * us / 1000000);
	tol = 2 + want / 50;
	got = (long)n;
	raised = b.raised - a.raised;
	dropped = b.dropped - a.dropped;
	took = (b.delivered - a.delivered) + (b.reinjected - a.reinjected);
	check(vm, labs((long)raised - want) <= tol, "the device raised %"
	    PRId64 " periodic ticks at %d Hz in the guest's %.3f s (%ld +- "
	    "%ld)", raised, LR_PIE_HZ, us / 1e6, want, tol);
	check(vm, labs(got + (long)dropped - want) <= tol, "rtc-cmos took %ld "
	    "of them, and %" PRId64 " left in the backlog were dropped when "
	    "PIE went off (%ld +- %ld in all)", got, dropped, want, tol);
	tap_diag("%s: device over the window: raised %" PRId64 ", delivered "
	    "%" PRId64 ", coalesced %" PRId64 ", reinjected %" PRId64
	    ", dropped %" PRId64 ", backlog %" PRId64, vm->name,
	    b.raised - a.raised, b.delivered - a.delivered,
	    b.coalesced - a.coalesced, b.reinjected - a.reinjected,
	    b.dropped - a.dropped, b.backlog);
	/* Each edge that reached the guest ran the handler once. */
	check(vm, labs((long)took - got) <= 1, "every edge the device "
	    "delivered or reinjected is an interrupt the guest counted (%"
	    PRId64 " vs %ld)", took, got);
}

static void
lr_check_uie(struct lg_vm *vm, lg_check_fn check)
{
	unsigned long long n = 0, us = 0;
	char args[32];

	snprintf(args, sizeof(args), "uie %d", LR_UIE_COUNT);
	if (!lr_run_ticks(vm, check, args, LR_UIE_COUNT, &n, &us))
		return;
	/*
	 * The RTC core arms the chip's alarm for each next second: one
	 * interrupt a read, a second apart (after rtc-ticks's first read,
	 * at a second's change).
	 */
	check(vm, n == LR_UIE_COUNT && us >= (LR_UIE_COUNT - 1) * 1000000ULL &&
	    us <= (LR_UIE_COUNT + 1) * 1000000ULL, "/dev/rtc0's update "
	    "interrupts: %llu alarm interrupts for %d reads in %.3f s",
	    n, LR_UIE_COUNT, us / 1e6);
}

void
lr_check_irq(struct lg_vm *vm, lg_check_fn check)
{
	lr_check_pie(vm, check);
	lr_check_uie(vm, check);
}

bool
lr_set_clock(struct lg_vm *vm, lg_check_fn check, struct lr_clock *c)
{
	double t0, t1;
	char *out;
	long g;
	int st;

	c->set = LR_SET_EPOCH;
	c->host0 = lr_host_now();
	out = lg_cmd(vm, "date -u -s '" LR_SET_DATE "' >/dev/null && "
	    "hwclock -w -u", &st, LG_CMD_MS);
	c->host1 = lr_host_now();
	free(out);
	if (!check(vm, st == 0, "date -s %s; hwclock -w (status %d)",
	    LR_SET_DATE, st))
		return false;
	g = lr_hwclock(vm, &t0, &t1);
	return check(vm, g >= c->set && g <= c->set + (long)((lr_host_now() -
	    c->host0) / 1e3) + 1, "hwclock -r reads back %ld (set %ld)", g,
	    c->set);
}

void
lr_check_clock_kept(struct lg_vm *vm, lg_check_fn check,
    const struct lr_clock *c)
{
	double t0, t1;
	long g, lo, hi, k;
	char *out;
	int st;

	g = lr_hwclock(vm, &t0, &t1);
	/* The set time plus the host's time since, a second either way. */
	lo = c->set + (long)((t0 - c->host1) / 1e3) - 1;
	hi = c->set + (long)((t1 - c->host0) / 1e3) + 1;
	check(vm, g >= lo && g <= hi, "after the reboot hwclock -r shows "
	    "the time set before it, advanced by the reboot (%ld, %ld..%ld)",
	    g, lo, hi);
	/* The kernel took its clock from the RTC at boot (rtc-cmos). */
	out = lg_cmd(vm, "date +%s", &st, LG_CMD_MS);
	k = out != NULL && st == 0 ? atol(out) : -1;
	free(out);
	check(vm, k >= lo && k <= hi + (long)((lr_host_now() - t1) / 1e3) + 1,
	    "and the guest's kernel booted with it (date +%%s %ld)", k);
}
