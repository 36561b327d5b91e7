/*
 * The interface between emulated devices and the machine that hosts them.
 *
 * Devices are plain state machines: no threads, no locks, no file
 * descriptors, no globals.  The machine wraps each one with a lock and
 * registers it on an I/O bus; unit tests drive them directly through a
 * fake host (tests/unit/fake-host.h).
 *
 * Everything a device needs from its host comes through the one
 * struct device_host it is given at creation: its interrupt lines,
 * timers on the VM clock, the clocks, guest memory and system requests
 * (reset, power-off).  What a device exchanges with the outside world
 * (a console, a display, a disk) is a backend of its own, given at
 * creation too, and outlives the device: see the device's header.
 *
 * Locking contract: the host serializes every entry into a device under
 * that device's lock: register accesses (vCPU threads), host-side input
 * (the event loop) and timer callbacks (the event loop).  A device may
 * call any device_host function while it is entered that way; the host
 * never calls back into the device from inside one of them.
 */
#ifndef VMMD_DEVICE_H
#define VMMD_DEVICE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "figure.h"

/* What raising an interrupt line achieved (KVM_IRQ_LINE_STATUS). */
enum device_irq_status {
	DEVICE_IRQ_COALESCED = 0,	/* the previous one was not taken yet */
	DEVICE_IRQ_DELIVERED = 1,	/* or the line was lowered */
	DEVICE_IRQ_MASKED = 2,		/* no controller input accepted it */
};

/* Requests a device may make of the whole machine. */
enum device_system_request {
	DEVICE_REQUEST_RESET,		/* e.g. the i8042's reset line */
	DEVICE_REQUEST_POWEROFF,
};

struct device_timer;			/* made and owned by the host */

/*
 * A range of guest RAM and where the host maps it (device_mem_regions).
 * When the RAM is shareable (a memfd mapped MAP_SHARED, for a VM with a
 * vhost-user device), fd is its file and fd_offset where the range
 * starts in it, so that another process can map the same pages; else
 * fd is -1.  fd belongs to the machine.
 */
struct device_mem_region {
	uint64_t gpa;
	uint64_t size;
	void *hva;
	int fd;
	uint64_t fd_offset;
};

/* A timer expired; runs on the event loop under the device's lock. */
typedef void (*device_timer_fn)(void *dev);
/* A doorbell rang; runs on the event loop under the device's lock. */
typedef void (*device_doorbell_fn)(void *dev, unsigned int id);

struct device_host_ops {
	/*
	 * Set the level of interrupt line `line`: an index into the lines
	 * the device's board entry lists (0 = the first), not a GSI.  Call
	 * it only when the level changes.  Returns an enum device_irq_status
	 * or -errno.
	 */
	int (*irq_set)(void *ctx, unsigned int line, bool level);

	/*
	 * Timers on the VM clock.  timer_new() returns NULL on ENOMEM; a
	 * new timer is not armed.  timer_arm() sets an absolute deadline
	 * (VM clock, ns), moving the timer if it was armed; a deadline in
	 * the past fires as soon as the loop runs.  timer_cancel() on a
	 * timer that is not armed does nothing.  A callback that was
	 * already due when the timer was moved or cancelled does not run.
	 * timer_free() cancels first; NULL is fine.  Timers are made and
	 * freed where the device is made and freed (or in their own
	 * callback), never from a register access.
	 */
	struct device_timer *(*timer_new)(void *ctx, device_timer_fn fn,
	    void *dev);
	void (*timer_arm)(void *ctx, struct device_timer *t,
	    int64_t deadline_ns);
	void (*timer_cancel)(void *ctx, struct device_timer *t);
	void (*timer_free)(void *ctx, struct device_timer *t);

	/*
	 * Send a message-signalled interrupt through the device's MSI-X
	 * vector `vector` (its table entry's address and data, PCI 3.0
	 * 6.8).  0 or -errno.  Any thread that entered the device.
	 */
	int (*msi)(void *ctx, unsigned int vector, uint64_t addr,
	    uint32_t data);

