/*
 * See piix3-isa.h.  Intel 82371FB/82371SB (PIIX/PIIX3) datasheet, 2.2
 * (PCI-to-ISA bridge configuration registers).
 */
#include <stdlib.h>
#include <string.h>

#include "dev-state.h"
#include "piix3-isa.h"

struct piix3_isa {
	struct pci_config pc;
	const struct device_host *host;
};

/* A register the guest may write: where, its reset value, its bits. */
struct piix3_isa_reg {
	uint8_t offset;
	uint8_t reset;
	uint8_t wmask;
};

/*
 * The registers firmware writes and may read back, one byte each.
 * Anything else in the device-specific area reads 0 and keeps nothing.
 */
static const struct piix3_isa_reg piix3_isa_regs[] = {
	{ 0x4c, 0x4d, 0x7f },	/* IORT: ISA I/O recovery timer */
	{ 0x4e, 0x03, 0xff },	/* XBCS: X-bus chip select, low */
	{ 0x4f, 0x00, 0x03 },	/* XBCS, high */
	{ PIIX3_ISA_PIRQRC + 0, PIIX3_ISA_PIRQ_OFF, 0x8f },
	{ PIIX3_ISA_PIRQRC + 1, PIIX3_ISA_PIRQ_OFF, 0x8f },
	{ PIIX3_ISA_PIRQRC + 2, PIIX3_ISA_PIRQ_OFF, 0x8f },
	{ PIIX3_ISA_PIRQRC + 3, PIIX3_ISA_PIRQ_OFF, 0x8f },
	{ 0x69, 0x02, 0xfe },	/* TOM: top of memory */
	{ 0x6a, 0x00, 0xff },	/* MSTAT: miscellaneous status */
	{ 0x6b, 0x00, 0xff },
	{ 0x70, 0x80, 0xcf },	/* MBIRQ0: motherboard IRQ route */
	{ 0x76, 0x0c, 0x8f },	/* MBDMA0, MBDMA1 */
	{ 0x77, 0x0c, 0x8f },
	{ 0x80, 0x00, 0x7f },	/* APICBASE */
	{ 0x82, 0x00, 0x0f },	/* DLC: deterministic latency */
	{ 0xa0, 0x08, 0x1f },	/* SMICNTL */
	{ 0xa2, 0x00, 0xff },	/* SMIEN */
	{ 0xa3, 0x00, 0xff },
	{ 0xa4, 0x00, 0xff },	/* SEE: system event enable */
	{ 0xa5, 0x00, 0xff },
	{ 0xa6, 0x00, 0xff },
	{ 0xa7, 0x00, 0xff },
	{ 0xa8, 0x0f, 0xff },	/* FTMR: fast off timer */
	{ 0xaa, 0x00, 0xff },	/* SMIREQ */
	{ 0xab, 0x00, 0xff },
};

/* Nothing is ever registered on a bus for it: reads float high. */
static void
piix3_isa_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	memset(data, 0xff, size);
}

static void
piix3_isa_write(void *dev, uint64_t offset, const void *data,
    unsigned int size)
{
}

/* Tell the host where links first to first + n - 1 are routed now. */
static void
piix3_isa_route(struct piix3_isa *isa, unsigned int first, unsigned int n)
{
	unsigned int link;

	for (link = first; link < first + n && link < 4; link++)
		device_pirq_route(isa->host, link,
		    isa->pc.cfg[PIIX3_ISA_PIRQRC + link]);
}

/*
 * A write that touched a route register re-routes its link, whatever
 * the value (the host decodes it), at run time too: Linux's PIC-mode
 * router code rewrites them.
 */
static void
piix3_isa_pci_written(void *dev, unsigned int offset, unsigned int size)
{
	unsigned int first, end;

	first = offset > PIIX3_ISA_PIRQRC ? offset : PIIX3_ISA_PIRQRC;
	end = offset + size < PIIX3_ISA_PIRQRC + 4 ? offset + size :
	    PIIX3_ISA_PIRQRC + 4;
	if (first < end)
		piix3_isa_route(dev, first - PIIX3_ISA_PIRQRC, end - first);
}

static struct pci_config *
piix3_isa_pci(void *dev)
{
	return &((struct piix3_isa *)dev)->pc;
}

static void
piix3_isa_diag(void *dev, struct device_diag *d)
{
	struct piix3_isa *isa = dev;
	const uint8_t *r = &isa->pc.cfg[PIIX3_ISA_PIRQRC];

	device_diag_put(d, "pirq_route", (uint64_t)r[0] | r[1] << 8 |
	    r[2] << 16 | (uint64_t)r[3] << 24, DEVICE_DIAG_HEX);
}

struct piix3_isa *
piix3_isa_new(const struct device_host *host)
{
	static const struct pci_ids ids = {
		.vendor = 0x8086, .device = 0x7000,
		.class_code = 0x060100,
		.subsys_vendor = 0x1af4, .subsys = 0x1100,
	};
	struct piix3_isa *isa = calloc(1, sizeof(*isa));
	size_t i;

	if (isa == NULL)
		return NULL;
	isa->host = host;
	pci_config_init(&isa->pc, &ids);
	for (i = 0; i < sizeof(piix3_isa_regs) / sizeof(piix3_isa_regs[0]);
	    i++) {
		isa->pc.cfg[piix3_isa_regs[i].offset] = piix3_isa_regs[i].reset;
		isa->pc.wmask[piix3_isa_regs[i].offset] =
		    piix3_isa_regs[i].wmask;
	}
	return isa;
}

void
piix3_isa_free(struct piix3_isa *isa)
{
	free(isa);
}

/*
 * The config space, as a copy (pci_config_load checks that its
 * read-only bits are this function's before taking it).
 */
struct piix3_isa_state {
	uint8_t cfg[PCI_CONFIG_SIZE];
};

static const struct dev_state_field piix3_isa_state_fields[] = {
	{ "cfg", DEV_STATE_BYTES, DEV_STATE_AT(struct piix3_isa_state, cfg) },
};

const struct dev_state_table piix3_isa_state_table = {
	DEV_STATE_TABLE("piix3-isa", 1, struct piix3_isa_state,
	    piix3_isa_state_fields),
};

static int
piix3_isa_save(void *dev, struct dev_state_buf *out)
{
	struct piix3_isa *isa = dev;
	struct piix3_isa_state st;

	memcpy(st.cfg, isa->pc.cfg, sizeof(st.cfg));
	return dev_state_save(&piix3_isa_state_table, &st, out);
}

static int
piix3_isa_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct piix3_isa *isa = dev;
	struct piix3_isa_state st = { 0 };
	int rc;

	rc = dev_state_load(&piix3_isa_state_table, &st, buf, len, err);
	if (rc < 0)
		return rc;
	rc = pci_config_load(&isa->pc, st.cfg, err);
	if (rc < 0)
		return rc;
	/* The routing follows the registers, with any level already up. */
	piix3_isa_route(isa, 0, 4);
	return 0;
}

static void
piix3_isa_ops_free(void *dev)
{
	piix3_isa_free(dev);
}

const struct device_ops piix3_isa_device_ops = {
	.name = "piix3-isa",
	.read = piix3_isa_read,
	.write = piix3_isa_write,
	.diag = piix3_isa_diag,
	.pci = piix3_isa_pci,
	.pci_written = piix3_isa_pci_written,
	.save = piix3_isa_save,
	.load = piix3_isa_load,
	.free = piix3_isa_ops_free,
};
