/*
 * The worker's device host: timers on a real event loop and a real
 * timerfd, fired at the precision asked for (not on the kernel's coarse
 * tick), one timerfd_settime per change of the earliest deadline (counted
 * here, by interposing the call, not taken from the host's counters), the
 * rule that
 * only a new earliest deadline wakes the loop from another thread
 * (counted as the loop thread's own wake-ups, not trusted), the VM
 * clock that stops while paused, guest memory bounds, and the device's
 * lock held around timer callbacks.  No KVM needed: interrupt lines on
 * no VM fail cleanly.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <event2/thread.h>

#include "devhost.h"
#include "figure-lint.h"
#include "machine.h"
#include "tap.h"

#define MS	1000000LL

struct fake_dev {
	pthread_mutex_t lock;
	struct devhost_device dd;
	struct device_timer *a, *b;
	unsigned int fired_a, fired_b;
	int64_t fired_a_at;
	int locked_in_cb;	/* trylock saw the lock held */
};

static struct event_base *base;
static struct devhost *dh;
static pid_t loop_tid;
static unsigned long settime_calls;

/* Every timerfd_settime the device host makes comes through here. */
int
timerfd_settime(int fd, int flags, const struct itimerspec *value,
    struct itimerspec *old)
{
	__atomic_add_fetch(&settime_calls, 1, __ATOMIC_RELAXED);
	return (int)syscall(SYS_timerfd_settime, fd, flags, value, old);
}

static void
dev_fire_a(void *arg)
{
	struct fake_dev *d = arg;

	d->fired_a++;
	d->fired_a_at = devhost_vm_clock(dh);
	if (pthread_mutex_trylock(&d->lock) == EBUSY)
		d->locked_in_cb++;
	else
		pthread_mutex_unlock(&d->lock);
}

static void
dev_fire_b(void *arg)
{
	struct fake_dev *d = arg;

	d->fired_b++;
}

static void
system_request(void *opaque, const char *device,
    enum device_system_request req)
{
	(*(int *)opaque)++;
}

