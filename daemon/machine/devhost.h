/*
 * The device host: what every device of a machine gets from it (see
 * devices/device.h), implemented on the worker's event loop and KVM.
 *
 * One struct devhost per machine keeps the timers of all its devices
 * and the VM clock; one struct devhost_device per device carries that
 * device's interrupt lines (GSIs), its lock and its name.
 *
 * Timers: the device timers of a machine share one timerfd (absolute
 * deadlines on CLOCK_MONOTONIC: microseconds, where libevent's own
 * timers keep the kernel's coarse tick), armed for the earliest deadline
 * and watched by the loop as a read event.  Arming from the loop's own
 * thread re-arms it whenever the earliest deadline changes.  Arming from
 * another thread (a vCPU, inside a register access) re-arms it only when
 * the new deadline becomes the earliest; moving the earliest later, or
 * re-arming it to the same deadline, is left for the loop to notice when
 * the timerfd fires where it stands.  One timerfd_settime per change of
 * the earliest deadline, none otherwise; an idle guest's register writes
 * wake nothing.
 *
 * Locking: devhost's own lock protects the timers and counters; it is
 * taken inside a device's lock (a device arming a timer) and never the
 * other way round.  Timer callbacks run on the loop under the device's
 * lock.  Devices are created and freed on the loop's thread, while no
 * vCPU runs.
 */
#ifndef VMMD_DEVHOST_H
#define VMMD_DEVHOST_H

#include <pthread.h>
#include <stdint.h>
#include <event2/event.h>

#include "device.h"
#include "irqroute.h"

#define DEVHOST_MAX_LINES	4
#define DEVHOST_MAX_BELLS	4	/* doorbells per device */
#define DEVHOST_MAX_VECTORS	8	/* MSI-X vectors with a route */
#define DEVHOST_LATE_BUCKETS	5	/* < 10 us, 100 us, 1 ms, 10 ms, more */

/* Guest RAM, as devices may reach it. */
struct devhost_ram {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
	int fd;			/* shareable RAM's memfd, or -1 */
	uint64_t fd_offset;
};

struct devhost_config {
	struct event_base *base;	/* devhost_new() runs on its thread */
	int vm_fd;
	/* MSI routes (outlives the devhost); NULL: every MSI is signalled. */
	struct irqroute *irqroute;
	const struct devhost_ram *ram;	/* copied */
	unsigned int nram;
	/*
	 * A device asked for a reset or power-off: from the thread of the
	 * access, under the device's lock; must not block.
	 */
	void (*system_request)(void *opaque, const char *device,
	    enum device_system_request req);
	void *opaque;
};

struct devhost_stats {
	uint64_t timers_armed;		/* timer_arm() calls */
	uint64_t rearms;		/* timerfd_settime() calls */
	uint64_t loop_wakeups;		/* the loop woke for device timers */
	uint64_t loop_kicks;		/* re-arms from another thread */
	uint64_t fired;			/* device timer callbacks run */
	uint64_t late_max_ns;		/* how late a callback ran, at worst */
	uint64_t late_hist[DEVHOST_LATE_BUCKETS];
	uint64_t irq_coalesced;		/* raised lines KVM found pending */
};

/* The figures (figure.h) of a struct devhost_stats, in vm.info's order. */
extern const struct figure_table devhost_figures;

struct devhost;

/*
 * A doorbell (device.h): an eventfd that KVM signals for the guest's
 * writes at bar + offset while the BAR is mapped, read by an event on
 * the loop.  The event lives as long as the device: a BAR that moves
 * only moves the KVM registration (an ioctl from the vCPU thread that
 * moved it), so no event is ever added or freed off the loop's thread
 * (event_free there would wait for a running callback that waits for
 * the device's lock).
 */
struct devhost_bell {
	struct devhost_device *dd;
	int efd;
	struct event *ev;
	unsigned int bar;
	uint64_t offset;
	unsigned int size;
	device_doorbell_fn fn;
	void *dev;
	unsigned int id;
	bool assigned;			/* with KVM, at addr */
	bool handed;			/* a kernel backend reads efd */
	uint64_t addr;
};

