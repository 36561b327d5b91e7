/* See pci-config.h. */
#include <errno.h>
#include <string.h>

#include "dev-state.h"
#include "pci-config.h"

void
pci_config_init(struct pci_config *pc, const struct pci_ids *ids)
{
	memset(pc, 0, sizeof(*pc));
	pci_config_set16(pc, PCI_VENDOR_ID, ids->vendor);
	pci_config_set16(pc, PCI_DEVICE_ID, ids->device);
	pc->cfg[PCI_REVISION_ID] = ids->revision;
	pc->cfg[PCI_CLASS_PROG] = (uint8_t)ids->class_code;
	pc->cfg[PCI_CLASS_PROG + 1] = (uint8_t)(ids->class_code >> 8);
	pc->cfg[PCI_CLASS_PROG + 2] = (uint8_t)(ids->class_code >> 16);
	pci_config_set16(pc, PCI_SUBSYSTEM_VENDOR_ID, ids->subsys_vendor);
	pci_config_set16(pc, PCI_SUBSYSTEM_ID, ids->subsys);
	pc->cfg[PCI_INTERRUPT_PIN] = ids->int_pin;
	/* The enables the guest may set (6.2.2); nothing else. */
	pc->wmask[PCI_COMMAND] = PCI_COMMAND_IO | PCI_COMMAND_MEMORY |
	    PCI_COMMAND_MASTER;
	pc->wmask[PCI_COMMAND + 1] = PCI_COMMAND_INTX_DISABLE >> 8;
	pc->wmask[PCI_INTERRUPT_LINE] = 0xff;
	pc->cap_end = PCI_CAP_START;
	pc->cap_link = &pc->cfg[PCI_CAPABILITY_LIST];
}

int
pci_config_add_bar(struct pci_config *pc, unsigned int bar,
    enum pci_bar_type type, uint64_t size)
{
	unsigned int off = PCI_BAR0 + 4 * bar;
	uint64_t mask = ~(size - 1);
	uint32_t flags;
	unsigned int i;

	if (bar >= PCI_NUM_BARS || size == 0 || (size & (size - 1)) != 0 ||
	    pc->bar_type[bar] != PCI_BAR_NONE)
		return -EINVAL;
	switch (type) {
	case PCI_BAR_IO:
		if (size < 4 || size > 0x10000)
			return -EINVAL;
		flags = 0x1;
		mask &= 0xfffc;
		break;
	case PCI_BAR_MEM32:
		if (size < 16 || size > (1ULL << 32))
			return -EINVAL;
		flags = 0x0;
		mask &= 0xfffffff0;
		break;
	case PCI_BAR_MEM64:
		if (size < 16 || bar + 1 >= PCI_NUM_BARS ||
		    pc->bar_type[bar + 1] != PCI_BAR_NONE)
			return -EINVAL;
		flags = 0x4;
		mask &= ~0xfULL;
		break;
	default:
		return -EINVAL;
	}
	pc->bar_type[bar] = type;
	pc->bar_size[bar] = size;
	if (type == PCI_BAR_MEM64)
		pc->bar_type[bar + 1] = PCI_BAR_MEM64_HIGH;
	pci_config_set32(pc, off, flags);
	for (i = 0; i < (type == PCI_BAR_MEM64 ? 8u : 4u); i++)
		pc->wmask[off + i] = (uint8_t)(mask >> (8 * i));
	return 0;
}

int
pci_config_add_rom(struct pci_config *pc, uint32_t size)
{
	uint32_t mask;

	if (size < 2048 || size > (16u << 20) || (size & (size - 1)) != 0 ||
	    pc->rom_size != 0)
		return -EINVAL;
	pc->rom_size = size;
	mask = ~(size - 1) | PCI_ROM_ENABLE;
	for (unsigned int i = 0; i < 4; i++)
		pc->wmask[PCI_ROM_ADDRESS + i] = (uint8_t)(mask >> (8 * i));
	return 0;
}

int
pci_config_add_cap(struct pci_config *pc, uint8_t id, unsigned int len)
{
	unsigned int off = pc->cap_end;

	if (len < 2 || off + len > PCI_CONFIG_SIZE)
		return -ENOSPC;
	pc->cfg[off] = id;
	pc->cfg[off + 1] = 0;
	*pc->cap_link = (uint8_t)off;
	pc->cap_link = &pc->cfg[off + 1];
	/* Capabilities start on dword boundaries (6.7). */
	pc->cap_end = (uint8_t)((off + len + 3) & ~3u);
	if (off + len + 3 >= PCI_CONFIG_SIZE)
		pc->cap_end = 0xfc;
	pc->cfg[PCI_STATUS] |= PCI_STATUS_CAP_LIST;
	return (int)off;
}