	/*
	 * Optional (NULL: none).  What vector `vector` will send from now
	 * on: (addr, data) when on, nothing when off (MSI-X disabled, the
	 * entry masked, the device going away).  The device calls it when
	 * that changes, from the access that changed it (a vCPU, under
	 * the device's lock), so the host may prepare a faster path for
	 * msi() (KVM: a GSI route with an irqfd).  msi() works whatever
	 * this returned; 0 or -errno says whether the fast path exists.
	 * The host forgets every vector's route when it frees the device.
	 */
	int (*msi_route)(void *ctx, unsigned int vector, bool on,
	    uint64_t addr, uint32_t data);

	/*
	 * Optional (NULL: none).  A doorbell: a guest write of exactly
	 * size bytes at offset of the device's PCI BAR bar, which KVM
	 * completes in the kernel (an ioeventfd) wherever the BAR is
	 * mapped, the vCPU going on without a user-space exit; fn(dev, id)
	 * then runs on the event loop, under the device's lock, for one or
	 * more such writes.  Writes of another size, or before the
	 * doorbell exists, remain register accesses.  Made where the
	 * device is made; the host removes it when it frees the device.
	 * 0 or -errno (then the writes stay register accesses).
	 */
	int (*doorbell)(void *ctx, unsigned int bar, uint64_t offset,
	    unsigned int size, device_doorbell_fn fn, void *dev,
	    unsigned int id);

	/*
	 * Optional (NULL: none).  Hand doorbell id's eventfd to a backend
	 * in the kernel, which then takes the guest's writes itself
	 * (take: the loop stops reading it, and the eventfd is returned),
	 * or take it back (!take: the loop reads it again; 0).  The
	 * eventfd stays the host's, open while the device exists, whether
	 * or not KVM signals it yet (the BAR may not be mapped): a write
	 * the guest makes as a register access meanwhile is the device's
	 * to pass on.  -ENOENT: no such doorbell.
	 */
	int (*doorbell_fd)(void *ctx, unsigned int id, bool take);

	/*
	 * Optional (NULL: none).  The eventfd that raises vector's
	 * interrupt in the kernel (its KVM irqfd), for a backend in the
	 * kernel to write; -ENOENT while the vector has no route (see
	 * msi_route).  Valid until the vector's route changes or the
	 * device goes: the device asks again after each msi_route.
	 */
	int (*msi_fd)(void *ctx, unsigned int vector);

	/*
	 * Optional (NULL: none).  Guest RAM as the host maps it, for a
	 * backend in the kernel that reads and writes it by itself: up to
	 * max regions into r; how many there are, or -errno.  Valid while
	 * the machine exists.
	 */
	int (*mem_regions)(void *ctx, struct device_mem_region *r,
	    unsigned int max);

	/*
	 * Optional (NULL: none).  The PCI interrupt router (the PIIX3's
	 * ISA bridge): PCI interrupt link `link` (0 = PIRQA; which INTx
	 * pins the board ties to it is the host's to know) now has route
	 * register value reg, as the guest wrote it or a saved state
	 * holds it.  The host decodes it and steers the link's level to
	 * that ISA IRQ from now on, including a level already up.
	 */
	void (*pirq_route)(void *ctx, unsigned int link, uint8_t reg);

	/* Nanoseconds of VM time: monotonic, stopped while paused. */
	int64_t (*vm_clock)(void *ctx);
	/* The host's UTC (CLOCK_REALTIME): 0 or -errno. */
	int (*wall_clock)(void *ctx, struct timespec *ts);

	/*
	 * Guest RAM at guest physical address gpa, len bytes: a host
	 * pointer valid while the machine exists, or NULL unless the whole
	 * range lies in guest RAM.
	 */
	void *(*guest_mem)(void *ctx, uint64_t gpa, size_t len);
	/*
	 * Optional (NULL: none).  The device wrote len bytes of guest RAM
	 * at hva (a guest_mem() pointer, or inside one), by itself rather
	 * than by the guest: called after the write, from the thread that
	 * wrote, so that a live migration sends those pages again (KVM
	 * logs only the vCPUs' writes).  Cheap when no migration runs.
	 */
	void (*guest_written)(void *ctx, const void *hva, size_t len);

