/*
 * ACPI tables (ACPI 6.4, chapter 5): RSDP (5.2.5), XSDT (5.2.8), FADT
 * (5.2.9), FACS (5.2.10), MADT (5.2.12) and the DSDT (boot-dsdt.c).  One
 * writer, two layouts: a kernel-loaded guest's, from
 * PC_ACPI_TABLES_START with the RSDP first so that a scan of the BIOS
 * area finds it where a loader did not say where it is; and a
 * firmware's, a blob whose pointers are offsets that the firmware's
 * table loader patches (boot-table-loader.c), with an RSDT and a
 * revision 0 RSDP of its own, as QEMU gives a PC's firmware, which
 * SeaBIOS and OVMF both take.
 *
 * Choices:
 *  - Not hardware-reduced: the guest has fixed-feature hardware (the PM1
 *    event and control blocks, the SCI on IRQ 9), an 8259, a PIT and an
 *    RTC, and Linux on a reduced-hardware platform skips the legacy
 *    timers and wants a GED device for every event.
 *  - No SMI_CMD: the platform is always in ACPI mode (SCI_EN reads 1),
 *    so there is no hand-over to perform.
 *  - A PM timer of 24 bits (TMR_VAL_EXT clear), as a PIIX4 has: the
 *    one clock ACPI promises, which Linux can calibrate against and
 *    firmware expects.  Each read is an exit, so a guest that prefers
 *    it to the TSC pays for that; nothing costs while nobody reads.
 *  - One GPE block, GPE0 at pm_base + 0xc (acpi-pm.h), for the VM
 *    generation ID's Notify; no sleep states but S5, no reset register
 *    (a reset goes through the i8042, as on a PC without ACPI).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "boot-tables.h"

#define ACPI_OEM_ID		"VMMD  "
#define ACPI_OEM_TABLE_ID	"VMMD VM "
#define ACPI_CREATOR_ID		"VMMD"

struct acpi_header {
	char		signature[4];
	uint32_t	length;
	uint8_t		revision;
	uint8_t		checksum;
	char		oem_id[6];
	char		oem_table_id[8];
	uint32_t	oem_revision;
	char		creator_id[4];
	uint32_t	creator_revision;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_header) == 36, "ACPI table header");

struct acpi_rsdp {
	char		signature[8];	/* "RSD PTR " */
	uint8_t		checksum;	/* of the first 20 bytes */
	char		oem_id[6];
	uint8_t		revision;	/* 2: ACPI 2.0 and later */
	uint32_t	rsdt_addr;
	uint32_t	length;
	uint64_t	xsdt_addr;
	uint8_t		ext_checksum;	/* of all 36 bytes */
	uint8_t		reserved[3];
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_rsdp) == 36, "RSDP");

/* Generic Address Structure (5.2.3.2). */
struct acpi_gas {
	uint8_t		space;		/* 1: system I/O */
	uint8_t		bit_width;
	uint8_t		bit_offset;
	uint8_t		access_size;	/* 2: word */
	uint64_t	addr;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_gas) == 12, "GAS");