static bool
pci_config_access_ok(unsigned int offset, unsigned int size)
{
	return (size == 1 || size == 2 || size == 4) &&
	    offset % size == 0 && offset + size <= PCI_CONFIG_SIZE;
}

void
pci_config_read(const struct pci_config *pc, unsigned int offset,
    void *data, unsigned int size)
{
	if (!pci_config_access_ok(offset, size)) {
		memset(data, 0xff, size);
		return;
	}
	memcpy(data, &pc->cfg[offset], size);
}

bool
pci_config_write(struct pci_config *pc, unsigned int offset,
    const void *data, unsigned int size)
{
	const uint8_t *v = data;
	unsigned int i;
	bool remap = false;

	if (!pci_config_access_ok(offset, size))
		return false;
	for (i = 0; i < size; i++) {
		unsigned int o = offset + i;

		pc->cfg[o] = (uint8_t)((pc->cfg[o] & ~pc->wmask[o]) |
		    (v[i] & pc->wmask[o]));
		if (o == PCI_COMMAND ||
		    (o >= PCI_BAR0 && o < PCI_BAR0 + 4 * PCI_NUM_BARS) ||
		    (o >= PCI_ROM_ADDRESS && o < PCI_ROM_ADDRESS + 4))
			remap = true;
	}
	return remap;
}

static uint32_t
pci_config_get32(const struct pci_config *pc, unsigned int offset)
{
	return (uint32_t)pci_config_get16(pc, offset) |
	    (uint32_t)pci_config_get16(pc, offset + 2) << 16;
}

void
pci_config_bar(const struct pci_config *pc, unsigned int bar,
    struct pci_bar_map *map)
{
	uint16_t cmd = pci_config_get16(pc, PCI_COMMAND);
	unsigned int off = PCI_BAR0 + 4 * bar;

	memset(map, 0, sizeof(*map));
	if (bar == PCI_ROM_BAR && pc->rom_size != 0) {
		uint32_t v = pci_config_get32(pc, PCI_ROM_ADDRESS);

		map->type = PCI_BAR_MEM32;
		map->size = pc->rom_size;
		map->base = v & ~(uint32_t)(pc->rom_size - 1);
		map->on = (cmd & PCI_COMMAND_MEMORY) != 0 &&
		    (v & PCI_ROM_ENABLE) != 0 && map->base != 0;
		return;
	}
	if (bar >= PCI_NUM_BARS)
		return;
	map->type = pc->bar_type[bar];
	map->size = pc->bar_size[bar];
	switch (map->type) {
	case PCI_BAR_IO:
		map->base = pci_config_get32(pc, off) & 0xfffc;
		map->on = (cmd & PCI_COMMAND_IO) != 0;
		break;
	case PCI_BAR_MEM32:
		map->base = pci_config_get32(pc, off) & 0xfffffff0;
		map->on = (cmd & PCI_COMMAND_MEMORY) != 0;
		break;
	case PCI_BAR_MEM64:
		map->base = (pci_config_get32(pc, off) & 0xfffffff0) |
		    (uint64_t)pci_config_get32(pc, off + 4) << 32;
		map->on = (cmd & PCI_COMMAND_MEMORY) != 0;
		break;
	case PCI_BAR_NONE:
	case PCI_BAR_MEM64_HIGH:
		break;
	}
	/* Address 0 is "not placed" to every OS; never decode it. */
	if (map->base == 0)
		map->on = false;
}

void
pci_config_set_intx(struct pci_config *pc, bool pending)
{
	if (pending)
		pc->cfg[PCI_STATUS] |= PCI_STATUS_INTERRUPT;
	else
		pc->cfg[PCI_STATUS] &= (uint8_t)~PCI_STATUS_INTERRUPT;
}

int
pci_config_load(struct pci_config *pc, const uint8_t saved[PCI_CONFIG_SIZE],
    struct dev_state_error *err)
{
	unsigned int o;
	uint8_t ro;

	for (o = 0; o < PCI_CONFIG_SIZE; o++) {
		ro = (uint8_t)~pc->wmask[o];
		if (o == PCI_STATUS)	/* the device's, not the guest's */
			ro &= (uint8_t)~PCI_STATUS_INTERRUPT;
		if ((saved[o] & ro) != (pc->cfg[o] & ro))
			return dev_state_fail(err, -EINVAL, "pci: config byte "
			    "%#x is %#x where the function has %#x", o,
			    saved[o], pc->cfg[o]);
	}
	memcpy(pc->cfg, saved, PCI_CONFIG_SIZE);
	return 0;
}