	/* Reset or power off the machine, once the access returns. */
	void (*system_request)(void *ctx, enum device_system_request req);

	/*
	 * For a device's backend threads (a disk's I/O completions): take
	 * and release the device's lock, as the host does around register
	 * accesses, before entering the device.  Never from inside an
	 * access or a timer (the lock is held there).
	 */
	void (*lock)(void *ctx);
	void (*unlock)(void *ctx);
};

struct device_host {
	const struct device_host_ops *ops;
	void *ctx;
};

static inline int
device_irq_set(const struct device_host *h, unsigned int line, bool level)
{
	return h->ops->irq_set(h->ctx, line, level);
}

static inline int
device_msi(const struct device_host *h, unsigned int vector, uint64_t addr,
    uint32_t data)
{
	return h->ops->msi(h->ctx, vector, addr, data);
}

/* 0, or -errno (-ENOTSUP: the host has no fast path to prepare). */
static inline int
device_msi_route(const struct device_host *h, unsigned int vector, bool on,
    uint64_t addr, uint32_t data)
{
	if (h->ops->msi_route == NULL)
		return -ENOTSUP;
	return h->ops->msi_route(h->ctx, vector, on, addr, data);
}

static inline struct device_timer *
device_timer_new(const struct device_host *h, device_timer_fn fn, void *dev)
{
	return h->ops->timer_new(h->ctx, fn, dev);
}

static inline void
device_timer_arm(const struct device_host *h, struct device_timer *t,
    int64_t deadline_ns)
{
	h->ops->timer_arm(h->ctx, t, deadline_ns);
}

static inline void
device_timer_cancel(const struct device_host *h, struct device_timer *t)
{
	h->ops->timer_cancel(h->ctx, t);
}

static inline void
device_timer_free(const struct device_host *h, struct device_timer *t)
{
	if (t != NULL)
		h->ops->timer_free(h->ctx, t);
}

/* A doorbell if the host has them: 0, or -errno (-ENOTSUP: none). */
static inline int
device_doorbell(const struct device_host *h, unsigned int bar,
    uint64_t offset, unsigned int size, device_doorbell_fn fn, void *dev,
    unsigned int id)
{
	if (h->ops->doorbell == NULL)
		return -ENOTSUP;
	return h->ops->doorbell(h->ctx, bar, offset, size, fn, dev, id);
}

static inline int
device_doorbell_fd(const struct device_host *h, unsigned int id, bool take)
{
	if (h->ops->doorbell_fd == NULL)
		return -ENOTSUP;
	return h->ops->doorbell_fd(h->ctx, id, take);
}

static inline int
device_msi_fd(const struct device_host *h, unsigned int vector)
{
	if (h->ops->msi_fd == NULL)
		return -ENOTSUP;
	return h->ops->msi_fd(h->ctx, vector);
}

static inline int
device_mem_regions(const struct device_host *h, struct device_mem_region *r,
    unsigned int max)
{
	if (h->ops->mem_regions == NULL)
		return -ENOTSUP;
	return h->ops->mem_regions(h->ctx, r, max);
}

static inline void
device_pirq_route(const struct device_host *h, unsigned int link, uint8_t reg)
{
	if (h->ops->pirq_route != NULL)
		h->ops->pirq_route(h->ctx, link, reg);
}

static inline int64_t
device_vm_clock(const struct device_host *h)
{
	return h->ops->vm_clock(h->ctx);
}

static inline int
device_wall_clock(const struct device_host *h, struct timespec *ts)
{
	return h->ops->wall_clock(h->ctx, ts);
}

static inline void *
device_guest_mem(const struct device_host *h, uint64_t gpa, size_t len)
{
	return h->ops->guest_mem(h->ctx, gpa, len);
}

/*
 * Every write a device makes into guest RAM by itself (a buffer it
 * fills, a ring it updates, a DMA) is followed by this, or the page may
 * reach a live migration's target as it was before.
 */
