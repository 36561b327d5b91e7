/* See exit-stats.h for the threads and the clock. */
#include <sched.h>
#include <string.h>
#include <time.h>

#include <linux/kvm.h>

#include "exit-stats.h"

#define XS_CALIBRATE_NS	10000000	/* measure the TSC over 10 ms at least */

const char *const xs_seg_names[XS_SEGS] = {
	"exit", "dispatch", "handler", "irq", "reentry",
};

/*
 * The vCPU whose handler this thread runs, while it times one.  Initial
 * exec: a plain %fs-relative access, not a __tls_get_addr() call (the
 * library is built position-independent, but only into executables).
 */
static _Thread_local struct xs_vcpu *xs_current
    __attribute__((tls_model("initial-exec")));

void
xs_acc_init(struct xs_acc *a)
{
	memset(a, 0, sizeof(*a));
	a->min = UINT64_MAX;
}

void
xs_acc_merge(struct xs_acc *a, const struct xs_acc *b)
{
	if (b->count == 0)
		return;
	a->count += b->count;
	a->sum += b->sum;
	a->sumsq += b->sumsq;
	if (b->min < a->min)
		a->min = b->min;
	if (b->max > a->max)
		a->max = b->max;
}

double
xs_acc_variance(const struct xs_acc *a)
{
	unsigned __int128 s2, q, m2;
	uint64_t r;

	if (a->count < 2)
		return 0;
	/*
	 * n * sumsq - sum^2 >= 0 (Cauchy-Schwarz), and dividing it by n:
	 * sumsq - q - r / n with q, r the quotient and remainder of sum^2
	 * by n, all exact in 128 bits (sum < 2^64); only the last two
	 * divisions round.
	 */
	s2 = (unsigned __int128)a->sum * a->sum;
	q = s2 / a->count;
	r = (uint64_t)(s2 % a->count);
	if (a->sumsq < q)
		return 0;	/* sumsq wrapped: nothing sound to say */
	m2 = a->sumsq - q;
	return ((double)m2 - (double)r / (double)a->count) /
	    (double)a->count;
}

static unsigned int
xs_hash(uint32_t reason, uint32_t dir, uint64_t addr)
{
	uint64_t h;

	h = addr * 0x9e3779b97f4a7c15ULL ^
	    ((uint64_t)reason << 2 | dir) * 0xff51afd7ed558ccdULL;
	return (unsigned int)(h >> 40) & (XS_ROWS - 1);
}

void
xs_table_init(struct xs_table *t)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	xs_acc_init(&t->guest);
	for (i = 0; i <= XS_ROWS; i++)
		xs_acc_init(&t->rows[i].acc);
}

/* The segments of a row of t. */
static struct xs_segs *
xs_table_segs(struct xs_table *t, const struct xs_row *r)
{
	return &t->segs[r - t->rows];
}

struct xs_row *
xs_table_row(struct xs_table *t, uint32_t reason, uint32_t dir,
    uint64_t addr)
{
	unsigned int h = xs_hash(reason, dir, addr), i;
	struct xs_row *r;

	for (i = 0; i < XS_ROWS; i++) {
		r = &t->rows[(h + i) & (XS_ROWS - 1)];
		if (r->used && r->reason == reason && r->dir == dir &&
		    r->addr == addr)
			return r;
		if (!r->used) {
			r->reason = reason;
			r->dir = (uint16_t)dir;
			r->addr = addr;
			r->used = 1;
			return r;
		}
	}
	r = &t->rows[XS_ROWS];
	r->reason = XS_REASON_OVERFLOW;
	r->used = 1;
	return r;
}

void
xs_table_merge(struct xs_table *dst, const struct xs_table *src)
{
	const struct xs_row *s;
	struct xs_segs *ds;
	struct xs_row *d;
	unsigned int i, k;

	xs_acc_merge(&dst->guest, &src->guest);
	for (i = 0; i <= XS_ROWS; i++) {
		s = &src->rows[i];
		if (!s->used)
			continue;
		d = i == XS_ROWS ? &dst->rows[XS_ROWS] :
		    xs_table_row(dst, s->reason, s->dir, s->addr);
		d->reason = d == &dst->rows[XS_ROWS] ? XS_REASON_OVERFLOW :
		    d->reason;
		d->used = 1;
		xs_acc_merge(&d->acc, &s->acc);
		ds = xs_table_segs(dst, d);
		ds->count += src->segs[i].count;
		for (k = 0; k < XS_SEGS; k++)
			ds->seg[k] += src->segs[i].seg[k];
	}
}

