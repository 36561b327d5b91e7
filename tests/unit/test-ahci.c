/*
 * The AHCI controller driven as a driver drives it, on the fake device
 * host: a disk on port 0 and an ATAPI CD-ROM on port 1, each on an
 * image in memory whose requests complete when the test says.  The
 * registers, IDENTIFY, DMA reads and writes scattered over several
 * PRDs, the ATAPI commands a firmware and Linux send, errors with
 * sense data, interrupts (INTx and MSI), and a hostile driver: tables
 * and PRDs outside RAM, byte counts over the limit, slots beyond
 * CAP.NCS, ports that do not exist, a stop with a request in flight.
 * Its state: refused while a request is in flight, saved and loaded
 * into a fresh HBA that saves the same bytes and goes on (a halted
 * port, the ATAPI sense), a hostile section refused, nothing changed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ahci.h"
#include "dev-state.h"
#include "fake-host.h"
#include "pci-config.h"
#include "tap.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	(1u << 20)
#define RAM_END		(RAM_BASE + RAM_SIZE)
#define CLB(p)		(RAM_BASE + 0x400 * (p))
#define FB(p)		(RAM_BASE + 0x1000 + 0x100 * (p))
#define CT(s)		(RAM_BASE + 0x2000 + 0x200 * (s))
#define DATA		(RAM_BASE + 0x10000)
#define DISK_SECTORS	64
#define CD_BLOCKS	20

#define PORT(p, r)	(0x100 + 0x80 * (p) + (r))

static struct fake_host fh = FAKE_HOST_INITIALIZER(fh);
static struct ahci *dev;
static uint8_t disk[DISK_SECTORS * 512];
static uint8_t cd[CD_BLOCKS * 2048];

/* --- a backend on an image in memory, completed by the test ------------ */

struct image {
	uint8_t *bytes;
	size_t size;
};

static struct image disk_img = { disk, sizeof(disk) };
static struct image cd_img = { cd, sizeof(cd) };

static struct {
	struct blk_io *io[16];
	struct image *img[16];
	unsigned int n;
	unsigned int submitted;
	int fail;		/* the next completion's result */
} q;

static int
mem_submit(void *ctx, struct blk_io *io)
{
	if (q.n == 16)
		return -EAGAIN;
	q.img[q.n] = ctx;
	q.io[q.n++] = io;
	q.submitted++;
	return 0;
}

/* The oldest request completes, as a backend thread would. */
static void
complete_one(void)
{
	struct blk_io *io = q.io[0];
	struct image *img = q.img[0];
	uint64_t off = io->offset;
	int r = q.fail;

	q.n--;
	memmove(&q.io[0], &q.io[1], q.n * sizeof(q.io[0]));
	memmove(&q.img[0], &q.img[1], q.n * sizeof(q.img[0]));
	for (unsigned int i = 0; i < io->niov && r == 0; i++) {
		if (off > img->size || io->iov[i].iov_len > img->size - off) {
			r = -EIO;
			break;
		}
		if (io->op == BLK_READ)
			memcpy(io->iov[i].iov_base, img->bytes + off,
			    io->iov[i].iov_len);
		else if (io->op == BLK_WRITE)
			memcpy(img->bytes + off, io->iov[i].iov_base,
			    io->iov[i].iov_len);
		off += io->iov[i].iov_len;
	}
	q.fail = 0;
	io->done(io, r);
}

static void
complete_all(void)
{
	while (q.n > 0)
		complete_one();
}

static void
mem_drain(void *ctx)
{
	complete_all();
}

static const struct blk_backend_ops mem_ops = {
	.submit = mem_submit,
	.drain = mem_drain,
};

/* --- the driver's side --------------------------------------------------- */

static void *
gmem(uint64_t gpa)
{
	return fh.mem + (gpa - RAM_BASE);
}

static uint32_t
rd(uint64_t off)
{
	uint32_t v;

	ahci_device_ops.read(dev, PCI_BAR_OFFSET(AHCI_BAR) + off, &v, 4);
	return v;
}

static void
wr(uint64_t off, uint32_t v)
{
	ahci_device_ops.write(dev, PCI_BAR_OFFSET(AHCI_BAR) + off, &v, 4);
}

static void
put32(uint64_t gpa, uint32_t v)
{
	memcpy(gmem(gpa), &v, 4);
}

static uint32_t
get32(uint64_t gpa)
{
	uint32_t v;

	memcpy(&v, gmem(gpa), 4);
	return v;
}

struct prd {
	uint64_t addr;
	uint32_t dw3;		/* byte count - 1, as the PRD holds it */
};

#define PRD(a, n)	((struct prd){ (a), (uint32_t)(n) - 1 })

/*
 * Write slot s's header and table on port p: an H2D FIS with command
 * cmd, features, lba, count; packet cdb (12 bytes) or NULL; the PRDs.
 */
static void
setup_slot(unsigned int p, unsigned int s, uint8_t cmd, uint8_t features,
    uint64_t lba, uint16_t count, const uint8_t *cdb, const struct prd *prd,
    unsigned int nprd, bool write)
{
	uint8_t *hdr = gmem(CLB(p) + 32 * s);
	uint8_t *ct = gmem(CT(s));

	memset(hdr, 0, 32);
	memset(ct, 0, 0x80 + 16 * nprd);
	put32(CLB(p) + 32 * s, 5 | (cdb != NULL ? 0x20 : 0) |
	    (write ? 0x40 : 0) | (uint32_t)nprd << 16);
	put32(CLB(p) + 32 * s + 4, 0xdeadbeef);	/* PRDBC: the HBA's */
	put32(CLB(p) + 32 * s + 8, (uint32_t)CT(s));
	ct[0] = 0x27;
	ct[1] = 0x80;
	ct[2] = cmd;
	ct[3] = features;
	for (int i = 0; i < 3; i++) {
		ct[4 + i] = (uint8_t)(lba >> (8 * i));
		ct[8 + i] = (uint8_t)(lba >> (24 + 8 * i));
	}
	ct[7] = 0x40;
	ct[12] = (uint8_t)count;
	ct[13] = (uint8_t)(count >> 8);
	if (cdb != NULL)
		memcpy(ct + 0x40, cdb, 12);
	for (unsigned int i = 0; i < nprd; i++) {
		put32(CT(s) + 0x80 + 16 * i, (uint32_t)prd[i].addr);
		put32(CT(s) + 0x84 + 16 * i, (uint32_t)(prd[i].addr >> 32));
		put32(CT(s) + 0x8c + 16 * i, prd[i].dw3);
	}
}

