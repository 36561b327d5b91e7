/* See pcibus.h. */
#include <errno.h>
#include <string.h>

#include "pcibus.h"

void
pcibus_init(struct pcibus *pb, struct iobus *pio, struct iobus *mmio)
{
	memset(pb, 0, sizeof(*pb));
	pb->pio = pio;
	pb->mmio = mmio;
}

/*
 * Set the multi-function bit of slot's function 0 when the slot holds
 * another function too.  The header type is read-only to the guest, so
 * the bit, once set while the machine is built, stays.
 */
static void
pcibus_mark_multi(struct pcibus *pb, unsigned int slot)
{
	const uint8_t *w = &pb->where[slot * PCIBUS_FUNCTIONS];
	unsigned int fn, n = 0;

	for (fn = 0; fn < PCIBUS_FUNCTIONS; fn++)
		if (w[fn] != 0)
			n++;
	if (w[0] != 0 && n > 1)
		pb->slot[w[0] - 1].cfg->cfg[PCI_HEADER_TYPE] |=
		    PCI_HEADER_TYPE_MULTI;
}

int
pcibus_add(struct pcibus *pb, unsigned int slot, unsigned int fn,
    struct vdev *vdev)
{
	struct pcibus_slot *s;
	uint8_t *w;

	_Static_assert(PCIBUS_MAX_FUNCTIONS < 256, "where[] holds 1 + index");
	if (slot == 0 || slot >= PC_PCI_SLOTS || fn >= PCIBUS_FUNCTIONS ||
	    vdev->ops->pci == NULL)
		return -EINVAL;
	w = &pb->where[slot * PCIBUS_FUNCTIONS + fn];
	if (*w != 0)
		return -EBUSY;
	if (pb->nslots == PCIBUS_MAX_FUNCTIONS)
		return -ENOSPC;
	s = &pb->slot[pb->nslots++];
	*w = (uint8_t)pb->nslots;
	s->vdev = vdev;
	s->cfg = vdev->ops->pci(vdev->state);
	if (s->cfg->cfg[PCI_INTERRUPT_PIN] != 0)
		s->cfg->cfg[PCI_INTERRUPT_LINE] = PC_PCI_INTX_GSI(slot,
		    s->cfg->cfg[PCI_INTERRUPT_PIN] - 1);
	pcibus_mark_multi(pb, slot);
	return 0;
}

static struct pcibus_slot *
pcibus_slot(struct pcibus *pb, unsigned int slot, unsigned int fn)
{
	unsigned int w;

	if (slot >= PC_PCI_SLOTS || fn >= PCIBUS_FUNCTIONS)
		return NULL;
	w = pb->where[slot * PCIBUS_FUNCTIONS + fn];
	return w != 0 ? &pb->slot[w - 1] : NULL;
}

static int
pcibus_read(void *ctx, unsigned int slot, unsigned int fn,
    unsigned int offset, void *data, unsigned int size)
{
	struct pcibus_slot *s = pcibus_slot(ctx, slot, fn);

	if (s == NULL)
		return -ENODEV;
	vdev_lock(s->vdev);
	pci_config_read(s->cfg, offset, data, size);
	vdev_unlock(s->vdev);
	return 0;
}

static bool
pcibus_same(const struct pci_bar_map *a, const struct pci_bar_map *b)
{
	if (!a->on && !b->on)
		return true;
	return a->on == b->on && a->base == b->base && a->size == b->size;
}

/*
 * Move BAR bar from where it is mapped to where its config space now
 * says.  A place that overlaps another range (or wraps) leaves the BAR
 * unmapped, as a BAR over another device's decode would be useless on
 * real hardware too; the guest is not told, the failure is counted.
 */
static void
pcibus_remap(struct pcibus *pb, struct pcibus_slot *s, unsigned int bar,
    const struct pci_bar_map *now)
{
	struct pci_bar_map *old = &s->mapped[bar];
	struct iobus *bus;

	if (pcibus_same(old, now))
		return;
	if (old->on) {
		bus = old->type == PCI_BAR_IO ? pb->pio : pb->mmio;
		iobus_unregister(bus, old->base, s->vdev);
		if (old->type != PCI_BAR_IO && pb->bar_moved != NULL)
			pb->bar_moved(pb->bar_ctx, s->vdev, bar, false, 0);
	}
	*old = *now;
	if (!now->on)
		return;
	bus = now->type == PCI_BAR_IO ? pb->pio : pb->mmio;
	if (iobus_register(bus, now->base, now->size, s->vdev,
	    PCI_BAR_OFFSET(bar)) < 0) {
		old->on = false;
		pb->map_failures++;
		return;
	}
	if (now->type != PCI_BAR_IO && pb->bar_moved != NULL)
		pb->bar_moved(pb->bar_ctx, s->vdev, bar, true, now->base);
}

