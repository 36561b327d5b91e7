/*
 * libFuzzer harness for the AHCI controller as a hostile guest drives
 * it: ABAR registers, config space (MSI), and command lists, command
 * tables, ATAPI packets and PRDTs that are whatever the input wrote
 * into guest memory.  Three ports on the unit tests' fake device host:
 * a disk (read-write, or read-only by the first byte), a CD-ROM and an
 * empty port, on images in memory whose requests complete when the
 * input says.
 *
 * Input: the first byte picks the disk's mode; then one operation after
 * another until the bytes run out:
 *
 *   op % 8  0-1  ABAR write: 2 bytes of offset, size, 8 value bytes
 *           2    ABAR read: 2 bytes of offset, size
 *           3    guest memory: 2 bytes of offset, a length (mod 48),
 *                that many bytes
 *           4    a port's bring-up as a driver does it: port, then
 *                CLB and FB (2 bytes each: in guest memory, or past
 *                it when the high bit is set), FRE and ST, GHC.IE and
 *                every PxIE bit
 *           5    a command helper: port, slot, header flags and PRDT
 *                length, the H2D FIS's command, features, LBA and
 *                count, 12 packet bytes, then each PRD (address as in
 *                4, 3 bytes of byte count); then PxCI
 *           6    the backend completes its n-th pending request (ok,
 *                or an error); with none pending, a media change
 *                (ahci_media()) by n: port n % 4, eject or insert
 *                (bit 2), forced (bit 3), the image cut to 1/2^k of
 *                its size (k: bits 4-5)
 *           7    config space write: offset, size, 4 value bytes
 *
 * A finding is what ASan/UBSan report (a PRD or table that let the
 * device touch memory outside the guest's, a use of a request after
 * its slot was stopped), a crash, or a broken host contract (an
 * interrupt line set to the level it had).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ahci.h"
#include "blk-backend.h"
#include "fake-host.h"
#include "fuzz-input.h"
#include "pci-config.h"

#define RAM_BASE	0x100000ULL
#define RAM_SIZE	0x10000u	/* 64 KiB: lists, tables, buffers */
#define NPORTS		3
#define DISK_SIZE	(64u * 512)
#define CD_SIZE		(20u * 2048)
#define PENDING_MAX	32

struct image {
	uint8_t *bytes;
	size_t size;
};

/* The run's state: the HBA and its backends. */
static struct {
	struct fake_host fh;
	struct ahci *dev;
	uint8_t disk[DISK_SIZE];
	uint8_t cd[CD_SIZE];
	struct image img[2];
	struct blk_io *pending[PENDING_MAX];
	struct image *pending_img[PENDING_MAX];
	unsigned int npending;
} s;

static int
fuzz_blk_submit(void *ctx, struct blk_io *io)
{
	if (s.npending == PENDING_MAX)
		return -EAGAIN;
	s.pending_img[s.npending] = ctx;
	s.pending[s.npending++] = io;
	return 0;
}

/* Does what a backend thread would, then reports as it would. */
static void
fuzz_blk_complete(unsigned int which, bool fail)
{
	struct blk_io *io;
	struct image *img;
	uint64_t off;
	int result = fail ? -EIO : 0;

	if (s.npending == 0)
		return;
	which %= s.npending;
	io = s.pending[which];
	img = s.pending_img[which];
	s.npending--;
	s.pending[which] = s.pending[s.npending];
	s.pending_img[which] = s.pending_img[s.npending];
	off = io->offset;
	for (unsigned int i = 0; i < io->niov && result == 0; i++) {
		const struct iovec *v = &io->iov[i];

		if (off > img->size || v->iov_len > img->size - off) {
			result = -EIO;
			break;
		}
		/* ASan checks the device's iovec against guest RAM. */
		if (io->op == BLK_READ)
			memcpy(v->iov_base, img->bytes + off, v->iov_len);
		else if (io->op == BLK_WRITE)
			memcpy(img->bytes + off, v->iov_base, v->iov_len);
		off += v->iov_len;
	}
	io->done(io, result);	/* takes the device's lock */
}

static void
fuzz_blk_drain(void *ctx)
{
	while (s.npending > 0)
		fuzz_blk_complete(0, false);
}