/* Issue slot s on port p and let the backend finish: PxCI afterwards. */
static uint32_t
issue(unsigned int p, unsigned int s)
{
	wr(PORT(p, 0x38), 1u << s);
	complete_all();
	return rd(PORT(p, 0x38)) & (1u << s);
}

/* An ATA command on the disk with one PRD at DATA: 0 if it succeeded. */
static uint32_t
ata(uint8_t cmd, uint64_t lba, uint16_t count, uint32_t len)
{
	struct prd prd = PRD(DATA, len);

	setup_slot(0, 0, cmd, 0, lba, count, NULL, &prd, 1, false);
	return issue(0, 0);
}

/* A packet command on the CD-ROM with one PRD of len bytes at DATA. */
static uint32_t
packet(const uint8_t *cdb, uint32_t len)
{
	struct prd prd = PRD(DATA, len);

	memset(gmem(DATA), 0xcc, len);
	setup_slot(1, 0, 0xa0, 0x01, 0, 0, cdb, &prd, 1, false);
	return issue(1, 0);
}

/* Clear the port's status and restart it, as a driver after an error. */
static void
recover(unsigned int p)
{
	wr(PORT(p, 0x18), 0x10);		/* ST off, FRE on */
	wr(PORT(p, 0x10), 0xffffffff);
	wr(PORT(p, 0x30), 0xffffffff);
	wr(0x08, 0xffffffff);
	wr(PORT(p, 0x18), 0x11);
}

static void
port_start(unsigned int p)
{
	wr(PORT(p, 0x00), (uint32_t)CLB(p));
	wr(PORT(p, 0x04), 0);
	wr(PORT(p, 0x08), (uint32_t)FB(p));
	wr(PORT(p, 0x0c), 0);
	wr(PORT(p, 0x18), 0x10);		/* FRE */
	wr(PORT(p, 0x18), 0x11);		/* and ST */
}

static uint16_t
be16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t
be32(const uint8_t *b)
{
	return (uint32_t)be16(b) << 16 | be16(b + 2);
}

static void
test_registers(void)
{
	struct pci_config *pc = ahci_device_ops.pci(dev);
	uint32_t cap = rd(0x00);

	TAP_EQ(pci_config_get16(pc, PCI_VENDOR_ID), 0x8086, "vendor Intel");
	TAP_EQ(pci_config_get16(pc, PCI_DEVICE_ID), 0x2922, "ICH9 AHCI");
	tap_ok(pc->cfg[0x0b] == 1 && pc->cfg[0x0a] == 6 && pc->cfg[9] == 1,
	    "class 01.06.01");
	TAP_EQ(pc->bar_type[AHCI_BAR], PCI_BAR_MEM32, "ABAR is BAR 5");
	TAP_EQ(cap & 0x1f, 1, "CAP.NP: two ports");
	TAP_EQ(cap >> 8 & 0x1f, AHCI_SLOTS - 1, "CAP.NCS");
	tap_ok(cap & 1u << 31, "CAP.S64A");
	TAP_EQ(rd(0x0c), 3, "PI");
	TAP_EQ(rd(0x10), 0x00010300, "VS 1.3");
	TAP_EQ(rd(0x04), 1u << 31, "GHC.AE set, IE clear");
	TAP_EQ(rd(PORT(0, 0x24)), 0x00000101, "disk signature");
	TAP_EQ(rd(PORT(1, 0x24)), 0xeb140101, "ATAPI signature");
	TAP_EQ(rd(PORT(0, 0x28)), 0x113, "disk link up");
	TAP_EQ(rd(PORT(0, 0x20)) & 0x89, 0x00, "TFD: not busy, no DRQ");

	/* Ports beyond CAP.NP: nothing there. */
	wr(PORT(2, 0x00), 0x12345400);
	wr(PORT(2, 0x38), 1);
	TAP_EQ(rd(PORT(2, 0x00)), 0, "absent port's CLB reads 0");
	TAP_EQ(rd(PORT(2, 0x24)), 0, "absent port's SIG reads 0");
	TAP_EQ(rd(PORT(5, 0x28)), 0, "port 5: no SSTS");
	TAP_EQ(rd(0xffc), 0, "the end of ABAR reads 0");
	TAP_EQ(rd(PORT(0, 0x00)), 0, "port 0 untouched");
}

static void
test_identify(void)
{
	struct prd prd[2] = { PRD(DATA, 256), PRD(DATA + 0x1000, 256) };
	uint8_t *rfis = gmem(FB(0));
	uint16_t id[256];
	uint8_t sum = 0;

	port_start(0);
	port_start(1);
	TAP_EQ(rd(PORT(0, 0x18)) & 0xc011, 0xc011, "ST, FRE, CR and FR set");
	setup_slot(0, 0, 0xec, 0, 0, 0, NULL, prd, 2, false);
	TAP_EQ(issue(0, 0), 0, "IDENTIFY DEVICE completes");
	memcpy(id, gmem(DATA), 256);
	memcpy((uint8_t *)id + 256, gmem(DATA + 0x1000), 256);
	TAP_EQ(id[0], 0x0040, "word 0: fixed ATA disk");
	tap_ok(id[100] == DISK_SECTORS && id[101] == 0 && id[60] ==
	    DISK_SECTORS, "capacity in LBA28 and LBA48 words");
	tap_ok(id[83] & 1u << 10, "LBA48");
	tap_ok(memcmp(&id[27], "MVDM", 4) == 0, "model, byte-swapped words");
	for (int i = 0; i < 256; i++)
		sum = (uint8_t)(sum + (id[i] & 0xff) + (id[i] >> 8));
	tap_ok((id[255] & 0xff) == 0xa5 && sum == 0, "integrity word");
	TAP_EQ(get32(CLB(0) + 4), 512, "PRDBC: 512 bytes over two PRDs");
	TAP_EQ(rfis[0x20], 0x5f, "PIO setup FIS");
	tap_ok(rfis[0x40] == 0x34 && rfis[0x42] == 0x50 && rfis[0x43] == 0,
	    "D2H register FIS: DRDY, no error");
	TAP_EQ(rd(PORT(0, 0x10)) & 3, 3, "PxIS: DHRS and PSS");
	TAP_EQ(rd(PORT(0, 0x20)), 0x50, "TFD");
	wr(PORT(0, 0x10), 3);
	TAP_EQ(rd(PORT(0, 0x10)), 0, "PxIS write-one-to-clear");
}

