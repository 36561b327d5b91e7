/*
 * The VM generation ID (Microsoft's "Virtual Machine Generation ID",
 * 2012): 16 bytes of guest RAM that change when the guest may have been
 * duplicated or moved back in time (a restored snapshot, a clone), so
 * that it reseeds its random numbers and forgets what must be unique.
 * The DSDT names the address (a VGEN device, boot-dsdt.c) and the
 * change is announced by Notify(VGEN, 0x80) from a GPE handler: the
 * machine raises the GPE after vmgenid_set() (no file here calls the
 * ACPI PM block).
 *
 * The device has no registers: it writes its ID into guest RAM when it
 * is published and on every change, and keeps it for the snapshot's
 * section "vmgenid".
 */
#ifndef VMMD_VMGENID_H
#define VMMD_VMGENID_H

#include <stdint.h>

#include "device.h"

#define VMGENID_LEN	16

struct vmgenid;

/* NULL on ENOMEM.  addr: the guest physical address of the 16 bytes. */
struct vmgenid *vmgenid_new(const struct device_host *host, uint64_t addr,
    const uint8_t id[VMGENID_LEN]);
void	vmgenid_free(struct vmgenid *g);

/*
 * The ID into guest RAM at its address (after the loader wrote the
 * guest's memory, or after a restore did): 0, or -EFAULT where the
 * address is not RAM.  Under the device's lock.
 */
int	vmgenid_publish(struct vmgenid *g);
/* A new ID, published: 0 or -EFAULT.  Under the device's lock. */
int	vmgenid_set(struct vmgenid *g, const uint8_t id[VMGENID_LEN]);
/* The ID now, into id.  Under the device's lock. */
void	vmgenid_get(const struct vmgenid *g, uint8_t id[VMGENID_LEN]);
/* The ID as a GUID's text (8-4-4-4-12, the first three fields little
 * endian as the spec stores them): 37 bytes with the NUL. */
void	vmgenid_text(const uint8_t id[VMGENID_LEN], char out[37]);

extern const struct device_ops vmgenid_device_ops;
/* Its state section's table (for tests and the fuzzer). */
extern const struct dev_state_table vmgenid_state_table;

#endif
