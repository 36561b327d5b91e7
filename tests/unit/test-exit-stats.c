/*
 * Exit statistics (daemon/machine/exit-stats.c): the integer sums and
 * their merge over 10^9 samples of similar values, the row table, and
 * consistent snapshots of a table a concurrent writer keeps changing
 * while collection is switched (with segments and without) and reset
 * under it.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/kvm.h>

#include "exit-stats.h"
#include "tap.h"

/* Relative error of got against want. */
static double
rel(double got, double want)
{
	return fabs(got - want) / fabs(want);
}

static void
test_small(void)
{
	static const uint64_t xs[] = { 2, 4, 4, 4, 5, 5, 7, 9 };
	struct xs_acc a, b, c;
	size_t i;

	xs_acc_init(&a);
	tap_ok(a.count == 0 && xs_acc_variance(&a) == 0 &&
	    a.min == UINT64_MAX, "empty: no samples, no variance");
	xs_acc_add(&a, 7);
	tap_ok(xs_acc_variance(&a) == 0 && a.min == 7 && a.max == 7,
	    "one sample: variance 0, min = max");
	xs_acc_init(&a);
	xs_acc_init(&b);
	xs_acc_init(&c);
	for (i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
		xs_acc_add(&a, xs[i]);
		xs_acc_add(i < 3 ? &b : &c, xs[i]);
	}
	tap_ok(a.count == 8 && a.sum == 40 && a.min == 2 && a.max == 9,
	    "count, sum, min, max");
	tap_ok(fabs(xs_acc_variance(&a) - 4.0) < 1e-12,
	    "population variance of the textbook sample is 4 (%g)",
	    xs_acc_variance(&a));
	xs_acc_merge(&b, &c);
	tap_ok(b.count == 8 && b.sum == 40 && b.min == 2 && b.max == 9 &&
	    fabs(xs_acc_variance(&b) - 4.0) < 1e-12,
	    "merging two parts gives the whole");
	xs_acc_init(&c);
	xs_acc_merge(&c, &a);
	xs_acc_init(&b);
	xs_acc_merge(&c, &b);
	tap_ok(memcmp(&c, &a, sizeof(a)) == 0,
	    "merging into or from an empty one changes nothing");
}

/*
 * 10^9 samples of 10^9 + (i mod 1000) ticks: about a second each at
 * 1 GHz, with a spread of a microsecond.  A sum of squares in doubles
 * would lose every digit of that variance (10^18 against 10^5); the
 * integer sums and the variance's exact numerator keep it.  10^8 are
 * added one by one, then that block is merged ten times.
 */
static void
test_precision(void)
{
	const uint64_t base = 1000000000, n = 100000000;
	const double want_var = (1000.0 * 1000.0 - 1) / 12;
	struct xs_acc block, all;
	double naive_sq = 0, naive_sum = 0, naive_var;
	uint64_t i;

	xs_acc_init(&block);
	for (i = 0; i < n; i++) {
		uint64_t x = base + i % 1000;

		xs_acc_add(&block, x);
		naive_sum += (double)x;
		naive_sq += (double)x * (double)x;
	}
	naive_var = naive_sq / (double)n - (naive_sum / (double)n) *
	    (naive_sum / (double)n);
	tap_ok(block.sum == n * base + n / 1000 * 499500,
	    "10^8 samples: the sum is exact");
	tap_ok(rel(xs_acc_variance(&block), want_var) < 1e-9,
	    "10^8 samples: variance %.6f, exact %.6f",
	    xs_acc_variance(&block), want_var);
	tap_diag("the sum of squares in doubles says %.1f", naive_var);
	xs_acc_init(&all);
	for (i = 0; i < 10; i++)
		xs_acc_merge(&all, &block);
	tap_ok(all.count == 1000000000 && all.sum == 10 * block.sum &&
	    all.min == base && all.max == base + 999,
	    "10^9 samples: count, exact sum, min, max");
	tap_ok(rel(xs_acc_variance(&all), want_var) < 1e-9,
	    "10^9 samples: variance %.6f, exact %.6f",
	    xs_acc_variance(&all), want_var);
	tap_ok(rel((double)all.sum / (double)all.count, base + 499.5) < 1e-15,
	    "10^9 samples: mean from the exact sum");
}

