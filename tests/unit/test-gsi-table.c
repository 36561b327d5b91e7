/*
 * The GSI routing table KVM_SET_GSI_ROUTING is given: the board's fixed
 * entries always restated, MSI routes from GSI 24 up that come and go,
 * freed GSIs reused, the bound (ours and KVM_CAP_IRQ_ROUTING's) kept,
 * and bad requests refused without touching the table.  The ioctls
 * themselves run in the kvm suite (the virtio test's MSI-X guest).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "gsi-table.h"
#include "tap.h"

static const struct kvm_irq_routing_entry base[] = {
	{ .gsi = 0, .type = KVM_IRQ_ROUTING_IRQCHIP,
	  .u.irqchip = { KVM_IRQCHIP_IOAPIC, 2 } },
	{ .gsi = 4, .type = KVM_IRQ_ROUTING_IRQCHIP,
	  .u.irqchip = { KVM_IRQCHIP_IOAPIC, 4 } },
	{ .gsi = 4, .type = KVM_IRQ_ROUTING_IRQCHIP,
	  .u.irqchip = { KVM_IRQCHIP_PIC_MASTER, 4 } },
};
#define NBASE	(sizeof(base) / sizeof(base[0]))

/* The MSI entry for gsi in what KVM would get, or NULL. */
static const struct kvm_irq_routing_entry *
find(const struct gsi_table *t, unsigned int gsi)
{
	const struct kvm_irq_routing *r = gsi_table_kvm(t);
	unsigned int i;

	for (i = NBASE; i < r->nr; i++)
		if (r->entries[i].gsi == gsi)
			return &r->entries[i];
	return NULL;
}

static bool
base_intact(const struct gsi_table *t)
{
	return memcmp(gsi_table_kvm(t)->entries, base, sizeof(base)) == 0;
}

int
main(void)
{
	const struct kvm_irq_routing_entry *e;
	struct kvm_irq_routing_entry high = base[0];
	struct gsi_table t;
	int a, b, c, i, n;

	TAP_EQ(gsi_table_init(&t, base, NBASE, 4096), 0, "init");
	tap_ok(gsi_table_kvm(&t)->nr == NBASE && base_intact(&t),
	    "the fixed entries first, and nothing else");
	TAP_EQ(t.max_msi, GSI_TABLE_MAX_MSI, "our own bound below KVM's");

	a = gsi_table_add(&t, 0xfee00000, 0x41);
	b = gsi_table_add(&t, 0xfee01000, 0x4022);
	TAP_EQ(a, GSI_TABLE_FIRST_MSI, "the first MSI route at GSI 24");
	TAP_EQ(b, GSI_TABLE_FIRST_MSI + 1, "the next at 25");
	e = find(&t, (unsigned int)b);
	tap_ok(e != NULL && e->type == KVM_IRQ_ROUTING_MSI &&
	    e->u.msi.address_lo == 0xfee01000 && e->u.msi.address_hi == 0 &&
	    e->u.msi.data == 0x4022, "an MSI entry with its message");
	tap_ok(gsi_table_kvm(&t)->nr == NBASE + 2 && base_intact(&t),
	    "the fixed entries restated with the routes");

	TAP_EQ(gsi_table_set(&t, (unsigned int)a, 0x1fee02000ULL, 0x51), 0,
	    "retarget");
	e = find(&t, (unsigned int)a);
	tap_ok(e != NULL && e->u.msi.address_lo == 0xfee02000 &&
	    e->u.msi.address_hi == 1 && e->u.msi.data == 0x51,
	    "the entry holds the new message, both address halves");
	TAP_EQ(gsi_table_kvm(&t)->nr, NBASE + 2, "still two routes");

	TAP_EQ(gsi_table_del(&t, (unsigned int)a), 0, "delete the first");
	tap_ok(find(&t, (unsigned int)a) == NULL &&
	    find(&t, (unsigned int)b) != NULL &&
	    gsi_table_kvm(&t)->nr == NBASE + 1 && base_intact(&t),
	    "gone from the table; the other and the fixed ones stay");
	TAP_EQ(gsi_table_del(&t, (unsigned int)a), -ENOENT,
	    "deleting twice: ENOENT");
	TAP_EQ(gsi_table_set(&t, (unsigned int)a, 0xfee00000, 1), -ENOENT,
	    "retargeting a deleted route: ENOENT");
	TAP_EQ(gsi_table_del(&t, 4), -ENOENT, "a fixed GSI is not ours");
	TAP_EQ(gsi_table_set(&t, 100000, 0, 0), -ENOENT,
	    "a GSI out of range: ENOENT");
	c = gsi_table_add(&t, 0xfee00000, 0x61);
	TAP_EQ(c, a, "a freed GSI comes back first");

	/* Fill up to our bound, then one more. */
	for (n = 0, i = 0; i < GSI_TABLE_MAX_MSI; i++)
		n += gsi_table_add(&t, 0xfee00000, (uint32_t)i) >= 0;
	TAP_EQ(n, GSI_TABLE_MAX_MSI - 2, "room for the bound, no more");
	TAP_EQ(gsi_table_add(&t, 0xfee00000, 0), -ENOSPC, "full: ENOSPC");
	tap_ok(gsi_table_msi_count(&t) == GSI_TABLE_MAX_MSI &&
	    base_intact(&t), "full table, fixed entries intact");
	e = find(&t, GSI_TABLE_FIRST_MSI + GSI_TABLE_MAX_MSI - 1);
	tap_ok(e != NULL, "the highest GSI used: 24 + bound - 1");
	TAP_EQ(gsi_table_del(&t, GSI_TABLE_FIRST_MSI + 7), 0,
	    "one freed in the middle");
	TAP_EQ(gsi_table_add(&t, 0xfee00000, 7), GSI_TABLE_FIRST_MSI + 7,
	    "and had again");
	gsi_table_fini(&t);

	/* KVM's bound where it is the smaller one. */
	TAP_EQ(gsi_table_init(&t, base, NBASE, 28), 0, "KVM allows 28 GSIs");
	for (n = 0; gsi_table_add(&t, 0xfee00000, 0) >= 0; n++)
		;
	TAP_EQ(n, 4, "MSI routes only below KVM's bound (24-27)");
	gsi_table_fini(&t);
	TAP_EQ(gsi_table_init(&t, base, NBASE, 26), 0,
	    "KVM allows 26 entries");
	TAP_EQ(t.max_msi, 2, "GSIs 24 and 25 only");
	gsi_table_fini(&t);
	TAP_EQ(gsi_table_init(&t, base, NBASE, NBASE), 0,
	    "room for the fixed entries only (no irqfd)");
	TAP_EQ(gsi_table_add(&t, 0xfee00000, 0), -ENOSPC, "no MSI route");
	gsi_table_fini(&t);

	/* Bad fixed tables. */
	TAP_EQ(gsi_table_init(&t, base, NBASE, 2), -EINVAL,
	    "more fixed entries than KVM takes: EINVAL");
	high.gsi = GSI_TABLE_FIRST_MSI;
	TAP_EQ(gsi_table_init(&t, &high, 1, 4096), -EINVAL,
	    "a fixed entry where MSI routes go: EINVAL");
	return tap_done();
}
