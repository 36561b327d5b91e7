/*
 * The machine's PCI slots: what the host bridge (devices/pci/pci-host.h)
 * reaches for slots 1-31.  Each function of a slot (0-7) may hold a
 * board device that is a PCI function; its config space is read and
 * written under that device's lock, and when the guest moves or enables a BAR, the BAR's range moves
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
	/* on the buses now; the expansion ROM's last */
	struct pci_bar_map mapped[PCI_NUM_BARS + 1];
};

#define PCIBUS_FUNCTIONS	8	/* per slot */
#define PCIBUS_MAX_FUNCTIONS	PC_PCI_SLOTS	/* on the bus, at most */

struct pcibus {
	struct iobus *pio;
	struct iobus *mmio;
	/*
	 * The functions, in the order they were added, and where each is:
	 * by slot * PCIBUS_FUNCTIONS + function, 1 + its index, or 0 for
	 * none (a table of every function's state would be eight times
	 * larger, for slots that almost all hold one).
	 */
	struct pcibus_slot slot[PCIBUS_MAX_FUNCTIONS];
	unsigned int nslots;
	uint8_t where[PC_PCI_SLOTS * PCIBUS_FUNCTIONS];
	uint64_t map_failures;		/* BARs placed over something else */
	/*
	 * Optional: a function's memory BAR is now at base (on) or nowhere,
	 * for what must follow it (doorbells).  From the thread that moved
	 * it, under the host bridge's lock, no device lock held.
	 */
	void (*bar_moved)(void *ctx, struct vdev *vdev, unsigned int bar,
	    bool on, uint64_t base);
	void *bar_ctx;
	/*
	 * Optional: the guest wrote to a function's config space, for what
	 * follows registers other than BARs (a PIIX4's PM base).  After the
	 * BARs moved, from the same thread, under the host bridge's lock,
	 * no device lock held.
	 */
	void (*config_written)(void *ctx, struct vdev *vdev);
	void *config_ctx;
};

void pcibus_init(struct pcibus *pb, struct iobus *pio, struct iobus *mmio);
/*
 * Put a PCI function (ops->pci set) in slot as function fn: 0, -EINVAL,
 * -EBUSY, -ENOSPC (PCIBUS_MAX_FUNCTIONS already).  Its interrupt line register starts with its INTx GSI, as
 * firmware leaves it.  Once a slot holds more than one function, its
 * function 0 has the multi-function bit of its header type set (PCI 3.0,
 * 6.2.1), whichever was added first; a slot with function 0 alone reads
 * exactly as that function's config space says.
 */
int pcibus_add(struct pcibus *pb, unsigned int slot, unsigned int fn,
    struct vdev *vdev);
/* What pci_host_new() wants, reaching pb. */
void pcibus_host_ops(struct pcibus *pb, struct pci_host_ops *ops);

/*
 * After the functions loaded their config spaces from a snapshot: map
 * each BAR where its config space now says (and its doorbells with it,
 * bar_moved; the ROM BAR too), and tell config_written of each
 * function, as a guest's write there would.  With the vCPUs paused.
 */
void pcibus_sync(struct pcibus *pb);

/*
 * Where the functions' memory BARs are placed now, whether decoding is
 * on or not (firmware may place a BAR it never enables): the lowest
 * base and highest last byte below 4 GiB and at or above it; a BAR at
 * 0 is not placed.  Each function is read under its lock, one at a
 * time; from any thread that holds no function's lock (the firmware's
 * table builder holds fw_cfg's: see fw-cfg.h's prepare).
 */
struct pcibus_span {
	bool any;
	uint64_t lo, hi;
};
void pcibus_mem_spans(struct pcibus *pb, struct pcibus_span *below4g,
    struct pcibus_span *above4g);

#endif
