/* See devhost.h for the timer rule and the lock order. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/queue.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "devhost.h"
#include "exit-stats.h"
#include "irqroute.h"
#include "kvm.h"
#include "log.h"
#include "pc-layout.h"
#include "pirq.h"
#include "write-log.h"

#define DEVHOST_NEVER		INT64_MAX
#define DEVHOST_RUNNING		INT64_MIN	/* vm_frozen: the clock runs */
/* Callbacks run per wake-up at most, so a timer always due cannot hog. */
#define DEVHOST_FIRE_BUDGET	64
/* The latest a timerfd is armed for, host ns (~146 years of uptime). */
#define DEVHOST_FAR_NS		(INT64_MAX / 2)

struct device_timer {
	TAILQ_ENTRY(device_timer) entry;
	struct devhost_device *dd;
	device_timer_fn fn;
	void *dev;
	int64_t deadline;		/* VM ns, or DEVHOST_NEVER */
	bool dead;			/* freed while its callback ran */
};

TAILQ_HEAD(devhost_timers, device_timer);

struct devhost {
	struct devhost_config cfg;
	struct devhost_ram *ram;
	pthread_t loop_thread;
	/*
	 * The devices' writes to guest RAM (write-log.h): wlog while a
	 * migration logs them, else NULL; wlog_mem made the first time
	 * and kept until the end, so that a device's thread that saw
	 * wlog set never writes into freed memory.
	 */
	struct write_log *wlog;	/* __atomic_* loads and stores only */
	struct write_log *wlog_mem;
	/*
	 * The timers' own timerfd (CLOCK_MONOTONIC, absolute deadlines)
	 * and its read event on the loop: libevent's own timers keep the
	 * kernel's coarse tick, several milliseconds here, where a device
	 * asks for microseconds (the RTC at 1024 Hz, its reinjection
	 * slices, virtio-net's hold).  timerfd_settime is safe from any
	 * thread: a vCPU that makes a deadline the earliest re-arms it
	 * itself, and the loop wakes when it expires, not before.
	 */
	int tfd;
	struct event *ev;

	/* VM clock: host monotonic minus vm_offset, or vm_frozen if paused. */
	int64_t vm_offset;
	int64_t vm_frozen;

	pthread_mutex_t lock;		/* what follows */
	struct devhost_timers timers;
	int64_t programmed;		/* the timerfd's deadline (VM ns) */
	struct device_timer *firing;	/* whose callback runs now */
	bool running_due;		/* the loop runs due timers now */
	struct devhost_stats stats;
	/*
	 * PCI INTx lines are shared (level-triggered, wired-OR): how many
	 * devices assert each.  KVM keeps one level per GSI for all of
	 * user space, so the line goes up with the first and down with
	 * the last.
	 */
	unsigned int shared_level[PC_IOAPIC_PINS];
	/*
	 * The same lines as the PIIX3's PCI interrupt links see them, and
	 * where its route registers steer them (pirq.h): an INTx GSI's
	 * level also drives the ISA IRQ its link is routed to, so a guest
	 * in PIC mode, or one trusting the interrupt line SeaBIOS wrote,
	 * gets its interrupt.  Without a PIIX3 nothing is ever routed and
	 * this costs nothing.
	 */
	struct pirq pirq;
};

int64_t
devhost_vm_clock(struct devhost *dh)
{
	int64_t frozen = __atomic_load_n(&dh->vm_frozen, __ATOMIC_ACQUIRE);

	if (frozen != DEVHOST_RUNNING)
		return frozen;
	return xs_mono_ns() - __atomic_load_n(&dh->vm_offset,
	    __ATOMIC_RELAXED);
}

static bool
devhost_on_loop(const struct devhost *dh)
{
	return pthread_equal(pthread_self(), dh->loop_thread);
}

static int64_t
devhost_earliest(const struct devhost *dh)
{
	const struct device_timer *t;
	int64_t earliest = DEVHOST_NEVER;

	TAILQ_FOREACH(t, &dh->timers, entry)
		if (t->deadline < earliest)
			earliest = t->deadline;
	return earliest;
}

