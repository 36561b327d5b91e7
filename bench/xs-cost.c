/*
 * What exit statistics add to one exit, on this machine's own CPU and
 * without KVM: the run loop's bookkeeping alone (daemon/machine/vcpu.c),
 * off (the load of the control word and its branch), on (two TSC reads,
 * the row's lookup, the integer sums under the sequence count) and on
 * with segments (three TSC reads more, and the thread's mark for
 * interrupt injection), over N simulated exits to two devices, in
 * several rounds alternating them; and two TSC reads alone, what "on"
 * cannot go below.  Its figures are native, unlike
 * the nested test host's: set them against a real exit (a bare KVM_RUN
 * port I/O loop costs microseconds).  A figure, not a test.
 *
 *   bench/xs-cost [ROUNDS [N]]
 */
#include <stdio.h>
#include <stdlib.h>

#include <linux/kvm.h>

#include "exit-stats.h"

enum { OFF, CLOCK, ON, SEGS, NMODES };

static const char *const mode_names[NMODES] = { "off", "2 rdtsc", "on",
	"on+segments" };

/* The floor of "on": its two TSC reads alone; returns ns per exit. */
static double
run_clock(unsigned long n)
{
	volatile uint64_t sink = 0;
	int64_t t0 = xs_mono_ns();
	unsigned long i;

	for (i = 0; i < n; i++) {
		sink += xs_ticks();
		sink += xs_ticks();
	}
	(void)sink;
	return (double)(xs_mono_ns() - t0) / (double)n;
}

/* The loop's work per exit, as vcpu.c does it; returns ns per exit. */
static double
run(struct xs_vcpu *x, unsigned long n)
{
	struct xs_pending *p = &x->p;
	volatile unsigned long sink = 0;
	int64_t t0 = xs_mono_ns();
	unsigned long i;

	for (i = 0; i < n; i++) {
		uint32_t ctl = xs_ctl(x);

		if (__builtin_expect(ctl & XS_CTL_ON, 0)) {
			bool segs = (ctl & XS_CTL_SEGMENTS) != 0;

			xs_enter(x, ctl);
			p->t_exit = xs_ticks();
			p->reason = KVM_EXIT_IO;
			if (segs)
				p->t_dispatch = p->t_handler = xs_ticks();
			p->dir = i & 1 ? XS_DIR_OUT : XS_DIR_IN;
			p->addr = i & 2 ? 0x3f8 : 0x80;
			if (segs) {
				xs_thread_begin(x);
				p->t_handler = xs_ticks();
			}
			sink += i;
			if (segs) {
				p->t_done = xs_ticks();
				xs_thread_end();
			}
		} else {
			sink += i;
		}
	}
	(void)sink;		/* written only so the loop is not optimised away */
	return (double)(xs_mono_ns() - t0) / (double)n;
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, r, k;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000;
	struct xs_vcpu *x = malloc(sizeof(*x));
	double ns, best[NMODES];

	if (x == NULL || rounds < 1 || n < 1000) {
		fprintf(stderr, "usage: xs-cost [ROUNDS [N >= 1000]]\n");
		return 2;
	}
	xs_vcpu_init(x);
	for (k = 0; k < NMODES; k++)
		best[k] = 1e9;
	printf("# exit statistics' bookkeeping per exit, native CPU, %lu "
	    "simulated exits a round\n", n);
	for (r = 0; r < rounds; r++) {
		printf("# round %d:", r + 1);
		for (k = 0; k < NMODES; k++) {
			xs_set(x, k == ON || k == SEGS, k == SEGS);
			ns = k == CLOCK ? run_clock(n) : run(x, n);
			printf("%s %s %.2f ns", k ? "," : "", mode_names[k],
			    ns);
			if (ns < best[k])
				best[k] = ns;
		}
		printf("\n");
	}
	printf("# best: off %.2f ns, 2 rdtsc %.2f ns, on %.2f ns, "
	    "on+segments %.2f ns: statistics on add %.1f ns an exit (%.1f ns "
	    "beyond the two clock reads), segments %.1f ns more\n",
	    best[OFF], best[CLOCK], best[ON], best[SEGS],
	    best[ON] - best[OFF], best[ON] - best[CLOCK],
	    best[SEGS] - best[ON]);
	free(x);
	return 0;
}
