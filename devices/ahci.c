/* See ahci.h; section numbers are AHCI 1.3's, commands ATA/ATAPI-7's. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ahci.h"
#include "atapi.h"
#include "dev-state.h"
#include "pci-config.h"

/* Generic host control (3.1). */
#define HBA_CAP			0x00
#define  CAP_S64A		(1u << 31)
#define  CAP_SCLO		(1u << 24)
#define  CAP_ISS_GEN1		(1u << 20)
#define  CAP_SAM		(1u << 18)
#define HBA_GHC			0x04
#define  GHC_HR			(1u << 0)
#define  GHC_IE			(1u << 1)
#define  GHC_AE			(1u << 31)
#define HBA_IS			0x08
#define HBA_PI			0x0c
#define HBA_VS			0x10
#define  VS_1_3			0x00010300
#define HBA_PORTS		0x100
#define HBA_PORT_SIZE		0x80

/* Port registers (3.3). */
#define PX_CLB			0x00
#define PX_CLBU			0x04
#define PX_FB			0x08
#define PX_FBU			0x0c
#define PX_IS			0x10
#define  IS_DHRS		(1u << 0)
#define  IS_PSS			(1u << 1)
#define  IS_OFS			(1u << 24)
#define  IS_HBFS		(1u << 29)
#define  IS_TFES		(1u << 30)
#define  IS_VALID		0xfdc000ffu
#define PX_IE			0x14
#define PX_CMD			0x18
#define  CMD_ST			(1u << 0)
#define  CMD_SUD		(1u << 1)
#define  CMD_POD		(1u << 2)
#define  CMD_CLO		(1u << 3)
#define  CMD_FRE		(1u << 4)
#define  CMD_FR			(1u << 14)
#define  CMD_CR			(1u << 15)
#define  CMD_ATAPI		(1u << 24)
#define PX_TFD			0x20
#define PX_SIG			0x24
#define PX_SSTS			0x28
#define  SSTS_PRESENT		0x113	/* active, Gen1, device and phy */
#define PX_SCTL			0x2c
#define PX_SERR			0x30
#define PX_SACT			0x34
#define PX_CI			0x38

/* ATA status and error bits. */
#define ST_ERR			0x01
#define ST_DRQ			0x08
#define ST_DSC			0x10
#define ST_DRDY			0x40
#define ST_BSY			0x80
#define ST_OK			(ST_DRDY | ST_DSC)
#define ERR_ABRT		0x04
#define ERR_IDNF		0x10
#define ERR_UNC			0x40

#define SIG_DISK		0x00000101u
#define SIG_ATAPI		0xeb140101u

/* FIS types and the received FIS area's layout (4.2.1, 10.3). */
#define FIS_H2D			0x27
#define FIS_D2H			0x34
#define FIS_PIO_SETUP		0x5f
#define RFIS_PSFIS		0x20
#define RFIS_RFIS		0x40
#define RFIS_SIZE		0x100

/* The command header (4.2.2) and table (4.2.3). */
#define HDR_SIZE		32
#define CT_ACMD			0x40
#define CT_PRDT			0x80
#define PRD_SIZE		16
#define PRD_DBC_MAX		(4u << 20)

#define PCI_CAP_ID_MSI		0x05
#define MSI_ENABLE		0x01

struct ahci_port;

/* A command slot while its request is with the backend. */
struct ahci_slot {
	struct blk_io io;		/* first: done() finds the slot */
	struct ahci_port *port;
	unsigned int index;
	bool busy;			/* the backend has io */
	bool cancelled;			/* the port stopped meanwhile */
	uint32_t bytes;			/* what success transfers */
	struct iovec iov[AHCI_MAX_PRDS];
};

struct ahci_port {
	struct ahci *hba;
	unsigned int index;
	enum ahci_drive_type type;
	struct blk_backend be;
	struct atapi atapi;
	uint32_t clb, clbu, fb, fbu, is, ie, cmd, tfd, sig, sctl, serr;
	uint32_t sact, ci;
	uint32_t started;		/* issued slots taken up */
	bool halted;			/* an error: waits for ST to clear */
	struct ahci_slot slot[AHCI_SLOTS];
};

struct ahci {
	struct pci_config pc;
	const struct device_host *host;
	unsigned int nports;
	uint32_t ghc, is;
	bool level;			/* the interrupt condition holds */
	bool intx_raised;
	unsigned int msi_cap;
	struct {
		bool on;
		uint64_t addr;
		uint32_t data;
	} routed;
	/* Diagnostics. */
	uint64_t commands;
	uint64_t failed;		/* task file errors */
	uint64_t fatal;			/* host bus and overflow errors */
	uint64_t interrupts;
	uint64_t bad_accesses;
	struct ahci_port port[AHCI_MAX_PORTS];
};

/* --- guest memory and interrupts --------------------------------------- */

/* len bytes at gpa + off in guest RAM, or NULL (wrap-around included). */
static void *
ahci_mem(const struct ahci *a, uint64_t gpa, uint64_t off, size_t len)
{
	if (gpa + off < gpa)
		return NULL;
	return device_guest_mem(a->host, gpa + off, len);
}

static bool
ahci_msi_on(const struct ahci *a)
{
	return a->pc.cfg[a->msi_cap + 2] & MSI_ENABLE;
}

static uint64_t
ahci_msi_addr(const struct ahci *a)
{
	const uint8_t *c = &a->pc.cfg[a->msi_cap];
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | c[4 + i];
	return v;
}

static uint32_t
ahci_msi_data(const struct ahci *a)
{
	return pci_config_get16(&a->pc, a->msi_cap + 12);
}

static void
ahci_set_intx(struct ahci *a, bool level)
{
	bool up = level && !(pci_config_get16(&a->pc, PCI_COMMAND) &
	    PCI_COMMAND_INTX_DISABLE);

	pci_config_set_intx(&a->pc, level);
	if (up != a->intx_raised) {
		a->intx_raised = up;
		device_irq_set(a->host, 0, up);
	}
}

/*
 * Recompute IS and the interrupt (10.6.2): a port with an enabled
 * status bit sets its IS bit again after the driver cleared it.  With
 * MSI, a message goes out whenever the condition arises and whenever a
 * port gains a new enabled event (fresh), so that a driver that cleared
 * one port's status while another's arrived still hears of it.
 */
static void
ahci_update_irq(struct ahci *a, bool fresh)
{
	bool level;

	for (unsigned int i = 0; i < a->nports; i++)
		if (a->port[i].is & a->port[i].ie)
			a->is |= 1u << i;
	level = (a->ghc & GHC_IE) && a->is != 0;
	if (ahci_msi_on(a)) {
		ahci_set_intx(a, false);
		if (level && (fresh || !a->level)) {
			a->interrupts++;
			device_msi(a->host, 0, ahci_msi_addr(a),
			    ahci_msi_data(a));
		}
	} else {
		if (level && !a->level)
			a->interrupts++;
		ahci_set_intx(a, level);
	}
	a->level = level;
}

/* Port status bits arrived. */
static void
ahci_port_event(struct ahci_port *p, uint32_t bits)
{
	bool fresh = bits & p->ie & ~p->is;

	p->is |= bits;
	ahci_update_irq(p->hba, fresh);
}

/* --- FISes --------------------------------------------------------------- */

