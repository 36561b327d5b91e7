/*
 * A device host for unit tests: what a device sees of the machine,
 * recorded and controlled by the test.  Interrupt lines keep their level
 * and count edges; timers run on a VM clock that moves only when the
 * test advances it; the wall clock is whatever the test sets (or fails
 * on demand); guest memory is a buffer the test provides.
 *
 * Single-threaded, like the tests: a timer fires from inside
 * fake_host_advance(), in deadline order, with vm_now at its deadline.
 */
#ifndef VMMD_FAKE_HOST_H
#define VMMD_FAKE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "device.h"

#define FAKE_HOST_LINES		4
#define FAKE_HOST_TIMERS	8
#define FAKE_HOST_BELLS		8
#define FAKE_HOST_VECTORS	8

struct device_timer {
	struct fake_host *fh;
	device_timer_fn fn;
	void *dev;
	bool used;
	bool armed;
	int64_t deadline;
};

struct fake_host {
	struct device_host host;	/* hand &fh->host to the device */

	/* Interrupt lines, by the device's line index. */
	bool irq[FAKE_HOST_LINES];
	unsigned int rises[FAKE_HOST_LINES];	/* rising edges ever */
	/* ... of them answered DEVICE_IRQ_DELIVERED: interrupts taken. */
	unsigned int delivered[FAKE_HOST_LINES];
	unsigned int irq_calls;
	unsigned int irq_bad;	/* no level change, or a line out of range */
	/* Message-signalled interrupts: how many, and the last one. */
	unsigned int msis;
	unsigned int msi_vector;
	uint64_t msi_addr;
	uint32_t msi_data;
	/* What the device says each MSI-X vector sends (msi_route). */
	struct {
		bool on;
		uint64_t addr;
		uint32_t data;
	} route[FAKE_HOST_VECTORS];
	unsigned int route_calls;
	/* The PCI interrupt links' route registers as told (pirq_route). */
	uint8_t pirq[4];
	unsigned int pirq_calls;
	int raise_status;	/* what a rising edge returns; DELIVERED */
	/* Doorbells the device asked for; the test rings them by hand. */
	struct {
		unsigned int bar, size, id;
		uint64_t offset;
		device_doorbell_fn fn;
		void *dev;
		bool handed;	/* doorbell_fd(take): a backend reads it */
	} bell[FAKE_HOST_BELLS];
	unsigned int nbells;

	/* Clocks. */
	int64_t vm_now;
	struct timespec wall;
	int wall_error;		/* non-zero: wall_clock() fails with -EIO */

	/* Guest memory: mem_size bytes at guest address mem_base. */
	uint8_t *mem;
	uint64_t mem_base;
	size_t mem_size;
	/*
	 * Set: called at every guest memory lookup the device makes, the
	 * test's stand-in for another vCPU changing memory meanwhile.
	 */
	void (*on_guest_mem)(struct fake_host *fh);

	unsigned int resets;
	unsigned int poweroffs;

	/*
	 * The device's lock as backend threads take it (device_lock()):
	 * a test's own thread takes it too around its accesses.
	 */
	pthread_mutex_t lock;
	unsigned int locks;

	struct device_timer timers[FAKE_HOST_TIMERS];
	unsigned int timer_arms;	/* timer_arm() calls ever */
	unsigned int timer_fires;

	/*
	 * Set: fake_host_advance() moves the wall clock with the VM clock,
	 * as a running guest on an idle host sees them.  Clear (the
	 * default): the wall clock moves only when the test sets it.
	 */
	bool wall_follows_vm;
};

/*
 * The descriptor numbers the fake host hands out (nothing is opened):
 * doorbell id's eventfd, and vector v's irqfd while it is routed.
 */
#define FAKE_HOST_BELL_FD(id)	(100 + (int)(id))
#define FAKE_HOST_MSI_FD(v)	(200 + (int)(v))

extern const struct device_host_ops fake_host_ops;

/* struct fake_host fh = FAKE_HOST_INITIALIZER(fh); or fake_host_init(). */
#define FAKE_HOST_INITIALIZER(name) {					\
	.host = { &fake_host_ops, &(name) },				\
	.raise_status = DEVICE_IRQ_DELIVERED,				\
	.lock = PTHREAD_MUTEX_INITIALIZER,				\
}
void fake_host_init(struct fake_host *fh);
/*
 * Move VM time forward by ns, firing what falls due on the way (and the
 * wall clock with it, if wall_follows_vm).
 */
void fake_host_advance(struct fake_host *fh, int64_t ns);
/* How many timers are armed now. */
unsigned int fake_host_timers_armed(const struct fake_host *fh);
/* The earliest armed deadline, or INT64_MAX. */
int64_t fake_host_next_deadline(const struct fake_host *fh);

#endif
