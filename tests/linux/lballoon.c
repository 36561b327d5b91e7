/* See lballoon.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lballoon.h"
#include "tap.h"

#define MIB_KIB		1024L
#define LB_RISE_MIB	360		/* of memhog's 400: its pages came */
#define LB_INFLATE_MIB	256		/* vmctl balloon: keep 768 - 256 */
#define LB_SLACK_MIB	32		/* an idle guest's drift meanwhile */
#define LB_SAMPLE_MS	250
/* RSS settled: it fell by no more than LB_STILL_KIB for so long. */
#define LB_STILL_MS	5000
#define LB_STILL_KIB	(2 * MIB_KIB)
/*
 * Generous bounds on events that take long on a busy nested test host:
 * memhog touching 100,000 pages (each one a fault the test host's KVM
 * shadows), the guest reporting its free pages (2 s after they came
 * free, a batch every 2 s), inflating 65,536 pages.
 */
#define LB_HOG_MS	600000
#define LB_BACK_MS	300000
#define LB_INFLATE_MS	300000
#define LB_AFTER_MS	60000		/* sampling on once LB_BACK_MIB came */
#define LB_SETTLE_MS	60000		/* a report in flight: seconds */

/* Bit 5 of the guest's features: VIRTIO_BALLOON_F_FREE_PAGE_REPORTING. */
#define LB_F_REPORTING	5
#define LB_F_STATS_VQ	1

/* What vm.info's stats.devices.virtio-balloon says; -1 when absent. */
struct lb_dev {
	int64_t updates, free, avail, total, actual, inflated, deflated;
	int64_t reported, reports, discard_errors;
};

/* The guest's /proc/meminfo, in KiB; -1 when absent. */
struct lb_meminfo {
	long total, free, avail;
};

/* The worker's VmRSS in KiB, or -1. */
static long
lb_rss(pid_t pid)
{
	char buf[64];

	if (pid <= 0 || h_proc_status(pid, "VmRSS", buf, sizeof(buf)) == NULL ||
	    buf[0] == '\0')
		return -1;
	return strtol(buf, NULL, 10);
}

/*
 * One vm.info: the balloon's figures into *d.  The worker answering it
 * also gives the guest its statistics buffer back, so the guest sends
 * new ones (the next vm.info shows them).
 */
static bool
lb_dev_get(struct lg_vm *vm, struct lb_dev *d)
{
	struct json_object *r, *b;

	b = h_info_stats(vm->c, vm->name, "devices", "virtio-balloon", &r);
	d->updates = h_int(b, "stats_updates", -1);
	d->free = h_int(b, "free_memory", -1);
	d->avail = h_int(b, "available_memory", -1);
	d->total = h_int(b, "total_memory", -1);
	d->actual = h_int(b, "actual_pages", -1);
	d->inflated = h_int(b, "inflated_pages", -1);
	d->deflated = h_int(b, "deflated_pages", -1);
	d->reported = h_int(b, "reported_bytes", -1);
	d->reports = h_int(b, "reports", -1);
	d->discard_errors = h_int(b, "discard_errors", -1);
	json_object_put(r);
	return b != NULL;
}

/*
 * Statistics the guest sent after this call began: vm.info until
 * stats_updates moves past what the first one showed.
 */
static bool
lb_dev_fresh(struct lg_vm *vm, struct lb_dev *d)
{
	struct lb_dev first;
	double until = h_now_ms() + LG_CMD_MS;

	if (!lb_dev_get(vm, &first))
		return false;
	do {
		h_sleep_ms(200);
		if (!lb_dev_get(vm, d))
			return false;
	} while (d->updates <= first.updates && h_now_ms() < until);
	return d->updates > first.updates;
}

/* vm.info until the guest's actual is pages; whether it got there. */
static bool
lb_wait_actual(struct lg_vm *vm, int64_t pages, struct lb_dev *d)
{
	double until = h_now_ms() + LB_INFLATE_MS;

	while (lb_dev_get(vm, d) && d->actual != pages &&
	    h_now_ms() < until)
		h_sleep_ms(500);
	return d->actual == pages;
}