/* Put a 20-byte FIS in the received FIS area, if the port receives. */
static void
ahci_post_fis(struct ahci_port *p, unsigned int at, const uint8_t *fis)
{
	uint8_t *rf;

	if (!(p->cmd & CMD_FRE))
		return;
	rf = ahci_mem(p->hba, (uint64_t)p->fbu << 32 | p->fb, 0, RFIS_SIZE);
	if (rf != NULL) {
		memcpy(rf + at, fis, 20);
		device_guest_written(p->hba->host, rf + at, 20);
	}
}

/* The register fields a FIS carries: lba and count in SIG's layout. */
static void
ahci_fis_regs(uint8_t *fis, uint8_t status, uint8_t error, uint32_t sig)
{
	fis[2] = status;
	fis[3] = error;
	fis[4] = (uint8_t)(sig >> 8);	/* LBA low */
	fis[5] = (uint8_t)(sig >> 16);	/* LBA mid */
	fis[6] = (uint8_t)(sig >> 24);	/* LBA high */
	fis[12] = (uint8_t)sig;		/* count */
}

/* A D2H register FIS (10.3.3): the task file after a command. */
static void
ahci_d2h(struct ahci_port *p, uint8_t status, uint8_t error, uint32_t sig,
    bool irq)
{
	uint8_t fis[20] = { FIS_D2H, irq ? 0x40 : 0 };

	ahci_fis_regs(fis, status, error, sig);
	p->tfd = (uint32_t)error << 8 | status;
	ahci_post_fis(p, RFIS_RFIS, fis);
}

/* A PIO setup FIS for a data-in transfer of n bytes (10.5.9). */
static void
ahci_pio_setup(struct ahci_port *p, uint32_t n)
{
	uint8_t fis[20] = { FIS_PIO_SETUP, 0x40 | 0x20 };

	ahci_fis_regs(fis, ST_OK | ST_DRQ, 0, 0);
	fis[15] = ST_OK;		/* the status at the end */
	fis[16] = (uint8_t)n;
	fis[17] = (uint8_t)(n >> 8);
	ahci_post_fis(p, RFIS_PSFIS, fis);
}

/* --- the port's state machine ------------------------------------------ */

static uint32_t
ahci_port_sig(const struct ahci_port *p)
{
	return p->type == AHCI_DRIVE_CDROM ? SIG_ATAPI : SIG_DISK;
}

/* The drive resets (COMRESET or SRST): it sends its signature (10.4.1). */
static void
ahci_drive_reset(struct ahci_port *p)
{
	if (p->type == AHCI_DRIVE_NONE) {
		p->tfd = 0x7f;		/* nothing on the wire */
		p->sig = 0xffffffff;
		return;
	}
	if (p->type == AHCI_DRIVE_CDROM) {
		p->atapi.sense_key = p->atapi.asc = p->atapi.ascq = 0;
		p->atapi.locked = false;
	}
	p->sig = ahci_port_sig(p);
	ahci_d2h(p, ST_OK, 1, p->sig, false);
}

/*
 * The command list stops (ST cleared, or an HBA reset): issued commands
 * are dropped; one still with the backend ends unseen, and CR stays set
 * until it does (ahci_port_read()).
 */
static void
ahci_port_stop(struct ahci_port *p)
{
	for (unsigned int s = 0; s < AHCI_SLOTS; s++)
		if (p->slot[s].busy)
			p->slot[s].cancelled = true;
	p->ci = 0;
	p->sact = 0;
	p->started = 0;
	p->halted = false;
}

/* Everything back to power-on (GHC.HR, 10.4.3). */
static void
ahci_port_reset(struct ahci_port *p)
{
	ahci_port_stop(p);
	p->clb = p->clbu = p->fb = p->fbu = 0;
	p->is = p->ie = 0;
	p->cmd = CMD_SUD | CMD_POD |
	    (p->type == AHCI_DRIVE_CDROM ? CMD_ATAPI : 0);
	p->sctl = p->serr = 0;
	ahci_drive_reset(p);
}

/* A host bus or overflow error (6.1.2): the port halts. */
static void
ahci_fatal(struct ahci_port *p, uint32_t bit)
{
	p->hba->fatal++;
	p->halted = true;
	ahci_port_event(p, bit);
}

/*
 * Slot s is over: PRDBC, the drive's FISes and status.  An error halts
 * the port with the slot still issued (6.2.2.1).
 */
static void
ahci_slot_done(struct ahci_port *p, unsigned int s, uint8_t status,
    uint8_t error, uint32_t sig, uint32_t bytes, bool pio)
{
	uint64_t clb = (uint64_t)p->clbu << 32 | p->clb;
	uint8_t *hdr = ahci_mem(p->hba, clb, (uint64_t)s * HDR_SIZE, HDR_SIZE);
	uint32_t bits = IS_DHRS;

	if (hdr != NULL) {
		memcpy(hdr + 4, &bytes, 4);
		device_guest_written(p->hba->host, hdr + 4, 4);
	}
	if (pio && !(status & ST_ERR)) {
		ahci_pio_setup(p, bytes);
		bits |= IS_PSS;
	}
	ahci_d2h(p, status, error, sig, true);
	p->started &= ~(1u << s);
	if (status & ST_ERR) {
		p->hba->failed++;
		p->halted = true;
		bits |= IS_TFES;
	} else {
		p->ci &= ~(1u << s);
	}
	ahci_port_event(p, bits);
}

static void
ahci_slot_fail(struct ahci_port *p, unsigned int s, uint8_t error)
{
	ahci_slot_done(p, s, ST_DRDY | ST_ERR, error, 0, 0, false);
}

/* The ATAPI drive answered CHECK CONDITION: the sense key in ERROR. */
static void
ahci_slot_check(struct ahci_port *p, unsigned int s)
{
	ahci_slot_done(p, s, ST_DRDY | ST_ERR, atapi_error_reg(&p->atapi),
	    0, 0, false);
}

/*
 * Map len bytes of the transfer onto the PRDT's prdtl entries at prdt
 * (guest memory): 0 and *niov, or -EFAULT (a buffer outside RAM),
 * -EINVAL (a byte count above 4 MiB or odd, too many PRDs), -ENOSPC
 * (the PRDT holds less than len; with short, *len becomes what it
 * holds instead).
 */
static int
ahci_prdt_map(struct ahci_port *p, struct ahci_slot *sl, uint64_t prdt,
    unsigned int prdtl, uint32_t *len, bool shrt, unsigned int *niov)
{
	uint32_t left = *len;
	unsigned int n = 0;

	for (unsigned int i = 0; i < prdtl && left > 0; i++) {
		const uint8_t *e = ahci_mem(p->hba, prdt, (uint64_t)i *
		    PRD_SIZE, PRD_SIZE);
		uint32_t dba, dbau, dw3, dbc, take;
		void *buf;

		if (e == NULL)
			return -EFAULT;
		memcpy(&dba, e, 4);
		memcpy(&dbau, e + 4, 4);
		memcpy(&dw3, e + 12, 4);
		/* Bits 30:22 are reserved: set, the count exceeds 4 MiB. */
		if (dw3 & 0x7fc00000u || !(dw3 & 1) || n == AHCI_MAX_PRDS)
			return -EINVAL;
		dbc = (dw3 & (PRD_DBC_MAX - 1)) + 1;
		take = dbc < left ? dbc : left;
		buf = ahci_mem(p->hba, (uint64_t)dbau << 32 | (dba & ~1u), 0,
		    take);
		if (buf == NULL)
			return -EFAULT;
		sl->iov[n].iov_base = buf;
		sl->iov[n].iov_len = take;
		n++;
		left -= take;
	}
	if (left > 0) {
		if (!shrt)
			return -ENOSPC;
		*len -= left;
	}
	*niov = n;
	return 0;
}

