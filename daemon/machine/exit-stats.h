/*
 * Exit timing statistics of one vCPU: per exit reason (port I/O and MMIO
 * split by device and direction) the count, min, max, sum and sum of
 * squares for the standard deviation, the time inside KVM_RUN, and, when
 * asked for, each exit's path split into segments.
 *
 * Clock: the TSC, read with rdtsc.  It makes no system call whatever
 * clock source the kernel chose (a host whose clock source is not the
 * TSC, such as a guest under emulation, turns every clock_gettime() into
 * a system call).  Plain rdtsc, not rdtscp (absent on some virtual CPUs)
 * nor lfence first: the reads bracket microseconds of exit, a few
 * cycles of reordering do not show, and serializing costs more.  The
 * reads are most of what collection costs (bench/xs-cost: "on" costs
 * what two reads alone do; one costs 11 to 70 ns on the virtual CPUs we
 * measure on, with the load), so an exit takes two, and segments, which
 * take three more, are asked for apart.  The hosts we run on have an
 * invariant TSC (constant_tsc, nonstop_tsc), so ticks on different CPUs
 * compare.  Ticks are converted to time only when read, with a frequency
 * measured against CLOCK_MONOTONIC over the life of the machine
 * (xs_clock).
 *
 * Threads and memory: a struct xs_vcpu lives in its vCPU's memory.  The
 * vCPU's thread is its only writer while collecting; readers on the
 * worker's loop thread copy it under a sequence count (xs_snapshot) and
 * retry while it moves, so the vCPU never waits and takes no lock.  The
 * loop thread alone switches collection on and off and resets (xs_set,
 * xs_reset); the vCPU sees the control word at its next exit.
 *
 * Off costs one load and one predictable branch per exit: see vcpu.c.
 */
#ifndef VMMD_EXIT_STATS_H
#define VMMD_EXIT_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Running statistics of samples in ticks, in integers: an add is a
 * multiply and a few adds, no division, and every field is exact, so the
 * variance computed when read (xs_acc_variance) loses nothing however
 * many similar samples came (a sum of squares in doubles would cancel
 * every digit of it).  sumsq holds 2^128: 10^9 samples of up to 2^49
 * ticks each (two days at 3 GHz).  48 bytes, 16-aligned.
 */
struct xs_acc {
	uint64_t count;
	uint64_t sum;		/* the mean is sum / count */
	uint64_t min;		/* UINT64_MAX while count is 0 */
	uint64_t max;
	unsigned __int128 sumsq;	/* sum of squared samples */
};

void	xs_acc_init(struct xs_acc *a);
/* a becomes a + b. */
void	xs_acc_merge(struct xs_acc *a, const struct xs_acc *b);
/*
 * Population variance in ticks squared, (n * sumsq - sum^2) / n^2 with
 * the numerator exact; 0 below two samples.
 */
double	xs_acc_variance(const struct xs_acc *a);

static inline void
xs_acc_add(struct xs_acc *a, uint64_t x)
{
	a->count++;
	a->sum += x;
	a->sumsq += (unsigned __int128)x * x;
	a->min = x < a->min ? x : a->min;
	a->max = x > a->max ? x : a->max;
}

/* The segments of an exit's path, in the order they happen. */
enum xs_seg {
	XS_SEG_EXIT,		/* KVM_RUN returned -> dispatch */
	XS_SEG_DISPATCH,	/* decoding, the device's lookup */
	XS_SEG_HANDLER,		/* the device, under its lock */
	XS_SEG_IRQ,		/* interrupt injection (KVM_IRQ_LINE) */
	XS_SEG_REENTRY,		/* back to KVM_RUN */
	XS_SEGS
};

extern const char *const xs_seg_names[XS_SEGS];

/*
 * Beyond KVM's reasons: the row of every exit that found the table full.
 * KVM_RUN left for a signal is KVM's own KVM_EXIT_INTR.
 */
#define XS_REASON_OVERFLOW	0x10000

enum xs_dir { XS_DIR_NONE, XS_DIR_IN, XS_DIR_OUT };

/*
 * One row: an exit reason, and for I/O a device (or address) and way.
 * The key and what every timed exit updates: 64 bytes, one cache line
 * when the table is aligned.
 */
struct xs_row {
	uint32_t reason;	/* KVM_EXIT_*, XS_REASON_OVERFLOW */
	uint16_t dir;		/* enum xs_dir */
	uint16_t used;
	uint64_t addr;		/* a device's first port/address, or the
				 * port/page of an access no device takes */
	struct xs_acc acc;
};
_Static_assert(sizeof(struct xs_row) == 64, "a row is one cache line");

/*
 * A row's segments, apart from the row: only exits timed with segments
 * touch them.  seg sums to the time of those count exits (all of the
 * row's when segments were on all along).
 */
struct xs_segs {
	uint64_t count;
	uint64_t seg[XS_SEGS];	/* ticks */
};

