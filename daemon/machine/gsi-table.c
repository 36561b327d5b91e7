/* See gsi-table.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gsi-table.h"

static bool
gsi_table_used(const struct gsi_table *t, unsigned int gsi)
{
	return (t->used[gsi / 64] >> (gsi % 64)) & 1;
}

static void
gsi_table_mark(struct gsi_table *t, unsigned int gsi, bool on)
{
	if (on)
		t->used[gsi / 64] |= 1ULL << (gsi % 64);
	else
		t->used[gsi / 64] &= ~(1ULL << (gsi % 64));
}

int
gsi_table_init(struct gsi_table *t, const struct kvm_irq_routing_entry *base,
    unsigned int nbase, unsigned int kvm_max)
{
	unsigned int i, room;

	memset(t, 0, sizeof(*t));
	if (nbase > kvm_max)
		return -EINVAL;
	for (i = 0; i < nbase; i++)
		if (base[i].gsi >= GSI_TABLE_FIRST_MSI)
			return -EINVAL;
	/* Room in the table, and GSIs below KVM's bound. */
	room = kvm_max - nbase;
	if (kvm_max < GSI_TABLE_FIRST_MSI)
		room = 0;
	else if (room > kvm_max - GSI_TABLE_FIRST_MSI)
		room = kvm_max - GSI_TABLE_FIRST_MSI;
	t->max_msi = room < GSI_TABLE_MAX_MSI ? room : GSI_TABLE_MAX_MSI;
	t->r = calloc(1, sizeof(*t->r) + (nbase + t->max_msi) *
	    sizeof(t->r->entries[0]));
	if (t->r == NULL)
		return -ENOMEM;
	memcpy(t->r->entries, base, nbase * sizeof(*base));
	t->r->nr = nbase;
	t->nbase = nbase;
	return 0;
}

void
gsi_table_fini(struct gsi_table *t)
{
	free(t->r);
	t->r = NULL;
}

static void
gsi_table_fill(struct kvm_irq_routing_entry *e, unsigned int gsi,
    uint64_t addr, uint32_t data)
{
	*e = (struct kvm_irq_routing_entry){
		.gsi = gsi,
		.type = KVM_IRQ_ROUTING_MSI,
		.u.msi.address_lo = (uint32_t)addr,
		.u.msi.address_hi = (uint32_t)(addr >> 32),
		.u.msi.data = data,
	};
}

/* The MSI entry for gsi, or NULL. */
static struct kvm_irq_routing_entry *
gsi_table_find(struct gsi_table *t, unsigned int gsi)
{
	unsigned int i;

	if (gsi < GSI_TABLE_FIRST_MSI ||
	    gsi >= GSI_TABLE_FIRST_MSI + t->max_msi || !gsi_table_used(t, gsi))
		return NULL;
	for (i = t->nbase; i < t->r->nr; i++)
		if (t->r->entries[i].gsi == gsi)
			return &t->r->entries[i];
	return NULL;
}

int
gsi_table_add(struct gsi_table *t, uint64_t addr, uint32_t data)
{
	unsigned int gsi;

	if (gsi_table_msi_count(t) >= t->max_msi)
		return -ENOSPC;
	/* The lowest free GSI: a freed one comes back first. */
	for (gsi = GSI_TABLE_FIRST_MSI; gsi_table_used(t, gsi); gsi++)
		;
	gsi_table_mark(t, gsi, true);
	gsi_table_fill(&t->r->entries[t->r->nr++], gsi, addr, data);
	return (int)gsi;
}

int
gsi_table_set(struct gsi_table *t, unsigned int gsi, uint64_t addr,
    uint32_t data)
{
	struct kvm_irq_routing_entry *e = gsi_table_find(t, gsi);

	if (e == NULL)
		return -ENOENT;
	gsi_table_fill(e, gsi, addr, data);
	return 0;
}

int
gsi_table_del(struct gsi_table *t, unsigned int gsi)
{
	struct kvm_irq_routing_entry *e = gsi_table_find(t, gsi);

	if (e == NULL)
		return -ENOENT;
	/* Order does not matter to KVM: the last entry fills the hole. */
	*e = t->r->entries[--t->r->nr];
	gsi_table_mark(t, gsi, false);
	return 0;
}