static void
test_table(void)
{
	struct xs_table *t = malloc(sizeof(*t)), *u = malloc(sizeof(*u));
	struct xs_row *r, *r2;
	unsigned int i;

	xs_table_init(t);
	r = xs_table_row(t, KVM_EXIT_IO, XS_DIR_OUT, 0x3f8);
	r2 = xs_table_row(t, KVM_EXIT_IO, XS_DIR_IN, 0x3f8);
	tap_ok(r != r2 && r == xs_table_row(t, KVM_EXIT_IO, XS_DIR_OUT,
	    0x3f8), "one row per key, found again");
	tap_ok(xs_table_row(t, KVM_EXIT_UNKNOWN, XS_DIR_NONE, 0) != r &&
	    xs_table_row(t, KVM_EXIT_UNKNOWN, 0, 0)->reason ==
	    KVM_EXIT_UNKNOWN, "exit reason 0 has a row like any other");
	for (i = 0; i < 2 * XS_ROWS; i++)
		xs_acc_add(&xs_table_row(t, KVM_EXIT_MMIO, XS_DIR_IN,
		    0x1000 * i)->acc, 1);
	r = &t->rows[XS_ROWS];
	tap_ok(r->used && r->reason == XS_REASON_OVERFLOW &&
	    r->acc.count == XS_ROWS + 3,
	    "a full table counts the rest in the overflow row (%llu)",
	    (unsigned long long)r->acc.count);
	tap_ok(xs_table_total(t) == 2 * XS_ROWS,
	    "the total is every row's time");
	xs_table_init(u);
	xs_table_merge(u, t);
	xs_table_merge(u, t);
	tap_ok(xs_table_total(u) == 4 * XS_ROWS &&
	    u->rows[XS_ROWS].acc.count == 2 * (XS_ROWS + 3),
	    "tables merge row by row, overflow into overflow");
	tap_ok(strcmp(xs_reason_name(KVM_EXIT_IO), "IO") == 0 &&
	    strcmp(xs_reason_name(KVM_EXIT_HLT), "HLT") == 0 &&
	    xs_reason_name(9999) == NULL, "exit reason names");
	free(t);
	free(u);
}

/* --- a writer as the vCPU's thread, readers as the loop's --------------- */

struct race {
	struct xs_vcpu x;
	int stop;
	uint64_t commits;
};

#define RACE_GUEST	1	/* ticks "in the guest" of every exit */

static void *
race_writer(void *arg)
{
	struct race *rc = arg;
	struct xs_pending *p = &rc->x.p;
	uint64_t i = 0;

	while (!__atomic_load_n(&rc->stop, __ATOMIC_RELAXED)) {
		uint32_t ctl = xs_ctl(&rc->x);

		if (!(ctl & 1)) {
			__builtin_ia32_pause();
			continue;
		}
		xs_enter(&rc->x, ctl);
		/* What vcpu.c stamps, made up to hold invariants. */
		p->t_exit = p->t_enter + RACE_GUEST;
		p->t_dispatch = p->t_handler = p->t_exit;
		p->t_done = p->t_exit + 1;
		p->irq = 1;
		p->reason = KVM_EXIT_IO;
		p->dir = i & 1 ? XS_DIR_OUT : XS_DIR_IN;
		p->addr = 0x3f8;
		i++;
	}
	return NULL;
}

/*
 * What any consistent snapshot holds; false names the first breach.
 * Segments were on for some of the exits: each carried one tick of irq,
 * and when all of a row's exits carried them they sum to its time.
 */
static bool
race_consistent(const struct xs_table *t, const char **why)
{
	const struct xs_segs *s;
	uint64_t rows = 0, seg;
	unsigned int i, k;

	if (t->guest.sum != t->guest.count * RACE_GUEST) {
		*why = "guest time is not one tick an exit";
		return false;
	}
	for (i = 0; i <= XS_ROWS; i++) {
		if (!t->rows[i].used)
			continue;
		rows += t->rows[i].acc.count;
		s = &t->segs[i];
		for (k = 0, seg = 0; k < XS_SEGS; k++)
			seg += s->seg[k];
		if (s->count > t->rows[i].acc.count) {
			*why = "more exits by segments than in the row";
			return false;
		}
		if (s->count == t->rows[i].acc.count &&
		    seg != t->rows[i].acc.sum) {
			*why = "segments do not sum to the row";
			return false;
		}
		if (s->seg[XS_SEG_IRQ] != s->count) {
			*why = "irq segment is not one tick an exit";
			return false;
		}
	}
	if (rows != t->guest.count) {
		*why = "rows and KVM_RUN entries disagree";
		return false;
	}
	return true;
}