struct acpi_fadt {
	struct acpi_header hdr;
	uint32_t	firmware_ctrl;
	uint32_t	dsdt;
	uint8_t		reserved0;
	uint8_t		pm_profile;
	uint16_t	sci_int;
	uint32_t	smi_cmd;
	uint8_t		acpi_enable;
	uint8_t		acpi_disable;
	uint8_t		s4bios_req;
	uint8_t		pstate_cnt;
	uint32_t	pm1a_evt_blk;
	uint32_t	pm1b_evt_blk;
	uint32_t	pm1a_cnt_blk;
	uint32_t	pm1b_cnt_blk;
	uint32_t	pm2_cnt_blk;
	uint32_t	pm_tmr_blk;
	uint32_t	gpe0_blk;
	uint32_t	gpe1_blk;
	uint8_t		pm1_evt_len;
	uint8_t		pm1_cnt_len;
	uint8_t		pm2_cnt_len;
	uint8_t		pm_tmr_len;
	uint8_t		gpe0_blk_len;
	uint8_t		gpe1_blk_len;
	uint8_t		gpe1_base;
	uint8_t		cst_cnt;
	uint16_t	p_lvl2_lat;
	uint16_t	p_lvl3_lat;
	uint16_t	flush_size;
	uint16_t	flush_stride;
	uint8_t		duty_offset;
	uint8_t		duty_width;
	uint8_t		day_alrm;
	uint8_t		mon_alrm;
	uint8_t		century;
	uint16_t	iapc_boot_arch;
	uint8_t		reserved1;
	uint32_t	flags;
	struct acpi_gas	reset_reg;
	uint8_t		reset_value;
	uint16_t	arm_boot_arch;
	uint8_t		minor_revision;
	uint64_t	x_firmware_ctrl;
	uint64_t	x_dsdt;
	struct acpi_gas	x_pm1a_evt_blk;
	struct acpi_gas	x_pm1b_evt_blk;
	struct acpi_gas	x_pm1a_cnt_blk;
	struct acpi_gas	x_pm1b_cnt_blk;
	struct acpi_gas	x_pm2_cnt_blk;
	struct acpi_gas	x_pm_tmr_blk;
	struct acpi_gas	x_gpe0_blk;
	struct acpi_gas	x_gpe1_blk;
	struct acpi_gas	sleep_control;
	struct acpi_gas	sleep_status;
	uint64_t	hypervisor_id;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_fadt) == 276, "FADT, revision 6");
_Static_assert(offsetof(struct acpi_fadt, flags) == 112, "FADT flags");
_Static_assert(offsetof(struct acpi_fadt, x_dsdt) == 140, "FADT X_DSDT");

#define FADT_WBINVD		(1U << 0)
#define FADT_PROC_C1		(1U << 2)
#define FADT_SLP_BUTTON		(1U << 5)	/* no fixed sleep button */
/* IA-PC boot architecture flags (5.2.9.3). */
#define FADT_LEGACY_DEVICES	(1U << 0)
#define FADT_8042		(1U << 1)
#define FADT_VGA_NOT_PRESENT	(1U << 2)
#define FADT_LAT_NONE_C2	101	/* > 100 us: no C2 */
#define FADT_LAT_NONE_C3	1001	/* > 1000 us: no C3 */

struct acpi_facs {
	char		signature[4];	/* "FACS" */
	uint32_t	length;		/* 64 */
	uint32_t	hw_signature;
	uint32_t	waking_vector;
	uint32_t	global_lock;
	uint32_t	flags;
	uint64_t	x_waking_vector;
	uint8_t		version;	/* 2 */
	uint8_t		reserved[3];
	uint32_t	ospm_flags;
	uint8_t		reserved2[24];
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_facs) == 64, "FACS");

struct acpi_madt {
	struct acpi_header hdr;
	uint32_t	lapic_addr;
	uint32_t	flags;		/* PCAT_COMPAT: there are 8259s */
} __attribute__((packed));

#define MADT_PCAT_COMPAT	1
#define MADT_LAPIC		0
#define MADT_IOAPIC		1
#define MADT_ISO		2
#define MADT_LAPIC_NMI		4

struct madt_lapic {
	uint8_t		type, length, uid, apic_id;
	uint32_t	flags;		/* 1: enabled */
} __attribute__((packed));

struct madt_ioapic {
	uint8_t		type, length, id, reserved;
	uint32_t	addr;
	uint32_t	gsi_base;
} __attribute__((packed));

struct madt_iso {
	uint8_t		type, length, bus, source;
	uint32_t	gsi;
	uint16_t	flags;		/* MPS INTI flags */
} __attribute__((packed));

struct madt_lapic_nmi {
	uint8_t		type, length, uid;
	uint16_t	flags;
	uint8_t		lint;
} __attribute__((packed));

_Static_assert(sizeof(struct madt_lapic) == 8, "MADT local APIC");
_Static_assert(sizeof(struct madt_ioapic) == 12, "MADT IOAPIC");
_Static_assert(sizeof(struct madt_iso) == 10, "MADT override");
_Static_assert(sizeof(struct madt_lapic_nmi) == 6, "MADT NMI");

/* Where the tables go: RSDP at the start, each table 16-byte aligned. */
#define ACPI_FACS_OFFSET	0x40	/* the FACS is 64-byte aligned */
#define ACPI_XSDT_OFFSET	0x80