static int
pcibus_write(void *ctx, unsigned int slot, unsigned int fn,
    unsigned int offset, const void *data, unsigned int size)
{
	struct pcibus *pb = ctx;
	struct pcibus_slot *s = pcibus_slot(pb, slot, fn);
	struct pci_bar_map now[PCI_NUM_BARS + 1];
	unsigned int i;
	bool remap;

	if (s == NULL)
		return -ENODEV;
	vdev_lock(s->vdev);
	remap = pci_config_write(s->cfg, offset, data, size);
	if (s->vdev->ops->pci_written != NULL)
		s->vdev->ops->pci_written(s->vdev->state, offset, size);
	if (remap)
		for (i = 0; i <= PCI_ROM_BAR; i++)
			pci_config_bar(s->cfg, i, &now[i]);
	vdev_unlock(s->vdev);
	/* The host bridge's lock serializes this with other changes. */
	if (remap)
		for (i = 0; i <= PCI_ROM_BAR; i++)
			if (now[i].type != PCI_BAR_NONE &&
			    now[i].type != PCI_BAR_MEM64_HIGH)
				pcibus_remap(pb, s, i, &now[i]);
	if (pb->config_written != NULL)
		pb->config_written(pb->config_ctx, s->vdev);
	return 0;
}

void
pcibus_host_ops(struct pcibus *pb, struct pci_host_ops *ops)
{
	ops->read = pcibus_read;
	ops->write = pcibus_write;
	ops->ctx = pb;
}

void
pcibus_sync(struct pcibus *pb)
{
	struct pci_bar_map now[PCI_NUM_BARS + 1];
	struct pcibus_slot *s;
	unsigned int n, i;

	for (n = 0; n < pb->nslots; n++) {
		s = &pb->slot[n];
		vdev_lock(s->vdev);
		for (i = 0; i <= PCI_ROM_BAR; i++)
			pci_config_bar(s->cfg, i, &now[i]);
		vdev_unlock(s->vdev);
		for (i = 0; i <= PCI_ROM_BAR; i++)
			if (now[i].type != PCI_BAR_NONE &&
			    now[i].type != PCI_BAR_MEM64_HIGH)
				pcibus_remap(pb, s, i, &now[i]);
		/* What follows a function's config (the PM block's place). */
		if (pb->config_written != NULL)
			pb->config_written(pb->config_ctx, s->vdev);
	}
}

static void
pcibus_span_add(struct pcibus_span *sp, uint64_t lo, uint64_t hi)
{
	if (!sp->any || lo < sp->lo)
		sp->lo = lo;
	if (!sp->any || hi > sp->hi)
		sp->hi = hi;
	sp->any = true;
}

void
pcibus_mem_spans(struct pcibus *pb, struct pcibus_span *below4g,
    struct pcibus_span *above4g)
{
	struct pci_bar_map m;
	unsigned int i, bar;

	memset(below4g, 0, sizeof(*below4g));
	memset(above4g, 0, sizeof(*above4g));
	for (i = 0; i < pb->nslots; i++) {
		vdev_lock(pb->slot[i].vdev);
		for (bar = 0; bar <= PCI_ROM_BAR; bar++) {
			pci_config_bar(pb->slot[i].cfg, bar, &m);
			if ((m.type != PCI_BAR_MEM32 &&
			    m.type != PCI_BAR_MEM64) || m.base == 0 ||
			    m.size == 0)
				continue;
			/* Aligned to its size: base + size - 1 cannot wrap. */
			pcibus_span_add(m.base >= 0x100000000ULL ? above4g :
			    below4g, m.base, m.base + m.size - 1);
		}
		vdev_unlock(pb->slot[i].vdev);
	}
}
