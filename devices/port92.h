/*
 * System control port A, port 0x92 on PIIX3/PIIX4 ("port 92"): bit 1
 * gates A20, bit 0 is the fast reset (ALT_RST): a write that sets it
 * while it was clear resets the machine.  The two bits read back as
 * written; the others read 0 and ignore writes.
 *
 * The A20 gate is remembered, not applied: KVM has no A20 mask, so
 * memory above 1 MiB is always there, as firmware that opens the gate
 * expects.  The i8042 output port's A20 bit is its own register.
 *
 * Power-on state is 0 (A20 reads closed, no reset pending), and a reset
 * rebuilds the device: firmware that reads the port and writes it back
 * with bit 1 changed does not reset the machine again.
 */
#ifndef VMMD_PORT92_H
#define VMMD_PORT92_H

#include "dev-state.h"
#include "device.h"

#define PORT92_A20		(1U << 1)
#define PORT92_FAST_RESET	(1U << 0)

struct port92;

/* NULL on ENOMEM. */
struct port92 *port92_new(const struct device_host *host);
void port92_free(struct port92 *p);

extern const struct device_ops port92_device_ops;
/* Its state section (dev-state.h), for tests and fuzzers. */
extern const struct dev_state_table port92_state_table;

#endif
