/*
 * See piix4-pm.h.  Intel 82371AB (PIIX4) datasheet, 3.4 (power
 * management function configuration registers).
 */
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "piix4-pm.h"

#define PIIX4_PM_APMC_EN	0x02	/* DEVACTB bit 25, in byte 0x5b */

struct piix4_pm {
	struct pci_config pc;
	bool placed;			/* the PM block is decoded ... */
	uint16_t placed_base;		/* ... here */
	uint64_t place_failures;	/* enabled over something else */
};

/* Nothing is ever registered on a bus for it: reads float high. */
static void
piix4_pm_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	memset(data, 0xff, size);
}

static void
piix4_pm_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
}

static struct pci_config *
piix4_pm_pci(void *dev)
{
	return &((struct piix4_pm *)dev)->pc;
}

bool
piix4_pm_io(const struct piix4_pm *pm, uint16_t *base)
{
	if ((pm->pc.cfg[PIIX4_PM_PMREGMISC] & PIIX4_PM_PMIOSE) == 0)
		return false;
	*base = pci_config_get16(&pm->pc, PIIX4_PM_PMBA) & PIIX4_PM_PMBA_MASK;
	return true;
}

void
piix4_pm_placed(struct piix4_pm *pm, bool on, uint16_t base, bool failed)
{
	pm->placed = on;
	pm->placed_base = on ? base : 0;
	if (failed)
		pm->place_failures++;
}

static const struct figure piix4_pm_figure_rows[] = {
	{ "pm_io_failures", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "PM I/O enabled at a base that overlaps other ports",
	    FIGURE_AT(struct piix4_pm, place_failures) },
};

static const struct figure_table piix4_pm_figures =
    FIGURE_TABLE(piix4_pm_figure_rows);

static void
piix4_pm_diag(void *dev, struct device_diag *d)
{
	struct piix4_pm *pm = dev;

	device_diag_put(d, "pmba", pci_config_get16(&pm->pc, PIIX4_PM_PMBA),
	    DEVICE_DIAG_HEX);
	device_diag_put(d, "pmregmisc", pm->pc.cfg[PIIX4_PM_PMREGMISC],
	    DEVICE_DIAG_HEX);
	device_diag_put(d, "pm_io", pm->placed, DEVICE_DIAG_BOOL);
	device_diag_put(d, "pm_io_base", pm->placed_base, DEVICE_DIAG_HEX);
	device_diag_figures(d, &piix4_pm_figures, pm);
}

struct piix4_pm *
piix4_pm_new(const struct device_host *host)
{
	static const struct pci_ids ids = {
		.vendor = 0x8086, .device = 0x7113,
		.class_code = 0x068000, .revision = 0x03,
		.subsys_vendor = 0x1af4, .subsys = 0x1100,
	};
	struct piix4_pm *pm = calloc(1, sizeof(*pm));

	if (pm == NULL)
		return NULL;
	/*
	 * No interrupt pin: the SCI is the ACPI PM device's, wired to ISA
	 * IRQ 9 (the interrupt line register still keeps what firmware
	 * writes there).
	 */
	pci_config_init(&pm->pc, &ids);
	pm->pc.cfg[PIIX4_PM_PMBA] = 0x01;
	pm->pc.wmask[PIIX4_PM_PMBA] = (uint8_t)PIIX4_PM_PMBA_MASK;
	pm->pc.wmask[PIIX4_PM_PMBA + 1] = PIIX4_PM_PMBA_MASK >> 8;
	pm->pc.wmask[PIIX4_PM_PMREGMISC] = PIIX4_PM_PMIOSE;
	pm->pc.cfg[PIIX4_PM_DEVACTB + 3] = PIIX4_PM_APMC_EN;
	return pm;
}

void
piix4_pm_free(struct piix4_pm *pm)
{
	free(pm);
}

/*
 * The config space, as a copy (pci_config_load checks that its
 * read-only bits are this function's before taking it), and the
 * counter.  Where the PM block is decoded is not kept: the machine
 * places it again from PMBA and PMIOSE after a load (pcibus_sync()
 * reports each function's config as written).
 */
struct piix4_pm_state {
	uint8_t cfg[PCI_CONFIG_SIZE];
	uint64_t place_failures;
};

static const struct dev_state_field piix4_pm_state_fields[] = {
	{ "cfg", DEV_STATE_BYTES, DEV_STATE_AT(struct piix4_pm_state, cfg) },
	{ "pm_io_failures", DEV_STATE_U64,
	    DEV_STATE_AT(struct piix4_pm_state, place_failures) },
};

const struct dev_state_table piix4_pm_state_table = {
	DEV_STATE_TABLE("piix4-pm", 1, struct piix4_pm_state,
	    piix4_pm_state_fields),
};

static int
piix4_pm_save(void *dev, struct dev_state_buf *out)
{
	struct piix4_pm *pm = dev;
	struct piix4_pm_state st = { .place_failures = pm->place_failures };

	memcpy(st.cfg, pm->pc.cfg, sizeof(st.cfg));
	return dev_state_save(&piix4_pm_state_table, &st, out);
}

static int
piix4_pm_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct piix4_pm *pm = dev;
	struct piix4_pm_state st = { 0 };
	int rc;

	rc = dev_state_load(&piix4_pm_state_table, &st, buf, len, err);
	if (rc < 0)
		return rc;
	if ((rc = pci_config_load(&pm->pc, st.cfg, err)) < 0)
		return rc;
	pm->place_failures = st.place_failures;
	return 0;
}

static void
piix4_pm_ops_free(void *dev)
{
	piix4_pm_free(dev);
}

const struct device_ops piix4_pm_device_ops = {
	.name = "piix4-pm",
	.read = piix4_pm_read,
	.write = piix4_pm_write,
	.diag = piix4_pm_diag,
	.pci = piix4_pm_pci,
	.save = piix4_pm_save,
	.load = piix4_pm_load,
	.free = piix4_pm_ops_free,
};