/*
 * Set the timerfd to fire at VM time deadline (DEVHOST_NEVER: disarm).
 * The deadline is absolute on the host's monotonic clock, so a periodic
 * device that advances its deadline from the previous one never drifts,
 * however late a wake-up was.  Under dh->lock, the clock running.
 */
static void
devhost_settime(struct devhost *dh, int64_t deadline)
{
	int64_t offset = __atomic_load_n(&dh->vm_offset, __ATOMIC_RELAXED);
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	int64_t host;

	if (deadline != DEVHOST_NEVER) {
		/* Far deadlines are clamped; a wake-up then re-arms. */
		if (deadline > DEVHOST_FAR_NS - offset)
			host = DEVHOST_FAR_NS;
		else
			host = deadline + offset;
		if (host < 1)
			host = 1;	/* 0 would disarm: "now" is long past */
		its.it_value.tv_sec = host / 1000000000;
		its.it_value.tv_nsec = host % 1000000000;
	}
	dh->stats.rearms++;
	if (timerfd_settime(dh->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		log_debug("timerfd_settime: %s", strerror(errno));
}

/*
 * Point the timerfd at the earliest deadline: one timerfd_settime per
 * change of it, none otherwise.  From another thread (a vCPU) only a
 * deadline that becomes the earliest re-arms it; one moved later, or
 * re-armed where it was, is found where it stands when the timerfd
 * fires at the old deadline.  While the loop runs due timers it
 * programs once, after the last: a callback's re-arm then costs no
 * syscall of its own, and a pass that runs several late fires leaves
 * no stale expiration behind.  Under dh->lock.
 */
static void
devhost_program(struct devhost *dh)
{
	int64_t earliest = devhost_earliest(dh);

	if (__atomic_load_n(&dh->vm_frozen, __ATOMIC_RELAXED) !=
	    DEVHOST_RUNNING)
		return;			/* devhost_resume() programs it */
	if (earliest == dh->programmed)
		return;
	if (devhost_on_loop(dh)) {
		if (dh->running_due)
			return;		/* devhost_timer_cb() programs */
	} else {
		/* Only an earlier deadline is worth a re-arm. */
		if (earliest > dh->programmed)
			return;
		dh->stats.loop_kicks++;
	}
	dh->programmed = earliest;
	devhost_settime(dh, earliest);
}

static void
devhost_count_late(struct devhost_stats *st, int64_t late)
{
	unsigned int b;

	if (late < 0)
		late = 0;
	if ((uint64_t)late > st->late_max_ns)
		st->late_max_ns = (uint64_t)late;
	if (late < 10000)
		b = 0;
	else if (late < 100000)
		b = 1;
	else if (late < 1000000)
		b = 2;
	else if (late < 10000000)
		b = 3;
	else
		b = 4;
	st->late_hist[b]++;
}

/* The earliest due timer at now, or NULL.  Under dh->lock. */
static struct device_timer *
devhost_due(struct devhost *dh, int64_t now)
{
	struct device_timer *t, *due = NULL;

	TAILQ_FOREACH(t, &dh->timers, entry)
		if (t->deadline <= now && (due == NULL ||
		    t->deadline < due->deadline))
			due = t;
	return due;
}

/*
 * The timerfd expired: run what is due, each under its device's lock,
 * then point the timerfd at what is left.  A deadline moved by a vCPU
 * while we were not looking is simply found where it now is.
 */
static void
devhost_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct devhost *dh = arg;
	struct device_timer *t;
	unsigned int budget = DEVHOST_FIRE_BUDGET;
	pthread_mutex_t *lock;
	int64_t deadline, now;
	uint64_t expirations;

	/* Nothing to read: re-armed or disarmed since it fired. */
	if (read(dh->tfd, &expirations, sizeof(expirations)) < 0)
		return;
	pthread_mutex_lock(&dh->lock);
	dh->programmed = DEVHOST_NEVER;		/* no longer pending */
	dh->stats.loop_wakeups++;
	dh->running_due = true;
	while (budget-- > 0) {
		now = devhost_vm_clock(dh);
		if ((t = devhost_due(dh, now)) == NULL)
			break;
		/*
		 * Timers are freed only on this thread (devices are freed
		 * here), so t stays valid while the locks are swapped.
		 */
		deadline = t->deadline;
		lock = t->dd->lock;
		pthread_mutex_unlock(&dh->lock);

		pthread_mutex_lock(lock);
		pthread_mutex_lock(&dh->lock);
		if (t->deadline != deadline) {
			/* Moved or cancelled meanwhile: look again. */
			pthread_mutex_unlock(lock);
			continue;
		}
		t->deadline = DEVHOST_NEVER;
		dh->stats.fired++;
		devhost_count_late(&dh->stats, devhost_vm_clock(dh) - deadline);
		dh->firing = t;
		pthread_mutex_unlock(&dh->lock);
		t->fn(t->dev);
		pthread_mutex_lock(&dh->lock);
		dh->firing = NULL;
		/* The callback freed its own timer: now it can go. */
		if (t->dead)
			free(t);
		pthread_mutex_unlock(&dh->lock);
		pthread_mutex_unlock(lock);
		pthread_mutex_lock(&dh->lock);
	}
	dh->running_due = false;
	devhost_program(dh);
	pthread_mutex_unlock(&dh->lock);
}

/* --- the device_host operations --------------------------------------- */

/*
 * Under dh->lock, after a change to dh->pirq: drive each ISA IRQ whose
 * level from the links differs from before.  Its GSI reaches PIC input
 * and IOAPIC pin alike (machine.c's routing), as the PIIX3's IRQ output
 * does.  A guest that steers a link onto an IRQ a board device uses
 * (COM1's 4) gets what a PC gives it, two drivers on one line: the
 * last change wins.  That harms the guest alone.
 */
static void
devhost_pirq_drive(struct devhost *dh, uint16_t before)
{
	uint16_t after = pirq_levels(&dh->pirq), diff = before ^ after;
	unsigned int irq;
	int ret, status;

	for (irq = 0; diff != 0; irq++, diff >>= 1) {
		if (!(diff & 1))
			continue;
		ret = kvm_irq_line(dh->cfg.vm_fd, irq, (after >> irq) & 1,
		    &status);
		if (ret < 0)
			log_debug("PIRQ to IRQ %u: KVM_IRQ_LINE_STATUS: %s",
			    irq, strerror(-ret));
	}
}

/* A shared PCI line: see shared_level.  Devices report changes only. */
static int
devhost_irq_shared(struct devhost *dh, struct devhost_device *dd,
    unsigned int gsi, bool level)
{
	unsigned int *n = &dh->shared_level[gsi];
	uint16_t before;
	int ret = 0, status;

	pthread_mutex_lock(&dh->lock);
	if (level ? (*n)++ == 0 : (*n > 0 && --(*n) == 0)) {
		ret = kvm_irq_line(dh->cfg.vm_fd, gsi, level, &status);
		if (gsi < PC_PCI_INTX_GSI_BASE + PIRQ_LINKS) {
			before = pirq_levels(&dh->pirq);
			pirq_set_level(&dh->pirq, PC_PCI_GSI_PIRQ(gsi), level);
			devhost_pirq_drive(dh, before);
		}
	}
	pthread_mutex_unlock(&dh->lock);
	if (ret < 0) {
		log_debug("%s: KVM_IRQ_LINE_STATUS %u: %s", dd->name, gsi,
		    strerror(-ret));
		return ret;
	}
	return DEVICE_IRQ_DELIVERED;
}

static int
devhost_irq_set(void *ctx, unsigned int line, bool level)
{
	struct devhost_device *dd = ctx;
	struct devhost *dh = dd->dh;
	uint64_t t;
	int ret, status;

	if (line >= dd->nlines)
		return -EINVAL;
	if (dd->gsi[line] >= PC_PCI_INTX_GSI_BASE &&
	    dd->gsi[line] < PC_IOAPIC_PINS)
		return devhost_irq_shared(dh, dd, dd->gsi[line], level);
	/* Inside a timed exit's handler: the injection segment. */
	t = xs_irq_begin();
	ret = kvm_irq_line(dh->cfg.vm_fd, dd->gsi[line], level, &status);
	xs_irq_end(t);
	if (ret < 0) {
		log_debug("%s: KVM_IRQ_LINE_STATUS %u: %s", dd->name,
		    dd->gsi[line], strerror(-ret));
		return ret;
	}
	if (!level || status > 0)
		return DEVICE_IRQ_DELIVERED;
	if (status < 0)
		return DEVICE_IRQ_MASKED;
	pthread_mutex_lock(&dh->lock);
	dh->stats.irq_coalesced++;
	pthread_mutex_unlock(&dh->lock);
	return DEVICE_IRQ_COALESCED;
}

static void
devhost_pirq_route(void *ctx, unsigned int link, uint8_t reg)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;
	uint16_t before;

	pthread_mutex_lock(&dh->lock);
	before = pirq_levels(&dh->pirq);
	pirq_set_route(&dh->pirq, link, reg);
	devhost_pirq_drive(dh, before);
	pthread_mutex_unlock(&dh->lock);
}

