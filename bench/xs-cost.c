/*
 * What exit statistics add to one exit, on this machine's own CPU and
 * without KVM: the run loop's bookkeeping alone (daemon/worker/vcpu.c),
 * off (the load of the control word and its branch) and on (five TSC
 * reads, a table lookup, Welford's update under the sequence count),
 * over N simulated exits to two devices, in several alternating rounds.
 * Its figures are native, unlike the nested test host's: set them
 * against a real exit (a bare KVM_RUN port I/O loop costs microseconds).
 * A figure, not a test.
 *
 *   bench/xs-cost [ROUNDS [N]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <linux/kvm.h>

#include "exit-stats.h"

static double
now_ns(void)
{
	return (double)xs_mono_ns();
}

/* The loop's work per exit, off or on; returns ns per exit. */
static double
run(struct xs_vcpu *x, unsigned long n)
{
	struct xs_pending *p = &x->p;
	volatile unsigned long sink = 0;
	double t0 = now_ns();
	unsigned long i;

	for (i = 0; i < n; i++) {
		uint32_t ctl = xs_ctl(x);

		if (__builtin_expect(ctl & 1, 0)) {
			xs_enter(x, ctl);
			p->t_exit = xs_ticks();
			p->t_dispatch = p->t_handler = xs_ticks();
			p->reason = KVM_EXIT_IO;
			p->dir = i & 1 ? XS_DIR_OUT : XS_DIR_IN;
			p->addr = i & 2 ? 0x3f8 : 0x80;
			xs_thread_begin(x);
			p->t_handler = xs_ticks();
			sink += i;
			p->t_done = xs_ticks();
			xs_thread_end();
		} else {
			sink += i;
		}
	}
	(void)sink;		/* written only so the loop is not optimised away */
	return (now_ns() - t0) / (double)n;
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, r;
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000000;
	struct xs_vcpu *x = malloc(sizeof(*x));
	double off, on, best_off = 1e9, best_on = 1e9;

	if (x == NULL || rounds < 1 || n < 1000) {
		fprintf(stderr, "usage: xs-cost [ROUNDS [N >= 1000]]\n");
		return 2;
	}
	xs_vcpu_init(x);
	printf("# exit statistics' bookkeeping per exit, native CPU, %lu "
	    "simulated exits a round\n", n);
	for (r = 0; r < rounds; r++) {
		xs_set(x, false);
		off = run(x, n);
		xs_set(x, true);
		on = run(x, n);
		printf("# round %d: off %.2f ns, on %.2f ns\n", r + 1, off, on);
		if (off < best_off)
			best_off = off;
		if (on < best_on)
			best_on = on;
	}
	printf("# best: off %.2f ns, on %.2f ns: statistics on add %.1f ns "
	    "an exit\n", best_off, best_on, best_on - best_off);
	free(x);
	return 0;
}