static void
test_intx(void)
{
	unsigned int rises = fh.rises[0];

	wr(PORT(0, 0x14), 0x1);			/* DHRS */
	wr(0x04, 1u << 1);			/* GHC.IE */
	tap_ok(!fh.irq[0], "no interrupt while nothing is pending");
	TAP_EQ(ata(0xe7, 0, 0, 512), 0, "FLUSH CACHE");
	tap_ok(fh.irq[0] && fh.rises[0] == rises + 1, "INTx raised");
	TAP_EQ(rd(0x08), 1, "IS: port 0");
	wr(0x08, 1);
	tap_ok(fh.irq[0], "IS cleared while PxIS pends: still up");
	wr(PORT(0, 0x10), 0xffffffff);
	wr(0x08, 1);
	tap_ok(!fh.irq[0], "PxIS and IS cleared: lowered");
	TAP_EQ(fh.irq_bad, 0, "only level changes reported");
}

static void
test_dma(void)
{
	/* Four sectors over three PRDs of 512, 1024 and 512 bytes. */
	struct prd wprd[3] = {
		PRD(DATA, 512), PRD(DATA + 0x2000, 1024),
		PRD(DATA + 0x4000, 512),
	};
	struct prd rprd[2] = {
		PRD(DATA + 0x8000, 1536), PRD(DATA + 0xa000, 512),
	};
	uint8_t *src[3] = { gmem(DATA), gmem(DATA + 0x2000),
	    gmem(DATA + 0x4000) };
	unsigned int i, sub;

	for (i = 0; i < 512; i++) {
		src[0][i] = (uint8_t)i;
		src[2][i] = (uint8_t)(i ^ 0x5a);
	}
	for (i = 0; i < 1024; i++)
		src[1][i] = (uint8_t)(i * 3);
	setup_slot(0, 2, 0x35, 0, 3, 4, NULL, wprd, 3, true);
	wr(PORT(0, 0x38), 1u << 2);
	TAP_EQ(q.n, 1, "WRITE DMA EXT is with the backend");
	TAP_EQ(rd(PORT(0, 0x38)), 1u << 2, "CI set until it completes");
	complete_all();
	TAP_EQ(rd(PORT(0, 0x38)), 0, "then cleared");
	TAP_EQ(get32(CLB(0) + 2 * 32 + 4), 2048, "PRDBC 2048");
	tap_ok(memcmp(disk + 3 * 512, src[0], 512) == 0 &&
	    memcmp(disk + 4 * 512, src[1], 1024) == 0 &&
	    memcmp(disk + 6 * 512, src[2], 512) == 0,
	    "the image holds the three buffers in order");

	setup_slot(0, 1, 0x25, 0, 3, 4, NULL, rprd, 2, false);
	TAP_EQ(issue(0, 1), 0, "READ DMA EXT over two other PRDs");
	tap_ok(memcmp(gmem(DATA + 0x8000), disk + 3 * 512, 1536) == 0 &&
	    memcmp(gmem(DATA + 0xa000), disk + 6 * 512, 512) == 0,
	    "read back what was written");

	/* 28-bit READ DMA; READ past the end fails; recovery. */
	TAP_EQ(ata(0xc8, 6, 1, 512), 0, "READ DMA");
	tap_ok(memcmp(gmem(DATA), src[2], 512) == 0, "sector 6");
	sub = q.submitted;
	TAP_EQ(ata(0x25, DISK_SECTORS - 1, 2, 1024), 1,
	    "READ past the end: the slot stays issued");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 30, "PxIS.TFES");
	TAP_EQ(rd(PORT(0, 0x20)), 0x1441, "TFD: ERR, error IDNF|ABRT");
	TAP_EQ(q.submitted, sub, "nothing reached the backend");
	recover(0);
	TAP_EQ(rd(PORT(0, 0x38)), 0, "clearing ST cleared CI");
	TAP_EQ(ata(0x25, 0, 1, 512), 0, "and the port runs again");
	TAP_EQ(ata(0xef, 0, 0, 0), 1, "SET FEATURES subcommand 0: ABRT");
	recover(0);
	TAP_EQ(ata(0xea, 0, 0, 0), 0, "FLUSH CACHE EXT");
	q.fail = -EIO;
	TAP_EQ(ata(0x25, 0, 1, 512), 1, "a backend error fails the read");
	TAP_EQ(rd(PORT(0, 0x20)) >> 8 & 0x40, 0x40, "UNC");
	recover(0);
}