static struct device_timer *
devhost_timer_new(void *ctx, device_timer_fn fn, void *dev)
{
	struct devhost_device *dd = ctx;
	struct device_timer *t;

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->dd = dd;
	t->fn = fn;
	t->dev = dev;
	t->deadline = DEVHOST_NEVER;
	pthread_mutex_lock(&dd->dh->lock);
	TAILQ_INSERT_TAIL(&dd->dh->timers, t, entry);
	pthread_mutex_unlock(&dd->dh->lock);
	return t;
}

static void
devhost_timer_arm(void *ctx, struct device_timer *t, int64_t deadline_ns)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;

	if (deadline_ns == DEVHOST_NEVER)
		deadline_ns--;			/* far, but armed */
	pthread_mutex_lock(&dh->lock);
	dh->stats.timers_armed++;
	t->deadline = deadline_ns;
	devhost_program(dh);
	pthread_mutex_unlock(&dh->lock);
}

static void
devhost_timer_cancel(void *ctx, struct device_timer *t)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;

	pthread_mutex_lock(&dh->lock);
	t->deadline = DEVHOST_NEVER;
	devhost_program(dh);
	pthread_mutex_unlock(&dh->lock);
}

static void
devhost_timer_free(void *ctx, struct device_timer *t)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;

	pthread_mutex_lock(&dh->lock);
	TAILQ_REMOVE(&dh->timers, t, entry);
	devhost_program(dh);
	if (dh->firing == t)
		t->dead = true;		/* devhost_timer_cb() frees it */
	else
		free(t);
	pthread_mutex_unlock(&dh->lock);
}