static const struct blk_backend_ops fuzz_blk_ops = {
	.submit = fuzz_blk_submit,
	.drain = fuzz_blk_drain,
};

/* The host changes the CD (or tries another port): see the ops above. */
static void
fuzz_media(unsigned int n)
{
	static struct blk_backend cd = { .ops = &fuzz_blk_ops };

	cd.ctx = &s.img[1];
	cd.size = CD_SIZE >> (n >> 4 & 3);
	(void)ahci_media(s.dev, n % 4, n & 4 ? &cd : NULL, n & 8);
}

static void
bar_write(uint64_t off, uint64_t v, unsigned int size)
{
	ahci_device_ops.write(s.dev, PCI_BAR_OFFSET(AHCI_BAR) + off, &v, size);
}

/* An access size, 1 to 8, that fits in ABAR at *off (taken modulo). */
static unsigned int
fuzz_size(struct fuzz_in *in, uint64_t *off)
{
	unsigned int size = 1u << (fuzz_byte(in) % 4);

	*off %= AHCI_BAR_SIZE;
	while (*off + size > AHCI_BAR_SIZE)
		size >>= 1;
	return size;
}

/* A guest address from 2 input bytes: in RAM, or past it (high bit). */
static uint64_t
fuzz_gpa(struct fuzz_in *in)
{
	uint64_t v = fuzz_uint(in, 2);

	if (v & 0x8000)
		return RAM_BASE + RAM_SIZE - 64 + (v & 0x7fff);
	return RAM_BASE + (v % RAM_SIZE);
}

static uint8_t *
ram_at(uint64_t gpa, size_t len)
{
	if (gpa < RAM_BASE || gpa - RAM_BASE > RAM_SIZE ||
	    len > RAM_SIZE - (gpa - RAM_BASE))
		return NULL;
	return s.fh.mem + (gpa - RAM_BASE);
}

static void
fuzz_bring_up(struct fuzz_in *in)
{
	unsigned int p = fuzz_byte(in) % NPORTS;
	uint64_t base = 0x100 + 0x80 * p;
	uint64_t clb = fuzz_gpa(in), fb = fuzz_gpa(in);

	bar_write(base + 0x18, 0, 4);
	bar_write(base + 0x00, clb, 4);
	bar_write(base + 0x04, clb >> 32, 4);
	bar_write(base + 0x08, fb, 4);
	bar_write(base + 0x0c, fb >> 32, 4);
	bar_write(base + 0x10, 0xffffffff, 4);
	bar_write(base + 0x14, 0xffffffff, 4);
	bar_write(base + 0x18, 0x10, 4);
	bar_write(base + 0x18, 0x11, 4);
	bar_write(0x04, 2, 4);
}

/* Write one command into the port's list as the input says; issue it. */
static void
fuzz_command(struct fuzz_in *in)
{
	unsigned int p = fuzz_byte(in) % NPORTS;
	unsigned int slot = fuzz_byte(in) % 32;
	uint8_t flags = fuzz_byte(in);
	unsigned int nprd = flags >> 5;		/* 0-7 */
	uint64_t base = 0x100 + 0x80 * p, clb, ct;
	uint8_t fis[20] = { 0x27, 0x80 }, acmd[12], *hdr, *t;
	uint32_t dw0;

	/* The command list where the port has it now (PxCLB). */
	ahci_device_ops.read(s.dev, PCI_BAR_OFFSET(AHCI_BAR) + base, &dw0, 4);
	clb = dw0;
	ct = RAM_BASE + 0x8000 + 0x200 * (slot % 8);
	fis[2] = fuzz_byte(in);
	fis[3] = fuzz_byte(in);
	for (int i = 4; i < 14; i++)
		fis[i] = fuzz_byte(in);
	fis[15] = fuzz_byte(in);
	for (int i = 0; i < 12; i++)
		acmd[i] = fuzz_byte(in);
	if ((flags & 0x10) && (hdr = ram_at(clb + 32 * (slot % 8), 32))) {
		dw0 = 5 | (flags & 0x0f) << 5 | nprd << 16;
		memcpy(hdr, &dw0, 4);
		memcpy(hdr + 8, &(uint32_t){ (uint32_t)ct }, 4);
		memset(hdr + 12, 0, 4);
	}
	if ((t = ram_at(ct, 0x80 + 16 * nprd)) != NULL) {
		memcpy(t, fis, sizeof(fis));
		memcpy(t + 0x40, acmd, sizeof(acmd));
		for (unsigned int i = 0; i < nprd; i++) {
			uint64_t a = fuzz_gpa(in);
			uint32_t dbc = (uint32_t)fuzz_uint(in, 3);

			memcpy(t + 0x80 + 16 * i, &a, 8);
			memcpy(t + 0x8c + 16 * i, &dbc, 4);
		}
	}
	bar_write(base + 0x38, 1u << slot, 4);
}

