/*
 * A VM's interrupt routing with KVM: the board's fixed GSIs (PIC and
 * IOAPIC pins) and MSI routes, each MSI route bound to an eventfd with
 * KVM_IRQFD, so that raising the interrupt is one write() to that
 * eventfd from whatever thread completes the work, and the kernel
 * injects it without user space holding any lock of the VM.
 *
 * Who owns what: one struct irqroute per machine; each MSI route
 * belongs to one struct irqroute_msi, which belongs to one vector of
 * one device (devhost.c) and changes only under that device's lock.
 * The route exists while the guest has that vector programmed and
 * unmasked; the device says when that changes (device.h, msi_route).
 * That ownership was chosen over a cache keyed by (address, data): the
 * MSI-X table knows exactly when a message changes, so no stale route
 * outlives the guest's reprogramming and nothing needs evicting.
 *
 * Locking: ir->lock serializes the table and the KVM_SET_GSI_ROUTING
 * that follows each change (vCPUs of different devices may program
 * vectors at once).  It is a leaf: taken inside a device's lock, never
 * the other way round, and nothing else is taken under it.  Raising
 * (irqroute_msi_raise) takes no lock at all: the caller's device lock
 * keeps the eventfd open while it writes.
 *
 * Bounded: KVM_CAP_IRQ_ROUTING's table size, and GSI_TABLE_MAX_MSI.
 * When no route can be had (full, or KVM without KVM_CAP_IRQFD), the
 * vector simply has none and its interrupts go by KVM_SIGNAL_MSI.
 */
#ifndef VMMD_IRQROUTE_H
#define VMMD_IRQROUTE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "figure.h"
#include "gsi-table.h"

struct irqroute {
	int vm_fd;
	bool irqfd;			/* KVM_CAP_IRQFD */
	pthread_mutex_t lock;		/* what follows */
	struct gsi_table table;
	uint64_t updates;		/* KVM_SET_GSI_ROUTING calls */
	uint64_t refused;		/* routes not had: full, or KVM said no */
};

/* One vector's route; under its device's lock. */
struct irqroute_msi {
	int efd;			/* -1: no route */
	unsigned int gsi;
	uint64_t addr;
	uint32_t data;
};

struct irqroute_stats {
	unsigned int routes;		/* MSI routes now */
	unsigned int max_routes;
	uint64_t updates;
	uint64_t refused;
};

/* The figures (figure.h) of a struct irqroute_stats. */
extern const struct figure_table irqroute_figures;

/*
 * The routing of vm_fd: the fixed entries base (copied, given to KVM
 * now) and room for MSI routes.  0 or -errno (KVM refused the table).
 */
int	irqroute_new(struct irqroute **out, int vm_fd,
	    const struct kvm_irq_routing_entry *base, unsigned int nbase);
/* Once every irqroute_msi is cleared.  NULL is fine. */
void	irqroute_free(struct irqroute *ir);

static inline void
irqroute_msi_init(struct irqroute_msi *m)
{
	m->efd = -1;
}

/*
 * Route m to (addr, data): a new route, or the one m has retargeted.
 * 0, or -errno and m has no route (its interrupts go by KVM_SIGNAL_MSI).
 */
int	irqroute_msi_set(struct irqroute *ir, struct irqroute_msi *m,
	    uint64_t addr, uint32_t data);
/* m has no route any more: irqfd deassigned, route out of KVM's table. */
void	irqroute_msi_clear(struct irqroute *ir, struct irqroute_msi *m);

/* Does m route exactly (addr, data)? */
static inline bool
irqroute_msi_routes(const struct irqroute_msi *m, uint64_t addr,
    uint32_t data)
{
	return m->efd >= 0 && m->addr == addr && m->data == data;
}

/* Raise m's interrupt: one write(); 0 or -errno.  Any thread. */
int	irqroute_msi_raise(const struct irqroute_msi *m);

void	irqroute_get_stats(struct irqroute *ir, struct irqroute_stats *st);

#endif