static void
acpi_header(struct acpi_header *h, const char *sig, uint32_t len,
    uint8_t rev)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->signature, sig, 4);
	h->length = len;
	h->revision = rev;
	memcpy(h->oem_id, ACPI_OEM_ID, 6);
	memcpy(h->oem_table_id, ACPI_OEM_TABLE_ID, 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, ACPI_CREATOR_ID, 4);
	h->creator_revision = 1;
}

/* Seal a table written at p: its checksum over its length. */
static void
acpi_seal(uint8_t *p)
{
	struct acpi_header h;

	memcpy(&h, p, sizeof(h));
	p[offsetof(struct acpi_header, checksum)] = 0;
	p[offsetof(struct acpi_header, checksum)] = boot_checksum(p,
	    h.length);
}

static size_t
acpi_align16(size_t off)
{
	return (off + 15) & ~(size_t)15;
}

static void
acpi_gas_io(struct acpi_gas *g, uint16_t port, uint8_t bits)
{
	memset(g, 0, sizeof(*g));
	g->space = 1;
	g->bit_width = bits;
	g->access_size = 2;
	g->addr = port;
}

/*
 * The FADT pointing at the FACS and the DSDT; the PM1a event block at
 * pm_base, its control block at pm_base + 4 and the PM timer at
 * pm_base + 8, as in a PIIX4's PM I/O space.  facs32: the FACS through
 * the 32-bit FIRMWARE_CTRL (where SeaBIOS looks for its waking vector)
 * rather than X_FIRMWARE_CTRL; the two are exclusive (5.2.9).
 */
static void
acpi_fadt(uint8_t *p, uint64_t facs, uint64_t dsdt, uint16_t pm_base,
    bool facs32)
{
	struct acpi_fadt f;
	uint16_t cnt = pm_base + 4, tmr = pm_base + 8, gpe0 = pm_base + 0xc;

	memset(&f, 0, sizeof(f));
	acpi_header(&f.hdr, "FACP", sizeof(f), 6);
	/* Both DSDT fields may say the same. */
	f.dsdt = (uint32_t)dsdt;
	if (facs32)
		f.firmware_ctrl = (uint32_t)facs;
	else
		f.x_firmware_ctrl = facs;
	f.x_dsdt = dsdt;
	f.sci_int = PC_ACPI_SCI_IRQ;
	/* smi_cmd, acpi_enable, acpi_disable 0: always in ACPI mode. */
	f.pm1a_evt_blk = pm_base;
	f.pm1a_cnt_blk = cnt;
	f.pm1_evt_len = 4;
	f.pm1_cnt_len = 2;
	f.pm_tmr_blk = tmr;
	f.pm_tmr_len = 4;
	acpi_gas_io(&f.x_pm1a_evt_blk, pm_base, 32);
	acpi_gas_io(&f.x_pm1a_cnt_blk, cnt, 16);
	acpi_gas_io(&f.x_pm_tmr_blk, tmr, 32);
	f.gpe0_blk = gpe0;
	f.gpe0_blk_len = 4;
	acpi_gas_io(&f.x_gpe0_blk, gpe0, 32);
	f.p_lvl2_lat = FADT_LAT_NONE_C2;
	f.p_lvl3_lat = FADT_LAT_NONE_C3;
	f.century = 0x32;
	f.iapc_boot_arch = FADT_LEGACY_DEVICES | FADT_8042 |
	    FADT_VGA_NOT_PRESENT;
	/* PWR_BUTTON clear: the fixed-feature power button is there. */
	f.flags = FADT_WBINVD | FADT_PROC_C1 | FADT_SLP_BUTTON;
	memcpy(p, &f, sizeof(f));
	acpi_seal(p);
}

static void
acpi_facs(uint8_t *p)
{
	struct acpi_facs f;

	memset(&f, 0, sizeof(f));
	memcpy(f.signature, "FACS", 4);
	f.length = sizeof(f);
	f.version = 2;
	memcpy(p, &f, sizeof(f));
}

static size_t
acpi_madt_size(unsigned int ncpus)
{
	return sizeof(struct acpi_madt) + ncpus * sizeof(struct madt_lapic) +
	    sizeof(struct madt_ioapic) + 2 * sizeof(struct madt_iso) +
	    sizeof(struct madt_lapic_nmi);
}