uint64_t
xs_table_total(const struct xs_table *t)
{
	uint64_t total = t->guest.sum;
	unsigned int i;

	for (i = 0; i <= XS_ROWS; i++)
		total += t->rows[i].acc.sum;
	return total;
}

/* --- the vCPU's thread ------------------------------------------------- */

static inline void
xs_commit(struct xs_table *t, const struct xs_pending *p, uint64_t now,
    bool segments)
{
	struct xs_segs *s;
	struct xs_row *r;
	uint64_t handler;

	xs_acc_add(&t->guest, p->t_exit - p->t_enter);
	r = xs_table_row(t, p->reason, p->dir, p->addr);
	xs_acc_add(&r->acc, now - p->t_exit);
	if (!segments)
		return;
	s = xs_table_segs(t, r);
	handler = p->t_done - p->t_handler;
	/* The interrupts were raised inside the handler. */
	if (p->irq > handler)
		handler = p->irq;
	s->count++;
	s->seg[XS_SEG_EXIT] += p->t_dispatch - p->t_exit;
	s->seg[XS_SEG_DISPATCH] += p->t_handler - p->t_dispatch;
	s->seg[XS_SEG_HANDLER] += handler - p->irq;
	s->seg[XS_SEG_IRQ] += p->irq;
	s->seg[XS_SEG_REENTRY] += now - p->t_done;
}

