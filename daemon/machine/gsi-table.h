/*
 * A VM's GSI routing table as KVM_SET_GSI_ROUTING takes it: the fixed
 * entries of the board (PIC and IOAPIC pins), stated once, followed by
 * MSI routes that come and go at GSI_TABLE_FIRST_MSI and above.
 *
 * KVM_SET_GSI_ROUTING replaces the whole table, so every change is a
 * new table: this file keeps the one to hand over, always complete.
 * Pure logic (no ioctls), so unit tests reach it; irqroute.c does the
 * KVM side.  Plain state: the caller serializes (irqroute's lock).
 */
#ifndef VMMD_GSI_TABLE_H
#define VMMD_GSI_TABLE_H

#include <stdint.h>
#include <linux/kvm.h>

#define GSI_TABLE_FIRST_MSI	24	/* above the IOAPIC's pins */
/*
 * Our own bound on MSI routes, below KVM's (4096 on Linux 6.1): 31 PCI
 * slots with at most a few vectors each fit many times over, and the
 * table KVM copies on every change stays a few KiB.
 */
#define GSI_TABLE_MAX_MSI	256

struct gsi_table {
	struct kvm_irq_routing *r;	/* nbase fixed entries, then MSI */
	unsigned int nbase;
	unsigned int max_msi;		/* routes that may exist at once */
	uint64_t used[(GSI_TABLE_FIRST_MSI + GSI_TABLE_MAX_MSI + 63) / 64];
};

/*
 * The fixed entries (copied; none at or above GSI_TABLE_FIRST_MSI) and
 * kvm_max, what KVM_CAP_IRQ_ROUTING says (entries in a table, and the
 * bound of a GSI).  0, -EINVAL, -ENOMEM.
 */
int	gsi_table_init(struct gsi_table *t,
	    const struct kvm_irq_routing_entry *base, unsigned int nbase,
	    unsigned int kvm_max);
void	gsi_table_fini(struct gsi_table *t);

/* A new MSI route: its GSI, or -ENOSPC when max_msi routes exist. */
int	gsi_table_add(struct gsi_table *t, uint64_t addr, uint32_t data);
/* Retarget the route at gsi: 0 or -ENOENT. */
int	gsi_table_set(struct gsi_table *t, unsigned int gsi, uint64_t addr,
	    uint32_t data);
/* Forget the route at gsi (its GSI may come back): 0 or -ENOENT. */
int	gsi_table_del(struct gsi_table *t, unsigned int gsi);

/* What KVM_SET_GSI_ROUTING takes now; valid until the next change. */
static inline const struct kvm_irq_routing *
gsi_table_kvm(const struct gsi_table *t)
{
	return t->r;
}

static inline unsigned int
gsi_table_msi_count(const struct gsi_table *t)
{
	return t->r->nr - t->nbase;
}

#endif