/* A mapping error's outcome: fatal for the port, or the command fails. */
static void
ahci_map_failed(struct ahci_port *p, unsigned int s, int err)
{
	if (err == -EFAULT)
		ahci_fatal(p, IS_HBFS);
	else if (err == -ENOSPC)
		ahci_fatal(p, IS_OFS);
	else
		ahci_slot_fail(p, s, ERR_ABRT);
}

/* Copy n bytes to the mapped buffers. */
static void
ahci_copy_out(const struct ahci_slot *sl, unsigned int niov,
    const void *src, uint32_t n)
{
	const uint8_t *from = src;

	for (unsigned int i = 0; i < niov && n > 0; i++) {
		size_t c = sl->iov[i].iov_len < n ? sl->iov[i].iov_len : n;

		memcpy(sl->iov[i].iov_base, from, c);
		device_guest_written(sl->port->hba->host, sl->iov[i].iov_base,
		    c);
		from += c;
		n -= (uint32_t)c;
	}
}

/* Return n bytes of data to the host through the PRDT (PIO data-in). */
static void
ahci_data_in(struct ahci_port *p, unsigned int s, uint64_t prdt,
    unsigned int prdtl, const void *data, uint32_t n, bool pio)
{
	struct ahci_slot *sl = &p->slot[s];
	unsigned int niov = 0;
	int err;

	err = ahci_prdt_map(p, sl, prdt, prdtl, &n, true, &niov);
	if (err < 0) {
		ahci_map_failed(p, s, err);
		return;
	}
	ahci_copy_out(sl, niov, data, n);
	ahci_slot_done(p, s, ST_OK, 0, 0, n, pio);
}

static void ahci_port_run(struct ahci_port *p);

/* A backend request is over: a backend thread, not under the lock. */
static void
ahci_io_done(struct blk_io *io, int result)
{
	struct ahci_slot *sl = (struct ahci_slot *)io;
	struct ahci_port *p = sl->port;
	const struct device_host *host = p->hba->host;

	/* What a read wrote, even in part, for a live migration. */
	if (io->op == BLK_READ)
		for (unsigned int i = 0; i < io->niov; i++)
			device_guest_written(host, io->iov[i].iov_base,
			    io->iov[i].iov_len);
	device_lock(host);
	sl->busy = false;
	if (sl->cancelled) {
		/* The port stopped meanwhile: the result is nobody's. */
		sl->cancelled = false;
		ahci_port_run(p);
	} else if (result < 0 && p->type == AHCI_DRIVE_CDROM) {
		atapi_read_failed(&p->atapi);
		ahci_slot_check(p, sl->index);
	} else if (result < 0) {
		ahci_slot_fail(p, sl->index,
		    io->op == BLK_READ ? ERR_UNC | ERR_ABRT : ERR_ABRT);
	} else {
		ahci_slot_done(p, sl->index, ST_OK, 0, 0, sl->bytes, false);
		ahci_port_run(p);
	}
	device_unlock(host);
}

/*
 * Hand slot s's request to the backend: len bytes at offset, through
 * the PRDT for reads and writes.  The slot completes in ahci_io_done().
 */
static void
ahci_submit(struct ahci_port *p, unsigned int s, enum blk_op op,
    uint64_t offset, uint32_t len, uint64_t prdt, unsigned int prdtl)
{
	struct ahci_slot *sl = &p->slot[s];
	unsigned int niov = 0;
	int err;

	if (op == BLK_READ || op == BLK_WRITE) {
		err = ahci_prdt_map(p, sl, prdt, prdtl, &len, false, &niov);
		if (err < 0) {
			ahci_map_failed(p, s, err);
			return;
		}
	}
	sl->io = (struct blk_io){
		.op = op, .offset = offset, .iov = sl->iov, .niov = niov,
		.done = ahci_io_done,
	};
	sl->bytes = len;
	sl->busy = true;
	if (p->be.ops->submit(p->be.ctx, &sl->io) < 0) {
		sl->busy = false;
		ahci_slot_fail(p, s, ERR_ABRT);
	}
}

/* IDENTIFY DEVICE data for a disk (7.16), 256 words. */
static void
ahci_identify_disk(const struct ahci_port *p, uint16_t *id)
{
	uint64_t sectors = p->be.size / 512;
	uint32_t lba28 = sectors < 0x0fffffff ? (uint32_t)sectors : 0x0fffffff;
	uint8_t sum = 0;

	memset(id, 0, 512);
	id[0] = 0x0040;			/* fixed */
	id[1] = 16383;			/* the CHS fiction for old drivers */
	id[3] = 16;
	id[6] = 63;
	atapi_ata_string(&id[10], 10, p->be.serial[0] != '\0' ?
	    p->be.serial : "VMMD-HD0");
	atapi_ata_string(&id[23], 4, "1.0");
	atapi_ata_string(&id[27], 20, "VMMD HARDDISK");
	id[47] = 0x8001;		/* one sector per READ MULTIPLE block */
	id[49] = 0x0300;		/* LBA, DMA */
	id[53] = 0x0006;
	id[60] = (uint16_t)lba28;
	id[61] = (uint16_t)(lba28 >> 16);
	id[63] = 0x0007;
	id[64] = 0x0003;
	id[65] = id[66] = id[67] = id[68] = 120;
	id[76] = 0x0002;		/* SATA Gen1 */
	id[80] = 0x00f0;
	id[82] = 0x4020;		/* write cache */
	id[83] = 0x7400;		/* FLUSH CACHE (EXT), LBA48 */
	id[84] = 0x4000;
	id[85] = 0x4020;
	id[86] = 0x3400;
	id[87] = 0x4000;
	id[88] = 0x203f;
	for (int i = 0; i < 4; i++)
		id[100 + i] = (uint16_t)(sectors >> (16 * i));
	id[106] = 0x4000;		/* 512-byte logical and physical */
	id[217] = 1;			/* not rotating */
	/* Integrity word (7.16.7.96): all 512 bytes sum to zero. */
	id[255] = 0x00a5;
	for (int i = 0; i < 255; i++)
		sum = (uint8_t)(sum + (id[i] & 0xff) + (id[i] >> 8));
	sum = (uint8_t)(sum + 0xa5);
	id[255] |= (uint16_t)((uint8_t)-sum << 8);
}

/* READ/WRITE DMA (EXT) on a disk. */
static void
ahci_disk_rw(struct ahci_port *p, unsigned int s, const uint8_t *cfis,
    uint64_t prdt, unsigned int prdtl)
{
	bool ext = cfis[2] == 0x25 || cfis[2] == 0x35;
	bool write = cfis[2] == 0x35 || cfis[2] == 0xca;
	uint64_t lba, count, sectors = p->be.size / 512;

	lba = cfis[4] | (uint64_t)cfis[5] << 8 | (uint64_t)cfis[6] << 16;
	count = cfis[12] | (uint64_t)cfis[13] << 8;
	if (ext) {
		lba |= (uint64_t)cfis[8] << 24 | (uint64_t)cfis[9] << 32 |
		    (uint64_t)cfis[10] << 40;
		if (count == 0)
			count = 65536;
	} else {
		lba |= (uint64_t)(cfis[7] & 0x0f) << 24;
		count &= 0xff;
		if (count == 0)
			count = 256;
	}
	if (write && p->be.readonly) {
		ahci_slot_fail(p, s, ERR_ABRT);
		return;
	}
	if (lba > sectors || count > sectors - lba) {
		ahci_slot_fail(p, s, ERR_IDNF | ERR_ABRT);
		return;
	}
	ahci_submit(p, s, write ? BLK_WRITE : BLK_READ, lba * 512,
	    (uint32_t)(count * 512), prdt, prdtl);
}

