/*
 * The machine's PCI slots: what the host bridge (devices/pci/pci-host.h)
 * reaches for slots 1-31.  Each slot holds a board device that is a PCI
 * function; its config space is read and written under that device's
 * lock, and when the guest moves or enables a BAR, the BAR's range moves
 * on the machine's port or MMIO bus (lock-free for the vCPUs that look
 * it up: see iobus.h).
 *
 * Threads: accesses come from vCPU threads under the host bridge's
 * lock, which serializes every BAR change; pcibus_add() runs while the
 * machine is built.
 */
#ifndef VMMD_PCIBUS_H
#define VMMD_PCIBUS_H

#include <stdbool.h>
#include <stdint.h>

#include "iobus.h"
#include "pc-layout.h"
#include "pci-config.h"
#include "pci-host.h"

struct pcibus_slot {
	struct vdev *vdev;		/* NULL: empty */
	struct pci_config *cfg;		/* inside vdev->state */
	struct pci_bar_map mapped[PCI_NUM_BARS];	/* on the buses now */
};

struct pcibus {
	struct iobus *pio;
	struct iobus *mmio;
	struct pcibus_slot slot[PC_PCI_SLOTS];
	uint64_t map_failures;		/* BARs placed over something else */
	/*
	 * Optional: a function's memory BAR is now at base (on) or nowhere,
	 * for what must follow it (doorbells).  From the thread that moved
	 * it, under the host bridge's lock, no device lock held.
	 */
	void (*bar_moved)(void *ctx, struct vdev *vdev, unsigned int bar,
	    bool on, uint64_t base);
	void *bar_ctx;
};

void pcibus_init(struct pcibus *pb, struct iobus *pio, struct iobus *mmio);
/*
 * Put a PCI function (ops->pci set) in slot: 0, -EINVAL, -EBUSY.  Its
 * interrupt line register starts with its INTx GSI, as firmware leaves
 * it.
 */
int pcibus_add(struct pcibus *pb, unsigned int slot, struct vdev *vdev);
/* What pci_host_new() wants, reaching pb. */
void pcibus_host_ops(struct pcibus *pb, struct pci_host_ops *ops);

/*
 * After the functions loaded their config spaces from a snapshot: map
 * each BAR where its config space now says (and its doorbells with it,
 * bar_moved), as a guest's write there would.  With the vCPUs paused.
 */
void pcibus_sync(struct pcibus *pb);

#endif