/* Voluntary context switches of the loop's thread: its wake-ups. */
static long
loop_wakeups(void)
{
	char path[64], line[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status",
	    (int)loop_tid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

struct vcpu_result {
	long wakeups_before, wakeups_after;
	struct devhost_stats before, after;
};

/*
 * A "vCPU": moves timers later and re-arms them where they are, a
 * thousand times, while the loop sleeps; then moves one earlier.
 */
static void *
vcpu_thread(void *arg)
{
	struct fake_dev *d = arg;
	const struct device_host *h = &d->dd.host;
	static struct vcpu_result r;
	int64_t now;
	int i;

	sleep_ms(100);			/* the loop is asleep by now */
	devhost_get_stats(dh, &r.before);
	r.wakeups_before = loop_wakeups();
	now = device_vm_clock(h);
	for (i = 0; i < 1000; i++) {
		pthread_mutex_lock(&d->lock);
		/* later, not the earliest, then the same again */
		device_timer_arm(h, d->a, now + 5000 * MS + i);
		device_timer_arm(h, d->b, now + 6000 * MS);
		device_timer_arm(h, d->b, now + 6000 * MS);
		pthread_mutex_unlock(&d->lock);
	}
	r.wakeups_after = loop_wakeups();
	devhost_get_stats(dh, &r.after);
	/* Earlier than anything: this one must wake the loop. */
	pthread_mutex_lock(&d->lock);
	device_timer_arm(h, d->b, device_vm_clock(h) + 20 * MS);
	pthread_mutex_unlock(&d->lock);
	sleep_ms(300);
	event_base_loopexit(base, NULL);
	return &r;
}

static void
test_cross_thread_rule(struct fake_dev *d)
{
	const struct device_host *h = &d->dd.host;
	struct vcpu_result *r;
	struct devhost_stats st;
	pthread_t t;
	void *ret;

	/* From the loop's thread: programmed exactly, no kick. */
	pthread_mutex_lock(&d->lock);
	device_timer_arm(h, d->a, device_vm_clock(h) + 3000 * MS);
	pthread_mutex_unlock(&d->lock);
	devhost_get_stats(dh, &st);
	TAP_EQ(st.loop_kicks, 0, "arming on the loop's thread kicks nothing");

	pthread_create(&t, NULL, vcpu_thread, d);
	event_base_dispatch(base);
	pthread_join(t, &ret);
	r = ret;

	TAP_EQ(r->after.timers_armed - r->before.timers_armed, 3000,
	    "3000 arms from another thread");
	TAP_EQ(r->after.loop_kicks - r->before.loop_kicks, 0,
	    "none of them, later or the same, touched the loop's timer");
	tap_ok(r->wakeups_before >= 0 &&
	    r->wakeups_after - r->wakeups_before <= 1,
	    "the loop's thread woke %ld times meanwhile (at most 1: noise)",
	    r->wakeups_after - r->wakeups_before);
	devhost_get_stats(dh, &st);
	TAP_EQ(st.loop_kicks - r->after.loop_kicks, 1,
	    "a new earliest deadline kicks the loop once");
	TAP_EQ(d->fired_b, 1, "and that timer fired");
	TAP_EQ(d->fired_a, 0, "the timer moved later has not fired yet");
	tap_ok(st.late_max_ns < 1000 * MS, "fired %.3f ms late at most",
	    st.late_max_ns / 1e6);
}

static void
stop_cb(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopexit(base, NULL);
}

static void
run_loop_ms(long ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	struct event *ev = evtimer_new(base, stop_cb, NULL);

	evtimer_add(ev, &tv);
	event_base_dispatch(base);
	event_free(ev);
}

static void
test_fire_and_pause(struct fake_dev *d)
{
	const struct device_host *h = &d->dd.host;
	struct devhost_stats st0, st1;
	int64_t t0, t1, deadline;

	/* Cancel what the previous test left. */
	pthread_mutex_lock(&d->lock);
	device_timer_cancel(h, d->a);
	device_timer_cancel(h, d->b);
	pthread_mutex_unlock(&d->lock);
	devhost_get_stats(dh, &st0);
	run_loop_ms(50);
	devhost_get_stats(dh, &st1);
	TAP_EQ(st1.loop_wakeups - st0.loop_wakeups, 0,
	    "no timer armed: the loop never wakes for timers");

	deadline = device_vm_clock(h) + 30 * MS;
	pthread_mutex_lock(&d->lock);
	device_timer_arm(h, d->a, deadline);
	pthread_mutex_unlock(&d->lock);
	run_loop_ms(100);
	TAP_EQ(d->fired_a, 1, "a timer fires once");
	tap_ok(d->fired_a_at >= deadline, "not before its deadline");
	TAP_EQ(d->locked_in_cb, 1, "its callback ran under the device's lock");

	/* Paused: the VM clock stops and nothing fires. */
	deadline = device_vm_clock(h) + 30 * MS;
	pthread_mutex_lock(&d->lock);
	device_timer_arm(h, d->a, deadline);
	pthread_mutex_unlock(&d->lock);
	devhost_pause(dh);
	t0 = device_vm_clock(h);
	run_loop_ms(100);
	t1 = device_vm_clock(h);
	TAP_EQ(t1, t0, "the VM clock stands still while paused");
	TAP_EQ(d->fired_a, 1, "no timer fires while paused");
	devhost_resume(dh);
	tap_ok(device_vm_clock(h) - t1 < 50 * MS,
	    "resumed where it stopped, not 100 ms later");
	run_loop_ms(100);
	TAP_EQ(d->fired_a, 2, "the timer fires after the resume");

	/* Cancelled: its callback never runs. */
	pthread_mutex_lock(&d->lock);
	device_timer_arm(h, d->a, device_vm_clock(h) + 20 * MS);
	device_timer_cancel(h, d->a);
	pthread_mutex_unlock(&d->lock);
	run_loop_ms(60);
	TAP_EQ(d->fired_a, 2, "a cancelled timer does not fire");
}

/* A thread that arms a at +20 ms, then moves it to +60 ms (later). */
static void *
mover_thread(void *arg)
{
	struct fake_dev *d = arg;
	const struct device_host *h = &d->dd.host;
	int64_t now = device_vm_clock(h);

	pthread_mutex_lock(&d->lock);
	device_timer_arm(h, d->a, now + 20 * MS);
	device_timer_arm(h, d->a, now + 60 * MS);
	pthread_mutex_unlock(&d->lock);
	return (void *)(intptr_t)(now + 60 * MS);
}

static void
test_moved_later(struct fake_dev *d)
{
	struct devhost_stats st0, st1;
	unsigned int fired = d->fired_a;
	pthread_t t;
	void *ret;

	devhost_get_stats(dh, &st0);
	pthread_create(&t, NULL, mover_thread, d);
	pthread_join(t, &ret);
	run_loop_ms(200);
	devhost_get_stats(dh, &st1);
	TAP_EQ(d->fired_a, fired + 1,
	    "moved later by another thread: it fires, once");
	tap_ok(d->fired_a_at >= (int64_t)(intptr_t)ret,
	    "at its new deadline, not the old one");
	TAP_EQ(st1.loop_kicks - st0.loop_kicks, 1,
	    "only the first arming kicked the loop");
	TAP_EQ(st1.loop_wakeups - st0.loop_wakeups, 2,
	    "the loop woke at the old deadline and at the new one");
}

/* A one-shot timer whose callback frees it (under ASan: no UAF). */
struct oneshot {
	const struct device_host *h;
	struct device_timer *t;
	unsigned int fired;
};

static void
oneshot_fire(void *arg)
{
	struct oneshot *o = arg;

	o->fired++;
	device_timer_free(o->h, o->t);
	o->t = NULL;
}

static void
test_free_in_callback(struct fake_dev *d)
{
	struct oneshot o = { .h = &d->dd.host };

	o.t = device_timer_new(o.h, oneshot_fire, &o);
	if (o.t == NULL)
		tap_bail("cannot make a timer");
	pthread_mutex_lock(&d->lock);
	device_timer_arm(o.h, o.t, device_vm_clock(o.h) + 10 * MS);
	pthread_mutex_unlock(&d->lock);
	run_loop_ms(60);
	TAP_EQ(o.fired, 1, "a timer that frees itself in its callback fired");
	TAP_EQ(o.t == NULL, 1, "and is gone");
}

/*
 * A periodic device timer as the RTC's at 1024 Hz: each fire re-arms it
 * a period after its previous deadline (twice, as a device that re-arms
 * where it stands does), never from "now".
 */
#define PERIOD_NS	976562
#define PERIODIC_FIRES	1000

struct periodic {
	const struct device_host *h;
	struct device_timer *t;
	int64_t deadline;
	unsigned int fired;
	int64_t late[PERIODIC_FIRES];
};

static void
periodic_fire(void *arg)
{
	struct periodic *p = arg;

	p->late[p->fired++] = device_vm_clock(p->h) - p->deadline;
	if (p->fired == PERIODIC_FIRES) {
		event_base_loopexit(base, NULL);
		return;
	}
	p->deadline += PERIOD_NS;
	device_timer_arm(p->h, p->t, p->deadline);
	device_timer_arm(p->h, p->t, p->deadline);
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void
test_precision(struct fake_dev *d)
{
	static struct periodic p;
	struct devhost_stats st0, st1;
	unsigned long calls0, calls;
	long wakeups0, wakeups;
	int64_t t0;

	p.h = &d->dd.host;
	p.t = device_timer_new(p.h, periodic_fire, &p);
	if (p.t == NULL)
		tap_bail("cannot make a timer");
	devhost_get_stats(dh, &st0);
	calls0 = __atomic_load_n(&settime_calls, __ATOMIC_RELAXED);
	wakeups0 = loop_wakeups();
	t0 = device_vm_clock(p.h);
	p.deadline = t0 + PERIOD_NS;
	pthread_mutex_lock(&d->lock);
	device_timer_arm(p.h, p.t, p.deadline);
	pthread_mutex_unlock(&d->lock);
	event_base_dispatch(base);
	calls = __atomic_load_n(&settime_calls, __ATOMIC_RELAXED) - calls0;
	wakeups = loop_wakeups() - wakeups0;
	devhost_get_stats(dh, &st1);
	device_timer_free(p.h, p.t);

	TAP_EQ(p.fired, PERIODIC_FIRES, "a 976 us periodic timer fired %u "
	    "times", PERIODIC_FIRES);
	qsort(p.late, PERIODIC_FIRES, sizeof(p.late[0]), cmp_i64);
	tap_ok(p.late[0] >= 0, "never before its deadline (earliest %lld ns)",
	    (long long)p.late[0]);
	tap_ok(p.late[PERIODIC_FIRES / 2] < 1000000, "median lateness %.1f us "
	    "(under 1 ms: not the kernel's coarse tick); p99 %.1f us, max "
	    "%.1f us", p.late[PERIODIC_FIRES / 2] / 1e3,
	    p.late[PERIODIC_FIRES * 99 / 100] / 1e3,
	    p.late[PERIODIC_FIRES - 1] / 1e3);
	tap_ok(device_vm_clock(p.h) - t0 >= (int64_t)PERIODIC_FIRES *
	    PERIOD_NS, "periodic deadlines advance from the last one: %u "
	    "fires took at least %u periods (%.1f ms)", PERIODIC_FIRES,
	    PERIODIC_FIRES, (device_vm_clock(p.h) - t0) / 1e6);
	/*
	 * The first arming, then one per wake-up that leaves a timer
	 * armed: a callback's re-arms (two per fire here) cost none of
	 * their own, and the last wake-up, which leaves nothing armed,
	 * none either.  A loaded machine may run two late fires in one
	 * wake-up: then there are fewer wake-ups, and as many settimes.
	 */
	TAP_EQ(calls, (unsigned long)(st1.loop_wakeups - st0.loop_wakeups),
	    "timerfd_settime %lu times: once per wake-up of the device "
	    "timers (%llu), not per arm", calls,
	    (unsigned long long)(st1.loop_wakeups - st0.loop_wakeups));
	tap_ok(calls <= PERIODIC_FIRES, "at most once per fire (%lu, %u "
	    "fires)", calls, PERIODIC_FIRES);
	TAP_EQ(st1.rearms - st0.rearms, (uint64_t)calls,
	    "the host's own count agrees (%llu)",
	    (unsigned long long)(st1.rearms - st0.rearms));
	tap_ok(wakeups >= 0 && wakeups <= PERIODIC_FIRES + 10,
	    "the loop woke %ld times for %u fires", wakeups, PERIODIC_FIRES);
}

static void
test_memory_and_lines(struct fake_dev *d, uint8_t *ram, int *requests)
{
	const struct device_host *h = &d->dd.host;

	TAP_EQ(device_guest_mem(h, 0x100, 16) == ram + 0x100, 1,
	    "guest memory: inside the region");
	TAP_EQ(device_guest_mem(h, 0xff0, 16) == ram + 0xff0, 1,
	    "guest memory: up to its last byte");
	TAP_EQ(device_guest_mem(h, 0xff8, 16) == NULL, 1,
	    "guest memory: across the region's end: refused");
	TAP_EQ(device_guest_mem(h, (uint64_t)-8, 16) == NULL, 1,
	    "guest memory: wrapping: refused");
	TAP_EQ(device_guest_mem(h, 0x200000 + 8, 8) != NULL, 1,
	    "guest memory: the second region");
	TAP_EQ(device_irq_set(h, 0, true), -EBADF,
	    "a line on no VM: -EBADF, nothing else");
	TAP_EQ(device_irq_set(h, 1, true), -EINVAL,
	    "a line the board did not give: -EINVAL");
	device_system_request(h, DEVICE_REQUEST_RESET);
	TAP_EQ(*requests, 1, "a reset request reaches the machine");
}

/*
 * The devices' writes to guest RAM are logged while a migration asks
 * (devhost_write_log()), by page and region, and only then.
 */
static void
test_write_log(struct fake_dev *d, uint8_t *ram2)
{
	const struct device_host *h = &d->dd.host;
	uint64_t bits[1] = { 0 }, elsewhere[4];

	device_guest_written(h, ram2, 16);
	TAP_EQ(devhost_write_log_take(dh, 0x200000, bits, 1), -ENOENT,
	    "write log: off, nothing to take");
	TAP_EQ(devhost_write_log(dh, true), 0, "write log: on");
	TAP_EQ(devhost_write_log_take(dh, 0x200000, bits, 1) == 0 &&
	    bits[0] == 0, 1, "a write before it started is not in it");
	device_guest_written(h, ram2 + 0xff8, 16);
	device_guest_written(h, ram2 + 0x2000, 1);
	device_guest_written(h, elsewhere, sizeof(elsewhere));
	TAP_EQ(devhost_write_log_take(dh, 0x200000, bits, 1) == 0 &&
	    bits[0] == 7, 1, "a write across a page's end marks both pages "
	    "(bits %#llx)", (unsigned long long)bits[0]);
	bits[0] = 0;
	TAP_EQ(devhost_write_log_take(dh, 0x0, bits, 1) == 0 && bits[0] == 0,
	    1, "the other region, and memory outside RAM: nothing");
	TAP_EQ(devhost_write_log_take(dh, 0x200000, bits, 1) == 0 &&
	    bits[0] == 0, 1, "taken once, the pages are forgotten");
	device_guest_written(h, ram2, 1);
	TAP_EQ(devhost_write_log(dh, false), 0, "write log: off");
	device_guest_written(h, ram2 + 0x1000, 1);
	TAP_EQ(devhost_write_log(dh, true), 0, "on again");
	TAP_EQ(devhost_write_log_take(dh, 0x200000, bits, 1) == 0 &&
	    bits[0] == 0, 1, "starts empty: what was left or written while "
	    "off is not in it");
	devhost_write_log(dh, false);
}

/*
 * The machine's figure tables are well formed, and each row reads the
 * member its key names: a stats struct filled with distinct values.
 */
static void
test_figures(void)
{
	struct devhost_stats st;
	struct irqroute_stats ir;
	struct vcpu v;
	uint64_t *p = (uint64_t *)&st, val;
	const struct figure *f;
	unsigned int i, wrong = 0;
	size_t k;

	TAP_EQ(figure_lint("devhost", &devhost_figures, sizeof(st)), 0,
	    "figures: the device host's table is well formed");
	TAP_EQ(figure_lint("irqroute", &irqroute_figures, sizeof(ir)), 0,
	    "figures: the MSI routes' table is well formed");
	TAP_EQ(figure_lint("vcpu", &vcpu_exit_figures, sizeof(v)), 0,
	    "figures: the exit counts' table is well formed");
	TAP_EQ(figure_lint("machine", &machine_unknown_io_figures,
	    sizeof(struct machine)), 0,
	    "figures: the unmatched accesses' table is well formed");
	TAP_EQ(vcpu_exit_figures.n, VCPU_EXIT_KINDS,
	    "figures: one exit count per kind");

	for (i = 0; i < sizeof(st) / sizeof(*p); i++)
		p[i] = 1000 + i;
	for (k = 0; k < devhost_figures.n; k++) {
		f = &devhost_figures.rows[k];
		if (f->kind == FIGURE_HISTOGRAM)
			val = figure_bucket(f, &st, 0);
		else
			val = figure_value(f, &st);
		if ((strcmp(f->key, "armed") == 0 && val != st.timers_armed) ||
		    (strcmp(f->key, "rearms") == 0 && val != st.rearms) ||
		    (strcmp(f->key, "fired") == 0 && val != st.fired) ||
		    (strcmp(f->key, "loop_wakeups") == 0 &&
		    val != st.loop_wakeups) ||
		    (strcmp(f->key, "loop_kicks") == 0 &&
		    val != st.loop_kicks) ||
		    (strcmp(f->key, "late_max_ns") == 0 &&
		    val != st.late_max_ns) ||
		    (strcmp(f->key, "late_hist") == 0 &&
		    (val != st.late_hist[0] || f->nbuckets !=
		    DEVHOST_LATE_BUCKETS)) ||
		    (strcmp(f->key, "irq_coalesced") == 0 &&
		    val != st.irq_coalesced)) {
			tap_diag("%s reads %llu", f->key,
			    (unsigned long long)val);
			wrong++;
		}
	}
	TAP_EQ(devhost_figures.n, 8, "figures: 8 of the device host");
	TAP_EQ(wrong, 0, "figures: each reads its own member");

	memset(&ir, 0, sizeof(ir));
	ir.routes = 3;
	ir.max_routes = 7;
	ir.updates = 11;
	ir.refused = 13;
	val = 0;
	for (k = 0; k < irqroute_figures.n; k++)
		val = val * 100 + figure_value(&irqroute_figures.rows[k], &ir);
	TAP_EQ(val, 3071113, "figures: MSI routes, bound, updates, refusals");

	memset(&v, 0, sizeof(v));
	v.exits[VCPU_EXIT_MMIO] = 5;
	f = &vcpu_exit_figures.rows[VCPU_EXIT_MMIO];
	TAP_EQ(strcmp(f->key, "mmio") == 0 && strcmp(f->label, "kind") == 0 &&
	    figure_value(f, &v) == 5, 1,
	    "figures: exits by kind, one family labelled kind");
}

int
main(void)
{
	static uint8_t ram[0x1000], ram2[0x3000];
	struct devhost_ram regions[] = {
		{ 0x0, sizeof(ram), ram, -1, 0 },
		{ 0x200000, sizeof(ram2), ram2, -1, 0 },
	};
	unsigned int gsi = 4;
	int requests = 0;
	struct devhost_config cfg = {
		.vm_fd = -1,
		.ram = regions,
		.nram = 2,
		.system_request = system_request,
		.opaque = &requests,
	};
	struct fake_dev d = { .lock = PTHREAD_MUTEX_INITIALIZER };

	evthread_use_pthreads();
	base = event_base_new();
	loop_tid = (pid_t)syscall(SYS_gettid);
	cfg.base = base;
	if (base == NULL || devhost_new(&dh, &cfg) < 0)
		tap_bail("cannot set up");
	devhost_device_init(&d.dd, dh, "fake", &d.lock, &gsi, 1);
	/* The device host keeps its own copy of the region table. */
	regions[0].hva = NULL;
	d.a = device_timer_new(&d.dd.host, dev_fire_a, &d);
	d.b = device_timer_new(&d.dd.host, dev_fire_b, &d);
	if (d.a == NULL || d.b == NULL)
		tap_bail("cannot make timers");

	test_memory_and_lines(&d, ram, &requests);
	test_write_log(&d, ram2);
	test_cross_thread_rule(&d);
	test_fire_and_pause(&d);
	test_moved_later(&d);
	test_free_in_callback(&d);
	test_precision(&d);
	test_figures();

	device_timer_free(&d.dd.host, d.a);
	device_timer_free(&d.dd.host, d.b);
	devhost_free(dh);
	event_base_free(base);
	return tap_done();
}