static int64_t
devhost_dev_vm_clock(void *ctx)
{
	return devhost_vm_clock(((struct devhost_device *)ctx)->dh);
}

static int
devhost_wall_clock(void *ctx, struct timespec *ts)
{
	return clock_gettime(CLOCK_REALTIME, ts) == 0 ? 0 : -errno;
}

static void *
devhost_guest_mem(void *ctx, uint64_t gpa, size_t len)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;
	unsigned int i;

	for (i = 0; i < dh->cfg.nram; i++) {
		const struct devhost_ram *r = &dh->ram[i];

		if (gpa >= r->gpa && gpa - r->gpa <= r->size &&
		    len <= r->size - (gpa - r->gpa))
			return r->hva + (gpa - r->gpa);
	}
	return NULL;
}

static void
devhost_guest_written(void *ctx, const void *hva, size_t len)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;
	struct write_log *l = __atomic_load_n(&dh->wlog, __ATOMIC_ACQUIRE);

	if (l != NULL)
		write_log_mark(l, hva, len);
}

static void
devhost_system_request(void *ctx, enum device_system_request req)
{
	struct devhost_device *dd = ctx;

	dd->dh->cfg.system_request(dd->dh->cfg.opaque, dd->name, req);
}

/*
 * Under the device's lock, from whatever thread entered it (a vCPU, the
 * loop, a disk's I/O thread): that lock keeps the vector's route and
 * eventfd as they are while we write to it.
 */
