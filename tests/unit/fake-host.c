/* See fake-host.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake-host.h"

static int
fake_irq_set(void *ctx, unsigned int line, bool level)
{
	struct fake_host *fh = ctx;

	fh->irq_calls++;
	if (line >= FAKE_HOST_LINES) {
		fh->irq_bad++;
		return -EINVAL;
	}
	if (level == fh->irq[line])
		fh->irq_bad++;
	if (level && !fh->irq[line]) {
		fh->rises[line]++;
		if (fh->raise_status == DEVICE_IRQ_DELIVERED)
			fh->delivered[line]++;
	}
	fh->irq[line] = level;
	return level ? fh->raise_status : DEVICE_IRQ_DELIVERED;
}

static struct device_timer *
fake_timer_new(void *ctx, device_timer_fn fn, void *dev)
{
	struct fake_host *fh = ctx;
	unsigned int i;

	for (i = 0; i < FAKE_HOST_TIMERS; i++) {
		if (!fh->timers[i].used) {
			fh->timers[i] = (struct device_timer){
				.fh = fh, .fn = fn, .dev = dev, .used = true,
			};
			return &fh->timers[i];
		}
	}
	return NULL;
}

static void
fake_timer_arm(void *ctx, struct device_timer *t, int64_t deadline_ns)
{
	struct fake_host *fh = ctx;

	fh->timer_arms++;
	t->armed = true;
	t->deadline = deadline_ns;
}

static void
fake_timer_cancel(void *ctx, struct device_timer *t)
{
	t->armed = false;
}

static void
fake_timer_free(void *ctx, struct device_timer *t)
{
	memset(t, 0, sizeof(*t));
}

static int64_t
fake_vm_clock(void *ctx)
{
	struct fake_host *fh = ctx;

	return fh->vm_now;
}

static int
fake_wall_clock(void *ctx, struct timespec *ts)
{
	struct fake_host *fh = ctx;

	if (fh->wall_error)
		return -EIO;
	*ts = fh->wall;
	return 0;
}

static void *
fake_guest_mem(void *ctx, uint64_t gpa, size_t len)
{
	struct fake_host *fh = ctx;

	if (fh->on_guest_mem != NULL)
		fh->on_guest_mem(fh);
	if (fh->mem == NULL || gpa < fh->mem_base ||
	    gpa - fh->mem_base > fh->mem_size ||
	    len > fh->mem_size - (gpa - fh->mem_base))
		return NULL;
	return fh->mem + (gpa - fh->mem_base);
}

static int
fake_msi(void *ctx, unsigned int vector, uint64_t addr, uint32_t data)
{
	struct fake_host *fh = ctx;

	fh->msis++;
	fh->msi_vector = vector;
	fh->msi_addr = addr;
	fh->msi_data = data;
	return 0;
}

static int
fake_msi_route(void *ctx, unsigned int vector, bool on, uint64_t addr,
    uint32_t data)
{
	struct fake_host *fh = ctx;

	fh->route_calls++;
	if (vector >= FAKE_HOST_VECTORS)
		return -EINVAL;
	fh->route[vector].on = on;
	fh->route[vector].addr = addr;
	fh->route[vector].data = data;
	return 0;
}

static void
fake_pirq_route(void *ctx, unsigned int link, uint8_t reg)
{
	struct fake_host *fh = ctx;

	fh->pirq_calls++;
	if (link < 4)
		fh->pirq[link] = reg;
}

static void
fake_lock(void *ctx)
{
	struct fake_host *fh = ctx;

	pthread_mutex_lock(&fh->lock);
	fh->locks++;
}

static void
fake_unlock(void *ctx)
{
	pthread_mutex_unlock(&((struct fake_host *)ctx)->lock);
}

static void
fake_system_request(void *ctx, enum device_system_request req)
{
	struct fake_host *fh = ctx;

	if (req == DEVICE_REQUEST_RESET)
		fh->resets++;
	else
		fh->poweroffs++;
}

static int
fake_doorbell(void *ctx, unsigned int bar, uint64_t offset,
    unsigned int size, device_doorbell_fn fn, void *dev, unsigned int id)
{
	struct fake_host *fh = ctx;

	if (fh->nbells == FAKE_HOST_BELLS)
		return -ENOSPC;
	fh->bell[fh->nbells].bar = bar;
	fh->bell[fh->nbells].offset = offset;
	fh->bell[fh->nbells].size = size;
	fh->bell[fh->nbells].fn = fn;
	fh->bell[fh->nbells].dev = dev;
	fh->bell[fh->nbells].id = id;
	fh->nbells++;
	return 0;
}

static int
fake_doorbell_fd(void *ctx, unsigned int id, bool take)
{
	struct fake_host *fh = ctx;

	for (unsigned int i = 0; i < fh->nbells; i++)
		if (fh->bell[i].id == id) {
			fh->bell[i].handed = take;
			return take ? FAKE_HOST_BELL_FD(id) : 0;
		}
	return -ENOENT;
}

static int
fake_msi_fd(void *ctx, unsigned int vector)
{
	struct fake_host *fh = ctx;

	if (vector >= FAKE_HOST_VECTORS || !fh->route[vector].on)
		return -ENOENT;
	return FAKE_HOST_MSI_FD(vector);
}

static int
fake_mem_regions(void *ctx, struct device_mem_region *r, unsigned int max)
{
	struct fake_host *fh = ctx;

	if (max > 0)
		r[0] = (struct device_mem_region){ fh->mem_base,
		    fh->mem_size, fh->mem, -1, 0 };
	return 1;
}

const struct device_host_ops fake_host_ops = {
	.irq_set = fake_irq_set,
	.timer_new = fake_timer_new,
	.timer_arm = fake_timer_arm,
	.timer_cancel = fake_timer_cancel,
	.timer_free = fake_timer_free,
	.vm_clock = fake_vm_clock,
	.wall_clock = fake_wall_clock,
	.guest_mem = fake_guest_mem,
	.system_request = fake_system_request,
	.msi = fake_msi,
	.msi_route = fake_msi_route,
	.pirq_route = fake_pirq_route,
	.doorbell = fake_doorbell,
	.doorbell_fd = fake_doorbell_fd,
	.msi_fd = fake_msi_fd,
	.mem_regions = fake_mem_regions,
	.lock = fake_lock,
	.unlock = fake_unlock,
};

void
fake_host_init(struct fake_host *fh)
{
	memset(fh, 0, sizeof(*fh));
	fh->host.ops = &fake_host_ops;
	fh->host.ctx = fh;
	fh->raise_status = DEVICE_IRQ_DELIVERED;
	pthread_mutex_init(&fh->lock, NULL);
}

unsigned int
fake_host_timers_armed(const struct fake_host *fh)
{
	unsigned int i, n = 0;

	for (i = 0; i < FAKE_HOST_TIMERS; i++)
		n += fh->timers[i].used && fh->timers[i].armed;
	return n;
}

static struct device_timer *
fake_host_earliest(struct fake_host *fh)
{
	struct device_timer *t = NULL;
	unsigned int i;

	for (i = 0; i < FAKE_HOST_TIMERS; i++) {
		struct device_timer *c = &fh->timers[i];

		if (c->used && c->armed && (t == NULL ||
		    c->deadline < t->deadline))
			t = c;
	}
	return t;
}

int64_t
fake_host_next_deadline(const struct fake_host *fh)
{
	struct device_timer *t = fake_host_earliest((struct fake_host *)fh);

	return t != NULL ? t->deadline : INT64_MAX;
}

/* VM time moves to `to` (not backwards); the wall clock may follow. */
static void
fake_host_move(struct fake_host *fh, int64_t to)
{
	int64_t d = to - fh->vm_now;

	if (d <= 0)
		return;
	fh->vm_now = to;
	if (!fh->wall_follows_vm)
		return;
	fh->wall.tv_sec += (time_t)(d / 1000000000);
	fh->wall.tv_nsec += (long)(d % 1000000000);
	if (fh->wall.tv_nsec >= 1000000000L) {
		fh->wall.tv_nsec -= 1000000000L;
		fh->wall.tv_sec++;
	}
}

void
fake_host_advance(struct fake_host *fh, int64_t ns)
{
	int64_t end = fh->vm_now + ns;
	struct device_timer *t;

	while ((t = fake_host_earliest(fh)) != NULL && t->deadline <= end) {
		fake_host_move(fh, t->deadline);
		t->armed = false;
		fh->timer_fires++;
		t->fn(t->dev);
	}
	fake_host_move(fh, end);
}