/*
 * Processors with APIC ID = index, the IOAPIC with the ID after theirs
 * (as in the MP table), IRQ 0 on pin 2, the SCI level-triggered and
 * active high, and NMI on every local APIC's LINT1.
 */
static void
acpi_madt(uint8_t *p, unsigned int ncpus)
{
	struct acpi_madt m;
	struct madt_lapic l;
	struct madt_ioapic io;
	struct madt_iso iso;
	struct madt_lapic_nmi nmi;
	size_t off = sizeof(m);
	unsigned int i;

	for (i = 0; i < ncpus; i++) {
		memset(&l, 0, sizeof(l));
		l.type = MADT_LAPIC;
		l.length = sizeof(l);
		l.uid = (uint8_t)i;
		l.apic_id = (uint8_t)i;
		l.flags = 1;
		memcpy(p + off, &l, sizeof(l));
		off += sizeof(l);
	}
	memset(&io, 0, sizeof(io));
	io.type = MADT_IOAPIC;
	io.length = sizeof(io);
	io.id = (uint8_t)ncpus;
	io.addr = PC_IOAPIC_ADDR;
	memcpy(p + off, &io, sizeof(io));
	off += sizeof(io);

	memset(&iso, 0, sizeof(iso));
	iso.type = MADT_ISO;
	iso.length = sizeof(iso);
	iso.source = 0;
	iso.gsi = PC_IRQ0_IOAPIC_PIN;
	memcpy(p + off, &iso, sizeof(iso));
	off += sizeof(iso);
	iso.source = PC_ACPI_SCI_IRQ;
	iso.gsi = PC_ACPI_SCI_IRQ;
	iso.flags = BOOT_MPS_ACTIVE_HIGH | BOOT_MPS_LEVEL;
	memcpy(p + off, &iso, sizeof(iso));
	off += sizeof(iso);

	memset(&nmi, 0, sizeof(nmi));
	nmi.type = MADT_LAPIC_NMI;
	nmi.length = sizeof(nmi);
	nmi.uid = 0xff;			/* every processor */
	nmi.lint = 1;
	memcpy(p + off, &nmi, sizeof(nmi));
	off += sizeof(nmi);

	memset(&m, 0, sizeof(m));
	acpi_header(&m.hdr, "APIC", (uint32_t)off, 5);
	m.lapic_addr = PC_LAPIC_ADDR;
	m.flags = MADT_PCAT_COMPAT;
	memcpy(p, &m, sizeof(m));
	acpi_seal(p);
}

/*
 * The tables but the RSDP, from p[first] on: the FACS, the root table
 * (an XSDT, or an RSDT when rsdt), the FADT, the MADT and the DSDT, each
 * 16-byte aligned (the FACS 64).  Pointers are written as base plus an
 * offset into p: the guest address where p is placed, or 0 where the
 * firmware adds it (the table loader).  Returns the end offset or
 * -errno; where the tables went in *o.
 */
static int
acpi_tables(uint8_t *p, size_t cap, uint64_t base, size_t first,
    const struct boot_acpi_config *cfg, bool rsdt,
    struct boot_acpi_layout *o)
{
	struct acpi_header h;
	size_t esize = rsdt ? 4 : 8;
	uint64_t entry[2];
	unsigned int i;
	int len;

	if (cfg->ncpus < 1 || cfg->ncpus > BOOT_MAX_CPUS)
		return -EINVAL;
	o->facs = first;
	o->root = first + ACPI_XSDT_OFFSET - ACPI_FACS_OFFSET;
	o->fadt = acpi_align16(o->root + sizeof(h) + 2 * esize);
	o->madt = acpi_align16(o->fadt + sizeof(struct acpi_fadt));
	o->dsdt = acpi_align16(o->madt + acpi_madt_size(cfg->ncpus));
	if (o->dsdt + sizeof(h) > cap)
		return -ENOSPC;
	len = boot_dsdt_build(p + o->dsdt + sizeof(h),
	    cap - o->dsdt - sizeof(h), &cfg->dsdt);
	if (len < 0)
		return len;
	o->end = o->dsdt + sizeof(h) + (size_t)len;
	/* Revision 2: 64-bit integers in AML. */
	acpi_header(&h, "DSDT", (uint32_t)(o->end - o->dsdt), 2);
	memcpy(p + o->dsdt, &h, sizeof(h));
	acpi_seal(p + o->dsdt);