static int
devhost_msi(void *ctx, unsigned int vector, uint64_t addr, uint32_t data)
{
	struct devhost_device *dd = ctx;
	uint64_t t;
	int ret;

	/* Inside a timed exit's handler: the injection segment. */
	t = xs_irq_begin();
	if (vector < DEVHOST_MAX_VECTORS &&
	    irqroute_msi_routes(&dd->msi[vector], addr, data) &&
	    irqroute_msi_raise(&dd->msi[vector]) == 0) {
		dd->msi_irqfd++;
		ret = 0;
	} else {
		dd->msi_signalled++;
		ret = kvm_signal_msi(dd->dh->cfg.vm_fd, addr, data);
	}
	xs_irq_end(t);
	return ret;
}

/* From the vCPU whose access changed the vector, under the device's lock. */
static int
devhost_msi_route(void *ctx, unsigned int vector, bool on, uint64_t addr,
    uint32_t data)
{
	struct devhost_device *dd = ctx;
	struct irqroute *ir = dd->dh->cfg.irqroute;

	if (vector >= DEVHOST_MAX_VECTORS || ir == NULL)
		return -ENOTSUP;
	if (!on) {
		irqroute_msi_clear(ir, &dd->msi[vector]);
		return 0;
	}
	return irqroute_msi_set(ir, &dd->msi[vector], addr, data);
}

/* The loop: the guest rang; the device takes every ring at once. */
static void
devhost_bell_rang(evutil_socket_t fd, short what, void *arg)
{
	struct devhost_bell *b = arg;
	uint64_t n;

	if (read(b->efd, &n, sizeof(n)) != sizeof(n))
		return;
	pthread_mutex_lock(b->dd->lock);
	b->dd->bell_rings++;
	b->fn(b->dev, b->id);
	pthread_mutex_unlock(b->dd->lock);
}

void
devhost_device_take_rings(struct devhost_device *dd)
{
	for (unsigned int i = 0; i < dd->nbells; i++)
		if (!dd->bell[i].handed)
			devhost_bell_rang(dd->bell[i].efd, EV_READ,
			    &dd->bell[i]);
}