/* Exits by segments of every row, and of all. */
static uint64_t
race_segs(const struct xs_table *t)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i <= XS_ROWS; i++)
		n += t->segs[i].count;
	return n;
}

static void
test_race(void)
{
	struct race *rc = calloc(1, sizeof(*rc));
	struct xs_table *t = malloc(sizeof(*t)), *t2 = malloc(sizeof(*t2));
	const char *why = NULL;
	pthread_t th;
	uint64_t before;
	unsigned int i, bad = 0;
	struct timespec nap = { 0, 2000000 };

	xs_vcpu_init(&rc->x);
	pthread_create(&th, NULL, race_writer, rc);
	xs_snapshot(&rc->x, t);
	tap_ok(t->guest.count == 0, "off: nothing is collected");
	xs_set(&rc->x, true, true);
	tap_ok(xs_enabled(&rc->x) && xs_segments(&rc->x),
	    "switched on, with segments");
	for (i = 0; i < 20000; i++) {
		xs_snapshot(&rc->x, t);
		if (!race_consistent(t, &why)) {
			bad++;
			break;
		}
		if (i % 2000 == 1999)
			xs_reset(&rc->x);
		else if (i % 500 == 499) {
			xs_set(&rc->x, false, false);
			xs_set(&rc->x, true, i % 1000 == 999);
		} else if (i % 250 == 249)
			xs_set(&rc->x, true, !xs_segments(&rc->x));
	}
	tap_ok(bad == 0, "20000 snapshots under a writer, with resets, "
	    "switches and segments on and off, all consistent%s%s",
	    why ? ": " : "", why ? why : "");
	/* The writer may wait for a CPU on a loaded machine. */
	for (i = 0; i < 2500; i++) {
		xs_snapshot(&rc->x, t);
		if (t->guest.count > 0)
			break;
		nanosleep(&nap, NULL);
	}
	tap_ok(t->guest.count > 0, "the writer's exits are counted (%llu)",
	    (unsigned long long)t->guest.count);
	/* Without segments: rows move, segments do not. */
	xs_set(&rc->x, true, false);
	tap_ok(xs_enabled(&rc->x) && !xs_segments(&rc->x),
	    "switched to without segments");
	xs_snapshot(&rc->x, t);
	for (i = 0; i < 2500; i++) {
		xs_snapshot(&rc->x, t2);
		if (t2->guest.count > t->guest.count + 10)
			break;
		nanosleep(&nap, NULL);
	}
	tap_ok(t2->guest.count > t->guest.count && race_segs(t2) ==
	    race_segs(t) && race_consistent(t2, &why),
	    "without segments: %llu exits more, none by segments",
	    (unsigned long long)(t2->guest.count - t->guest.count));
	xs_set(&rc->x, false, false);
	xs_snapshot(&rc->x, t);
	before = t->guest.count;
	nanosleep(&nap, NULL);
	xs_snapshot(&rc->x, t2);
	tap_ok(t2->guest.count == before && race_consistent(t2, &why),
	    "off: the counts do not move");
	xs_reset(&rc->x);
	xs_snapshot(&rc->x, t);
	tap_ok(t->guest.count == 0 && xs_table_total(t) == 0 &&
	    !xs_enabled(&rc->x), "reset while off zeroes, and stays off");
	xs_set(&rc->x, true, true);
	nanosleep(&nap, NULL);
	xs_reset(&rc->x);
	xs_snapshot(&rc->x, t);
	tap_ok(xs_enabled(&rc->x) && xs_segments(&rc->x) &&
	    race_consistent(t, &why),
	    "reset while on stays on with segments, consistent");
	__atomic_store_n(&rc->stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	free(rc);
	free(t);
	free(t2);
}

static void
test_clock(void)
{
	struct xs_clock c;
	double hz;

	xs_clock_init(&c);
	hz = xs_clock_hz(&c);
	tap_ok(hz > 1e8 && hz < 1e11, "TSC frequency measured: %.0f Hz", hz);
}

int
main(void)
{
	test_small();
	test_precision();
	test_table();
	test_race();
	test_clock();
	return tap_done();
}