static void
ahci_disk_command(struct ahci_port *p, unsigned int s, const uint8_t *cfis,
    uint64_t prdt, unsigned int prdtl)
{
	uint16_t id[256];

	switch (cfis[2]) {
	case 0xec:			/* IDENTIFY DEVICE */
		ahci_identify_disk(p, id);
		ahci_data_in(p, s, prdt, prdtl, id, sizeof(id), true);
		break;
	case 0x25:			/* READ DMA EXT */
	case 0x35:			/* WRITE DMA EXT */
	case 0xc8:			/* READ DMA */
	case 0xca:			/* WRITE DMA */
		ahci_disk_rw(p, s, cfis, prdt, prdtl);
		break;
	case 0xe7:			/* FLUSH CACHE */
	case 0xea:			/* FLUSH CACHE EXT */
		ahci_submit(p, s, BLK_FLUSH, 0, 0, prdt, 0);
		break;
	case 0xef:			/* SET FEATURES */
		switch (cfis[3]) {
		case 0x02: case 0x82:	/* write cache on, off: flushes */
		case 0x03:		/* transfer mode: all the same here */
		case 0x55: case 0xaa:	/* read look-ahead */
			ahci_slot_done(p, s, ST_OK, 0, 0, 0, false);
			break;
		default:
			ahci_slot_fail(p, s, ERR_ABRT);
		}
		break;
	case 0xe0:			/* STANDBY IMMEDIATE */
	case 0xe1:			/* IDLE IMMEDIATE */
		ahci_slot_done(p, s, ST_OK, 0, 0, 0, false);
		break;
	default:
		ahci_slot_fail(p, s, ERR_ABRT);
	}
}

/* PACKET: the command packet is in the table's ACMD field. */
static void
ahci_packet(struct ahci_port *p, unsigned int s, const uint8_t *cfis,
    const uint8_t *acmd, uint64_t prdt, unsigned int prdtl)
{
	uint8_t buf[ATAPI_BUF_SIZE];
	uint64_t lba = 0;
	uint32_t count = 0;
	size_t len = 0;

	switch (atapi_packet(&p->atapi, acmd, buf, &len, &lba, &count)) {
	case ATAPI_DONE:
		/* Data by DMA (FEATURES bit 0) or by PIO, as the host said. */
		ahci_data_in(p, s, prdt, prdtl, buf, (uint32_t)len,
		    !(cfis[3] & 0x01) && len > 0);
		break;
	case ATAPI_READ:
		if (count == 0) {
			ahci_slot_done(p, s, ST_OK, 0, 0, 0, false);
			break;
		}
		/* At most ATAPI_MAX_READ blocks: fits in 32 bits. */
		ahci_submit(p, s, BLK_READ, lba * ATAPI_BLOCK,
		    count * ATAPI_BLOCK, prdt, prdtl);
		break;
	case ATAPI_CHECK:
		ahci_slot_check(p, s);
		break;
	}
}

static void
ahci_cdrom_command(struct ahci_port *p, unsigned int s, const uint8_t *cfis,
    const uint8_t *acmd, uint64_t prdt, unsigned int prdtl)
{
	uint16_t id[256];

	switch (cfis[2]) {
	case 0xa0:			/* PACKET */
		ahci_packet(p, s, cfis, acmd, prdt, prdtl);
		break;
	case 0xa1:			/* IDENTIFY PACKET DEVICE */
		atapi_identify(&p->atapi, id);
		ahci_data_in(p, s, prdt, prdtl, id, sizeof(id), true);
		break;
	case 0x08:			/* DEVICE RESET */
		ahci_drive_reset(p);
		ahci_slot_done(p, s, ST_OK, 1, p->sig, 0, false);
		break;
	case 0xef:			/* SET FEATURES */
		ahci_slot_done(p, s, ST_OK, 0, 0, 0, false);
		break;
	case 0xec:	/* IDENTIFY DEVICE: aborted with the signature */
		ahci_slot_done(p, s, ST_DRDY | ST_ERR, ERR_ABRT, p->sig, 0,
		    false);
		break;
	default:
		ahci_slot_fail(p, s, ERR_ABRT);
	}
}

/*
 * Take up issued slot s: its header, the command FIS and packet
 * (copied: another vCPU may change them meanwhile) and the PRDT.
 */
static void
ahci_slot_start(struct ahci_port *p, unsigned int s)
{
	uint64_t clb = (uint64_t)p->clbu << 32 | p->clb;
	const uint8_t *hdr, *tbl;
	uint8_t cfis[20], acmd[16];
	uint32_t dw0, ctba, ctbau;
	uint64_t ct;
	unsigned int prdtl;

	p->hba->commands++;
	hdr = ahci_mem(p->hba, clb, (uint64_t)s * HDR_SIZE, HDR_SIZE);
	if (hdr == NULL) {
		ahci_fatal(p, IS_HBFS);
		return;
	}
	memcpy(&dw0, hdr, 4);
	memcpy(&ctba, hdr + 8, 4);
	memcpy(&ctbau, hdr + 12, 4);
	prdtl = dw0 >> 16;
	ct = (uint64_t)ctbau << 32 | (ctba & ~0x7fu);
	tbl = ahci_mem(p->hba, ct, 0, CT_PRDT);
	if (tbl == NULL) {
		ahci_fatal(p, IS_HBFS);
		return;
	}
	memcpy(cfis, tbl, sizeof(cfis));
	memcpy(acmd, tbl + CT_ACMD, sizeof(acmd));
	if (cfis[0] != FIS_H2D) {
		ahci_slot_fail(p, s, ERR_ABRT);
		return;
	}
	if (!(cfis[1] & 0x80)) {
		/*
		 * A device control FIS: SRST set resets the drive, which
		 * answers with its signature once SRST clears (10.4.1).
		 */
		p->started &= ~(1u << s);
		p->ci &= ~(1u << s);
		if (!(cfis[15] & 0x04))
			ahci_drive_reset(p);
		return;
	}
	switch (p->type) {
	case AHCI_DRIVE_DISK:
		ahci_disk_command(p, s, cfis, ct + CT_PRDT, prdtl);
		break;
	case AHCI_DRIVE_CDROM:
		ahci_cdrom_command(p, s, cfis, acmd, ct + CT_PRDT, prdtl);
		break;
	default:
		ahci_slot_fail(p, s, ERR_ABRT);
	}
}

/* Take up what is issued, lowest slot first, until the port halts. */
static void
ahci_port_run(struct ahci_port *p)
{
	for (unsigned int s = 0; s < AHCI_SLOTS; s++) {
		uint32_t bit = 1u << s;

		if (!(p->cmd & CMD_ST) || p->halted)
			return;
		/* A slot still with the backend from before a stop waits. */
		if (!(p->ci & bit) || (p->started & bit) || p->slot[s].busy)
			continue;
		p->started |= bit;
		ahci_slot_start(p, s);
	}
}

