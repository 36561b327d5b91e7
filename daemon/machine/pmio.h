/*
 * Where the ACPI PM block (devices/acpi-pm.h) decodes on the port bus.
 *
 * A VM without firmware has it at PC_ACPI_PM1A_EVT_PORT for its whole
 * life, as its ACPI tables say.  A firmware VM has a PIIX4 PM function
 * (devices/piix4-pm.h) whose PMBA and PMREGMISC place it: the block
 * decodes nowhere until firmware enables it, and then at PMBA, each of
 * the ACPI PM device's board ranges at the same distance from PMBA as
 * from PC_ACPI_PM1A_EVT_PORT.  A place that overlaps other ports (those
 * on the bus, or the ones KVM's in-kernel PIC and PIT take) is not taken:
 * the block then decodes nowhere and the function counts it.  So it
 * does when the bus refuses further changes (iobus.h), and the block
 * then stays where it was.
 *
 * Threads: pmio_update() runs while the machine is built and after each
 * config space write to the function, under the PCI host bridge's lock,
 * no device lock held (pcibus.h); pmio_base() from any thread.
 */
#ifndef VMMD_PMIO_H
#define VMMD_PMIO_H

#include <stdbool.h>
#include <stdint.h>

#include "board.h"
#include "iobus.h"

struct pmio {
	struct iobus *pio;
	struct vdev *pm;		/* the ACPI PM device */
	const struct board_range *ranges;	/* its board ranges */
	struct vdev *func;		/* the PIIX4 PM function, or NULL */
	bool on;			/* registered now ... */
	uint16_t base;			/* ... at this PM1a event block */
	bool want_on;			/* what the function last asked */
	uint16_t want_base;
	uint32_t published;		/* atomic: pmio_base()'s answer */
};

/*
 * The ACPI PM device pm, registered at its board ranges (relative to
 * PC_ACPI_PM1A_EVT_PORT) on pio.  func: the PIIX4 PM function that
 * places it from now on, or NULL (it stays where it is); with one, call
 * pmio_update() before any vCPU runs.
 */
void pmio_init(struct pmio *p, struct iobus *pio, struct vdev *pm,
    const struct board_range *ranges, struct vdev *func);
/* Follow the function's registers (nothing without one). */
void pmio_update(struct pmio *p);
/*
 * The PM1a event block's port now: true and *base, or false while the
 * block decodes nowhere.  The control block is at *base + 4, the timer
 * at *base + 8.
 */
bool pmio_base(const struct pmio *p, uint16_t *base);

#endif