void
xs_enter(struct xs_vcpu *x, uint32_t ctl)
{
	struct xs_pending *p = &x->p;
	uint64_t now = xs_ticks();
	uint32_t seq = x->seq;

	/*
	 * Odd, then a full fence before the control word is read again:
	 * a reader that switched the word and then saw seq even knows no
	 * commit under the old word is under way or will start.  (The
	 * fence does not show in bench/xs-cost: it overlaps the clock
	 * reads.  The reader's membarrier() could stand in for it, at the
	 * price of one more system call for the worker's sandbox.)
	 */
	__atomic_store_n(&x->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (p->ctl == ctl && p->t_exit != 0 &&
	    __atomic_load_n(&x->ctl, __ATOMIC_RELAXED) == ctl)
		xs_commit(&x->t, p, now, (ctl & XS_CTL_SEGMENTS) != 0);
	__atomic_store_n(&x->seq, seq + 2, __ATOMIC_RELEASE);
	p->ctl = ctl;
	p->reason = 0;
	p->dir = XS_DIR_NONE;
	p->addr = 0;
	p->t_exit = 0;
	p->irq = 0;
	/* One TSC read less per exit: the commit counts as the guest's. */
	p->t_enter = now;
}

void
xs_thread_begin(struct xs_vcpu *x)
{
	xs_current = x;
}

void
xs_thread_end(void)
{
	xs_current = NULL;
}

uint64_t
xs_irq_begin(void)
{
	return xs_current != NULL ? xs_ticks() : 0;
}

void
xs_irq_end(uint64_t start)
{
	if (start != 0 && xs_current != NULL)
		xs_current->p.irq += xs_ticks() - start;
}

/* --- the loop's thread --------------------------------------------------- */

/*
 * The vCPU is inside a commit: nanoseconds, unless it was preempted
 * there; then let it run.
 */
static void
xs_wait(void)
{
	sched_yield();
}

void
xs_vcpu_init(struct xs_vcpu *x)
{
	memset(x, 0, sizeof(*x));
	xs_table_init(&x->t);
}

bool
xs_enabled(const struct xs_vcpu *x)
{
	return (xs_ctl(x) & XS_CTL_ON) != 0;
}

bool
xs_segments(const struct xs_vcpu *x)
{
	return (xs_ctl(x) & XS_CTL_SEGMENTS) != 0;
}

/*
 * Publish a new control word and wait until the vCPU commits nothing
 * under the old one (see xs_enter): a commit under way takes
 * nanoseconds, and the vCPU never waits for us.
 */
static void
xs_switch(struct xs_vcpu *x, uint32_t ctl)
{
	__atomic_store_n(&x->ctl, ctl, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (__atomic_load_n(&x->seq, __ATOMIC_ACQUIRE) & 1)
		xs_wait();
}

/* The next epoch's control word. */
static uint32_t
xs_next(uint32_t ctl, bool on, bool segments)
{
	return ((ctl & ~(XS_CTL_EPOCH - 1)) + XS_CTL_EPOCH) |
	    (on ? XS_CTL_ON : 0) | (on && segments ? XS_CTL_SEGMENTS : 0);
}

void
xs_set(struct xs_vcpu *x, bool on, bool segments)
{
	uint32_t ctl = x->ctl, want = xs_next(ctl, on, segments);

	if ((ctl & (XS_CTL_EPOCH - 1)) == (want & (XS_CTL_EPOCH - 1)))
		return;
	/* A new epoch: an exit timed before is not committed after. */
	xs_switch(x, want);
}

void
xs_reset(struct xs_vcpu *x)
{
	uint32_t ctl = x->ctl, off = xs_next(ctl, false, false);

	/* Off while the table is cleared, then as it was. */
	xs_switch(x, off);
	xs_table_init(&x->t);
	xs_switch(x, xs_next(off, (ctl & XS_CTL_ON) != 0,
	    (ctl & XS_CTL_SEGMENTS) != 0));
}

void
xs_snapshot(struct xs_vcpu *x, struct xs_table *out)
{
	uint32_t s1, s2;

	for (;;) {
		s1 = __atomic_load_n(&x->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			xs_wait();
			continue;
		}
		memcpy(out, &x->t, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&x->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			return;
	}
}

/* --- converting ticks ------------------------------------------------------ */

int64_t
xs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
xs_clock_init(struct xs_clock *c)
{
	c->ns0 = xs_mono_ns();
	c->tsc0 = xs_ticks();
}

double
xs_clock_hz(const struct xs_clock *c)
{
	struct timespec nap = { 0, 1000000 };
	uint64_t tsc;
	int64_t ns;

	for (;;) {
		tsc = xs_ticks();
		ns = xs_mono_ns();
		if (ns - c->ns0 >= XS_CALIBRATE_NS)
			return (double)(tsc - c->tsc0) * 1e9 /
			    (double)(ns - c->ns0);
		nanosleep(&nap, NULL);
	}
}

const char *
xs_reason_name(uint32_t reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "UNKNOWN",
		[KVM_EXIT_EXCEPTION] = "EXCEPTION",
		[KVM_EXIT_IO] = "IO",
		[KVM_EXIT_HYPERCALL] = "HYPERCALL",
		[KVM_EXIT_DEBUG] = "DEBUG",
		[KVM_EXIT_HLT] = "HLT",
		[KVM_EXIT_MMIO] = "MMIO",
		[KVM_EXIT_IRQ_WINDOW_OPEN] = "IRQ_WINDOW_OPEN",
		[KVM_EXIT_SHUTDOWN] = "SHUTDOWN",
		[KVM_EXIT_FAIL_ENTRY] = "FAIL_ENTRY",
		[KVM_EXIT_INTR] = "INTR",
		[KVM_EXIT_SET_TPR] = "SET_TPR",
		[KVM_EXIT_TPR_ACCESS] = "TPR_ACCESS",
		[KVM_EXIT_NMI] = "NMI",
		[KVM_EXIT_INTERNAL_ERROR] = "INTERNAL_ERROR",
		[KVM_EXIT_SYSTEM_EVENT] = "SYSTEM_EVENT",
		[KVM_EXIT_IOAPIC_EOI] = "IOAPIC_EOI",
		[KVM_EXIT_HYPERV] = "HYPERV",
		[KVM_EXIT_X86_RDMSR] = "X86_RDMSR",
		[KVM_EXIT_X86_WRMSR] = "X86_WRMSR",
		[KVM_EXIT_DIRTY_RING_FULL] = "DIRTY_RING_FULL",
		[KVM_EXIT_X86_BUS_LOCK] = "X86_BUS_LOCK",
		[KVM_EXIT_XEN] = "XEN",
		[KVM_EXIT_NOTIFY] = "NOTIFY",
	};

	if (reason == XS_REASON_OVERFLOW)
		return "OVERFLOW";
	if (reason < sizeof(names) / sizeof(names[0]))
		return names[reason];
	return NULL;
}