/* --- registers ----------------------------------------------------------- */

static bool
ahci_port_busy(const struct ahci_port *p)
{
	for (unsigned int s = 0; s < AHCI_SLOTS; s++)
		if (p->slot[s].busy)
			return true;
	return false;
}

static uint32_t
ahci_port_read(const struct ahci_port *p, uint32_t reg)
{
	switch (reg) {
	case PX_CLB: return p->clb;
	case PX_CLBU: return p->clbu;
	case PX_FB: return p->fb;
	case PX_FBU: return p->fbu;
	case PX_IS: return p->is;
	case PX_IE: return p->ie;
	case PX_CMD:
		return p->cmd | (p->cmd & CMD_FRE ? CMD_FR : 0) |
		    ((p->cmd & CMD_ST) || ahci_port_busy(p) ? CMD_CR : 0);
	case PX_TFD: return p->tfd;
	case PX_SIG: return p->sig;
	case PX_SSTS:
		return p->type != AHCI_DRIVE_NONE && (p->sctl & 0xf) != 1 ?
		    SSTS_PRESENT : 0;
	case PX_SCTL: return p->sctl;
	case PX_SERR: return p->serr;
	case PX_SACT: return p->sact;
	case PX_CI: return p->ci;
	default: return 0;
	}
}

static void
ahci_port_write_cmd(struct ahci_port *p, uint32_t v)
{
	uint32_t was = p->cmd;

	p->cmd = (p->cmd & ~(CMD_ST | CMD_FRE | CMD_ATAPI)) |
	    (v & (CMD_ST | CMD_FRE | CMD_ATAPI));
	/* Command List Override (3.3.7): BSY and DRQ clear at once. */
	if (v & CMD_CLO)
		p->tfd &= ~(uint32_t)(ST_BSY | ST_DRQ);
	if ((was & CMD_ST) && !(v & CMD_ST))
		ahci_port_stop(p);
}

static void
ahci_port_write(struct ahci_port *p, uint32_t reg, uint32_t v)
{
	struct ahci *a = p->hba;
	bool fresh;

	switch (reg) {
	case PX_CLB: p->clb = v & ~0x3ffu; break;
	case PX_CLBU: p->clbu = v; break;
	case PX_FB: p->fb = v & ~0xffu; break;
	case PX_FBU: p->fbu = v; break;
	case PX_IS:
		p->is &= ~v;
		ahci_update_irq(a, false);
		break;
	case PX_IE:
		v &= IS_VALID;
		fresh = (v & ~p->ie & p->is) != 0;
		p->ie = v;
		ahci_update_irq(a, fresh);
		break;
	case PX_CMD:
		ahci_port_write_cmd(p, v);
		ahci_port_run(p);
		break;
	case PX_SCTL:
		/* DET 1 then 0: COMRESET, and the drive resets (10.4.2). */
		if ((p->sctl & 0xf) == 1 && (v & 0xf) != 1)
			ahci_drive_reset(p);
		p->sctl = v & 0xfff;
		break;
	case PX_SERR: p->serr &= ~v; break;
	case PX_SACT:
		if (p->cmd & CMD_ST)
			p->sact |= v & ((1u << AHCI_SLOTS) - 1);
		break;
	case PX_CI:
		if (v & ~((1u << AHCI_SLOTS) - 1))
			a->bad_accesses++;	/* beyond CAP.NCS */
		if (!(p->cmd & CMD_ST))
			break;
		p->ci |= v & ((1u << AHCI_SLOTS) - 1);
		ahci_port_run(p);
		break;
	default:
		a->bad_accesses++;
	}
}

/* An HBA reset (10.4.3): every port and GHC, IE included, to power-on. */
static void
ahci_hba_reset(struct ahci *a)
{
	for (unsigned int i = 0; i < a->nports; i++)
		ahci_port_reset(&a->port[i]);
	a->ghc = GHC_AE;
	a->is = 0;
	ahci_update_irq(a, false);
}

static uint32_t
ahci_hba_read(const struct ahci *a, uint32_t reg)
{
	switch (reg) {
	case HBA_CAP:
		return CAP_S64A | CAP_SCLO | CAP_ISS_GEN1 | CAP_SAM |
		    (AHCI_SLOTS - 1) << 8 | (a->nports - 1);
	case HBA_GHC: return a->ghc;
	case HBA_IS: return a->is;
	case HBA_PI: return (1u << a->nports) - 1;
	case HBA_VS: return VS_1_3;
	default: return 0;
	}
}

static void
ahci_hba_write(struct ahci *a, uint32_t reg, uint32_t v)
{
	switch (reg) {
	case HBA_GHC:
		if (v & GHC_HR) {
			ahci_hba_reset(a);
			break;
		}
		/* AE is read-only one: the HBA is AHCI only (CAP.SAM). */
		a->ghc = GHC_AE | (v & GHC_IE);
		ahci_update_irq(a, false);
		break;
	case HBA_IS:
		a->is &= ~v;
		ahci_update_irq(a, false);
		break;
	default:
		a->bad_accesses++;
	}
}

/* The port whose registers hold ABAR offset off, or NULL. */
static struct ahci_port *
ahci_port_at(struct ahci *a, uint64_t off)
{
	uint64_t i;

	if (off < HBA_PORTS)
		return NULL;
	i = (off - HBA_PORTS) / HBA_PORT_SIZE;
	return i < a->nports ? &a->port[i] : NULL;
}

static uint32_t
ahci_read32(struct ahci *a, uint64_t off)
{
	struct ahci_port *p;

	if (off < HBA_PORTS)
		return ahci_hba_read(a, (uint32_t)off);
	if ((p = ahci_port_at(a, off)) == NULL)
		return 0;		/* ports beyond CAP.NP, the rest */
	return ahci_port_read(p, (uint32_t)((off - HBA_PORTS) %
	    HBA_PORT_SIZE));
}

static void
ahci_write32(struct ahci *a, uint64_t off, uint32_t v)
{
	struct ahci_port *p;

	if (off < HBA_PORTS) {
		ahci_hba_write(a, (uint32_t)off, v);
		return;
	}
	if ((p = ahci_port_at(a, off)) == NULL) {
		a->bad_accesses++;
		return;
	}
	ahci_port_write(p, (uint32_t)((off - HBA_PORTS) % HBA_PORT_SIZE), v);
}

/*
 * ABAR accesses: registers are dwords (3); a quadword is two, and a
 * smaller read takes bytes of one.  Smaller writes would half-write
 * write-one-to-clear bits: they are dropped.
 */
static void
ahci_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct ahci *a = dev;
	uint64_t off = PCI_BAR_REL(offset);
	uint64_t v;

	memset(data, 0xff, size);
	if (PCI_BAR_OF(offset) != AHCI_BAR || off >= AHCI_BAR_SIZE ||
	    off % size != 0) {
		a->bad_accesses++;
		return;
	}
	v = ahci_read32(a, off & ~3ULL);
	if (size == 8)
		v |= (uint64_t)ahci_read32(a, off + 4) << 32;
	else
		v >>= 8 * (off & 3);
	memcpy(data, &v, size);		/* little endian, as the host */
}