static void
test_atapi(void)
{
	uint8_t *d = gmem(DATA);
	uint16_t id[256];
	struct prd prd = PRD(DATA, 512);

	setup_slot(1, 0, 0xa1, 0, 0, 0, NULL, &prd, 1, false);
	TAP_EQ(issue(1, 0), 0, "IDENTIFY PACKET DEVICE");
	memcpy(id, d, 512);
	TAP_EQ(id[0], 0x85c0, "ATAPI CD-ROM, removable, 12-byte packets");
	setup_slot(1, 0, 0xec, 0, 0, 0, NULL, &prd, 1, false);
	TAP_EQ(issue(1, 0), 1, "IDENTIFY DEVICE aborts on a packet device");
	tap_ok(((uint8_t *)gmem(FB(1)))[0x45] == 0x14 &&
	    ((uint8_t *)gmem(FB(1)))[0x46] == 0xeb, "... with the signature");
	recover(1);

	TAP_EQ(packet((uint8_t[12]){ 0x00 }, 0), 0, "TEST UNIT READY");
	TAP_EQ(packet((uint8_t[12]){ 0x12, 0, 0, 0, 96 }, 96), 0, "INQUIRY");
	tap_ok(d[0] == 5 && d[1] == 0x80 && memcmp(d + 8, "VMMD", 4) == 0,
	    "CD/DVD, removable, vendor");
	TAP_EQ(get32(CLB(1) + 4), 36, "INQUIRY returns 36 bytes");
	TAP_EQ(packet((uint8_t[12]){ 0x12, 0, 0, 0, 8 }, 96), 0,
	    "INQUIRY for 8 bytes");
	tap_ok(get32(CLB(1) + 4) == 8 && d[8] == 0xcc,
	    "the allocation length cuts it");
	TAP_EQ(packet((uint8_t[12]){ 0x25 }, 8), 0, "READ CAPACITY");
	tap_ok(be32(d) == CD_BLOCKS - 1 && be32(d + 4) == 2048,
	    "last block and 2048-byte blocks");
	TAP_EQ(packet((uint8_t[12]){ 0x28, 0, 0, 0, 0, 16, 0, 0, 1 }, 2048),
	    0, "READ(10) of block 16");
	tap_ok(memcmp(d, "\001CD001", 6) == 0, "the volume descriptor");
	TAP_EQ(packet((uint8_t[12]){ 0xa8, 0, 0, 0, 0, 17, 0, 0, 0, 2 },
	    4096), 0, "READ(12) of blocks 17-18");
	tap_ok(d[0] == 17 && d[2048] == 18, "both blocks");
	TAP_EQ(packet((uint8_t[12]){ 0x43, 0, 0, 0, 0, 0, 0, 0, 100 }, 100), 0,
	    "READ TOC format 0");
	tap_ok(be16(d) == 18 && d[2] == 1 && d[3] == 1, "header: tracks 1-1");
	tap_ok(d[6] == 1 && be32(d + 8) == 0 && d[14] == 0xaa &&
	    be32(d + 16) == CD_BLOCKS, "track 1 at 0, lead-out at the end");
	TAP_EQ(packet((uint8_t[12]){ 0x43, 2, 0, 0, 0, 0, 0, 0, 100 }, 100), 0,
	    "READ TOC in MSF");
	tap_ok(d[9] == 0 && d[10] == 2 && d[11] == 0, "track 1 at 00:02:00");
	TAP_EQ(packet((uint8_t[12]){ 0x46, 0, 0, 0, 0, 0, 0, 0, 128 }, 128), 0,
	    "GET CONFIGURATION");
	tap_ok(be16(d + 6) == 0x0008 && be16(d + 8) == 0 && be16(d + 12) ==
	    0x0010 && be16(d + 16) == 0x0008 && (d[18] & 1),
	    "current profile CD-ROM, profile list first");
	TAP_EQ(be32(d) + 4, get32(CLB(1) + 4), "data length matches");
	TAP_EQ(packet((uint8_t[12]){ 0x46, 2, 0, 0x10, 0, 0, 0, 0, 128 }, 128),
	    0, "GET CONFIGURATION, RT 2: one feature");
	tap_ok(be32(d) == 16 && be16(d + 8) == 0x0010 &&
	    be32(d + 12) == 2048, "Random Readable, 2048-byte blocks");
	TAP_EQ(packet((uint8_t[12]){ 0x5a, 0, 0x2a, 0, 0, 0, 0, 0, 64 }, 64),
	    0, "MODE SENSE(10) page 2A");
	tap_ok(be16(d) == 28 && d[8] == 0x2a && d[9] == 0x14,
	    "capabilities page");
	TAP_EQ(packet((uint8_t[12]){ 0x4a, 1, 0, 0, 0x10, 0, 0, 0, 8 }, 8), 0,
	    "GET EVENT STATUS NOTIFICATION");
	tap_ok(d[2] == 4 && d[3] == 0x10 && d[5] == 2,
	    "media class, media present");
	TAP_EQ(packet((uint8_t[12]){ 0x1e, 0, 0, 0, 1 }, 0), 0,
	    "PREVENT MEDIUM REMOVAL");
	TAP_EQ(packet((uint8_t[12]){ 0x1b, 0, 0, 0, 1 }, 0), 0,
	    "START STOP UNIT");

	/* Errors: CHECK CONDITION, then REQUEST SENSE says why. */
	TAP_EQ(packet((uint8_t[12]){ 0xff }, 0), 1, "unknown opcode fails");
	TAP_EQ(rd(PORT(1, 0x20)), 0x5041, "TFD: ERR, sense key 5 in ERROR");
	tap_ok(rd(PORT(1, 0x10)) & 1u << 30, "PxIS.TFES");
	recover(1);
	TAP_EQ(packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18), 0,
	    "REQUEST SENSE");
	tap_ok(d[0] == 0x70 && d[2] == 5 && d[12] == 0x20,
	    "ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE");
	TAP_EQ(packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18), 0,
	    "REQUEST SENSE again");
	tap_ok(d[2] == 0 && d[12] == 0, "the sense was reported once");
	TAP_EQ(packet((uint8_t[12]){ 0x28, 0, 0, 0, 0, CD_BLOCKS - 1, 0, 0,
	    2 }, 4096), 1, "READ(10) past the end fails");
	recover(1);
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	tap_ok(d[2] == 5 && d[12] == 0x21,
	    "LOGICAL BLOCK ADDRESS OUT OF RANGE");
	TAP_EQ(packet((uint8_t[12]){ 0x5a, 0, 0xc1, 0, 0, 0, 0, 0, 64 }, 64),
	    1, "MODE SENSE of saved values fails");
	recover(1);
	setup_slot(1, 0, 0x35, 0, 0, 1, NULL, &prd, 1, true);
	TAP_EQ(issue(1, 0), 1, "WRITE DMA EXT on the CD-ROM: ABRT");
	recover(1);
}

/*
 * A media change through the HBA: the tray opens empty, the guest's
 * reads fail NOT READY, another image arrives with UNIT ATTENTION and
 * is the one read; a lock makes a host eject -EBUSY unless forced; a
 * port without a CD-ROM refuses.
 */
static void
test_media(const struct blk_backend *cbe)
{
	struct blk_backend small = *cbe;
	uint8_t *d = gmem(DATA);
	unsigned int sub = q.submitted;

	small.size = 20 * 2048;
	TAP_EQ(packet((uint8_t[12]){ 0x1e, 0, 0, 0, 0 }, 0), 0,
	    "the guest allows removal (test_atapi prevented it)");
	TAP_EQ(ahci_media(dev, 0, NULL, false), -EINVAL,
	    "port 0 (a disk) has no tray");
	TAP_EQ(ahci_media(dev, 1, NULL, false), 0, "the host ejects the CD");
	TAP_EQ(packet((uint8_t[12]){ 0x00 }, 0), 1,
	    "TEST UNIT READY fails");
	recover(1);
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	tap_ok(d[2] == 2 && d[12] == 0x3a && d[13] == 2,
	    "NOT READY, MEDIUM NOT PRESENT, tray open");
	TAP_EQ(packet((uint8_t[12]){ 0x28, 0, 0, 0, 0, 16, 0, 0, 1 }, 2048),
	    1, "READ(10) fails");
	recover(1);
	TAP_EQ(ahci_media(dev, 1, &small, false), 0, "another image goes in");
	TAP_EQ(packet((uint8_t[12]){ 0x4a, 1, 0, 0, 0x10, 0, 0, 0, 8 }, 8),
	    0, "GET EVENT STATUS NOTIFICATION");
	tap_ok(d[4] == 2 && d[5] == 2, "new media, present");
	TAP_EQ(packet((uint8_t[12]){ 0x00 }, 0), 1,
	    "TEST UNIT READY fails once");
	recover(1);
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	tap_ok(d[2] == 6 && d[12] == 0x28 && d[13] == 0,
	    "UNIT ATTENTION, MEDIUM MAY HAVE CHANGED (06/28/00)");
	TAP_EQ(packet((uint8_t[12]){ 0x25 }, 8), 0, "READ CAPACITY");
	TAP_EQ(be32(d), 19, "the new image's last block");
	TAP_EQ(packet((uint8_t[12]){ 0x28, 0, 0, 0, 0, 16, 0, 0, 1 }, 2048),
	    0, "READ(10) of the new medium");
	tap_ok(q.submitted > sub && q.img[q.n > 0 ? q.n - 1 : 0] == &cd_img,
	    "through its backend");
	TAP_EQ(packet((uint8_t[12]){ 0x1e, 0, 0, 0, 1 }, 0), 0,
	    "the guest prevents removal");
	TAP_EQ(ahci_media(dev, 1, cbe, false), -EBUSY,
	    "a change is refused while it does");
	TAP_EQ(ahci_media(dev, 1, cbe, true), 0, "forced, it is done");
	packet((uint8_t[12]){ 0x00 }, 0);
	recover(1);
	TAP_EQ(packet((uint8_t[12]){ 0x25 }, 8), 0, "READ CAPACITY");
	TAP_EQ(be32(d), CD_BLOCKS - 1, "the first image again");
	packet((uint8_t[12]){ 0x1e, 0, 0, 0, 0 }, 0);
}

