/*
 * The configuration space of one PCI function (PCI Local Bus
 * Specification 3.0, chapter 6): a type 0 header, up to six BARs and a
 * capability list, as the guest reads and writes it.
 *
 * A device embeds a struct pci_config in its state and describes
 * itself once at creation (IDs, BARs, capabilities); from then on the
 * guest's accesses go through pci_config_read()/pci_config_write(),
 * which let the guest change only what hardware lets it change: the
 * command register's enables, the BARs' address bits (so that writing
 * all ones reads back the size, 6.2.5.1), the interrupt line and
 * whatever bits of a capability the device marked writable.
 *
 * Plain state: the caller serializes access (the device's lock).
 */
#ifndef VMMD_PCI_CONFIG_H
#define VMMD_PCI_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define PCI_CONFIG_SIZE		256
#define PCI_NUM_BARS		6

/* Header registers (6.1). */
#define PCI_VENDOR_ID		0x00
#define PCI_DEVICE_ID		0x02
#define PCI_COMMAND		0x04
#define  PCI_COMMAND_IO		0x0001
#define  PCI_COMMAND_MEMORY	0x0002
#define  PCI_COMMAND_MASTER	0x0004
#define  PCI_COMMAND_INTX_DISABLE 0x0400
#define PCI_STATUS		0x06
#define  PCI_STATUS_INTERRUPT	0x0008
#define  PCI_STATUS_CAP_LIST	0x0010
#define PCI_REVISION_ID		0x08
#define PCI_CLASS_PROG		0x09
#define PCI_HEADER_TYPE		0x0e
#define  PCI_HEADER_TYPE_MULTI	0x80	/* function 0 of a multi-function slot */
#define PCI_BAR0		0x10
#define PCI_SUBSYSTEM_VENDOR_ID	0x2c
#define PCI_SUBSYSTEM_ID	0x2e
#define PCI_ROM_ADDRESS		0x30
#define  PCI_ROM_ENABLE		0x1
#define PCI_CAPABILITY_LIST	0x34
#define PCI_INTERRUPT_LINE	0x3c
#define PCI_INTERRUPT_PIN	0x3d
#define PCI_CAP_START		0x40

#define PCI_CAP_ID_MSIX		0x11
#define PCI_CAP_ID_VNDR		0x09

enum pci_bar_type {
	PCI_BAR_NONE,
	PCI_BAR_IO,		/* 16-bit port space */
	PCI_BAR_MEM32,
	PCI_BAR_MEM64,		/* takes this BAR and the next */
	PCI_BAR_MEM64_HIGH,	/* that next one */
};

/*
 * A BAR's accesses reach the device's read()/write() at
 * PCI_BAR_OFFSET(bar) + the offset inside the BAR.
 */
#define PCI_BAR_SHIFT		40
#define PCI_BAR_OFFSET(bar)	((uint64_t)(bar) << PCI_BAR_SHIFT)
#define PCI_BAR_OF(offset)	((unsigned int)((offset) >> PCI_BAR_SHIFT))
#define PCI_BAR_REL(offset)	((offset) & ((1ULL << PCI_BAR_SHIFT) - 1))
/*
 * The expansion ROM BAR (6.2.5.2), where a function has one: its reads
 * arrive at PCI_BAR_OFFSET(PCI_ROM_BAR), like a seventh BAR's.
 */
#define PCI_ROM_BAR		PCI_NUM_BARS

/* Where a BAR decodes now: what the machine maps on its buses. */
struct pci_bar_map {
	enum pci_bar_type type;
	uint64_t base;
	uint64_t size;
	bool on;		/* enabled in COMMAND and placed */
};

struct pci_config {
	uint8_t cfg[PCI_CONFIG_SIZE];
	uint8_t wmask[PCI_CONFIG_SIZE];	/* bits the guest may change */
	enum pci_bar_type bar_type[PCI_NUM_BARS];
	uint64_t bar_size[PCI_NUM_BARS];
	uint32_t rom_size;		/* 0: no expansion ROM */
	uint8_t cap_end;		/* where the next capability goes */
	uint8_t *cap_link;		/* the last "next" pointer */
};

struct pci_ids {
	uint16_t vendor, device;
	uint32_t class_code;		/* base, sub, prog-if: 0xBBSSPP */
	uint8_t revision;
	uint16_t subsys_vendor, subsys;
	uint8_t int_pin;		/* 0 = none, 1 = INTA# */
};

void pci_config_init(struct pci_config *pc, const struct pci_ids *ids);
/*
 * Describe BAR bar: size a power of two, at least 16 bytes for memory
 * and 4 for I/O, at most 4 GiB for MEM32, 64 KiB for I/O.  A MEM64 BAR
 * uses bar + 1 too.  0 or -EINVAL.
 */
int pci_config_add_bar(struct pci_config *pc, unsigned int bar,
    enum pci_bar_type type, uint64_t size);
/*
 * Give the function an expansion ROM of size bytes (a power of two,
 * 2 KiB to 16 MiB): the guest sizes and places it at PCI_ROM_ADDRESS
 * and it decodes while both its enable bit and the command register's
 * memory enable are set.  0 or -EINVAL.
 */
int pci_config_add_rom(struct pci_config *pc, uint32_t size);
/*
 * Append a capability of len bytes (id and next pointer included) to
 * the list: its offset, or -ENOSPC.  The caller fills the body and
 * marks writable bits in wmask.
 */
int pci_config_add_cap(struct pci_config *pc, uint8_t id, unsigned int len);

/*
 * A guest access at offset, size 1, 2 or 4, naturally aligned; anything
 * else reads as all ones and writes nothing.  pci_config_write() returns
 * true when a BAR's decoding may have changed: call pci_config_bar().
 */
void pci_config_read(const struct pci_config *pc, unsigned int offset,
    void *data, unsigned int size);
bool pci_config_write(struct pci_config *pc, unsigned int offset,
    const void *data, unsigned int size);

/*
 * Where BAR bar decodes now (off for the upper half of a MEM64);
 * PCI_ROM_BAR: the expansion ROM, a PCI_BAR_MEM32 (PCI_BAR_NONE
 * without one).
 */
void pci_config_bar(const struct pci_config *pc, unsigned int bar,
    struct pci_bar_map *map);

static inline uint16_t
pci_config_get16(const struct pci_config *pc, unsigned int offset)
{
	return (uint16_t)(pc->cfg[offset] | pc->cfg[offset + 1] << 8);
}

static inline void
pci_config_set16(struct pci_config *pc, unsigned int offset, uint16_t v)
{
	pc->cfg[offset] = (uint8_t)v;
	pc->cfg[offset + 1] = (uint8_t)(v >> 8);
}

static inline void
pci_config_set32(struct pci_config *pc, unsigned int offset, uint32_t v)
{
	pci_config_set16(pc, offset, (uint16_t)v);
	pci_config_set16(pc, offset + 2, (uint16_t)(v >> 16));
}

/* INTx status for the status register (the device raises the line). */
void pci_config_set_intx(struct pci_config *pc, bool pending);

/*
 * For a snapshot: a function's config space is its cfg bytes, saved as
 * they are.  Load saved into pc, made for the same function: 0, or
 * -EINVAL with err naming the first byte whose read-only bits (those
 * the guest cannot write, the INTx status apart) differ from pc's,
 * which then stays as it was.  The caller maps the BARs anew
 * (pci_config_bar()) and follows what else it controls there.
 */
struct dev_state_error;
int pci_config_load(struct pci_config *pc,
    const uint8_t saved[PCI_CONFIG_SIZE], struct dev_state_error *err);

#endif