static void
ahci_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct ahci *a = dev;
	uint64_t off = PCI_BAR_REL(offset);
	uint32_t v[2] = { 0, 0 };

	if (PCI_BAR_OF(offset) != AHCI_BAR || off >= AHCI_BAR_SIZE ||
	    off % size != 0 || size < 4) {
		a->bad_accesses++;
		return;
	}
	memcpy(v, data, size);
	ahci_write32(a, off, v[0]);
	if (size == 8)
		ahci_write32(a, off + 4, v[1]);
}

static struct pci_config *
ahci_pci(void *dev)
{
	struct ahci *a = dev;

	return &a->pc;
}

/*
 * The guest wrote config space: MSI enable, address or data may have
 * changed (tell the host, device_msi_route()), or INTx Disable.
 */
static void
ahci_pci_written(void *dev, unsigned int offset, unsigned int size)
{
	struct ahci *a = dev;
	bool on = ahci_msi_on(a);
	uint64_t addr = ahci_msi_addr(a);
	uint32_t data = ahci_msi_data(a);

	(void)offset;
	(void)size;
	if (on != a->routed.on || (on && (addr != a->routed.addr ||
	    data != a->routed.data))) {
		a->routed.on = on;
		a->routed.addr = addr;
		a->routed.data = data;
		device_msi_route(a->host, 0, on, addr, data);
		a->level = false;	/* what is pending is sent anew */
	}
	ahci_update_irq(a, false);
}

static void
ahci_diag(void *dev, struct device_diag *d)
{
	struct ahci *a = dev;

	device_diag_put(d, "ghc", a->ghc, DEVICE_DIAG_HEX);
	device_diag_put(d, "is", a->is, DEVICE_DIAG_HEX);
	device_diag_put(d, "commands", a->commands, DEVICE_DIAG_UINT);
	device_diag_put(d, "failed", a->failed, DEVICE_DIAG_UINT);
	device_diag_put(d, "fatal", a->fatal, DEVICE_DIAG_UINT);
	device_diag_put(d, "interrupts", a->interrupts, DEVICE_DIAG_UINT);
	device_diag_put(d, "bad_accesses", a->bad_accesses,
	    DEVICE_DIAG_UINT);
	for (unsigned int i = 0; i < a->nports; i++) {
		char key[32];

		snprintf(key, sizeof(key), "port%u_ci", i);
		device_diag_put(d, key, a->port[i].ci, DEVICE_DIAG_HEX);
		if (a->port[i].type != AHCI_DRIVE_CDROM)
			continue;
		snprintf(key, sizeof(key), "port%u_medium", i);
		device_diag_put(d, key, a->port[i].atapi.present,
		    DEVICE_DIAG_UINT);
		snprintf(key, sizeof(key), "port%u_tray_open", i);
		device_diag_put(d, key, a->port[i].atapi.tray_open,
		    DEVICE_DIAG_UINT);
		snprintf(key, sizeof(key), "port%u_media_changes", i);
		device_diag_put(d, key, a->port[i].atapi.media_changes,
		    DEVICE_DIAG_UINT);
	}
}

int
ahci_media(struct ahci *a, unsigned int port, const struct blk_backend *be,
    bool force)
{
	struct ahci_port *p;
	int ret;

	if (port >= a->nports || a->port[port].type != AHCI_DRIVE_CDROM)
		return -EINVAL;
	p = &a->port[port];
	/* A read of the old image in flight: its backend is still used. */
	if (ahci_port_busy(p))
		return -EAGAIN;
	if (be == NULL || p->atapi.present) {
		if ((ret = atapi_eject(&p->atapi, force)) < 0)
			return ret;
		memset(&p->be, 0, sizeof(p->be));
		p->be.readonly = true;
	}
	if (be != NULL) {
		p->be = *be;
		p->be.readonly = true;
		atapi_insert(&p->atapi, be->size);
	}
	return 0;
}

int
ahci_has_medium(const struct ahci *a, unsigned int port)
{
	if (port >= a->nports || a->port[port].type != AHCI_DRIVE_CDROM)
		return -EINVAL;
	return a->port[port].atapi.present;
}

struct ahci *
ahci_new(const struct device_host *host, const struct ahci_drive *drives,
    unsigned int nports)
{
	const struct pci_ids ids = {
		.vendor = 0x8086,
		.device = 0x2922,	/* ICH9 AHCI, 6 ports */
		.class_code = 0x010601,	/* SATA, AHCI 1.0 interface */
		.revision = 2,
		.subsys_vendor = 0x1af4,
		.subsys = 0x1100,
		.int_pin = 1,
	};
	struct ahci *a;
	int at;

	if (nports == 0 || nports > AHCI_MAX_PORTS)
		return NULL;
	for (unsigned int i = 0; i < nports; i++)
		if (drives[i].type != AHCI_DRIVE_NONE && drives[i].be == NULL)
			return NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	a->host = host;
	a->nports = nports;
	pci_config_init(&a->pc, &ids);
	if (pci_config_add_bar(&a->pc, AHCI_BAR, PCI_BAR_MEM32,
	    AHCI_BAR_SIZE) < 0 ||
	    (at = pci_config_add_cap(&a->pc, PCI_CAP_ID_MSI, 14)) < 0) {
		free(a);
		return NULL;
	}
	/* MSI, one message, 64-bit addresses (PCI 3.0 6.8.1). */
	a->msi_cap = (unsigned int)at;
	a->pc.cfg[at + 2] = 0x80;
	a->pc.wmask[at + 2] = MSI_ENABLE;
	memset(&a->pc.wmask[at + 4], 0xff, 10);
	a->pc.wmask[at + 4] = 0xfc;	/* dword-aligned address */
	for (unsigned int i = 0; i < nports; i++) {
		struct ahci_port *p = &a->port[i];

		p->hba = a;
		p->index = i;
		p->type = drives[i].type;
		if (p->type != AHCI_DRIVE_NONE)
			p->be = *drives[i].be;
		if (p->type == AHCI_DRIVE_CDROM) {
			p->be.readonly = true;
			atapi_init(&p->atapi, p->be.size, p->be.serial);
			/* A drive the host left empty: its tray shut. */
			if (p->be.ops == NULL)
				p->atapi.present = false;
		}
		for (unsigned int s = 0; s < AHCI_SLOTS; s++) {
			p->slot[s].port = p;
			p->slot[s].index = s;
		}
	}
	ahci_hba_reset(a);
	return a;
}

void
ahci_free(struct ahci *a)
{
	if (a == NULL)
		return;
	/* Completions take the device's lock: not held here. */
	for (unsigned int i = 0; i < a->nports; i++)
		if (a->port[i].type != AHCI_DRIVE_NONE &&
		    a->port[i].be.ops != NULL)	/* none: an ejected CD */
			a->port[i].be.ops->drain(a->port[i].be.ctx);
	free(a);
}

/* --- state ------------------------------------------------------------- */

/*
 * The HBA's and each port's registers, the ATAPI drive's sense and lock,
 * the config space (MSI included) and the counters.  Which drive is on
 * which port, and its medium, are the definition's: a section for
 * another set is refused.  Since version 2, the drive's tray and media
 * state (vmctl media, the guest's START STOP UNIT): the tray open, no
 * medium in it, a UNIT ATTENTION and a media event still due, the media
 * changes.  Which image is in the drive is not device state: a drive
 * saved empty loads empty, whatever the definition names; one saved
 * with a medium holds the definition's (none if it names none).  A
 * version-1 section loads as a drive left as the definition made it.  A command with the backend cannot be named:
 * a save refuses it (-EBUSY) and the caller drains first, so no slot is
 * ever started in a section.  Ports past nports are all zero.
 */
