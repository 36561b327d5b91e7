/* See pci-host.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "pci-config.h"
#include "pci-host.h"

#define PCI_HOST_ENABLE		0x80000000u
#define PCI_HOST_RCR_OFFSET	1	/* port 0xcf9 */
#define PCI_HOST_RCR_SRST	(1u << 1)
#define PCI_HOST_RCR_RCPU	(1u << 2)
#define PCI_HOST_RCR_FULL	(1u << 3)
#define PCI_HOST_RCR_BITS \
	(PCI_HOST_RCR_SRST | PCI_HOST_RCR_RCPU | PCI_HOST_RCR_FULL)

struct pci_host {
	struct pci_host_ops ops;
	const struct device_host *host;
	uint32_t addr;			/* CONFIG_ADDRESS */
	bool has_rcr;
	uint8_t rcr;			/* reset control, with has_rcr */
	uint64_t resets;		/* asked for through the RCR */
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
	ph->host = host;
	pci_config_init(&ph->bridge, &ids);
	return ph;
}

/*
 * The 440FX's PAM and SMRAM registers (Intel 82441FX datasheet, 3.2.18
 * and 3.2.22), kept as written and nothing more.  PAM would route reads
 * and writes of each 16 KiB block between 0xc0000 and 0xfffff to DRAM
 * or to the BIOS ROM.  Here that whole area is always RAM, which already
 * holds the BIOS image (copied there at every build of the machine), and
 * firmware only ever asks for RAM there: it opens the shadow to write the
 * BIOS's copy and its option ROMs, then may lock it read-only, which
 * guards against nothing a guest could exploit.  Emulating the read-only
 * state would take a memory slot per block and buy no behaviour any
 * firmware depends on.  There is no SMM, so SMRAM decodes nothing; its
 * C_BASE_SEG (bits 2:0) is fixed at 010 (0xa0000), as on the chip.
 */
#define PCI_HOST_PAM0		0x59
#define PCI_HOST_PAM_LAST	0x5f
#define PCI_HOST_SMRAM		0x72
#define PCI_HOST_SMRAM_RESET	0x02
#define PCI_HOST_SMRAM_WMASK	0x78	/* D_OPEN, D_CLS, D_LCK, G_SMRAME */

struct pci_host *
pci_host_new_rcr(const struct device_host *host,
    const struct pci_host_ops *ops)
{
	struct pci_host *ph = pci_host_new(host, ops);
	unsigned int r;

	if (ph == NULL)
		return NULL;
	ph->has_rcr = true;
	/* PAM0 has only its upper nibble (0xf0000); the others both. */
	ph->bridge.wmask[PCI_HOST_PAM0] = 0x30;
	for (r = PCI_HOST_PAM0 + 1; r <= PCI_HOST_PAM_LAST; r++)
		ph->bridge.wmask[r] = 0x33;
	ph->bridge.cfg[PCI_HOST_SMRAM] = PCI_HOST_SMRAM_RESET;
	ph->bridge.wmask[PCI_HOST_SMRAM] = PCI_HOST_SMRAM_WMASK;
	return ph;
}

/* Whether an access in the address register's bytes is the RCR's. */
static bool
pci_host_is_rcr(const struct pci_host *ph, uint64_t offset,
    unsigned int size)
{
	return ph->has_rcr && offset == PCI_HOST_RCR_OFFSET && size == 1;
}

static void
pci_host_rcr_write(struct pci_host *ph, uint8_t v)
{
	v &= PCI_HOST_RCR_BITS;
	if ((v & PCI_HOST_RCR_RCPU) != 0 &&
	    (ph->rcr & PCI_HOST_RCR_RCPU) == 0) {
		ph->resets++;
		device_system_request(ph->host, DEVICE_REQUEST_RESET);
	}
	ph->rcr = v;
}

void
pci_host_free(struct pci_host *ph)
{
	free(ph);
}

/*
 * Decode CONFIG_ADDRESS for a data access at byte sub of the window:
 * the slot, function and register offset, or -ENODEV for disabled and
 * other buses.
 */
static int
pci_host_decode(const struct pci_host *ph, unsigned int sub,
    unsigned int *slot, unsigned int *fn, unsigned int *offset)
{
	uint32_t a = ph->addr;

	if (!(a & PCI_HOST_ENABLE) || ((a >> 16) & 0xff) != 0)
		return -ENODEV;
	*slot = (a >> 11) & 0x1f;
	*fn = (a >> 8) & 0x7;
	*offset = (a & 0xfc) + sub;
	return 0;
}