static void
lb_dev_diag(struct lg_vm *vm, const char *when, const struct lb_dev *d)
{
	tap_diag("%s: balloon %s: actual %" PRId64 " pages, inflated %"
	    PRId64 ", deflated %" PRId64 ", %" PRId64 " reports of %" PRId64
	    " KiB, %" PRId64 " discard errors; guest: free %" PRId64 " KiB, "
	    "available %" PRId64 " KiB of %" PRId64 " KiB", vm->name, when,
	    d->actual, d->inflated, d->deflated, d->reports, d->reported >> 10,
	    d->discard_errors, d->free >> 10, d->avail >> 10, d->total >> 10);
}

static bool
lb_meminfo(struct lg_vm *vm, struct lb_meminfo *m)
{
	char *out, *p;
	int st = -1;

	m->total = m->free = m->avail = -1;
	out = lg_cmd(vm, "grep -e ^MemTotal: -e ^MemFree: -e ^MemAvailable: "
	    "/proc/meminfo", &st, LG_CMD_MS);
	if (out != NULL && st == 0) {
		if ((p = strstr(out, "MemTotal:")) != NULL)
			m->total = atol(p + strlen("MemTotal:"));
		if ((p = strstr(out, "MemFree:")) != NULL)
			m->free = atol(p + strlen("MemFree:"));
		if ((p = strstr(out, "MemAvailable:")) != NULL)
			m->avail = atol(p + strlen("MemAvailable:"));
	}
	free(out);
	return m->total > 0 && m->free > 0 && m->avail > 0;
}

/*
 * Samples the worker's RSS every LB_SAMPLE_MS until it has fallen
 * drop_kib below from_kib and then stays (falls by no more than
 * LB_STILL_KIB for LB_STILL_MS), at most LB_BACK_MS for the fall and
 * LB_AFTER_MS after it.  With a label, the samples are printed as they
 * come (one when it moved by 2 MiB or every 2 s).  *reached_ms: when the
 * fall was reached, from the start, or -1 (drop_kib 0: at once, which
 * waits only for the RSS to settle).  Returns the last sample.
 */
static long
lb_watch(struct lg_vm *vm, pid_t pid, const char *label, long from_kib,
    long drop_kib, double *reached_ms)
{
	double t0 = h_now_ms(), t, shown_t = -1e9, still_t = 0;
	long rss, shown = -1, still = -1, last = -1;

	*reached_ms = -1;
	for (;;) {
		t = h_now_ms() - t0;
		if ((rss = lb_rss(pid)) < 0)
			break;
		last = rss;
		if (still < 0 || rss < still - LB_STILL_KIB ||
		    rss > still + LB_STILL_KIB) {
			still = rss;
			still_t = t;
		}
		if (*reached_ms < 0 && (drop_kib <= 0 ||
		    from_kib - rss >= drop_kib))
			*reached_ms = t;
		if (label != NULL && (labs(rss - shown) >= 2 * MIB_KIB ||
		    t - shown_t >= 2000 || *reached_ms == t)) {
			tap_diag("%s: %s: %+7.2f s  VmRSS %7ld KiB  (%+5ld MiB)%s",
			    vm->name, label, t / 1e3, rss,
			    (rss - from_kib) / MIB_KIB, *reached_ms == t ?
			    "  <- the fall wanted" : "");
			shown = rss;
			shown_t = t;
		}
		if (*reached_ms >= 0 && t - still_t >= LB_STILL_MS)
			break;
		if (*reached_ms < 0 ? t >= LB_BACK_MS :
		    t - *reached_ms >= LB_AFTER_MS)
			break;
		h_sleep_ms(LB_SAMPLE_MS);
	}
	if (label != NULL && shown != last)
		tap_diag("%s: %s: %+7.2f s  VmRSS %7ld KiB  (%+5ld MiB), still",
		    vm->name, label, (h_now_ms() - t0) / 1e3, last,
		    (last - from_kib) / MIB_KIB);
	return last;
}

/*
 * memhog LB_HOG_MIB in the guest's background (its output in log),
 * until it holds them or it is gone; its output into line.  Whether it
 * holds them.
 */