#define AHCI_CMD_BITS	(CMD_ST | CMD_SUD | CMD_POD | CMD_FRE | CMD_ATAPI)
#define AHCI_SLOT_MASK	((1u << AHCI_SLOTS) - 1)

struct ahci_state {
	uint8_t cfg[PCI_CONFIG_SIZE];
	uint32_t nports;
	uint8_t type[AHCI_MAX_PORTS];
	uint32_t ghc, is;
	uint32_t clb[AHCI_MAX_PORTS], clbu[AHCI_MAX_PORTS];
	uint32_t fb[AHCI_MAX_PORTS], fbu[AHCI_MAX_PORTS];
	uint32_t pis[AHCI_MAX_PORTS], ie[AHCI_MAX_PORTS];
	uint32_t cmd[AHCI_MAX_PORTS], tfd[AHCI_MAX_PORTS];
	uint32_t sig[AHCI_MAX_PORTS], sctl[AHCI_MAX_PORTS];
	uint32_t serr[AHCI_MAX_PORTS], sact[AHCI_MAX_PORTS];
	uint32_t ci[AHCI_MAX_PORTS];
	uint8_t halted[AHCI_MAX_PORTS];
	uint8_t sense_key[AHCI_MAX_PORTS], asc[AHCI_MAX_PORTS];
	uint8_t ascq[AHCI_MAX_PORTS], locked[AHCI_MAX_PORTS];
	uint8_t empty[AHCI_MAX_PORTS], tray_open[AHCI_MAX_PORTS];
	uint8_t attention[AHCI_MAX_PORTS], media_event[AHCI_MAX_PORTS];
	uint64_t media_changes[AHCI_MAX_PORTS];
	uint64_t atapi_bad[AHCI_MAX_PORTS];
	uint64_t commands, failed, fatal, interrupts, bad_accesses;
};

#define AHCI_U32S(nm, m)						\
	{ nm, DEV_STATE_ARRAY_U32, DEV_STATE_AT(struct ahci_state, m) }
#define AHCI_U8S(nm, m, mx)						\
	{ nm, DEV_STATE_ARRAY_U8, DEV_STATE_AT(struct ahci_state, m),	\
	    .max = (mx) }
/* A version-2 field: an older section leaves it 0. */
#define AHCI_U8S_2(nm, m, mx)						\
	{ nm, DEV_STATE_ARRAY_U8, DEV_STATE_AT(struct ahci_state, m),	\
	    .max = (mx), .since = 2 }
#define AHCI_U64(nm, m)							\
	{ nm, DEV_STATE_U64, DEV_STATE_AT(struct ahci_state, m) }

static const struct dev_state_field ahci_state_fields[] = {
	{ "cfg", DEV_STATE_BYTES, DEV_STATE_AT(struct ahci_state, cfg) },
	{ "nports", DEV_STATE_U32, DEV_STATE_AT(struct ahci_state, nports),
	    .max = AHCI_MAX_PORTS },
	AHCI_U8S("drive", type, AHCI_DRIVE_CDROM),
	{ "ghc", DEV_STATE_U32, DEV_STATE_AT(struct ahci_state, ghc),
	    .max = GHC_AE | GHC_IE },
	{ "is", DEV_STATE_U32, DEV_STATE_AT(struct ahci_state, is),
	    .max = (1u << AHCI_MAX_PORTS) - 1 },
	AHCI_U32S("px_clb", clb),
	AHCI_U32S("px_clbu", clbu),
	AHCI_U32S("px_fb", fb),
	AHCI_U32S("px_fbu", fbu),
	AHCI_U32S("px_is", pis),
	AHCI_U32S("px_ie", ie),
	AHCI_U32S("px_cmd", cmd),
	AHCI_U32S("px_tfd", tfd),
	AHCI_U32S("px_sig", sig),
	AHCI_U32S("px_sctl", sctl),
	AHCI_U32S("px_serr", serr),
	AHCI_U32S("px_sact", sact),
	AHCI_U32S("px_ci", ci),
	AHCI_U8S("halted", halted, 1),
	AHCI_U8S("atapi_sense_key", sense_key, 0xf),
	AHCI_U8S("atapi_asc", asc, 0),
	AHCI_U8S("atapi_ascq", ascq, 0),
	AHCI_U8S("atapi_locked", locked, 1),
	{ "atapi_bad_commands", DEV_STATE_ARRAY_U64,
	    DEV_STATE_AT(struct ahci_state, atapi_bad) },
	AHCI_U8S_2("atapi_empty", empty, 1),
	AHCI_U8S_2("atapi_tray_open", tray_open, 1),
	AHCI_U8S_2("atapi_attention", attention, 1),
	AHCI_U8S_2("atapi_media_event", media_event,
	    ATAPI_EVENT_MEDIA_REMOVAL),
	{ "atapi_media_changes", DEV_STATE_ARRAY_U64,
	    DEV_STATE_AT(struct ahci_state, media_changes), .since = 2 },
	AHCI_U64("commands", commands),
	AHCI_U64("failed", failed),
	AHCI_U64("fatal", fatal),
	AHCI_U64("interrupts", interrupts),
	AHCI_U64("bad_accesses", bad_accesses),
};

/* Port i's registers hold only what a guest's writes could leave. */
static int
ahci_state_check_port(const struct ahci_state *st, unsigned int i,
    struct dev_state_error *err)
{
	bool st_on = st->cmd[i] & CMD_ST;

	if (st->clb[i] & 0x3ffu || st->fb[i] & 0xffu)
		return dev_state_fail(err, -EINVAL, "ahci: port %u: command "
		    "list %#x or FIS area %#x misaligned", i, st->clb[i],
		    st->fb[i]);
	if (st->pis[i] & ~IS_VALID || st->ie[i] & ~IS_VALID ||
	    st->cmd[i] & ~AHCI_CMD_BITS || st->tfd[i] > 0xffff ||
	    st->sctl[i] > 0xfff)
		return dev_state_fail(err, -EINVAL, "ahci: port %u: a "
		    "register with bits it does not have", i);
	if (st->ci[i] & ~AHCI_SLOT_MASK || st->sact[i] & ~AHCI_SLOT_MASK ||
	    (!st_on && (st->ci[i] | st->sact[i]) != 0))
		return dev_state_fail(err, -EINVAL, "ahci: port %u: slots "
		    "%#x issued beyond %u slots or while stopped", i,
		    st->ci[i], AHCI_SLOTS);
	if (st->type[i] != AHCI_DRIVE_CDROM && (st->sense_key[i] |
	    st->asc[i] | st->ascq[i] | st->locked[i] | st->empty[i] |
	    st->tray_open[i] | st->attention[i] | st->media_event[i] |
	    st->media_changes[i]) != 0)
		return dev_state_fail(err, -EINVAL, "ahci: port %u: ATAPI "
		    "state without an ATAPI drive", i);
	/* A new medium is announced only once it is in, the tray shut. */
	if (st->attention[i] && (st->empty[i] || st->tray_open[i]))
		return dev_state_fail(err, -EINVAL, "ahci: port %u: a UNIT "
		    "ATTENTION for a medium that is not in", i);
	return 0;
}