static int
devhost_doorbell(void *ctx, unsigned int bar, uint64_t offset,
    unsigned int size, device_doorbell_fn fn, void *dev, unsigned int id)
{
	struct devhost_device *dd = ctx;
	struct devhost_bell *b;

	if (dd->nbells == DEVHOST_MAX_BELLS)
		return -ENOSPC;
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return -EINVAL;
	b = &dd->bell[dd->nbells];
	*b = (struct devhost_bell){ .dd = dd, .bar = bar, .offset = offset,
	    .size = size, .fn = fn, .dev = dev, .id = id };
	if ((b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	b->ev = event_new(dd->dh->cfg.base, b->efd, EV_READ | EV_PERSIST,
	    devhost_bell_rang, b);
	if (b->ev == NULL || event_add(b->ev, NULL) < 0) {
		if (b->ev != NULL)
			event_free(b->ev);
		close(b->efd);
		return -ENOMEM;
	}
	dd->nbells++;
	return 0;
}

/*
 * Under the device's lock, from whatever thread entered it (activate:
 * a vCPU).  event_del_noblock(): the loop's callback may be waiting for
 * this very lock; if it runs once more, it reads a kick and hands it to
 * the device, which passes it on to the backend.
 */
static int
devhost_doorbell_fd(void *ctx, unsigned int id, bool take)
{
	struct devhost_device *dd = ctx;

	for (unsigned int i = 0; i < dd->nbells; i++) {
		struct devhost_bell *b = &dd->bell[i];

		if (b->id != id)
			continue;
		if (take && !b->handed)
			event_del_noblock(b->ev);
		else if (!take && b->handed && event_add(b->ev, NULL) < 0)
			return -ENOMEM;
		b->handed = take;
		return take ? b->efd : 0;
	}
	return -ENOENT;
}

/* Under the device's lock: the route cannot change meanwhile. */
static int
devhost_msi_fd(void *ctx, unsigned int vector)
{
	struct devhost_device *dd = ctx;

	if (vector >= DEVHOST_MAX_VECTORS || dd->msi[vector].efd < 0)
		return -ENOENT;
	return dd->msi[vector].efd;
}

static int
devhost_mem_regions(void *ctx, struct device_mem_region *r, unsigned int max)
{
	struct devhost *dh = ((struct devhost_device *)ctx)->dh;
	unsigned int i;

	for (i = 0; i < dh->cfg.nram && i < max; i++)
		r[i] = (struct device_mem_region){ dh->ram[i].gpa,
		    dh->ram[i].size, dh->ram[i].hva, dh->ram[i].fd,
		    dh->ram[i].fd_offset };
	return (int)dh->cfg.nram;
}

void
devhost_device_bar(struct devhost_device *dd, unsigned int bar, bool on,
    uint64_t base)
{
	int vm_fd = dd->dh->cfg.vm_fd;
	unsigned int i;

	for (i = 0; i < dd->nbells; i++) {
		struct devhost_bell *b = &dd->bell[i];

		if (b->bar != bar)
			continue;
		if (b->assigned)
			kvm_ioeventfd(vm_fd, b->addr, b->size, b->efd, false);
		b->assigned = false;
		if (!on)
			continue;
		b->addr = base + b->offset;
		if (kvm_ioeventfd(vm_fd, b->addr, b->size, b->efd, true) == 0)
			b->assigned = true;
		else
			__atomic_add_fetch(&dd->bell_failures, 1,
			    __ATOMIC_RELAXED);
	}
}

void
devhost_device_fini(struct devhost_device *dd)
{
	unsigned int i;

	if (dd->dh->cfg.irqroute != NULL)
		for (i = 0; i < DEVHOST_MAX_VECTORS; i++)
			irqroute_msi_clear(dd->dh->cfg.irqroute, &dd->msi[i]);

	for (i = 0; i < dd->nbells; i++) {
		struct devhost_bell *b = &dd->bell[i];

		if (b->assigned)
			kvm_ioeventfd(dd->dh->cfg.vm_fd, b->addr, b->size,
			    b->efd, false);
		event_free(b->ev);
		close(b->efd);
	}
	dd->nbells = 0;
}

static void
devhost_lock(void *ctx)
{
	pthread_mutex_lock(((struct devhost_device *)ctx)->lock);
}

static void
devhost_unlock(void *ctx)
{
	pthread_mutex_unlock(((struct devhost_device *)ctx)->lock);
}

static const struct device_host_ops devhost_ops = {
	.irq_set = devhost_irq_set,
	.msi = devhost_msi,
	.msi_route = devhost_msi_route,
	.doorbell = devhost_doorbell,
	.doorbell_fd = devhost_doorbell_fd,
	.msi_fd = devhost_msi_fd,
	.mem_regions = devhost_mem_regions,
	.pirq_route = devhost_pirq_route,
	.timer_new = devhost_timer_new,
	.timer_arm = devhost_timer_arm,
	.timer_cancel = devhost_timer_cancel,
	.timer_free = devhost_timer_free,
	.vm_clock = devhost_dev_vm_clock,
	.wall_clock = devhost_wall_clock,
	.guest_mem = devhost_guest_mem,
	.guest_written = devhost_guest_written,
	.system_request = devhost_system_request,
	.lock = devhost_lock,
	.unlock = devhost_unlock,
};

/* --- the machine's side ----------------------------------------------- */

int
devhost_new(struct devhost **out, const struct devhost_config *cfg)
{
	struct devhost *dh;
	int ret = -ENOMEM;

	dh = calloc(1, sizeof(*dh));
	if (dh == NULL)
		return -ENOMEM;
	dh->cfg = *cfg;
	if (cfg->nram > 0) {
		dh->ram = calloc(cfg->nram, sizeof(*dh->ram));
		if (dh->ram == NULL)
			goto free_dh;
		memcpy(dh->ram, cfg->ram, cfg->nram * sizeof(*dh->ram));
	}
	dh->cfg.ram = dh->ram;
	dh->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (dh->tfd < 0) {
		ret = -errno;
		goto free_ram;
	}
	dh->ev = event_new(cfg->base, dh->tfd, EV_READ | EV_PERSIST,
	    devhost_timer_cb, dh);
	if (dh->ev == NULL || event_add(dh->ev, NULL) < 0)
		goto close_tfd;
	dh->loop_thread = pthread_self();
	dh->vm_offset = xs_mono_ns();
	dh->vm_frozen = DEVHOST_RUNNING;
	dh->programmed = DEVHOST_NEVER;
	TAILQ_INIT(&dh->timers);
	pirq_init(&dh->pirq);
	pthread_mutex_init(&dh->lock, NULL);
	*out = dh;
	return 0;

close_tfd:
	if (dh->ev != NULL)
		event_free(dh->ev);
	close(dh->tfd);
free_ram:
	free(dh->ram);
free_dh:
	free(dh);
	return ret;
}

void
devhost_free(struct devhost *dh)
{
	struct device_timer *t;

	if (dh == NULL)
		return;
	/* Devices free their timers; any left is a device's leak. */
	while ((t = TAILQ_FIRST(&dh->timers)) != NULL) {
		log_debug("%s: timer left at machine teardown", t->dd->name);
		TAILQ_REMOVE(&dh->timers, t, entry);
		free(t);
	}
	event_free(dh->ev);
	close(dh->tfd);
	pthread_mutex_destroy(&dh->lock);
	write_log_free(dh->wlog_mem);
	free(dh->ram);
	free(dh);
}

int
devhost_write_log(struct devhost *dh, bool on)
{
	if (!on) {
		__atomic_store_n(&dh->wlog, NULL, __ATOMIC_RELEASE);
		return 0;
	}
	if (dh->wlog_mem == NULL &&
	    (dh->wlog_mem = write_log_new(dh->ram, dh->cfg.nram)) == NULL)
		return -ENOMEM;
	write_log_clear(dh->wlog_mem);
	__atomic_store_n(&dh->wlog, dh->wlog_mem, __ATOMIC_RELEASE);
	return 0;
}

int
devhost_write_log_take(struct devhost *dh, uint64_t gpa, uint64_t *bitmap,
    size_t words)
{
	struct write_log *l = __atomic_load_n(&dh->wlog, __ATOMIC_ACQUIRE);

	return l != NULL ? write_log_take(l, gpa, bitmap, words) : -ENOENT;
}

void
devhost_device_init(struct devhost_device *dd, struct devhost *dh,
    const char *name, pthread_mutex_t *lock, const unsigned int *gsi,
    unsigned int nlines)
{
	unsigned int i;

	memset(dd, 0, sizeof(*dd));
	dd->host.ops = &devhost_ops;
	dd->host.ctx = dd;
	dd->dh = dh;
	dd->name = name;
	dd->lock = lock;
	if (nlines > DEVHOST_MAX_LINES)
		nlines = DEVHOST_MAX_LINES;
	for (i = 0; i < nlines; i++)
		dd->gsi[i] = gsi[i];
	dd->nlines = nlines;
	for (i = 0; i < DEVHOST_MAX_VECTORS; i++)
		irqroute_msi_init(&dd->msi[i]);
}

void
devhost_device_diag(struct devhost_device *dd, struct device_diag *d)
{
	unsigned int i, routes = 0;

	for (i = 0; i < DEVHOST_MAX_VECTORS; i++)
		routes += dd->msi[i].efd >= 0;
	device_diag_put(d, "msi_routes", routes, DEVICE_DIAG_UINT);
	device_diag_put(d, "msi_irqfd", dd->msi_irqfd, DEVICE_DIAG_UINT);
	device_diag_put(d, "msi_signalled", dd->msi_signalled,
	    DEVICE_DIAG_UINT);
}

void
devhost_pause(struct devhost *dh)
{
	pthread_mutex_lock(&dh->lock);
	if (dh->vm_frozen == DEVHOST_RUNNING) {
		if (dh->programmed != DEVHOST_NEVER)
			devhost_settime(dh, DEVHOST_NEVER);
		__atomic_store_n(&dh->vm_frozen, devhost_vm_clock(dh),
		    __ATOMIC_RELEASE);
		dh->programmed = DEVHOST_NEVER;
	}
	pthread_mutex_unlock(&dh->lock);
}

int
devhost_set_vm_clock(struct devhost *dh, int64_t ns)
{
	int rc = -EBUSY;

	pthread_mutex_lock(&dh->lock);
	if (dh->vm_frozen != DEVHOST_RUNNING && ns != DEVHOST_RUNNING) {
		__atomic_store_n(&dh->vm_frozen, ns, __ATOMIC_RELEASE);
		rc = 0;
	}
	pthread_mutex_unlock(&dh->lock);
	return rc;
}

void
devhost_resume(struct devhost *dh)
{
	pthread_mutex_lock(&dh->lock);
	if (dh->vm_frozen != DEVHOST_RUNNING) {
		/* The offset first: a reader that sees the clock running
		 * must see the offset that hides the pause. */
		__atomic_store_n(&dh->vm_offset, xs_mono_ns() -
		    dh->vm_frozen, __ATOMIC_RELAXED);
		__atomic_store_n(&dh->vm_frozen, DEVHOST_RUNNING,
		    __ATOMIC_RELEASE);
		devhost_program(dh);
	}
	pthread_mutex_unlock(&dh->lock);
}

/* The upper bounds of late_hist's buckets but the last, in seconds. */
static const double devhost_late_bounds[DEVHOST_LATE_BUCKETS - 1] = {
	10e-6, 100e-6, 1e-3, 10e-3,
};

#define DEVHOST_FIGURE(key, metric, kind, unit, help, member)		\
	{ key, metric, kind, unit, help,				\
	    FIGURE_AT(struct devhost_stats, member) }

static const struct figure devhost_figure_rows[] = {
	DEVHOST_FIGURE("armed", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Device timers armed", timers_armed),
	DEVHOST_FIGURE("rearms", "vmmd_timer_rearms", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "timerfd_settime calls for device timers",
	    rearms),
	DEVHOST_FIGURE("fired", "vmmd_timer_fired", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Device timer callbacks run", fired),
	DEVHOST_FIGURE("loop_wakeups", "vmmd_timer_loop_wakeups",
	    FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Event loop wake-ups for device timers", loop_wakeups),
	DEVHOST_FIGURE("loop_kicks", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Device timer re-arms from another thread", loop_kicks),
	DEVHOST_FIGURE("late_max_ns", "vmmd_timer_lateness_max_seconds",
	    FIGURE_GAUGE, FIGURE_UNIT_NS,
	    "How late a device timer callback ran, at worst", late_max_ns),
	{ "late_hist", "vmmd_timer_lateness_seconds", FIGURE_HISTOGRAM,
	    FIGURE_UNIT_SECONDS, "How late device timer callbacks ran",
	    FIGURE_AT(struct devhost_stats, late_hist),
	    .nbuckets = DEVHOST_LATE_BUCKETS, .bounds = devhost_late_bounds },
	DEVHOST_FIGURE("irq_coalesced", "vmmd_irq_coalesced", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE,
	    "Interrupts raised while KVM still had the line pending",
	    irq_coalesced),
};

const struct figure_table devhost_figures =
    FIGURE_TABLE(devhost_figure_rows);

void
devhost_get_stats(struct devhost *dh, struct devhost_stats *st)
{
	pthread_mutex_lock(&dh->lock);
	*st = dh->stats;
	pthread_mutex_unlock(&dh->lock);
}
