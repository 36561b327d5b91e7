/* See pci-host.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pci-config.h"
#include "pci-host.h"

#define PCI_HOST_ENABLE		0x80000000u

struct pci_host {
	struct pci_host_ops ops;
	uint32_t addr;			/* CONFIG_ADDRESS */
	struct pci_config bridge;	/* 00:00.0 */
	uint64_t empty_reads;		/* accesses to absent functions */
};

struct pci_host *
pci_host_new(const struct device_host *host, const struct pci_host_ops *ops)
{
	/*
	 * Intel's 440FX host bridge ID: every PC OS knows it needs nothing
	 * from it.  Class 06/00/00 (host bridge) is what makes Linux trust
	 * conf1 without firmware tables (pci_sanity_check()).  Subsystem
	 * 1af4:1100, QEMU's: SeaBIOS reads fw_cfg only on a host bridge
	 * that carries it.
	 */
	static const struct pci_ids ids = {
		.vendor = 0x8086, .device = 0x1237,
		.class_code = 0x060000,
		.subsys_vendor = 0x1af4, .subsys = 0x1100,
	};
	struct pci_host *ph;

	ph = calloc(1, sizeof(*ph));
	if (ph == NULL)
		return NULL;
	ph->ops = *ops;
	pci_config_init(&ph->bridge, &ids);
	return ph;
}

void
pci_host_free(struct pci_host *ph)
{
	free(ph);
}

/*
 * Decode CONFIG_ADDRESS for a data access at byte sub of the window:
 * the slot and register offset, or -ENODEV for disabled, other buses,
 * other functions.
 */
static int
pci_host_decode(const struct pci_host *ph, unsigned int sub,
    unsigned int *slot, unsigned int *offset)
{
	uint32_t a = ph->addr;

	if (!(a & PCI_HOST_ENABLE) || ((a >> 16) & 0xff) != 0 ||
	    ((a >> 8) & 0x7) != 0)
		return -ENODEV;
	*slot = (a >> 11) & 0x1f;
	*offset = (a & 0xfc) + sub;
	return 0;
}

static void
pci_host_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct pci_host *ph = dev;
	unsigned int slot, reg;

	memset(data, 0xff, size);
	if (offset < 4) {
		/* Only dword accesses reach the address register. */
		if (offset == 0 && size == 4)
			memcpy(data, &ph->addr, 4);
		return;
	}
	if (offset - 4 + size > 4 ||
	    pci_host_decode(ph, (unsigned int)offset - 4, &slot, &reg) < 0)
		return;
	if (slot == 0)
		pci_config_read(&ph->bridge, reg, data, size);
	else if (ph->ops.read(ph->ops.ctx, slot, reg, data, size) < 0)
		ph->empty_reads++;
}

static void
pci_host_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
	struct pci_host *ph = dev;
	unsigned int slot, reg;

	if (offset < 4) {
		if (offset == 0 && size == 4) {
			memcpy(&ph->addr, data, 4);
			ph->addr &= ~3u;	/* type 0 access, dword address */
		}
		return;
	}
	if (offset - 4 + size > 4 ||
	    pci_host_decode(ph, (unsigned int)offset - 4, &slot, &reg) < 0)
		return;
	if (slot == 0)
		pci_config_write(&ph->bridge, reg, data, size);
	else
		ph->ops.write(ph->ops.ctx, slot, reg, data, size);
}
static const struct figure pci_host_figure_rows[] = {
	{ "empty_reads", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Config space accesses to absent functions",
	    FIGURE_AT(struct pci_host, empty_reads) },
};

static const struct figure_table pci_host_figures =
    FIGURE_TABLE(pci_host_figure_rows);


static void
pci_host_diag(void *dev, struct device_diag *d)
{
	struct pci_host *ph = dev;

	device_diag_put(d, "config_address", ph->addr, DEVICE_DIAG_HEX);
	device_diag_figures(d, &pci_host_figures, ph);
}

static void
pci_host_ops_free(void *dev)
{
	pci_host_free(dev);
}

const struct device_ops pci_host_device_ops = {
	.name = "pci-host",
	.read = pci_host_read,
	.write = pci_host_write,
	.diag = pci_host_diag,
	.free = pci_host_ops_free,
};