static inline void
device_guest_written(const struct device_host *h, const void *hva,
    size_t len)
{
	if (h->ops->guest_written != NULL)
		h->ops->guest_written(h->ctx, hva, len);
}

static inline void
device_system_request(const struct device_host *h,
    enum device_system_request req)
{
	h->ops->system_request(h->ctx, req);
}

static inline void
device_lock(const struct device_host *h)
{
	h->ops->lock(h->ctx);
}

static inline void
device_unlock(const struct device_host *h)
{
	h->ops->unlock(h->ctx);
}

/*
 * Diagnostics: a device describes its state as named values, for
 * vm.info, without knowing how they are shown.
 */
enum device_diag_format {
	DEVICE_DIAG_UINT,
	DEVICE_DIAG_HEX,
	DEVICE_DIAG_BOOL,
};

struct device_diag {
	void (*put)(struct device_diag *d, const char *key, uint64_t value,
	    enum device_diag_format fmt);
	/*
	 * Optional: a counter or gauge of the device's figure table
	 * (figure.h), for sinks that want its declaration (its /metrics
	 * family); NULL: put(key, value, DEVICE_DIAG_UINT).
	 */
	void (*figure)(struct device_diag *d, const struct figure *f,
	    uint64_t value);
};

static inline void
device_diag_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	d->put(d, key, value, fmt);
}

/*
 * Rows first to first + n - 1 of table t (counters and gauges), read
 * from src: for a device whose registers and flags come between its
 * figures, or that has fewer of some (queues) than its table.
 */
static inline void
device_diag_figure_range(struct device_diag *d, const struct figure_table *t,
    size_t first, size_t n, const void *src)
{
	for (size_t i = first; i < first + n && i < t->n; i++) {
		const struct figure *f = &t->rows[i];
		uint64_t v = figure_value(f, src);

		if (d->figure != NULL)
			d->figure(d, f, v);
		else
			d->put(d, f->key, v, DEVICE_DIAG_UINT);
	}
}

/* Each row of table t, read from src, in its order. */
static inline void
device_diag_figures(struct device_diag *d, const struct figure_table *t,
    const void *src)
{
	device_diag_figure_range(d, t, 0, t->n, src);
}

/*
 * Generic access entry points, used by the I/O bus.  offset is relative
 * to the start of the range the device was registered at; size is 1, 2,
 * 4 or 8.  A read fills data with size bytes (little endian).
 *
 * There is no reset hook: a guest reset rebuilds the machine, devices
 * included, so power-on state has one definition (X_new).  State that
 * survives a reset (a battery-backed clock, a disk) lives in a backend.
 */
struct pci_config;
struct dev_state_buf;
struct dev_state_error;

struct device_ops {
	const char *name;
	void (*read)(void *dev, uint64_t offset, void *data, unsigned int size);
	void (*write)(void *dev, uint64_t offset, const void *data,
	    unsigned int size);
	/* Optional: named register values for vm.info; under the lock. */
	void (*diag)(void *dev, struct device_diag *d);
	/*
	 * PCI functions only: the config space the device embeds (see
	 * pci/pci-config.h); BAR accesses arrive at PCI_BAR_OFFSET(bar).
	 */
	struct pci_config *(*pci)(void *dev);
	/*
	 * PCI functions, optional: the guest wrote size bytes of config
	 * space at offset (already in pci's bytes), under the lock, so the
	 * device can follow what it controls there (MSI-X enable and
	 * function mask).
	 */
	void (*pci_written)(void *dev, unsigned int offset,
	    unsigned int size);
	/*
	 * Optional (NULL: the device has no state to keep yet): its state
	 * as one section (dev-state.h), appended to out; and a section
	 * read back into a device made for the same board entry, which
	 * then recomputes what derives from the state (its interrupt
	 * level, its timers, from the VM clock: restore the clock first).
	 * Under the lock, with the vCPUs paused.  0 or -errno; a load
	 * that fails leaves the device as it was, err saying why.
	 */
	int (*save)(void *dev, struct dev_state_buf *out);
	int (*load)(void *dev, const void *buf, size_t len,
	    struct dev_state_error *err);
	void (*free)(void *dev);
};

#endif
