/* See pmio.h. */
#include <errno.h>

#include "pc-layout.h"
#include "piix4-pm.h"
#include "pmio.h"

#define PMIO_ON		(1U << 16)	/* published: above the base */

/*
 * Ports KVM's in-kernel PIC, PIT and ELCR answer before any exit
 * reaches the bus: a block placed over them would never be reached.
 */
static const struct {
	uint16_t first, last;
} pmio_kernel_ports[] = {
	{ 0x20, 0x21 },		/* master PIC */
	{ 0x40, 0x43 },		/* PIT */
	{ 0x61, 0x61 },		/* PIT channel 2 gate, speaker */
	{ 0xa0, 0xa1 },		/* slave PIC */
	{ 0x4d0, 0x4d1 },	/* ELCR */
};

static void
pmio_publish(struct pmio *p)
{
	__atomic_store_n(&p->published, p->on ? PMIO_ON | p->base : 0,
	    __ATOMIC_RELEASE);
}

void
pmio_init(struct pmio *p, struct iobus *pio, struct vdev *pm,
    const struct board_range *ranges, struct vdev *func)
{
	p->pio = pio;
	p->pm = pm;
	p->ranges = ranges;
	p->func = func;
	p->on = p->want_on = true;
	p->base = p->want_base = PC_ACPI_PM1A_EVT_PORT;
	pmio_publish(p);
}

static uint64_t
pmio_port(const struct pmio *p, unsigned int i, uint16_t base)
{
	return p->ranges[i].base - PC_ACPI_PM1A_EVT_PORT + base;
}

static bool
pmio_kernel_overlap(uint64_t first, uint64_t len)
{
	size_t i;

	for (i = 0; i < sizeof(pmio_kernel_ports) /
	    sizeof(pmio_kernel_ports[0]); i++)
		if (first <= pmio_kernel_ports[i].last &&
		    pmio_kernel_ports[i].first < first + len)
			return true;
	return false;
}

/* Remove the first n ranges at base: 0, or -errno if one stays. */
static int
pmio_unmap(struct pmio *p, uint16_t base, unsigned int n)
{
	int ret = 0;

	for (unsigned int i = 0; i < n && p->ranges[i].len > 0; i++)
		if (iobus_unregister(p->pio, pmio_port(p, i, base),
		    p->pm) < 0)
			ret = -ENOSPC;
	return ret;
}

/* Register every range at base, or none: 0 or -errno. */
static int
pmio_map(struct pmio *p, uint16_t base)
{
	unsigned int i;
	uint64_t port;
	int ret = 0;

	for (i = 0; i < BOARD_MAX_RANGES && p->ranges[i].len > 0; i++) {
		port = pmio_port(p, i, base);
		if (port + p->ranges[i].len > 0x10000 ||
		    pmio_kernel_overlap(port, p->ranges[i].len))
			ret = -EEXIST;
		else
			ret = iobus_register(p->pio, port, p->ranges[i].len,
			    p->pm, p->ranges[i].dev_offset);
		if (ret < 0) {
			pmio_unmap(p, base, i);
			return ret;
		}
	}
	return 0;
}

void
pmio_update(struct pmio *p)
{
	uint16_t base = 0;
	bool on, failed = false;

	if (p->func == NULL)
		return;
	vdev_lock(p->func);
	on = piix4_pm_io(p->func->state, &base);
	vdev_unlock(p->func);
	/* Only a new request moves anything (or counts a failure). */
	if (on == p->want_on && (!on || base == p->want_base))
		return;
	p->want_on = on;
	p->want_base = base;
	/*
	 * A bus that refuses changes (iobus.h: a guest past its budget)
	 * leaves the block where it was, and the function is told so.
	 */
	if (p->on && pmio_unmap(p, p->base, BOARD_MAX_RANGES) < 0) {
		on = false;
		failed = true;
	} else {
		p->on = false;
	}
	if (on) {
		if (pmio_map(p, base) == 0) {
			p->on = true;
			p->base = base;
		} else {
			failed = true;
		}
	}
	pmio_publish(p);
	vdev_lock(p->func);
	piix4_pm_placed(p->func->state, p->on, p->base, failed);
	vdev_unlock(p->func);
}

bool
pmio_base(const struct pmio *p, uint16_t *base)
{
	uint32_t v = __atomic_load_n(&p->published, __ATOMIC_ACQUIRE);

	*base = (uint16_t)v;
	return (v & PMIO_ON) != 0;
}
