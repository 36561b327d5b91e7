/*
 * The interface every emulated device implements.
 *
 * Devices are plain state machines: no threads, no locks, no file
 * descriptors, no globals.  The worker wraps each one with a lock and
 * registers it on the I/O bus; unit tests drive them directly.  What a
 * device needs from its host (raising an interrupt line, sending bytes,
 * reading the clock) comes in through callbacks given at creation.
 */
#ifndef VMMD_DEVICE_H
#define VMMD_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * An interrupt line towards the interrupt controllers.  Devices report
 * the level of their output; the host turns that into KVM_IRQ_LINE.
 * Devices call set() only when the level changes.
 */
struct irq_line {
	void (*set)(void *opaque, unsigned int gsi, bool level);
	void *opaque;
	unsigned int gsi;
};

static inline void
irq_line_set(const struct irq_line *line, bool level)
{
	if (line->set != NULL)
		line->set(line->opaque, line->gsi, level);
}

/*
 * Generic access entry points, used by the I/O bus.  offset is relative
 * to the start of the range the device was registered at; size is 1, 2,
 * 4 or 8.  A read fills data with size bytes (little endian).
 */
struct device_ops {
	const char *name;
	void (*read)(void *dev, uint64_t offset, void *data, unsigned int size);
	void (*write)(void *dev, uint64_t offset, const void *data,
	    unsigned int size);
	void (*reset)(void *dev);
	void (*free)(void *dev);
};

#endif