struct devhost_device {
	struct device_host host;	/* what the device is given */
	struct devhost *dh;
	const char *name;		/* static storage */
	pthread_mutex_t *lock;		/* the device's lock */
	unsigned int gsi[DEVHOST_MAX_LINES];
	unsigned int nlines;
	struct devhost_bell bell[DEVHOST_MAX_BELLS];
	unsigned int nbells;
	uint64_t bell_rings;		/* doorbell wake-ups on the loop */
	uint64_t bell_failures;		/* KVM refused a registration */
	/*
	 * MSI-X vectors: a route each while the device says the vector
	 * may send (device.h, msi_route), and how its interrupts went.
	 * Under the device's lock, like everything the device calls.
	 */
	struct irqroute_msi msi[DEVHOST_MAX_VECTORS];
	uint64_t msi_irqfd;		/* one write() to a routed eventfd */
	uint64_t msi_signalled;		/* KVM_SIGNAL_MSI: no route had */
};

int	devhost_new(struct devhost **out, const struct devhost_config *cfg);
/* Once every device and its timers are freed.  NULL is fine. */
void	devhost_free(struct devhost *dh);

/* Fill dd for one device; gsi lists its interrupt lines in order. */
void	devhost_device_init(struct devhost_device *dd, struct devhost *dh,
	    const char *name, pthread_mutex_t *lock, const unsigned int *gsi,
	    unsigned int nlines);

/*
 * dd's own counters for vm.info (MSI routes, irqfd deliveries against
 * KVM_SIGNAL_MSI fallbacks); under the device's lock.
 */
void	devhost_device_diag(struct devhost_device *dd, struct device_diag *d);

/*
 * The guest's rings on dd's doorbells that the loop has not taken yet,
 * handed to the device now (it need not wait for the loop's turn).
 * After the vCPUs stopped, so that no kick is left behind a pause: a
 * state saved then holds every chain the guest offered as offered or
 * taken, and a migration's target never waits for a kick the source
 * swallowed.  Loop thread, not under dd's lock.
 */
void	devhost_device_take_rings(struct devhost_device *dd);

/* After the device is freed: its doorbells and routes go.  Loop thread. */
void	devhost_device_fini(struct devhost_device *dd);
/*
 * BAR bar of dd's device is now at base (on) or nowhere: its doorbells
 * follow.  From the thread that moved it (a vCPU), serialized by the
 * host bridge; never waits for the loop.
 */
void	devhost_device_bar(struct devhost_device *dd, unsigned int bar,
	    bool on, uint64_t base);

/* The VM clock stops while the guest is paused; loop thread only. */
void	devhost_pause(struct devhost *dh);
void	devhost_resume(struct devhost *dh);
int64_t	devhost_vm_clock(struct devhost *dh);
/*
 * Set the paused VM clock to ns (a restored machine's, where the
 * devices' deadlines were counted): it runs on from there at the
 * resume.  0, or -EBUSY while the clock runs.
 */
int	devhost_set_vm_clock(struct devhost *dh, int64_t ns);

void	devhost_get_stats(struct devhost *dh, struct devhost_stats *st);

/*
 * The devices' writes to guest RAM (device_guest_written()) logged
 * from now on, every page unmarked, or no longer: 0, or -ENOMEM (then
 * not logged).  The loop's thread; KVM's own log is ram-log.h's.
 */
int	devhost_write_log(struct devhost *dh, bool on);
/*
 * The pages of the RAM region at gpa that devices wrote since the log
 * started or since the last call, ORed into bitmap (words words, one
 * bit a page), and forgotten.  Any thread while the log is on: 0, or
 * -ENOENT (off, or no region at gpa).
 */
int	devhost_write_log_take(struct devhost *dh, uint64_t gpa,
	    uint64_t *bitmap, size_t words);

#endif
