/*
 * PCI configuration mechanism #1 and a tiny virtio 1.x PCI driver: just
 * enough for test guests to find a device, place its BAR, negotiate
 * VERSION_1 and run one small queue by hand (see rt.h).
 */
#include "rt.h"

#define PCI_ADDR	0xcf8
#define PCI_DATA	0xcfc

uint32_t
pci_read32(unsigned slot, unsigned reg)
{
	outl(PCI_ADDR, 0x80000000u | slot << 11 | (reg & 0xfc));
	return inl(PCI_DATA);
}

void
pci_write32(unsigned slot, unsigned reg, uint32_t v)
{
	outl(PCI_ADDR, 0x80000000u | slot << 11 | (reg & 0xfc));
	outl(PCI_DATA, v);
}

int
pci_find(uint16_t vendor, uint16_t device, unsigned from)
{
	unsigned slot;

	for (slot = from; slot < 32; slot++)
		if (pci_read32(slot, 0) == ((uint32_t)device << 16 | vendor))
			return (int)slot;
	return -1;
}

static volatile uint8_t *
vio_reg(const struct vio *v, uintptr_t base, unsigned off)
{
	return (volatile uint8_t *)(base + off);
}

int
vio_find(struct vio *v, uint16_t type, uint32_t bar_addr, unsigned from)
{
	unsigned at;
	int slot = pci_find(0x1af4, (uint16_t)(0x1040 + type), from);

	memset(v, 0, sizeof(*v));
	if (slot < 0)
		return -1;
	v->slot = (unsigned)slot;
	pci_write32(v->slot, 0x10, 0xffffffff);
	v->bar_size = ~(pci_read32(v->slot, 0x10) & ~0xfu) + 1;
	pci_write32(v->slot, 0x10, bar_addr);
	pci_write32(v->slot, 0x04, 0x6);	/* memory, bus master */
	v->gsi_line = pci_read32(v->slot, 0x3c) & 0xff;
	for (at = pci_read32(v->slot, 0x34) & 0xff; at != 0;
	    at = (pci_read32(v->slot, at) >> 8) & 0xff) {
		uint32_t h = pci_read32(v->slot, at);
		uint32_t off = pci_read32(v->slot, at + 8);

		if ((h & 0xff) == 0x11) {	/* MSI-X, in BAR 0 here */
			v->msix_cap = at;
			v->msix_table = bar_addr +
			    (pci_read32(v->slot, at + 4) & ~7u);
			v->msix_pba = bar_addr +
			    (pci_read32(v->slot, at + 8) & ~7u);
			continue;
		}
		if ((h & 0xff) != 0x09)
			continue;
		switch ((h >> 24) & 0xff) {
		case 1: v->common = bar_addr + off; break;
		case 2:
			v->notify = bar_addr + off;
			v->notify_mult = pci_read32(v->slot, at + 16);
			break;
		case 3: v->isr = bar_addr + off; break;
		case 4: v->device = bar_addr + off; break;
		}
	}
	return v->common != 0 && v->notify != 0 && v->isr != 0 ? 0 : -1;
}

uint8_t
vio_status(const struct vio *v)
{
	return *vio_reg(v, v->common, 0x14);
}

int
vio_start(struct vio *v)
{
	volatile uint8_t *st = vio_reg(v, v->common, 0x14);

	*st = 0;
	*st = 1 | 2;			/* ACKNOWLEDGE, DRIVER */
	*(volatile uint32_t *)vio_reg(v, v->common, 0x08) = 1;
	*(volatile uint32_t *)vio_reg(v, v->common, 0x0c) = 1;	/* VERSION_1 */
	*(volatile uint32_t *)vio_reg(v, v->common, 0x08) = 0;
	*(volatile uint32_t *)vio_reg(v, v->common, 0x0c) = 0;
	*st = 1 | 2 | 8;		/* FEATURES_OK */
	return (*st & 8) ? 0 : -1;
}

int
vio_queue(struct vio *v, unsigned q, struct vq *vq)
{
	volatile uint8_t *c = vio_reg(v, v->common, 0);

	memset(vq, 0, sizeof(*vq));
	*(volatile uint16_t *)(c + 0x16) = (uint16_t)q;
	if (*(volatile uint16_t *)(c + 0x18) < VQ_SIZE)
		return -1;
	*(volatile uint16_t *)(c + 0x18) = VQ_SIZE;
	*(volatile uint64_t *)(c + 0x20) = (uintptr_t)vq->desc;
	*(volatile uint64_t *)(c + 0x28) = (uintptr_t)&vq->avail_flags;
	*(volatile uint64_t *)(c + 0x30) = (uintptr_t)&vq->used_flags;
	vq->notify = v->notify +
	    *(volatile uint16_t *)(c + 0x1e) * v->notify_mult;
	vq->q = (uint16_t)q;
	*(volatile uint16_t *)(c + 0x1c) = 1;
	return 0;
}

void
vio_driver_ok(struct vio *v)
{
	*vio_reg(v, v->common, 0x14) = 1 | 2 | 8 | 4;
}

void
vq_submit(struct vq *vq, uint16_t head)
{
	vq->avail_ring[vq->avail_idx % VQ_SIZE] = head;
	__asm__ volatile("" ::: "memory");
	vq->avail_idx++;
	*(volatile uint16_t *)&vq->avail_idx_shared = vq->avail_idx;
	__asm__ volatile("mfence" ::: "memory");
	*(volatile uint16_t *)vq->notify = vq->q;
}

uint16_t
vq_used(const struct vq *vq)
{
	return *(volatile const uint16_t *)&vq->used_idx;
}

uint8_t
vio_isr(const struct vio *v)
{
	return *vio_reg(v, v->isr, 0);
}

void
vio_msix_control(struct vio *v, int enable, int function_mask)
{
	uint32_t h = pci_read32(v->slot, v->msix_cap) & 0x3fffffffu;

	if (enable)
		h |= 1u << 31;
	if (function_mask)
		h |= 1u << 30;
	pci_write32(v->slot, v->msix_cap, h);
}

void
vio_msix_entry(struct vio *v, unsigned entry, uint32_t apic_id,
    uint8_t vector)
{
	volatile uint32_t *e = (volatile uint32_t *)(v->msix_table +
	    16 * entry);

	e[0] = 0xfee00000u | apic_id << 12;
	e[1] = 0;
	e[2] = vector;
}

void
vio_msix_mask(struct vio *v, unsigned entry, int masked)
{
	((volatile uint32_t *)(v->msix_table + 16 * entry))[3] = masked ? 1 : 0;
}

uint32_t
vio_msix_pba(const struct vio *v)
{
	return *(volatile const uint32_t *)v->msix_pba;
}

void
vio_queue_vector(struct vio *v, unsigned q, uint16_t vector)
{
	volatile uint8_t *c = vio_reg(v, v->common, 0);

	*(volatile uint16_t *)(c + 0x16) = (uint16_t)q;
	*(volatile uint16_t *)(c + 0x1a) = vector;
}