static void
fuzz_check(const char *after)
{
	if (s.fh.irq_bad != 0) {
		fprintf(stderr, "ahci: interrupt line set to the level it had "
		    "after %s\n", after);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t ram[RAM_SIZE];
	struct fuzz_in in = { data, size };
	struct blk_backend disk = {
		.ops = &fuzz_blk_ops, .size = DISK_SIZE,
		.serial = "fuzz-disk",
	};
	struct blk_backend cd = {
		.ops = &fuzz_blk_ops, .size = CD_SIZE,
	};
	struct ahci_drive drives[NPORTS] = {
		{ AHCI_DRIVE_DISK, &disk },
		{ AHCI_DRIVE_CDROM, &cd },
		{ AHCI_DRIVE_NONE, NULL },
	};
	struct pci_config *pc;
	uint64_t off, v;
	unsigned int sz, n;

	memset(&s, 0, sizeof(s));
	memset(ram, 0, sizeof(ram));
	fake_host_init(&s.fh);
	s.fh.mem = ram;
	s.fh.mem_base = RAM_BASE;
	s.fh.mem_size = RAM_SIZE;
	s.img[0] = (struct image){ s.disk, sizeof(s.disk) };
	s.img[1] = (struct image){ s.cd, sizeof(s.cd) };
	disk.ctx = &s.img[0];
	cd.ctx = &s.img[1];
	disk.readonly = fuzz_byte(&in) & 1;
	s.dev = ahci_new(&s.fh.host, drives, NPORTS);
	if (s.dev == NULL)
		abort();
	pc = ahci_device_ops.pci(s.dev);

	while (in.left > 0) {
		switch (fuzz_byte(&in) % 8) {
		case 0:
		case 1:
			off = fuzz_uint(&in, 2);
			sz = fuzz_size(&in, &off);
			bar_write(off, fuzz_uint(&in, 8), sz);
			fuzz_check("an ABAR write");
			break;
		case 2:
			off = fuzz_uint(&in, 2);
			sz = fuzz_size(&in, &off);
			ahci_device_ops.read(s.dev, PCI_BAR_OFFSET(AHCI_BAR) +
			    off, &v, sz);
			break;
		case 3:
			off = fuzz_uint(&in, 2) % RAM_SIZE;
			n = fuzz_byte(&in) % 48;
			for (unsigned int i = 0; i < n && off + i < RAM_SIZE;
			    i++)
				ram[off + i] = fuzz_byte(&in);
			break;
		case 4:
			fuzz_bring_up(&in);
			fuzz_check("a bring-up");
			break;
		case 5:
			fuzz_command(&in);
			fuzz_check("a command");
			break;
		case 6:
			n = fuzz_byte(&in);
			if (s.npending == 0) {
				fuzz_media(n);
				fuzz_check("a media change");
				break;
			}
			fuzz_blk_complete(n >> 1, n & 1);
			fuzz_check("a completion");
			break;
		case 7:
			off = fuzz_byte(&in);
			sz = 1u << (fuzz_byte(&in) % 3);
			v = fuzz_uint(&in, 4);
			if (off % sz != 0 || off + sz > PCI_CONFIG_SIZE)
				break;
			pci_config_write(pc, (unsigned int)off, &v, sz);
			ahci_device_ops.pci_written(s.dev, (unsigned int)off,
			    sz);
			fuzz_check("a config write");
			break;
		}
	}
	/* The requests still pending complete in the backend's drain. */
	ahci_device_ops.free(s.dev);
	return 0;
}
