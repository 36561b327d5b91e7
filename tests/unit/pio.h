/*
 * Port I/O to one device as the I/O bus delivers it: a byte at a port
 * (the device's own offset) through its device_ops.  Header-only.
 */
#ifndef VMMD_PIO_H
#define VMMD_PIO_H

#include <stdint.h>

#include "device.h"

struct pio {
	const struct device_ops *ops;
	void *dev;
};

static inline uint8_t
pio_inb(const struct pio *p, uint64_t port)
{
	uint8_t v;

	p->ops->read(p->dev, port, &v, 1);
	return v;
}

static inline void
pio_outb(const struct pio *p, uint64_t port, uint8_t v)
{
	p->ops->write(p->dev, port, &v, 1);
}

#endif