static void
pci_host_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct pci_host *ph = dev;
	unsigned int slot, fn, reg;

	memset(data, 0xff, size);
	if (offset < 4) {
		/* Only dword accesses reach the address register. */
		if (offset == 0 && size == 4)
			memcpy(data, &ph->addr, 4);
		else if (pci_host_is_rcr(ph, offset, size))
			*(uint8_t *)data = ph->rcr;
		return;
	}
	if (offset - 4 + size > 4 || pci_host_decode(ph,
	    (unsigned int)offset - 4, &slot, &fn, &reg) < 0)
		return;
	if (slot == 0 && fn == 0)
		pci_config_read(&ph->bridge, reg, data, size);
	else if (ph->ops.read(ph->ops.ctx, slot, fn, reg, data, size) < 0)
		ph->empty_reads++;
}

static void
pci_host_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
	struct pci_host *ph = dev;
	unsigned int slot, fn, reg;

	if (offset < 4) {
		if (offset == 0 && size == 4) {
			memcpy(&ph->addr, data, 4);
			ph->addr &= ~3u;	/* type 0 access, dword address */
		} else if (pci_host_is_rcr(ph, offset, size)) {
			pci_host_rcr_write(ph, *(const uint8_t *)data);
		}
		return;
	}
	if (offset - 4 + size > 4 || pci_host_decode(ph,
	    (unsigned int)offset - 4, &slot, &fn, &reg) < 0)
		return;
	if (slot == 0 && fn == 0)
		pci_config_write(&ph->bridge, reg, data, size);
	else
		ph->ops.write(ph->ops.ctx, slot, fn, reg, data, size);
}
static const struct figure pci_host_figure_rows[] = {
	{ "empty_reads", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Config space accesses to absent functions",
	    FIGURE_AT(struct pci_host, empty_reads) },
	{ "rcr_resets", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Resets asked for through the reset control register",
	    FIGURE_AT(struct pci_host, resets) },
};

static const struct figure_table pci_host_figures =
    FIGURE_TABLE(pci_host_figure_rows);


static void
pci_host_diag(void *dev, struct device_diag *d)
{
	struct pci_host *ph = dev;

	device_diag_put(d, "config_address", ph->addr, DEVICE_DIAG_HEX);
	device_diag_figure_range(d, &pci_host_figures, 0, 1, ph);
	/* The RCR's only where it exists: other VMs show what they did. */
	if (ph->has_rcr) {
		device_diag_put(d, "reset_control", ph->rcr, DEVICE_DIAG_HEX);
		device_diag_figure_range(d, &pci_host_figures, 1, 1, ph);
	}
}

static void
pci_host_ops_free(void *dev)
{
	pci_host_free(dev);
}

/*
 * Snapshots: the section "pci-host", CONFIG_ADDRESS, the reset control
 * register (0 without one) and the bridge's own config space.  The
 * functions behind it are their devices' to save; the machine maps
 * their BARs anew after they load.
 */
struct pci_host_state {
	uint32_t addr;
	uint8_t rcr;
	uint8_t cfg[PCI_CONFIG_SIZE];
};

static const struct dev_state_field pci_host_state_fields[] = {
	{ .name = "config_address", .type = DEV_STATE_U32,
	    DEV_STATE_AT(struct pci_host_state, addr) },
	{ .name = "reset_control", .type = DEV_STATE_U8,
	    DEV_STATE_AT(struct pci_host_state, rcr),
	    .max = PCI_HOST_RCR_BITS },
	{ .name = "bridge.cfg", .type = DEV_STATE_BYTES,
	    DEV_STATE_AT(struct pci_host_state, cfg) },
};

static const struct dev_state_table pci_host_state_table = {
	DEV_STATE_TABLE("pci-host", 1, struct pci_host_state,
	    pci_host_state_fields),
};

static int
pci_host_save(void *dev, struct dev_state_buf *out)
{
	struct pci_host *ph = dev;
	struct pci_host_state st = { .addr = ph->addr, .rcr = ph->rcr };

	memcpy(st.cfg, ph->bridge.cfg, sizeof(st.cfg));
	return dev_state_save(&pci_host_state_table, &st, out);
}

/* The RCR's bits load as written, without the reset a write would ask. */
static int
pci_host_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct pci_host *ph = dev;
	struct pci_host_state st = { 0 };
	int rc;

	rc = dev_state_load(&pci_host_state_table, &st, buf, len, err);
	if (rc < 0)
		return rc;
	if (st.rcr != 0 && !ph->has_rcr)
		return dev_state_fail(err, -EINVAL, "pci-host: reset_control "
		    "%#x for a bridge without one", st.rcr);
	if ((rc = pci_config_load(&ph->bridge, st.cfg, err)) < 0)
		return rc;
	ph->addr = st.addr;
	ph->rcr = st.rcr;
	return 0;
}

const struct device_ops pci_host_device_ops = {
	.name = "pci-host",
	.read = pci_host_read,
	.write = pci_host_write,
	.diag = pci_host_diag,
	.save = pci_host_save,
	.load = pci_host_load,
	.free = pci_host_ops_free,
};