static bool
lb_hog(struct lg_vm *vm, const char *log, char *line, size_t len)
{
	char cmd[512], *out;
	int st = -1;
	bool ok;

	/* Gone: no memhog for 2 s (it may not have run yet at first). */
	snprintf(cmd, sizeof(cmd), "(memhog %d >%s 2>&1 </dev/null &); i=0; "
	    "while ! grep -q holding %s && [ $i -lt %d ]; do sleep 0.5; "
	    "i=$((i+1)); [ $i -lt 4 ] || pidof memhog >/dev/null || break; "
	    "done; cat %s", LB_HOG_MIB, log, log, LB_HOG_MS / 500 - 20, log);
	out = lg_cmd(vm, cmd, &st, LB_HOG_MS);
	ok = out != NULL && strstr(out, "memhog: holding") != NULL;
	snprintf(line, len, "%s", out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return ok;
}

/*
 * Tells memhog to let go (SIGUSR1), until it says it freed its memory;
 * its output into line.  Whether it found every page as it wrote it and
 * freed them.
 */
static bool
lb_unhog(struct lg_vm *vm, const char *log, char *line, size_t len)
{
	char cmd[512], *out;
	int st = -1;
	bool ok;

	snprintf(cmd, sizeof(cmd), "kill -USR1 $(pidof memhog); i=0; "
	    "while ! grep -q -e freed -e changed %s && [ $i -lt 1200 ]; do "
	    "sleep 0.2; i=$((i+1)); done; cat %s", log, log);
	out = lg_cmd(vm, cmd, &st, LB_HOG_MS);
	ok = out != NULL && strstr(out, "intact") != NULL &&
	    strstr(out, "memhog: freed") != NULL;
	snprintf(line, len, "%s", out != NULL ? h_flat(out) : "(no answer)");
	free(out);
	return ok;
}

/* The guest's driver took free page reporting and statistics. */
static bool
lb_check_features(struct lg_vm *vm, lg_check_fn check)
{
	char *out, *order;
	int st = -1;
	bool ok;

	out = lg_cmd(vm, "cat /sys/bus/virtio/drivers/virtio_balloon/"
	    "virtio*/features", &st, LG_CMD_MS);
	ok = out != NULL && st == 0 && strlen(out) > LB_F_REPORTING &&
	    out[LB_F_REPORTING] == '1' && out[LB_F_STATS_VQ] == '1';
	if (out != NULL)
		out[strcspn(out, "\n")] = '\0';
	check(vm, ok, "balloon: the guest's virtio_balloon took statistics "
	    "and free page reporting (features %s)", out != NULL ? out : "?");
	free(out);
	order = lg_cmd(vm, "cat /sys/module/page_reporting/parameters/"
	    "page_reporting_order 2>/dev/null || echo ?", &st, LG_CMD_MS);
	if (order != NULL)
		order[strcspn(order, "\n")] = '\0';
	tap_diag("%s: balloon: the guest reports free blocks of order %s "
	    "and up", vm->name, order != NULL ? order : "?");
	free(order);
	return ok;
}

/*
 * memhog takes its memory, frees it, takes it again: the worker's RSS
 * rises, falls, rises.
 */
static bool
lb_check_hog(struct lg_vm *vm, lg_check_fn check, pid_t pid)
{
	char line[1024];
	struct lb_dev d0, d1;
	long base, peak, low, again;
	double reached, t0;
	bool all = true;

	/* After the boot, the guest reports what it freed: let it. */
	t0 = h_now_ms();
	base = lb_watch(vm, pid, NULL, 0, 0, &reached);
	tap_diag("%s: balloon: the worker's VmRSS settled at %ld KiB (%.1f s)",
	    vm->name, base, (h_now_ms() - t0) / 1e3);
	lb_dev_get(vm, &d0);
	lb_dev_diag(vm, "before memhog", &d0);

	/* Without its memory held there is nothing to follow. */
	if (!check(vm, lb_hog(vm, "/tmp/hog1.log", line, sizeof(line)),
	    "balloon: memhog holds %d MiB (%s)", LB_HOG_MIB, line))
		return false;
	peak = lb_rss(pid);
	all &= check(vm, base > 0 && peak - base >= LB_RISE_MIB * MIB_KIB,
	    "balloon: the worker's VmRSS rose by %ld MiB (at least %d): %ld "
	    "KiB to %ld KiB", (peak - base) / MIB_KIB, LB_RISE_MIB, base,
	    peak);
	all &= check(vm, lb_unhog(vm, "/tmp/hog1.log", line, sizeof(line)),
	    "balloon: memhog found its memory intact and freed it (%s)",
	    line);

	/* The timeline: from memhog's "freed" on the guest's shell. */
	tap_diag("%s: balloon: the worker's VmRSS from memhog's free "
	    "(a sample every %d ms; shown when it moved 2 MiB or every 2 s):",
	    vm->name, LB_SAMPLE_MS);
	low = lb_watch(vm, pid, "balloon", peak, LB_BACK_MIB * MIB_KIB,
	    &reached);
	lb_dev_get(vm, &d1);
	lb_dev_diag(vm, "after the free", &d1);
	all &= check(vm, reached >= 0, "balloon: the worker's VmRSS fell by "
	    "at least %d MiB once memhog freed its memory (in %.1f s; %ld MiB "
	    "given back, %ld KiB left)", LB_BACK_MIB, reached / 1e3,
	    (peak - low) / MIB_KIB, low);
	all &= check(vm, d1.reported - d0.reported >= (int64_t)LB_BACK_MIB
	    << 20 && d1.discard_errors == 0, "balloon: the guest reported "
	    "%" PRId64 " MiB free in %" PRId64 " reports, every range given "
	    "back (%" PRId64 " discard errors)",
	    (d1.reported - d0.reported) >> 20, d1.reports - d0.reports,
	    d1.discard_errors);

	/* The memory is the guest's again when it asks. */
	if (!check(vm, lb_hog(vm, "/tmp/hog2.log", line, sizeof(line)),
	    "balloon: a second memhog gets %d MiB again (%s)", LB_HOG_MIB,
	    line))
		return false;
	again = lb_rss(pid);
	all &= check(vm, low > 0 && again - low >= LB_BACK_MIB * MIB_KIB,
	    "balloon: the worker's VmRSS rose again by %ld MiB (at least "
	    "%d): %ld KiB to %ld KiB", (again - low) / MIB_KIB, LB_BACK_MIB,
	    low, again);
	all &= check(vm, lb_unhog(vm, "/tmp/hog2.log", line, sizeof(line)),
	    "balloon: and finds it intact and frees it (%s)", line);
	/* The guest reports it again: the next checks want it quiet. */
	t0 = h_now_ms();
	low = lb_watch(vm, pid, NULL, again, LB_BACK_MIB * MIB_KIB, &reached);
	tap_diag("%s: balloon: the worker's VmRSS settled at %ld KiB after "
	    "the second free (%.1f s)", vm->name, low, (h_now_ms() - t0) / 1e3);
	return all;
}

/* |a - b| <= LB_SLACK_MIB, a and b in KiB. */
static bool
lb_near(long a, long b)
{
	return labs(a - b) <= LB_SLACK_MIB * MIB_KIB;
}

/*
 * vm.info's statistics (fresh ones on both sides of the reading) agree
 * with the guest's /proc/meminfo.
 */
static bool
lb_stats_match(struct lg_vm *vm, struct lb_dev *s, struct lb_meminfo *m)
{
	return lb_dev_fresh(vm, s) && lb_meminfo(vm, m) &&
	    lb_dev_fresh(vm, s) && s->total == (int64_t)m->total << 10 &&
	    lb_near(s->free >> 10, m->free) && lb_near(s->avail >> 10,
	    m->avail);
}

/*
 * vm.info's statistics are the guest's; vmctl balloon takes memory from
 * it and gives it back.  A batch of free pages the guest is reporting
 * is off its free lists (MemFree and MemAvailable lower by up to 128
 * MiB) until the device has given it back: each comparison is made
 * again until it holds, for LB_SETTLE_MS at most.  (Each condition is
 * had before the check's arguments read what it filled: their order is
 * the compiler's.)
 */
static bool
lb_check_inflate(struct lg_vm *vm, lg_check_fn check)
{
	char keep[16], full[16];
	struct lb_dev s, s2;
	struct lb_meminfo m, m2, m3;
	struct h_proc p;
	double until;
	long drop;
	int rc;
	bool all = true, ok;

	until = h_now_ms() + LB_SETTLE_MS;
	while (!(ok = lb_stats_match(vm, &s, &m)) && h_now_ms() < until)
		h_sleep_ms(1000);
	lb_dev_diag(vm, "statistics", &s);
	tap_diag("%s: balloon: the guest's /proc/meminfo: MemTotal %ld KiB, "
	    "MemFree %ld KiB, MemAvailable %ld KiB", vm->name, m.total,
	    m.free, m.avail);
	all &= check(vm, ok, "balloon: vm.info shows the guest's memory "
	    "(%" PRId64 " statistics buffers): total %" PRId64 " KiB "
	    "(MemTotal %ld), free %" PRId64 " KiB (MemFree %ld), available %"
	    PRId64 " KiB (MemAvailable %ld)", s.updates, s.total >> 10,
	    m.total, s.free >> 10, m.free, s.avail >> 10, m.avail);

	/* Inflate: keep LB_GUEST_MIB - LB_INFLATE_MIB. */
	snprintf(keep, sizeof(keep), "%dM", LB_GUEST_MIB - LB_INFLATE_MIB);
	rc = h_vmctl(vm->d, &p, LG_CMD_MS, "balloon", vm->name, keep, NULL);
	all &= check(vm, rc == 0, "balloon: vmctl balloon %s %s (%d: %s)",
	    vm->name, keep, rc, h_flat(p.obuf != NULL ? p.obuf : ""));
	h_proc_free(&p);
	ok = lb_wait_actual(vm, LB_INFLATE_MIB * 256, &s2);
	all &= check(vm, ok, "balloon: the guest inflated to %d pages (%"
	    PRId64 ")", LB_INFLATE_MIB * 256, s2.actual);
	until = h_now_ms() + LB_SETTLE_MS;
	while (lb_meminfo(vm, &m2), drop = m.avail - m2.avail,
	    !(ok = lb_near(drop, LB_INFLATE_MIB * MIB_KIB)) &&
	    h_now_ms() < until)
		h_sleep_ms(1000);
	all &= check(vm, ok, "balloon: the guest's MemAvailable fell by %ld "
	    "MiB (%d wanted, %d either way): %ld KiB to %ld KiB; MemTotal %ld "
	    "KiB, was %ld", drop / MIB_KIB, LB_INFLATE_MIB, LB_SLACK_MIB,
	    m.avail, m2.avail, m2.total, m.total);
	until = h_now_ms() + LB_SETTLE_MS;
	while (!(ok = lb_dev_fresh(vm, &s2) && lb_near((s.avail - s2.avail) >>
	    10, LB_INFLATE_MIB * MIB_KIB)) && h_now_ms() < until)
		h_sleep_ms(1000);
	all &= check(vm, ok, "balloon: and so does vm.info's "
	    "available_memory: %" PRId64 " MiB less", (s.avail - s2.avail) >>
	    20);
	lb_dev_diag(vm, "inflated", &s2);

	/* And back, or more: the guest may have dropped caches meanwhile. */
	snprintf(full, sizeof(full), "%dM", LB_GUEST_MIB);
	rc = h_vmctl(vm->d, &p, LG_CMD_MS, "balloon", vm->name, full, NULL);
	all &= check(vm, rc == 0, "balloon: vmctl balloon %s %s (%d: %s)",
	    vm->name, full, rc, h_flat(p.obuf != NULL ? p.obuf : ""));
	h_proc_free(&p);
	ok = lb_wait_actual(vm, 0, &s2);
	all &= check(vm, ok, "balloon: the guest deflated to 0 pages (%"
	    PRId64 ")", s2.actual);
	until = h_now_ms() + LB_SETTLE_MS;
	while (lb_meminfo(vm, &m3), !(ok = m3.avail >= m.avail -
	    LB_SLACK_MIB * MIB_KIB) && h_now_ms() < until)
		h_sleep_ms(1000);
	all &= check(vm, ok, "balloon: the guest's MemAvailable is back: %ld "
	    "KiB (%ld KiB before the inflation, %d MiB less at most)",
	    m3.avail, m.avail, LB_SLACK_MIB);
	lb_dev_diag(vm, "deflated", &s2);
	return all;
}

bool
lb_check_guest(struct lg_vm *vm, lg_check_fn check)
{
	pid_t pid = h_vm_pid(vm->c, vm->name);
	bool all;

	if (!check(vm, pid > 0, "balloon: the worker's pid from vm.info (%ld)",
	    (long)pid))
		return false;
	all = lb_check_features(vm, check);
	all &= lb_check_hog(vm, check, pid);
	all &= lb_check_inflate(vm, check);
	return all;
}