static void
test_hostile(void)
{
	struct prd prd;
	unsigned int sub = q.submitted;

	/* A PRD whose buffer lies outside guest RAM. */
	prd = PRD(RAM_END + 0x1000, 512);
	setup_slot(0, 0, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	TAP_EQ(issue(0, 0), 1, "PRD outside RAM: the slot stays issued");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 29, "PxIS.HBFS");
	TAP_EQ(q.submitted, sub, "nothing reached the backend");
	recover(0);
	/* Its buffer starts in RAM and runs out of it. */
	prd = PRD(RAM_END - 512, 4096);
	setup_slot(0, 0, 0x25, 0, 0, 8, NULL, &prd, 1, false);
	TAP_EQ(issue(0, 0), 1, "PRD running out of RAM");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 29, "PxIS.HBFS");
	recover(0);
	/* The table itself outside RAM. */
	prd = PRD(DATA, 512);
	setup_slot(0, 0, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	put32(CLB(0) + 8, 0xfffff000);
	TAP_EQ(issue(0, 0), 1, "command table outside RAM");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 29, "PxIS.HBFS");
	recover(0);
	/* A byte count over the 4 MiB limit (reserved bits set). */
	prd = (struct prd){ DATA, 0x7fffffff };
	setup_slot(0, 0, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	TAP_EQ(issue(0, 0), 1, "PRD byte count over 4 MiB");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 30, "task file error");
	TAP_EQ(rd(PORT(0, 0x20)) >> 8, 0x04, "ABRT");
	recover(0);
	/* Too short a PRDT. */
	prd = PRD(DATA, 512);
	setup_slot(0, 0, 0x25, 0, 0, 2, NULL, &prd, 1, false);
	TAP_EQ(issue(0, 0), 1, "a PRDT shorter than the transfer");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 24, "PxIS.OFS");
	recover(0);
	/* A command list outside RAM. */
	wr(PORT(0, 0x18), 0x10);
	wr(PORT(0, 0x00), 0xfffffc00);
	wr(PORT(0, 0x04), 0xffffffff);
	wr(PORT(0, 0x18), 0x11);
	TAP_EQ(issue(0, 0), 1, "command list at the top of the address space");
	tap_ok(rd(PORT(0, 0x10)) & 1u << 29, "PxIS.HBFS");
	wr(PORT(0, 0x18), 0x10);
	port_start(0);
	recover(0);
	TAP_EQ(q.submitted, sub, "no request reached the backend");

	/* Slots beyond CAP.NCS, and CI while the port is stopped. */
	setup_slot(0, 0, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	wr(PORT(0, 0x38), 1u << AHCI_SLOTS | 1u << 31);
	TAP_EQ(rd(PORT(0, 0x38)), 0, "slots beyond CAP.NCS are not issued");
	TAP_EQ(q.submitted, sub, "and start nothing");
	wr(PORT(0, 0x18), 0x10);
	wr(PORT(0, 0x38), 1);
	TAP_EQ(rd(PORT(0, 0x38)), 0, "CI ignores writes while ST is clear");
	wr(PORT(0, 0x18), 0x11);
	TAP_EQ(ata(0x25, 0, 1, 512), 0, "the port still works");
	TAP_EQ(ata(0x99, 0, 0, 0), 1, "an unknown command: ABRT");
	recover(0);
}