static int
ahci_state_check(const void *state, struct dev_state_error *err)
{
	const struct ahci_state *st = state;
	unsigned int i;
	int rc;

	if (st->nports == 0)
		return dev_state_fail(err, -EINVAL, "ahci: no ports");
	if (!(st->ghc & GHC_AE) || st->is >> st->nports != 0)
		return dev_state_fail(err, -EINVAL, "ahci: ghc %#x, is %#x",
		    st->ghc, st->is);
	for (i = 0; i < st->nports; i++)
		if ((rc = ahci_state_check_port(st, i, err)) < 0)
			return rc;
	/* Every per-port value of a port past the last is zero. */
	for (; i < AHCI_MAX_PORTS; i++)
		if (st->type[i] || st->clb[i] || st->clbu[i] || st->fb[i] ||
		    st->fbu[i] || st->pis[i] || st->ie[i] || st->cmd[i] ||
		    st->tfd[i] || st->sig[i] || st->sctl[i] || st->serr[i] ||
		    st->sact[i] || st->ci[i] || st->halted[i] ||
		    st->sense_key[i] || st->asc[i] || st->ascq[i] ||
		    st->locked[i] || st->atapi_bad[i] || st->empty[i] ||
		    st->tray_open[i] || st->attention[i] ||
		    st->media_event[i] || st->media_changes[i])
			return dev_state_fail(err, -EINVAL, "ahci: state for "
			    "port %u of %u", i, st->nports);
	return 0;
}

const struct dev_state_table ahci_state_table = {
	DEV_STATE_TABLE("ahci", 2, struct ahci_state, ahci_state_fields),
	.check = ahci_state_check,
};

static bool
ahci_busy(const struct ahci *a)
{
	for (unsigned int i = 0; i < a->nports; i++)
		if (ahci_port_busy(&a->port[i]))
			return true;
	return false;
}

static int
ahci_save(void *dev, struct dev_state_buf *out)
{
	struct ahci *a = dev;
	struct ahci_state *st;
	int rc;

	if (ahci_busy(a))
		return -EBUSY;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	memcpy(st->cfg, a->pc.cfg, sizeof(st->cfg));
	st->nports = a->nports;
	st->ghc = a->ghc;
	st->is = a->is;
	for (unsigned int i = 0; i < a->nports; i++) {
		const struct ahci_port *p = &a->port[i];

		st->type[i] = (uint8_t)p->type;
		st->clb[i] = p->clb;
		st->clbu[i] = p->clbu;
		st->fb[i] = p->fb;
		st->fbu[i] = p->fbu;
		st->pis[i] = p->is;
		st->ie[i] = p->ie;
		st->cmd[i] = p->cmd;
		st->tfd[i] = p->tfd;
		st->sig[i] = p->sig;
		st->sctl[i] = p->sctl;
		st->serr[i] = p->serr;
		st->sact[i] = p->sact;
		st->ci[i] = p->ci;
		st->halted[i] = p->halted;
		if (p->type == AHCI_DRIVE_CDROM) {
			st->sense_key[i] = p->atapi.sense_key;
			st->asc[i] = p->atapi.asc;
			st->ascq[i] = p->atapi.ascq;
			st->locked[i] = p->atapi.locked;
			st->atapi_bad[i] = p->atapi.bad_commands;
			st->empty[i] = !p->atapi.present;
			st->tray_open[i] = p->atapi.tray_open;
			st->attention[i] = p->atapi.attention;
			st->media_event[i] = p->atapi.media_event;
			st->media_changes[i] = p->atapi.media_changes;
		}
	}
	st->commands = a->commands;
	st->failed = a->failed;
	st->fatal = a->fatal;
	st->interrupts = a->interrupts;
	st->bad_accesses = a->bad_accesses;
	rc = dev_state_save(&ahci_state_table, st, out);
	free(st);
	return rc;
}

/*
 * Port i's tray and medium from st: a drive saved empty gives up the
 * definition's medium (its backend unused from now on, as after an
 * eject); one saved with a medium keeps what it was made with.  A
 * version-1 section (every field 0) leaves the drive as it was made.
 */
static void
ahci_load_media(struct ahci_port *p, const struct ahci_state *st,
    unsigned int i)
{
	if (st->empty[i] && p->atapi.present) {
		(void)atapi_eject(&p->atapi, true);
		memset(&p->be, 0, sizeof(p->be));
		p->be.readonly = true;
	}
	p->atapi.tray_open = st->tray_open[i];
	/* Due only for a medium the drive holds, as atapi.c raises it. */
	p->atapi.attention = st->attention[i] && p->atapi.present;
	p->atapi.media_event = st->media_event[i];
	p->atapi.media_changes = st->media_changes[i];
}

/*
 * After the registers: the MSI route and the interrupt follow the
 * loaded config space and status (a pending condition may be signalled
 * once more), and what is issued on a running port is taken up.
 */
static int
ahci_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct ahci *a = dev;
	struct ahci_state *st;
	unsigned int i;
	int rc;

	if (ahci_busy(a))
		return dev_state_fail(err, -EBUSY, "ahci: commands in "
		    "flight");
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	rc = dev_state_load(&ahci_state_table, st, buf, len, err);
	if (rc < 0)
		goto out;
	rc = -EINVAL;
	if (st->nports != a->nports) {
		(void)dev_state_fail(err, rc, "ahci: %u ports where the "
		    "controller has %u", st->nports, a->nports);
		goto out;
	}
	for (i = 0; i < a->nports; i++)
		if (st->type[i] != a->port[i].type) {
			(void)dev_state_fail(err, rc, "ahci: port %u: another "
			    "drive", i);
			goto out;
		}
	if ((rc = pci_config_load(&a->pc, st->cfg, err)) < 0)
		goto out;
	a->ghc = st->ghc;
	a->is = st->is;
	for (i = 0; i < a->nports; i++) {
		struct ahci_port *p = &a->port[i];

		p->clb = st->clb[i];
		p->clbu = st->clbu[i];
		p->fb = st->fb[i];
		p->fbu = st->fbu[i];
		p->is = st->pis[i];
		p->ie = st->ie[i];
		p->cmd = st->cmd[i];
		p->tfd = st->tfd[i];
		p->sig = st->sig[i];
		p->sctl = st->sctl[i];
		p->serr = st->serr[i];
		p->sact = st->sact[i];
		p->ci = st->ci[i];
		p->halted = st->halted[i] != 0;
		p->started = 0;
		if (p->type == AHCI_DRIVE_CDROM) {
			ahci_load_media(p, st, i);
			p->atapi.sense_key = st->sense_key[i];
			p->atapi.asc = st->asc[i];
			p->atapi.ascq = st->ascq[i];
			p->atapi.locked = st->locked[i] != 0;
			p->atapi.bad_commands = st->atapi_bad[i];
		}
	}
	a->commands = st->commands;
	a->failed = st->failed;
	a->fatal = st->fatal;
	a->interrupts = st->interrupts;
	a->bad_accesses = st->bad_accesses;
	ahci_pci_written(a, 0, 0);
	for (i = 0; i < a->nports; i++)
		ahci_port_run(&a->port[i]);
	rc = 0;
out:
	free(st);
	return rc;
}

static void
ahci_free_op(void *dev)
{
	ahci_free(dev);
}

const struct device_ops ahci_device_ops = {
	.name = "ahci",
	.read = ahci_read,
	.write = ahci_write,
	.diag = ahci_diag,
	.pci = ahci_pci,
	.pci_written = ahci_pci_written,
	.save = ahci_save,
	.load = ahci_load,
	.free = ahci_free_op,
};