#define XS_ROWS		128	/* a power of two */

/* What a reader gets: one vCPU's or several summed. */
struct xs_table {
	struct xs_acc guest;		/* time inside KVM_RUN */
	struct xs_row rows[XS_ROWS + 1];	/* the last: XS_REASON_OVERFLOW */
	struct xs_segs segs[XS_ROWS + 1];	/* rows[i]'s in segs[i] */
};

/* The exit being timed, until the next KVM_RUN commits it. */
struct xs_pending {
	uint32_t ctl;		/* control word it was timed under */
	uint32_t reason;
	uint32_t dir;
	uint64_t addr;
	uint64_t t_enter;	/* KVM_RUN entered */
	uint64_t t_exit;	/* KVM_RUN returned */
	/* With segments only: */
	uint64_t t_dispatch;	/* dispatch began */
	uint64_t t_handler;	/* the device's handler began */
	uint64_t t_done;	/* the handler returned */
	uint64_t irq;		/* ticks spent raising interrupts */
};

/* The control word: (epoch << 2) | (segments << 1) | on. */
#define XS_CTL_ON		1u
#define XS_CTL_SEGMENTS		2u
#define XS_CTL_EPOCH		4u	/* one epoch more */

struct xs_vcpu {
	/*
	 * Written by the loop thread, read by the vCPU at every exit: the
	 * control word (XS_CTL_*).  The padding keeps what the vCPU writes
	 * off its cache line (no _Alignas: vCPUs live in calloc'ed arrays).
	 */
	uint32_t ctl;
	char pad[64 - sizeof(uint32_t)];
	/* The vCPU's own from here on. */
	uint32_t seq;			/* odd while the vCPU writes */
	struct xs_pending p;
	struct xs_table t;
};

/* --- the vCPU's thread (see vcpu.c) ---------------------------------- */

static inline uint64_t
xs_ticks(void)
{
	return __builtin_ia32_rdtsc();
}

/* The control word (XS_CTL_*). */
static inline uint32_t
xs_ctl(const struct xs_vcpu *x)
{
	return __atomic_load_n(&x->ctl, __ATOMIC_RELAXED);
}

/*
 * About to enter KVM_RUN, collecting under control word ctl: commit the
 * exit timed before as ending now, if it was timed under the same word
 * (not across a reset or a switch off and on), and start timing anew.
 * With XS_CTL_SEGMENTS in ctl, the exit's t_dispatch, t_handler, t_done
 * and irq must have been stamped too.
 */
void	xs_enter(struct xs_vcpu *x, uint32_t ctl);

/*
 * Interrupt injection from within a handler on a vCPU's thread: the
 * vCPU marks the thread for the handler's duration (xs_thread_begin/
 * end) and the device host adds the time it spends raising lines.
 */
void	xs_thread_begin(struct xs_vcpu *x);
void	xs_thread_end(void);
/* 0 when the thread is not timing a handler. */
uint64_t xs_irq_begin(void);
void	xs_irq_end(uint64_t start);

/* --- the loop's thread ------------------------------------------------ */

void	xs_vcpu_init(struct xs_vcpu *x);
bool	xs_enabled(const struct xs_vcpu *x);
bool	xs_segments(const struct xs_vcpu *x);
/*
 * Switch collection on or off, with segments or without; what was
 * collected stays.  A switch between with and without segments drops
 * the one exit under way.
 */
void	xs_set(struct xs_vcpu *x, bool on, bool segments);
/* Zero everything collected; collection stays as it was. */
void	xs_reset(struct xs_vcpu *x);
/* A consistent copy of what the vCPU has collected. */
void	xs_snapshot(struct xs_vcpu *x, struct xs_table *out);

/* --- tables (any thread, on their own copies) ------------------------- */

void	xs_table_init(struct xs_table *t);
/* The row of a key, made if new (the overflow row when full). */
struct xs_row *xs_table_row(struct xs_table *t, uint32_t reason,
	    uint32_t dir, uint64_t addr);
/* dst += src, row by row. */
void	xs_table_merge(struct xs_table *dst, const struct xs_table *src);
/* Every row's sum plus the time in the guest, in ticks. */
uint64_t xs_table_total(const struct xs_table *t);

/* --- converting ticks ---------------------------------------------------- */

struct xs_clock {
	uint64_t tsc0;
	int64_t ns0;
};

void	xs_clock_init(struct xs_clock *c);
/* CLOCK_MONOTONIC in nanoseconds. */
int64_t	xs_mono_ns(void);
/*
 * Ticks per second, measured since xs_clock_init (waits up to 10 ms
 * when called sooner, to measure over at least that).
 */
double	xs_clock_hz(const struct xs_clock *c);

/* KVM's name of an exit reason, in capitals ("IO", "HLT"), or NULL. */
const char *xs_reason_name(uint32_t reason);

#endif