	acpi_facs(p + o->facs);
	acpi_fadt(p + o->fadt, base + o->facs, base + o->dsdt, cfg->pm_base,
	    rsdt);
	acpi_madt(p + o->madt, cfg->ncpus);

	acpi_header(&h, rsdt ? "RSDT" : "XSDT",
	    (uint32_t)(sizeof(h) + 2 * esize), 1);
	memcpy(p + o->root, &h, sizeof(h));
	entry[0] = base + o->fadt;
	entry[1] = base + o->madt;
	for (i = 0; i < 2; i++)
		memcpy(p + o->root + sizeof(h) + i * esize, &entry[i], esize);
	acpi_seal(p + o->root);
	return (int)o->end;
}

/* An RSDP at p: revision 2 with an XSDT, or 0 (20 bytes) with an RSDT. */
static void
acpi_rsdp(uint8_t *p, uint64_t root, bool rsdt)
{
	struct acpi_rsdp rsdp;

	memset(&rsdp, 0, sizeof(rsdp));
	memcpy(rsdp.signature, "RSD PTR ", 8);
	memcpy(rsdp.oem_id, ACPI_OEM_ID, 6);
	if (rsdt) {
		rsdp.rsdt_addr = (uint32_t)root;
		memcpy(p, &rsdp, BOOT_ACPI_RSDP_V1_LEN);
		p[offsetof(struct acpi_rsdp, checksum)] = boot_checksum(p,
		    BOOT_ACPI_RSDP_V1_LEN);
		return;
	}
	rsdp.revision = 2;
	rsdp.length = sizeof(rsdp);
	rsdp.xsdt_addr = root;
	memcpy(p, &rsdp, sizeof(rsdp));
	p[offsetof(struct acpi_rsdp, checksum)] = boot_checksum(p,
	    BOOT_ACPI_RSDP_V1_LEN);
	p[offsetof(struct acpi_rsdp, ext_checksum)] = boot_checksum(p,
	    sizeof(rsdp));
}

void
boot_acpi_config_direct(struct boot_acpi_config *cfg, unsigned int ncpus)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ncpus = ncpus;
	cfg->pm_base = PC_ACPI_PM1A_EVT_PORT;
	cfg->dsdt.mmio32_min = (uint32_t)PC_PCI_MMIO_START;
	cfg->dsdt.mmio32_max = (uint32_t)(PC_PCI_MMIO_END - 1);
	cfg->dsdt.vmgenid_addr = PC_VMGENID_ADDR;
}

int
boot_acpi_write(uint8_t *mem, uint64_t mem_size, unsigned int ncpus)
{
	const size_t area = PC_ACPI_TABLES_END - PC_ACPI_TABLES_START;
	struct boot_acpi_config cfg;
	struct boot_acpi_layout o;
	uint8_t *base;
	int end;

	if (ncpus < 1 || ncpus > BOOT_MAX_CPUS)
		return -EINVAL;
	if (mem_size < PC_ACPI_TABLES_END)
		return -ENOSPC;
	base = mem + PC_ACPI_TABLES_START;
	memset(base, 0, area);
	boot_acpi_config_direct(&cfg, ncpus);
	end = acpi_tables(base, area, PC_ACPI_TABLES_START, ACPI_FACS_OFFSET,
	    &cfg, false, &o);
	if (end < 0)
		return end;
	acpi_rsdp(base, PC_ACPI_TABLES_START + o.root, false);
	return end;
}

int
boot_acpi_blob(uint8_t *tables, size_t cap, uint8_t *rsdp,
    const struct boot_acpi_config *cfg, struct boot_acpi_layout *o)
{
	int end;

	memset(tables, 0, cap);
	memset(rsdp, 0, BOOT_ACPI_RSDP_V1_LEN);
	end = acpi_tables(tables, cap, 0, 0, cfg, true, o);
	if (end < 0)
		return end;
	acpi_rsdp(rsdp, o->root, true);
	return end;
}