static void
test_stop_in_flight(void)
{
	struct prd prd = PRD(DATA, 512);
	uint8_t *rfis = gmem(FB(0));

	setup_slot(0, 3, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	wr(PORT(0, 0x38), 1u << 3);
	TAP_EQ(q.n, 1, "a read in flight");
	wr(PORT(0, 0x18), 0x10);
	TAP_EQ(rd(PORT(0, 0x38)), 0, "stopped: CI cleared");
	tap_ok(rd(PORT(0, 0x18)) & 1u << 15, "CR stays while it is in flight");
	/* The same slot issued again waits for the old request. */
	wr(PORT(0, 0x18), 0x11);
	wr(PORT(0, 0x38), 1u << 3);
	TAP_EQ(q.n, 1, "the slot is not reused under the backend");
	rfis[0x42] = 0xee;
	complete_one();
	TAP_EQ(q.n, 1, "the old request ended; the new one started");
	TAP_EQ(rfis[0x42], 0xee, "the old one posted nothing");
	complete_all();
	TAP_EQ(rd(PORT(0, 0x38)), 0, "the new one completed");
	wr(PORT(0, 0x18), 0x10);
	tap_ok(!(rd(PORT(0, 0x18)) & 1u << 15), "CR clear when idle");
	wr(PORT(0, 0x18), 0x11);
}

static void
test_msi_and_reset(void)
{
	struct pci_config *pc = ahci_device_ops.pci(dev);
	unsigned int cap = pc->cfg[PCI_CAPABILITY_LIST], msis = fh.msis;
	uint32_t v;

	TAP_EQ(pc->cfg[cap], 0x05, "an MSI capability");
	v = 0xfee00000;
	pci_config_write(pc, cap + 4, &v, 4);
	v = 0;
	pci_config_write(pc, cap + 8, &v, 4);
	v = 0x4041;
	pci_config_write(pc, cap + 12, &v, 2);
	v = 1;
	pci_config_write(pc, cap + 2, &v, 2);
	ahci_device_ops.pci_written(dev, cap + 2, 2);
	tap_ok(fh.route[0].on && fh.route[0].addr == 0xfee00000 &&
	    fh.route[0].data == 0x4041, "the host is told the message");
	wr(PORT(0, 0x10), 0xffffffff);
	wr(0x08, 0xffffffff);
	msis = fh.msis;
	TAP_EQ(ata(0xe7, 0, 0, 512), 0, "FLUSH CACHE");
	tap_ok(fh.msis == msis + 1 && fh.msi_data == 0x4041 &&
	    fh.msi_addr == 0xfee00000, "one MSI");
	tap_ok(!fh.irq[0], "INTx stays low");
	TAP_EQ(ata(0xe7, 0, 0, 512), 0, "another, the first not cleared");
	TAP_EQ(fh.msis, msis + 1, "no new event: no new message");

	wr(0x04, 1);				/* GHC.HR */
	TAP_EQ(rd(0x04), 1u << 31, "HBA reset: IE clear, HR done");
	tap_ok(rd(PORT(0, 0x00)) == 0 && rd(PORT(0, 0x18)) == 0x6 &&
	    rd(PORT(0, 0x10)) == 0, "port registers at power-on");
	TAP_EQ(rd(PORT(1, 0x24)), 0xeb140101, "signatures again");
}

/* The resets a driver does: COMRESET through PxSCTL, SRST by FIS. */
static void
test_resets(void)
{
	uint8_t *rfis = gmem(FB(1)), *d = gmem(DATA);
	uint8_t *ct = gmem(CT(0));

	/* A sense pending, then COMRESET: the drive forgets it. */
	TAP_EQ(packet((uint8_t[12]){ 0xff }, 0), 1, "a failed packet");
	recover(1);
	memset(rfis + 0x40, 0, 20);
	wr(PORT(1, 0x2c), 0x301);		/* DET 1: COMRESET */
	TAP_EQ(rd(PORT(1, 0x28)), 0, "no link during COMRESET");
	wr(PORT(1, 0x2c), 0x300);
	TAP_EQ(rd(PORT(1, 0x28)), 0x113, "the link is back");
	tap_ok(rfis[0x40] == 0x34 && rfis[0x45] == 0x14 && rfis[0x46] == 0xeb,
	    "the drive sent its signature FIS");
	TAP_EQ(rd(PORT(1, 0x20)) & 0x88, 0, "TFD not busy");
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	TAP_EQ(d[2], 0, "no sense after COMRESET");

	/* Software reset: H2D FISes with C clear, SRST set then clear. */
	TAP_EQ(packet((uint8_t[12]){ 0xff }, 0), 1, "a failed packet");
	recover(1);
	memset(rfis + 0x40, 0, 20);
	setup_slot(1, 0, 0, 0, 0, 0, NULL, NULL, 0, false);
	ct[1] = 0;
	ct[15] = 0x04;
	TAP_EQ(issue(1, 0), 0, "SRST set: the slot completes");
	TAP_EQ(rfis[0x40], 0, "no FIS yet");
	ct[15] = 0;
	TAP_EQ(issue(1, 0), 0, "SRST clear");
	tap_ok(rfis[0x40] == 0x34 && rfis[0x46] == 0xeb, "signature FIS");
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	TAP_EQ(d[2], 0, "no sense after SRST");

	/* DEVICE RESET, SET FEATURES on the CD-ROM. */
	setup_slot(1, 0, 0x08, 0, 0, 0, NULL, NULL, 0, false);
	TAP_EQ(issue(1, 0), 0, "DEVICE RESET");
	setup_slot(1, 0, 0xef, 0x03, 0, 0x45, NULL, NULL, 0, false);
	TAP_EQ(issue(1, 0), 0, "SET FEATURES transfer mode");

	/* A read the backend fails: MEDIUM ERROR. */
	q.fail = -EIO;
	TAP_EQ(packet((uint8_t[12]){ 0x28, 0, 0, 0, 0, 1, 0, 0, 1 }, 2048),
	    1, "a failed read");
	recover(1);
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	tap_ok(d[2] == 3 && d[12] == 0x11, "MEDIUM ERROR, UNRECOVERED READ");
	/* A response longer than the PRDT: cut to what it holds. */
	memset(d, 0xcc, 64);
	TAP_EQ(packet((uint8_t[12]){ 0x12, 0, 0, 0, 96 }, 8), 0,
	    "INQUIRY into 8 bytes of PRDT");
	tap_ok(get32(CLB(1) + 4) == 8 && d[8] == 0xcc, "8 bytes moved");
	TAP_EQ(packet((uint8_t[12]){ 0xa8, 0, 0, 0, 0, 0, 0, 1, 0, 0 }, 2048),
	    1, "READ(12) of 65536 blocks, more than the medium");
	recover(1);
}

/* A read-only disk and an empty port. */
static void
test_readonly(void)
{
	struct blk_backend be = {
		.ops = &mem_ops, .ctx = &disk_img, .size = sizeof(disk),
		.readonly = true,
	};
	struct ahci_drive drives[2] = {
		{ AHCI_DRIVE_DISK, &be }, { AHCI_DRIVE_NONE, NULL },
	};
	struct ahci *keep = dev;
	unsigned int sub;

	dev = ahci_new(&fh.host, drives, 2);
	tap_ok(dev != NULL, "an HBA with a read-only disk, an empty port");
	port_start(0);
	port_start(1);
	TAP_EQ(rd(PORT(1, 0x28)), 0, "the empty port has no link");
	TAP_EQ(rd(PORT(1, 0x24)), 0xffffffff, "and no signature");
	TAP_EQ(ata(0x25, 0, 1, 512), 0, "a read-only disk reads");
	sub = q.submitted;
	TAP_EQ(ata(0x35, 0, 1, 512), 1, "but refuses WRITE DMA EXT");
	TAP_EQ(q.submitted, sub, "which never reaches the backend");
	ahci_free(dev);
	dev = keep;
}

/* --- state ----------------------------------------------------------- */

static struct dev_state_buf
save_state(void *d)
{
	struct dev_state_buf b = { 0 };

	if (ahci_device_ops.save(d, &b) != 0)
		tap_bail("ahci: save failed");
	return b;
}

/* Element i (es bytes each) of field name's value in section b. */
static uint8_t *
state_elem(struct dev_state_buf *b, const char *name, size_t es, size_t i)
{
	uint8_t *p = b->data + 4, *end = b->data + b->len;

	p += 1 + p[0] + 12;
	while (p < end) {
		uint8_t n = p[0], type;
		bool match = n == strlen(name) && memcmp(p + 1, name, n) == 0;
		uint32_t count;
		size_t fes;

		p += 1 + n;
		type = p[0];
		count = (uint32_t)p[1] | (uint32_t)p[2] << 8 |
		    (uint32_t)p[3] << 16 | (uint32_t)p[4] << 24;
		p += 5;
		if (match)
			return p + es * i;
		fes = type == DEV_STATE_ARRAY_U32 || type == DEV_STATE_U32 ? 4 :
		    type == DEV_STATE_ARRAY_U64 || type == DEV_STATE_U64 ? 8 :
		    1;
		p += fes * count;
	}
	tap_bail("no field %s", name);
}

/* dev's section with field name's element i set to v (es bytes): rc. */
static int
load_with(void *d, const char *name, size_t es, size_t i, uint32_t v,
    struct dev_state_error *e)
{
	struct dev_state_buf b = save_state(d);
	uint8_t *p = state_elem(&b, name, es, i);
	int rc;

	for (size_t k = 0; k < es; k++)
		p[k] = (uint8_t)(v >> (8 * k));
	e->msg[0] = '\0';
	rc = ahci_device_ops.load(d, b.data, b.len, e);
	dev_state_buf_free(&b);
	return rc;
}

static void
test_state(const struct ahci_drive *drives)
{
	struct prd prd = PRD(DATA, 512);
	struct dev_state_buf s1, s2, after, none = { 0 };
	struct dev_state_error e = { "" };
	struct ahci *keep = dev, *b;
	unsigned int cuts_ok = 1;
	uint8_t *d = gmem(DATA);
	uint32_t v;

	port_start(0);
	port_start(1);
	TAP_EQ(packet((uint8_t[12]){ 0xff }, 0), 1,
	    "an unknown packet command: the CD-ROM's port halts");
	setup_slot(0, 2, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	wr(PORT(0, 0x38), 1u << 2);
	tap_ok(q.n == 1 && ahci_device_ops.save(dev, &none) == -EBUSY &&
	    none.len == 0, "a read in flight: the save refused (-EBUSY)");
	complete_all();
	s1 = save_state(dev);

	if ((b = ahci_new(&fh.host, drives, 2)) == NULL)
		tap_bail("ahci_new");
	setup_slot(0, 2, 0x25, 0, 0, 1, NULL, &prd, 1, false);
	dev = b;
	port_start(0);
	wr(PORT(0, 0x38), 1u << 2);
	tap_ok(ahci_device_ops.load(b, s1.data, s1.len, &e) == -EBUSY,
	    "a load over a read in flight refused (%s)", e.msg);
	complete_all();
	TAP_EQ(ahci_device_ops.load(b, s1.data, s1.len, &e), 0,
	    "loaded into a fresh HBA (%s)", e.msg);
	s2 = save_state(b);
	tap_ok(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0,
	    "saved again: the same %zu bytes", s1.len);
	dev_state_buf_free(&s2);

	TAP_EQ(rd(PORT(1, 0x38)), 1u, "the CD-ROM's failed slot still "
	    "issued");
	recover(1);
	TAP_EQ(packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18), 0,
	    "REQUEST SENSE on the loaded drive");
	tap_ok((d[2] & 0xf) == 5 && d[12] == 0x20,
	    "the sense of the save: ILLEGAL REQUEST, invalid opcode");
	TAP_EQ(ata(0x25, 0, 1, 512), 0, "the disk reads");
	v = rd(PORT(0, 0x00));
	TAP_EQ(v, (uint32_t)CLB(0), "from the loaded command list");

	after = save_state(b);
	tap_ok(load_with(b, "nports", 4, 0, 3, &e) == -EINVAL,
	    "another number of ports refused (%s)", e.msg);
	tap_ok(load_with(b, "nports", 4, 0, AHCI_MAX_PORTS + 1, &e) ==
	    -EINVAL, "more ports than there can be refused (%s)", e.msg);
	tap_ok(load_with(b, "drive", 1, 0, AHCI_DRIVE_CDROM, &e) == -EINVAL,
	    "another drive on a port refused (%s)", e.msg);
	tap_ok(load_with(b, "drive", 1, 4, AHCI_DRIVE_DISK, &e) == -EINVAL,
	    "a drive on a port past the last refused (%s)", e.msg);
	tap_ok(load_with(b, "px_clb", 4, 0, (uint32_t)CLB(0) | 0x20, &e) ==
	    -EINVAL, "a misaligned command list refused (%s)", e.msg);
	tap_ok(load_with(b, "px_ci", 4, 1, 1u << 8, &e) == -EINVAL,
	    "a slot beyond CAP.NCS refused (%s)", e.msg);
	tap_ok(load_with(b, "px_cmd", 4, 5, 0x11, &e) == -EINVAL,
	    "registers of a port past the last refused (%s)", e.msg);
	tap_ok(load_with(b, "atapi_sense_key", 1, 0, 5, &e) == -EINVAL,
	    "ATAPI sense on the disk's port refused (%s)", e.msg);
	tap_ok(load_with(b, "ghc", 4, 0, 2, &e) == -EINVAL,
	    "GHC without AE refused (%s)", e.msg);
	tap_ok(load_with(b, "is", 4, 0, 1u << 2, &e) == -EINVAL,
	    "IS for a port past the last refused (%s)", e.msg);
	for (size_t cut = 0; cut < after.len; cut++)
		if (ahci_device_ops.load(b, after.data, cut, &e) >= 0)
			cuts_ok = 0;
	tap_ok(cuts_ok, "every truncation refused");
	s2 = save_state(b);
	tap_ok(s2.len == after.len && memcmp(s2.data, after.data,
	    after.len) == 0, "the refusals changed nothing");
	dev_state_buf_free(&s1);
	dev_state_buf_free(&s2);
	dev_state_buf_free(&after);
	ahci_free(b);
	dev = keep;
}

/* A little-endian u32 at p. */
static uint32_t
le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static void
le32_put(uint8_t *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (uint8_t)(v >> (8 * k));
}

/*
 * in as a version-1 writer made it: without the fields version 2 added
 * (the drive's tray and media), version 1 in its header.  out is
 * malloc'd.
 */
static struct dev_state_buf
as_version1(const struct dev_state_buf *in)
{
	static const char *const v2[] = { "atapi_empty", "atapi_tray_open",
	    "atapi_attention", "atapi_media_event", "atapi_media_changes" };
	struct dev_state_buf out = { 0 };
	const uint8_t *p = in->data + 4, *end = in->data + in->len;
	size_t hdr = 4 + 1 + p[0] + 12;
	uint32_t nfields = 0;

	if ((out.data = malloc(in->len)) == NULL)
		tap_bail("out of memory");
	memcpy(out.data, in->data, hdr);
	out.len = hdr;
	p = in->data + hdr;
	while (p < end) {
		const uint8_t *f = p;
		uint8_t n = p[0], type = p[1 + n];
		uint32_t count = le32_at(p + 2 + n);
		size_t es = type == DEV_STATE_ARRAY_U32 ||
		    type == DEV_STATE_U32 ? 4 : type == DEV_STATE_ARRAY_U64 ||
		    type == DEV_STATE_U64 ? 8 : 1;
		bool drop = false;

		p += 1 + n + 5 + es * count;
		for (size_t k = 0; k < sizeof(v2) / sizeof(v2[0]); k++)
			drop = drop || (n == strlen(v2[k]) &&
			    memcmp(f + 1, v2[k], n) == 0);
		if (drop)
			continue;
		memcpy(out.data + out.len, f, (size_t)(p - f));
		out.len += (size_t)(p - f);
		nfields++;
	}
	le32_put(out.data + hdr - 12, 1);
	le32_put(out.data + hdr - 8, nfields);
	le32_put(out.data + hdr - 4, (uint32_t)(out.len - hdr));
	return out;
}

/*
 * The drive's tray and medium in the section (version 2): a drive the
 * host emptied loads empty into a fresh HBA whose definition has a
 * disc, its tray open, and saves the same bytes; a UNIT ATTENTION for
 * a medium that is not in is refused; a version-1 section (no such
 * fields) loads as the drive the definition made: a disc in, ready.
 */
static void
test_state_media(const struct ahci_drive *drives)
{
	struct dev_state_buf s1, s2, old;
	struct dev_state_error e = { "" };
	struct ahci *keep = dev, *b;
	uint8_t *d = gmem(DATA);

	TAP_EQ(ahci_media(dev, 1, NULL, true), 0, "the host ejects the CD");
	s1 = save_state(dev);
	if ((b = ahci_new(&fh.host, drives, 2)) == NULL)
		tap_bail("ahci_new");
	dev = b;
	TAP_EQ(ahci_device_ops.load(b, s1.data, s1.len, &e), 0,
	    "the emptied drive loaded into an HBA made with a disc (%s)",
	    e.msg);
	s2 = save_state(b);
	tap_ok(s1.len == s2.len && memcmp(s1.data, s2.data, s1.len) == 0,
	    "saved again: the same %zu bytes", s1.len);
	dev_state_buf_free(&s2);
	recover(1);
	TAP_EQ(packet((uint8_t[12]){ 0x00 }, 0), 1,
	    "TEST UNIT READY fails on the loaded drive");
	recover(1);
	packet((uint8_t[12]){ 0x03, 0, 0, 0, 18 }, 18);
	tap_ok(d[2] == 2 && d[12] == 0x3a && d[13] == 2,
	    "NOT READY, MEDIUM NOT PRESENT, tray open: still ejected");
	TAP_EQ(packet((uint8_t[12]){ 0x4a, 1, 0, 0, 0x10, 0, 0, 0, 8 }, 8),
	    0, "GET EVENT STATUS NOTIFICATION");
	tap_ok(d[4] == 3 && d[5] == 1, "the removal still due, tray open, "
	    "no medium");
	tap_ok(load_with(b, "atapi_attention", 1, 1, 1, &e) == -EINVAL,
	    "a UNIT ATTENTION without a medium refused (%s)", e.msg);
	tap_ok(load_with(b, "atapi_tray_open", 1, 0, 1, &e) == -EINVAL,
	    "a tray on the disk's port refused (%s)", e.msg);
	ahci_free(b);

	/* Version 1: what the definition made. */
	old = as_version1(&s1);
	if ((b = ahci_new(&fh.host, drives, 2)) == NULL)
		tap_bail("ahci_new");
	dev = b;
	TAP_EQ(ahci_device_ops.load(b, old.data, old.len, &e), 0,
	    "a version-1 section loads (%s)", e.msg);
	recover(1);
	TAP_EQ(packet((uint8_t[12]){ 0x00 }, 0), 0,
	    "its drive holds the definition's disc, ready");
	TAP_EQ(packet((uint8_t[12]){ 0x25 }, 8), 0, "READ CAPACITY");
	TAP_EQ(be32(d), CD_BLOCKS - 1, "of the definition's image");
	dev_state_buf_free(&old);
	dev_state_buf_free(&s1);
	ahci_free(b);
	dev = keep;
}

int
main(void)
{
	struct blk_backend dbe = {
		.ops = &mem_ops, .ctx = &disk_img, .size = sizeof(disk),
		.serial = "disk-0",
	};
	struct blk_backend cbe = {
		.ops = &mem_ops, .ctx = &cd_img, .size = sizeof(cd),
	};
	struct ahci_drive drives[2] = {
		{ AHCI_DRIVE_DISK, &dbe }, { AHCI_DRIVE_CDROM, &cbe },
	};

	fh.mem = calloc(1, RAM_SIZE);
	fh.mem_base = RAM_BASE;
	fh.mem_size = RAM_SIZE;
	for (unsigned int b = 0; b < CD_BLOCKS; b++)
		cd[b * 2048] = (uint8_t)b;
	memcpy(cd + 16 * 2048, "\001CD001", 6);

	tap_ok(ahci_new(&fh.host, drives, 0) == NULL, "no ports: refused");
	tap_ok(ahci_new(&fh.host, drives, AHCI_MAX_PORTS + 1) == NULL,
	    "too many ports: refused");
	dev = ahci_new(&fh.host, drives, 2);
	tap_ok(dev != NULL, "HBA with a disk and a CD-ROM");
	if (dev == NULL)
		tap_bail("no device");
	test_registers();
	test_identify();
	test_intx();
	test_dma();
	test_atapi();
	test_media(&cbe);
	test_hostile();
	test_stop_in_flight();
	test_resets();
	test_msi_and_reset();
	test_readonly();
	test_state(drives);
	test_state_media(drives);
	ahci_free(dev);
	free(fh.mem);
	return tap_done();
}
