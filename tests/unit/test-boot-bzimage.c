/*
 * bzImage loader: synthetic kernels built at the boot protocol's
 * documented offsets (Documentation/arch/x86/boot.rst and zero-page.rst),
 * and, when VMMD_TEST_VMLINUZ names one, a real Debian kernel.
 *
 * The checks read guest memory at raw offsets rather than through the
 * loader's structs, so a wrong offset in the loader cannot hide.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot.h"
#include "tap.h"
#include "unit-util.h"
#include "scratch.h"
#include "guest-ram.h"

#define MiB		(1024ULL * 1024)
#define GiB		(1024ULL * MiB)

static char tmpdir[256];
static int nfiles;

/* Write buf to a new file in tmpdir; the name stays valid until exit. */
static const char *
write_file(const void *buf, size_t len)
{
	static char names[64][300];
	char *name;
	FILE *fp;

	if (nfiles == 64)
		tap_bail("too many temporary files");
	name = names[nfiles++];
	snprintf(name, sizeof(names[0]), "%s/f%d", tmpdir, nfiles);
	fp = fopen(name, "wb");
	if (fp == NULL || fwrite(buf, 1, len, fp) != len || fclose(fp) != 0)
		tap_bail("cannot write %s", name);
	return name;
}

/* A synthetic bzImage. */
struct bz {
	uint8_t *buf;
	size_t len;
	size_t setup_size;
	size_t kernel_size;
};

#define KERNEL_SIZE	(300 * 1024 + 7)	/* odd on purpose */

static struct bz
bz_new(unsigned int setup_sects, size_t kernel_size)
{
	struct bz b;
	uint8_t *h;
	size_t i, sects;

	sects = setup_sects ? setup_sects : 4;
	b.setup_size = (sects + 1) * 512;
	b.kernel_size = kernel_size;
	b.len = b.setup_size + kernel_size;
	b.buf = malloc(b.len);
	if (b.buf == NULL)
		tap_bail("out of memory");
	/* Setup code and anything after the header: recognisable junk. */
	memset(b.buf, 0xcc, b.setup_size);
	for (i = 0; i < kernel_size; i++)
		b.buf[b.setup_size + i] = (uint8_t)(i * 7 + 3);
	h = b.buf;
	h[0x1ef] = 0x5a;			/* sentinel: must not be copied */
	h[0x1f0] = 0x5a;
	h[0x1f1] = (uint8_t)setup_sects;
	put16(h + 0x1f2, 1);			/* root_flags */
	put32(h + 0x1f4, (uint32_t)((kernel_size + 15) / 16));
	put16(h + 0x1f8, 0);
	put16(h + 0x1fa, 0xffff);		/* vid_mode */
	put16(h + 0x1fc, 0);
	put16(h + 0x1fe, 0xaa55);
	h[0x200] = 0xeb;
	h[0x201] = 0x6a;			/* header ends at 0x26c */
	memcpy(h + 0x202, "HdrS", 4);
	put16(h + 0x206, 0x020f);
	put32(h + 0x208, 0);
	put16(h + 0x20c, 0x1000);
	put16(h + 0x20e, 0x3210);		/* kernel_version */
	h[0x210] = 0;				/* type_of_loader */
	h[0x211] = 0x01;			/* LOADED_HIGH */
	put16(h + 0x212, 0x8000);
	put32(h + 0x214, 0x100000);
	put32(h + 0x218, 0);
	put32(h + 0x21c, 0);
	put32(h + 0x220, 0);
	put16(h + 0x224, 0);
	h[0x226] = 0;
	h[0x227] = 0;
	put32(h + 0x228, 0);
	put32(h + 0x22c, 0x7fffffff);		/* initrd_addr_max */
	put32(h + 0x230, 0x200000);		/* kernel_alignment */
	h[0x234] = 1;				/* relocatable_kernel */
	h[0x235] = 21;				/* min_alignment */
	put16(h + 0x236, 0x0003);		/* XLF_KERNEL_64, ABOVE_4G */
	put32(h + 0x238, 0x7ff);		/* cmdline_size */
	put32(h + 0x23c, 0);
	put64(h + 0x240, 0);
	put32(h + 0x248, 0x2cc);		/* payload_offset */
	put32(h + 0x24c, 0x1234);		/* payload_length */
	put64(h + 0x250, 0);			/* setup_data */
	put64(h + 0x258, 0x1000000);		/* pref_address */
	put32(h + 0x260, 0x800000);		/* init_size */
	put32(h + 0x264, 0x190);		/* handover_offset */
	put32(h + 0x268, 0xabcd);		/* kernel_info_offset */
	return b;
}

static const char *
bz_file(const struct bz *b)
{
	return write_file(b->buf, b->len);
}

static int
has(const char *err, const char *what)
{
	return strstr(err, what) != NULL;
}

static uint64_t
walk(const uint8_t *ram, uint64_t cr3, uint64_t va, int *ok)
{
	uint64_t e;

	*ok = 0;
	e = get64(ram + (cr3 & ~0xfffULL) + ((va >> 39) & 511) * 8);
	if (!(e & 1))
		return 0;
	e = get64(ram + (e & 0xffffffffff000ULL) + ((va >> 30) & 511) * 8);
	if (!(e & 1) || (e & 0x80))
		return 0;	/* 1 GiB pages are not what we asked for */
	e = get64(ram + (e & 0xffffffffff000ULL) + ((va >> 21) & 511) * 8);
	if (!(e & 1) || !(e & 0x80) || !(e & 2))
		return 0;
	*ok = 1;
	return (e & 0xfffffffe00000ULL) | (va & 0x1fffff);
}

static void
test_basic(void)
{
	static const uint8_t zero[0x40];
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0xa5);
	struct bz b = bz_new(4, KERNEL_SIZE);
	const char *cmdline = "console=ttyS0 root=/dev/vda quiet";
	struct boot_args a = { .ncpus = 1 };
	struct boot_cpu cpu;
	uint8_t initrd[10000], *zp, *e;
	uint64_t rd, gd, code, data;
	char err[256] = "junk";
	int r, ok, okall, i;

	for (i = 0; i < (int)sizeof(initrd); i++)
		initrd[i] = (uint8_t)(i ^ 0x5c);
	a.kernel = bz_file(&b);
	a.initrd = write_file(initrd, sizeof(initrd));
	a.cmdline = cmdline;
	a.ncpus = 2;
	memset(&cpu, 0xee, sizeof(cpu));
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == 0, "basic bzImage loads (%d: %s)", r, err);
	tap_ok(err[0] == '\0', "no error text on success");
	tap_ok(boot_probe(a.kernel, err, sizeof(err)) == 0 && err[0] == '\0',
	    "boot_probe accepts it");

	TAP_EQ(cpu.mode, BOOT_CPU_LONG64, "64-bit entry");
	TAP_EQ(cpu.rip, 0x100200ULL, "RIP = 1 MiB + 0x200");
	TAP_EQ(cpu.rsi, 0x7000ULL, "RSI = boot_params at 0x7000");
	TAP_EQ(cpu.cr3, 0x9000ULL, "CR3 = PML4 at 0x9000");
	TAP_EQ(cpu.gdt_base, 0x500ULL, "GDT at 0x500");
	tap_ok(cpu.gdt_limit >= 0x1f && (cpu.gdt_limit & 7) == 7,
	    "GDT limit 0x%x covers the selectors", cpu.gdt_limit);
	TAP_EQ(cpu.code_sel, 0x10, "CS = __BOOT_CS 0x10");
	TAP_EQ(cpu.data_sel, 0x18, "DS = __BOOT_DS 0x18");
	tap_ok(cpu.rsp > 0x8000 && cpu.rsp <= 0x9000 && (cpu.rsp & 15) == 0,
	    "scratch stack at 0x%llx", (unsigned long long)cpu.rsp);

	code = get64(m.low + 0x500 + 0x10);
	data = get64(m.low + 0x500 + 0x18);
	tap_ok((code >> 47 & 1) && (code >> 43 & 1) && (code >> 44 & 1) &&
	    (code >> 53 & 1) && !(code >> 54 & 1) && !(code >> 45 & 3),
	    "GDT 0x10: present DPL0 64-bit code (0x%016llx)",
	    (unsigned long long)code);
	tap_ok((data >> 47 & 1) && !(data >> 43 & 1) && (data >> 41 & 1) &&
	    (data >> 44 & 1) && (data & 0xffff) == 0xffff &&
	    (data >> 48 & 0xf) == 0xf && (data >> 55 & 1),
	    "GDT 0x18: present writable flat data (0x%016llx)",
	    (unsigned long long)data);
	TAP_EQ(get64(m.low + 0x500), 0ULL, "GDT entry 0 is null");

	okall = 1;
	for (gd = 0; gd < 4 * GiB; gd += 2 * MiB - 4096) {
		if (walk(m.low, cpu.cr3, gd, &ok) != gd || !ok)
			okall = 0;
	}
	tap_ok(okall, "page tables identity-map the first 4 GiB");
	walk(m.low, cpu.cr3, 4 * GiB, &ok);
	tap_ok(!ok, "nothing mapped at 4 GiB");

	tap_ok(memcmp(m.low + 0x100000, b.buf + b.setup_size,
	    b.kernel_size) == 0, "protected-mode kernel copied to 1 MiB");

	zp = m.low + 0x7000;
	tap_ok(memcmp(zp, zero, 0x40) == 0,
	    "screen_info zero (orig_video_isVGA 0)");
	TAP_EQ(zp[0x1ef], 0, "sentinel not copied from the file");
	TAP_EQ(zp[0x1f1], 4, "setup_sects copied");
	TAP_EQ(get16(zp + 0x1fa), 0xffff, "vid_mode copied");
	TAP_EQ(get16(zp + 0x1fe), 0xaa55, "boot_flag copied");
	tap_ok(memcmp(zp + 0x202, "HdrS", 4) == 0, "header magic copied");
	TAP_EQ(get16(zp + 0x206), 0x020f, "version copied");
	TAP_EQ(get16(zp + 0x20e), 0x3210, "kernel_version copied");
	TAP_EQ(zp[0x210], 0xff, "type_of_loader 0xff");
	TAP_EQ(zp[0x211], 0x81, "loadflags LOADED_HIGH | CAN_USE_HEAP");
	TAP_EQ(get32(zp + 0x214), 0x100000U, "code32_start = load address");
	TAP_EQ(get16(zp + 0x224), 0xfe00, "heap_end_ptr 0xfe00");
	TAP_EQ(get32(zp + 0x228), 0x20000U, "cmd_line_ptr 0x20000");
	TAP_EQ(get32(zp + 0x0c8), 0U, "ext_cmd_line_ptr 0");
	tap_ok(strcmp((char *)m.low + 0x20000, cmdline) == 0,
	    "command line in guest memory");
	TAP_EQ(get32(zp + 0x22c), 0x7fffffffU, "initrd_addr_max copied");
	TAP_EQ(get32(zp + 0x230), 0x200000U, "kernel_alignment copied");
	TAP_EQ(zp[0x234], 1, "relocatable_kernel copied");
	TAP_EQ(get16(zp + 0x236), 0x0003, "xloadflags copied");
	TAP_EQ(get32(zp + 0x238), 0x7ffU, "cmdline_size copied");
	TAP_EQ(get32(zp + 0x24c), 0x1234U, "payload_length copied");
	TAP_EQ(get64(zp + 0x258), 0x1000000ULL, "pref_address copied");
	TAP_EQ(get32(zp + 0x260), 0x800000U, "init_size copied");
	TAP_EQ(get32(zp + 0x268), 0xabcdU, "kernel_info_offset copied");
	okall = 1;
	for (i = 0x26c; i < 0x290; i++)
		if (zp[i] != 0)
			okall = 0;
	tap_ok(okall, "nothing copied past the header's end");

	rd = get32(zp + 0x218);
	TAP_EQ(get32(zp + 0x21c), (uint32_t)sizeof(initrd), "ramdisk_size");
	TAP_EQ(get32(zp + 0x0c0), 0U, "ext_ramdisk_image 0");
	TAP_EQ(get32(zp + 0x0c4), 0U, "ext_ramdisk_size 0");
	TAP_EQ(rd, (64 * MiB - sizeof(initrd)) & ~0xfffULL,
	    "initrd as high as possible, page aligned (0x%llx)",
	    (unsigned long long)rd);
	tap_ok(memcmp(m.low + rd, initrd, sizeof(initrd)) == 0,
	    "initrd contents in guest memory");

	TAP_EQ(get64(zp + 0x70), 0xe0000ULL, "acpi_rsdp_addr 0xe0000");
	tap_ok(memcmp(m.low + 0xe0000, "RSD PTR ", 8) == 0,
	    "the RSDP is there");
	TAP_EQ(zp[0x1e8], 4, "4 e820 entries");
	e = zp + 0x2d0;
	tap_ok(get64(e) == 0 && get64(e + 8) == 0x9fc00 &&
	    get32(e + 16) == 1, "e820[0] RAM 0-0x9fc00");
	e += 20;
	tap_ok(get64(e) == 0x9fc00 && get64(e + 8) == 0x400 &&
	    get32(e + 16) == 2, "e820[1] reserved EBDA");
	e += 20;
	tap_ok(get64(e) == 0xe0000 && get64(e + 8) == 0x20000 &&
	    get32(e + 16) == 2, "e820[2] reserved ACPI tables and BIOS");
	e += 20;
	tap_ok(get64(e) == 0x100000 && get64(e + 8) == 63 * MiB &&
	    get32(e + 16) == 1, "e820[3] RAM 1 MiB-64 MiB");
	e += 20;
	tap_ok(get64(e) == 0 && get64(e + 8) == 0 && get32(e + 16) == 0,
	    "e820[4] unused");

	tap_ok(memcmp(m.low + 0x9fc00, "_MP_", 4) == 0,
	    "MP floating pointer at 0x9fc00");
	TAP_EQ(get16(m.low + 0x40e), 0x9fc0, "BDA EBDA segment");
	TAP_EQ(get16(m.low + 0x413), 639, "BDA base memory 639 KiB");

	free(b.buf);
	guest_ram_free(&m);
}

static int
load(struct boot_mem *m, const char *kernel, const char *initrd,
    const char *cmdline, char *err, size_t errlen)
{
	struct boot_args a = {
		.kernel = kernel, .initrd = initrd, .cmdline = cmdline, .ncpus = 1,
	};
	struct boot_cpu cpu;

	return boot_load(m, &a, &cpu, err, errlen);
}

static void
test_initrd(void)
{
	struct boot_mem m;
	struct bz b = bz_new(0, KERNEL_SIZE);
	uint8_t *rdbuf;
	const char *k, *rd, *big;
	uint64_t addr;
	char err[256];
	int r;

	rdbuf = calloc(1, 20 * MiB);
	if (rdbuf == NULL)
		tap_bail("out of memory");
	rdbuf[0] = 1;
	rd = write_file(rdbuf, 5000);
	big = write_file(rdbuf, 20 * MiB);

	/* setup_sects 0 means 4. */
	m = guest_ram_new(64 * MiB, 0, 0);
	k = bz_file(&b);
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	tap_ok(r == 0 && memcmp(m.low + 0x100000, b.buf + 5 * 512,
	    b.kernel_size) == 0, "setup_sects 0 counts as 4 (%s)", err);
	TAP_EQ(get32(m.low + 0x7000 + 0x218), 0U, "no initrd: ramdisk_image 0");
	TAP_EQ(get32(m.low + 0x7000 + 0x21c), 0U, "no initrd: ramdisk_size 0");
	TAP_EQ(m.low[0x20000], 0, "no command line: empty string");

	/* initrd_addr_max below the end of RAM. */
	put32(b.buf + 0x22c, 0x2ffffff);
	k = bz_file(&b);
	r = load(&m, k, rd, NULL, err, sizeof(err));
	addr = get32(m.low + 0x7000 + 0x218);
	tap_ok(r == 0 && addr == ((0x3000000 - 5000) & ~0xfffULL),
	    "initrd ends below initrd_addr_max 0x2ffffff (0x%llx)",
	    (unsigned long long)addr);

	/* Too big for the room between the kernel and initrd_addr_max. */
	put32(b.buf + 0x22c, 0x1ffffff);	/* 32 MiB; kernel ends at 24 */
	k = bz_file(&b);
	r = load(&m, k, big, NULL, err, sizeof(err));
	tap_ok(r == -EFBIG && has(err, "initrd does not fit below 0x2000000"),
	    "initrd too big for initrd_addr_max: %d (%s)", r, err);
	/* ... but it fits when the kernel allows all of RAM. */
	put32(b.buf + 0x22c, 0x7fffffff);
	k = bz_file(&b);
	r = load(&m, k, big, NULL, err, sizeof(err));
	addr = get32(m.low + 0x7000 + 0x218);
	tap_ok(r == 0 && addr == 44 * MiB && addr >= 24 * MiB,
	    "20 MiB initrd at 0x%llx, above the kernel's 24 MiB (%s)",
	    (unsigned long long)addr, err);
	guest_ram_free(&m);

	/* RAM too small for initrd plus kernel. */
	m = guest_ram_new(40 * MiB, 0, 0);
	r = load(&m, k, big, NULL, err, sizeof(err));
	tap_ok(r == -EFBIG && has(err, "initrd does not fit"),
	    "initrd does not fit in 40 MiB with the kernel: %d (%s)", r, err);
	guest_ram_free(&m);

	/* Old kernels: initrd_addr_max 0 means 0x37ffffff. */
	put32(b.buf + 0x22c, 0);
	k = bz_file(&b);
	m = guest_ram_new(1 * GiB, 0, 0);
	r = load(&m, k, rd, NULL, err, sizeof(err));
	addr = get32(m.low + 0x7000 + 0x218);
	tap_ok(r == 0 && addr == ((0x38000000 - 5000) & ~0xfffULL),
	    "initrd_addr_max 0 defaults to 0x37ffffff (0x%llx)",
	    (unsigned long long)addr);
	tap_ok(memcmp(m.low + addr, rdbuf, 5000) == 0, "initrd contents");
	/* With plenty of RAM, the loader still writes nothing above 3 GiB. */
	guest_ram_free(&m);

	/* Missing and empty initrd. */
	m = guest_ram_new(64 * MiB, 0, 0);
	r = load(&m, k, "/nonexistent/initrd", NULL, err, sizeof(err));
	tap_ok(r == -ENOENT && has(err, "initrd"),
	    "missing initrd: %d (%s)", r, err);
	r = load(&m, k, write_file("", 0), NULL, err, sizeof(err));
	tap_ok(r == -EINVAL && has(err, "empty"), "empty initrd: %d (%s)", r,
	    err);
	guest_ram_free(&m);

	free(rdbuf);
	free(b.buf);
}

static void
test_memory(void)
{
	struct boot_mem m;
	struct bz b = bz_new(4, KERNEL_SIZE);
	const char *k;
	uint8_t *e;
	char err[256];
	int r;

	/* Relocatable: 16 MiB (pref_address) + 8 MiB init_size = 24 MiB. */
	k = bz_file(&b);
	m = guest_ram_new(24 * MiB - 4096, 0, 0);
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	tap_ok(r == -EFBIG && has(err, "kernel needs RAM up to 0x1800000"),
	    "kernel does not fit: %d (%s)", r, err);
	guest_ram_free(&m);
	m = guest_ram_new(24 * MiB, 0, 0);
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	tap_ok(r == 0, "kernel fits exactly in 24 MiB (%s)", err);
	guest_ram_free(&m);

	/* Relocatable with pref_address below 1 MiB's aligned-up address. */
	put64(b.buf + 0x258, 0x100000);
	put32(b.buf + 0x230, 0x400000);
	k = bz_file(&b);
	m = guest_ram_new(12 * MiB - 4096, 0, 0);
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	tap_ok(r == -EFBIG && has(err, "0xc00000"),
	    "relocatable kernel rounds up to kernel_alignment: %s", err);
	guest_ram_free(&m);

	/* Non-relocatable: runs at pref_address whatever the alignment. */
	b.buf[0x234] = 0;
	put64(b.buf + 0x258, 0x1000000);
	k = bz_file(&b);
	m = guest_ram_new(24 * MiB, 0, 0);
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	tap_ok(r == 0, "non-relocatable kernel at pref_address fits (%s)",
	    err);
	guest_ram_free(&m);

	/* Too little RAM for the fixed layout, or into the PCI hole. */
	m = guest_ram_new(1 * MiB, 0, 0);
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	tap_ok(r == -EINVAL && has(err, "too small"), "1 MiB guest: %s", err);
	guest_ram_free(&m);

	/* High memory shows up in the e820 map. */
	m = guest_ram_new(64 * MiB, 0, 0);
	m.high_size = 2 * GiB;
	r = load(&m, k, NULL, NULL, err, sizeof(err));
	e = m.low + 0x7000 + 0x2d0 + 4 * 20;
	tap_ok(r == 0 && m.low[0x7000 + 0x1e8] == 5 &&
	    get64(e) == 4 * GiB && get64(e + 8) == 2 * GiB &&
	    get32(e + 16) == 1, "e820[4] RAM at 4 GiB with high memory");
	guest_ram_free(&m);

	free(b.buf);
}

static void
test_cmdline(void)
{
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0);
	struct bz b = bz_new(4, KERNEL_SIZE);
	char err[256], line[4096];
	const char *k;
	int r;

	put32(b.buf + 0x238, 16);
	k = bz_file(&b);
	memset(line, 'x', sizeof(line));
	line[16] = '\0';
	r = load(&m, k, NULL, line, err, sizeof(err));
	tap_ok(r == 0 && strcmp((char *)m.low + 0x20000, line) == 0,
	    "command line of exactly cmdline_size bytes (%s)", err);
	line[16] = 'x';
	line[17] = '\0';
	r = load(&m, k, NULL, line, err, sizeof(err));
	tap_ok(r == -E2BIG && has(err,
	    "command line longer than the kernel's limit of 16 bytes"),
	    "command line too long: %d (%s)", r, err);

	/* The kernel's own limit counts, not ours. */
	put32(b.buf + 0x238, 2047);
	k = bz_file(&b);
	memset(line, 'y', sizeof(line));
	line[2047] = '\0';
	r = load(&m, k, NULL, line, err, sizeof(err));
	tap_ok(r == 0 && strlen((char *)m.low + 0x20000) == 2047,
	    "2047-byte command line with cmdline_size 2047 (%s)", err);
	line[2047] = 'x';
	line[2048] = '\0';
	r = load(&m, k, NULL, line, err, sizeof(err));
	tap_ok(r == -E2BIG && has(err, "2047 bytes"), "2048 bytes: %s", err);

	free(b.buf);
	guest_ram_free(&m);
}

static void
expect_reject(const struct bz *b, size_t len, int want, const char *what,
    const char *desc)
{
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0);
	const char *k = write_file(b->buf, len);
	char err[256], perr[256];
	int r, p;

	r = load(&m, k, NULL, NULL, err, sizeof(err));
	p = boot_probe(k, perr, sizeof(perr));
	tap_ok(r == want && has(err, what) && p == want && has(perr, what),
	    "%s: load %d (%s), probe %d (%s)", desc, r, err, p, perr);
	guest_ram_free(&m);
}

static void
test_reject(void)
{
	struct bz b = bz_new(4, KERNEL_SIZE);
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0);
	struct boot_args a = { .ncpus = 1 };
	struct boot_cpu cpu;
	char err[256], name[300];
	int r;

	put16(b.buf + 0x206, 0x020a);
	expect_reject(&b, b.len, -ENOEXEC,
	    "boot protocol 2.10 is too old: 2.12 or later needed",
	    "protocol 2.10");
	put16(b.buf + 0x206, 0x020c);
	put16(b.buf + 0x236, 0x0002);
	expect_reject(&b, b.len, -ENOEXEC, "XLF_KERNEL_64",
	    "no 64-bit entry point");
	put16(b.buf + 0x236, 0x0001);
	b.buf[0x211] = 0;
	expect_reject(&b, b.len, -ENOEXEC, "zImage", "not loaded high");
	b.buf[0x211] = 1;
	put16(b.buf + 0x1fe, 0x1234);
	expect_reject(&b, b.len, -ENOEXEC, "0xaa55", "bad boot_flag");
	put16(b.buf + 0x1fe, 0xaa55);

	/* Truncated in several places. */
	expect_reject(&b, 0x100, -ENOEXEC,
	    "kernel is not a bzImage or PVH ELF image", "256-byte file");
	expect_reject(&b, 0x230, -ENOEXEC, "truncated", "cut in the header");
	expect_reject(&b, 0x800, -ENOEXEC, "truncated", "cut in setup code");
	expect_reject(&b, b.len - 100, -ENOEXEC, "truncated",
	    "cut in the kernel");
	expect_reject(&b, b.len, 0, "", "the intact image again");

	/* Not kernels at all. */
	memcpy(b.buf + 0x202, "HdrX", 4);
	expect_reject(&b, b.len, -ENOEXEC,
	    "kernel is not a bzImage or PVH ELF image", "no HdrS");
	memcpy(b.buf + 0x202, "HdrS", 4);
	expect_reject(&b, 0, -ENOEXEC,
	    "kernel is not a bzImage or PVH ELF image", "empty file");

	r = boot_probe("/nonexistent/vmlinuz", err, sizeof(err));
	tap_ok(r == -ENOENT && has(err, "cannot open kernel"),
	    "missing kernel: %d (%s)", r, err);
	snprintf(name, sizeof(name), "%s/dir", tmpdir);
	mkdir(name, 0700);
	r = boot_probe(name, err, sizeof(err));
	tap_ok(r == -EISDIR, "directory as kernel: %d (%s)", r, err);

	a.kernel = bz_file(&b);
	a.ncpus = 0;
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == -EINVAL, "0 vCPUs rejected: %s", err);
	a.ncpus = BOOT_MAX_CPUS + 1;
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == -EINVAL, "%d vCPUs rejected: %s", BOOT_MAX_CPUS + 1, err);
	a.ncpus = 64;
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == 0 && memcmp(m.low + 0x9fc00, "_MP_", 4) == 0 &&
	    get32(m.low + 0x9fc04) == 0xf0000 &&
	    memcmp(m.low + 0xf0000, "PCMP", 4) == 0,
	    "64 vCPUs: MP table at 0xf0000 (%s)", err);

	free(b.buf);
	guest_ram_free(&m);
}

/*
 * Reloading into memory a guest has scribbled over gives the same zero
 * page, GDT and page tables as a fresh load.
 */
static void
test_reload(void)
{
	struct boot_mem m1 = guest_ram_new(32 * MiB, 0, 0);
	struct boot_mem m2 = guest_ram_new(32 * MiB, 0, 0xff);
	struct bz b = bz_new(4, KERNEL_SIZE);
	const char *k = bz_file(&b);
	char err[256];
	int r1, r2;

	r1 = load(&m1, k, NULL, "a", err, sizeof(err));
	memset(m2.low, 0x77, 0x100000);
	r2 = load(&m2, k, NULL, "a", err, sizeof(err));
	tap_ok(r1 == 0 && r2 == 0 &&
	    memcmp(m1.low, m2.low, 0x30000) == 0 &&
	    memcmp(m1.low + 0x9fc00, m2.low + 0x9fc00, 0x400) == 0,
	    "loading over dirty memory gives a clean loader area");
	free(b.buf);
	guest_ram_free(&m1);
	guest_ram_free(&m2);
}

/* Load with a framebuffer; the zero page's screen_info is at 0x7000. */
static int
load_fb(struct boot_mem *m, const char *kernel, const struct boot_fb *fb,
    char *err, size_t errlen)
{
	struct boot_args a = { .kernel = kernel, .ncpus = 1, .fb = *fb };
	struct boot_cpu cpu;

	return boot_load(m, &a, &cpu, err, errlen);
}

/* A framebuffer of w x h as the platform makes it (pc-layout.h). */
static struct boot_fb
fb_make(uint32_t w, uint32_t h)
{
	struct boot_fb fb = {
		.base = PC_FRAMEBUFFER_ADDR, .width = w, .height = h,
		.stride = w * 4,
	};

	fb.size = ((uint64_t)fb.stride * h + 0xfff) & ~0xfffULL;
	return fb;
}

/*
 * Every screen_info field, at the offsets of Linux's
 * include/uapi/linux/screen_info.h.  want_units is lfb_size in 64 KiB
 * units, cols and lines the 8x16 text geometry.
 */
static void
check_screen_info(const uint8_t *si, const struct boot_fb *fb,
    uint32_t want_units, unsigned int cols, unsigned int lines,
    const char *what)
{
	int i, rest = 1;

	TAP_EQ(si[0x0f], 0x23, "%s: orig_video_isVGA = VIDEO_TYPE_VLFB", what);
	TAP_EQ(si[0x07], cols, "%s: orig_video_cols %u", what, cols);
	TAP_EQ(si[0x0e], lines, "%s: orig_video_lines %u", what, lines);
	TAP_EQ(get16(si + 0x10), 16, "%s: orig_video_points 16", what);
	TAP_EQ(get16(si + 0x12), fb->width, "%s: lfb_width", what);
	TAP_EQ(get16(si + 0x14), fb->height, "%s: lfb_height", what);
	TAP_EQ(get16(si + 0x16), 32, "%s: lfb_depth 32", what);
	TAP_EQ(get32(si + 0x18), (uint32_t)fb->base, "%s: lfb_base", what);
	TAP_EQ(get32(si + 0x1c), want_units, "%s: lfb_size %u x 64 KiB", what,
	    want_units);
	TAP_EQ(get16(si + 0x24), fb->stride, "%s: lfb_linelength", what);
	tap_ok(si[0x26] == 8 && si[0x27] == 16 && si[0x28] == 8 &&
	    si[0x29] == 8 && si[0x2a] == 8 && si[0x2b] == 0 &&
	    si[0x2c] == 8 && si[0x2d] == 24,
	    "%s: x8r8g8b8 sizes/positions (8/16 8/8 8/0 8/24)", what);
	TAP_EQ(get16(si + 0x2e), 0, "%s: vesapm_seg 0 (no VBE PM)", what);
	TAP_EQ(get16(si + 0x30), 0, "%s: vesapm_off 0", what);
	TAP_EQ(get16(si + 0x32), 1, "%s: pages 1", what);
	TAP_EQ(get32(si + 0x36), fb->base >> 32 ? 2U : 0U,
	    "%s: capabilities", what);
	TAP_EQ(get32(si + 0x3a), (uint32_t)(fb->base >> 32),
	    "%s: ext_lfb_base", what);
	/* orig_x .. unused3, cl_magic/offset, vesa_attributes, reserved. */
	for (i = 0; i < 0x0e; i++)
		if (i != 0x07 && si[i] != 0)
			rest = 0;
	if (get32(si + 0x20) != 0 || get16(si + 0x34) != 0 ||
	    si[0x3e] != 0 || si[0x3f] != 0)
		rest = 0;
	tap_ok(rest, "%s: every other screen_info byte zero", what);
}

static void
test_screen_info(void)
{
	static const uint8_t zero[0x40];
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0xa5);
	struct bz b = bz_new(4, KERNEL_SIZE);
	const char *k = bz_file(&b);
	struct boot_fb fb;
	uint8_t *si = m.low + 0x7000;
	char err[256];
	int r;

	/* 1024x768: 3 MiB exactly, 48 units; 128x48 characters. */
	fb = fb_make(1024, 768);
	TAP_EQ(fb.size, 3 * MiB, "1024x768 is 3 MiB");
	r = load_fb(&m, k, &fb, err, sizeof(err));
	tap_ok(r == 0, "bzImage with a 1024x768 framebuffer (%s)", err);
	check_screen_info(si, &fb, 48, 128, 48, "1024x768");
	TAP_EQ(si[0x1e8], 4, "1024x768: e820 map unchanged (4 entries)");

	/* 1920x1080: 8294400 bytes, 126.6 units rounded up to 127. */
	fb = fb_make(1920, 1080);
	TAP_EQ(fb.size, 8294400ULL, "1920x1080 is 8294400 bytes");
	r = load_fb(&m, k, &fb, err, sizeof(err));
	tap_ok(r == 0, "bzImage with a 1920x1080 framebuffer (%s)", err);
	check_screen_info(si, &fb, 127, 240, 67, "1920x1080");

	/* Wide: 4096x2160, 512 columns are more than the byte holds. */
	fb = fb_make(4096, 2160);
	r = load_fb(&m, k, &fb, err, sizeof(err));
	tap_ok(r == 0, "bzImage with a 4096x2160 framebuffer (%s)", err);
	check_screen_info(si, &fb, 540, 255, 135, "4096x2160");

	/* Above 4 GiB: ext_lfb_base and VIDEO_CAPABILITY_64BIT_BASE. */
	m.high_size = 1 * GiB;
	fb = fb_make(1024, 768);
	fb.base = 5 * GiB + 0x200000;
	r = load_fb(&m, k, &fb, err, sizeof(err));
	tap_ok(r == 0, "framebuffer above the high RAM (%s)", err);
	check_screen_info(si, &fb, 48, 128, 48, "64-bit base");
	m.high_size = 0;

	/* No display: screen_info stays zero, over a dirty zero page. */
	fb.base = 0;
	memset(si, 0x5a, 0x40);
	r = load_fb(&m, k, &fb, err, sizeof(err));
	tap_ok(r == 0 && memcmp(si, zero, 0x40) == 0,
	    "base 0: no display, screen_info all zero (%s)", err);
	/* ... whatever the other fields hold. */
	fb.width = 0;
	fb.size = 1;
	r = load_fb(&m, k, &fb, err, sizeof(err));
	tap_ok(r == 0 && memcmp(si, zero, 0x40) == 0,
	    "base 0: the other fields are not looked at (%s)", err);

	free(b.buf);
	guest_ram_free(&m);
}

static void
expect_fb(struct boot_mem *m, const char *k, const struct boot_fb *fb,
    const char *what, const char *desc)
{
	char err[256];
	int r;

	r = load_fb(m, k, fb, err, sizeof(err));
	tap_ok(r == -EINVAL && has(err, what), "%s: %d (%s)", desc, r, err);
}

static void
test_fb_reject(void)
{
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0);
	struct bz b = bz_new(4, KERNEL_SIZE);
	const char *k = bz_file(&b);
	struct boot_fb fb;

	fb = fb_make(0, 768);
	expect_fb(&m, k, &fb, "width and height must be at least 1",
	    "width 0");
	fb = fb_make(1024, 0);
	fb.size = 4096;
	expect_fb(&m, k, &fb, "width and height must be at least 1",
	    "height 0");
	fb = fb_make(1024, 768);
	fb.stride = 4092;
	expect_fb(&m, k, &fb, "does not hold a line of 1024 pixels",
	    "stride below width * 4");
	fb.stride = 4098;
	expect_fb(&m, k, &fb, "does not hold a line", "stride not 4-aligned");
	fb = fb_make(16384, 100);
	expect_fb(&m, k, &fb, "at most 65535", "stride beyond 16 bits");
	fb = fb_make(1024, 768);
	fb.size -= 4096;
	expect_fb(&m, k, &fb, "smaller than its 768 lines of 4096 bytes",
	    "size below stride * height");
	fb = fb_make(1024, 768);
	fb.size += 100;
	expect_fb(&m, k, &fb, "not page-aligned", "size not page-aligned");
	fb = fb_make(1024, 768);
	fb.base += 0x800;
	expect_fb(&m, k, &fb, "not page-aligned", "base not page-aligned");
	fb = fb_make(4096, 4097);
	expect_fb(&m, k, &fb, "larger than the 64 MiB maximum", "65 MiB");
	fb = fb_make(1024, 768);
	fb.base = 32 * MiB;
	expect_fb(&m, k, &fb, "overlaps low RAM", "framebuffer in RAM");
	fb.base = 0xbff00000;
	expect_fb(&m, k, &fb, "is not in the PCI hole",
	    "below the PCI hole");
	fb.base = 0xfeb00000;
	expect_fb(&m, k, &fb, "overlaps the IOAPIC at 0xfec00000",
	    "over the IOAPIC");
	fb.base = 0xfee00000;
	expect_fb(&m, k, &fb, "overlaps the local APIC at 0xfee00000",
	    "over the LAPIC");
	fb.base = 0xfff00000;
	expect_fb(&m, k, &fb, "is not in the PCI hole",
	    "across 4 GiB");
	fb.base = 0xffd00000;	/* the last 3 MiB below 4 GiB */
	expect_fb(&m, k, &fb, "KVM's identity map",
	    "over KVM's pages");
	m.high_size = 2 * GiB;
	fb.base = 5 * GiB;
	expect_fb(&m, k, &fb, "overlaps high RAM", "framebuffer in high RAM");
	fb.base = 0xfffffffffff00000ULL;
	expect_fb(&m, k, &fb, "wraps around", "wraps around");
	m.high_size = 0;
	/* The largest framebuffer fits at its place, not just anywhere. */
	fb = fb_make(4096, 4096);
	fb.base = 0xfc000000;
	tap_ok(load_fb(&m, k, &fb, NULL, 0) == -EINVAL,
	    "64 MiB at 0xfc000000 reaches the IOAPIC");
	fb.base = PC_FRAMEBUFFER_ADDR;
	tap_ok(load_fb(&m, k, &fb, NULL, 0) == 0,
	    "64 MiB at PC_FRAMEBUFFER_ADDR loads");

	free(b.buf);
	guest_ram_free(&m);
}

static void
test_debian(void)
{
	const char *path = getenv("VMMD_TEST_VMLINUZ");
	struct boot_mem m;
	struct boot_args a = { .ncpus = 1 };
	struct boot_cpu cpu;
	uint8_t hdr[0x300], probe[4096], *zp;
	uint64_t setup, pref, init, rd;
	char err[256];
	FILE *fp;
	int r, n = 11;

	if (path == NULL || path[0] == '\0') {
		while (n-- > 0)
			tap_skip("no Debian vmlinuz given");
		return;
	}
	tap_diag("Debian kernel: %s", path);
	fp = fopen(path, "rb");
	if (fp == NULL || fread(hdr, 1, sizeof(hdr), fp) != sizeof(hdr))
		tap_bail("cannot read %s", path);
	tap_ok(memcmp(hdr + 0x202, "HdrS", 4) == 0, "Debian: HdrS");
	tap_ok(get16(hdr + 0x206) >= 0x020c, "Debian: protocol %u.%02u",
	    hdr[0x207], hdr[0x206]);
	tap_ok(get16(hdr + 0x236) & 1, "Debian: XLF_KERNEL_64");
	tap_ok(hdr[0x234] == 1, "Debian: relocatable");
	setup = (hdr[0x1f1] ? hdr[0x1f1] + 1ULL : 5ULL) * 512;
	pref = get64(hdr + 0x258);
	init = get32(hdr + 0x260);
	tap_diag("setup %llu bytes, pref_address 0x%llx, init_size 0x%llx, "
	    "cmdline_size %u", (unsigned long long)setup,
	    (unsigned long long)pref, (unsigned long long)init,
	    get32(hdr + 0x238));
	if (fseek(fp, (long)setup, SEEK_SET) != 0 ||
	    fread(probe, 1, sizeof(probe), fp) != sizeof(probe))
		tap_bail("cannot read %s", path);
	fclose(fp);

	r = boot_probe(path, err, sizeof(err));
	tap_ok(r == 0, "Debian: boot_probe (%s)", err);

	m = guest_ram_new(256 * MiB, 0, 0);
	a.kernel = path;
	a.initrd = write_file(probe, sizeof(probe));
	a.cmdline = "console=ttyS0 panic=-1";
	a.ncpus = 2;
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == 0, "Debian: boot_load into 256 MiB (%s)", err);
	tap_ok(cpu.mode == BOOT_CPU_LONG64 && cpu.rip == 0x100200 &&
	    cpu.rsi == 0x7000, "Debian: RIP 0x%llx RSI 0x%llx",
	    (unsigned long long)cpu.rip, (unsigned long long)cpu.rsi);
	tap_ok(memcmp(m.low + 0x100000, probe, sizeof(probe)) == 0,
	    "Debian: protected-mode kernel at 1 MiB");
	zp = m.low + 0x7000;
	rd = get32(zp + 0x218);
	tap_ok(memcmp(zp + 0x202, "HdrS", 4) == 0 && zp[0x210] == 0xff &&
	    (zp[0x211] & 0x81) == 0x81 && get32(zp + 0x228) == 0x20000 &&
	    zp[0x1e8] == 4, "Debian: boot_params header fields");
	tap_ok(rd >= pref + init && rd + sizeof(probe) <= 256 * MiB &&
	    get32(zp + 0x21c) == sizeof(probe),
	    "Debian: initrd at 0x%llx, above the kernel's 0x%llx",
	    (unsigned long long)rd, (unsigned long long)(pref + init));
	guest_ram_free(&m);

	/* Its init_size (about 64 MiB) from 16 MiB does not fit in 64 MiB. */
	m = guest_ram_new(64 * MiB, 0, 0);
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == -EFBIG && has(err, "kernel needs RAM"),
	    "Debian: 64 MiB is too little (%s)", err);
	guest_ram_free(&m);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", scratch_new("bz"));

	test_basic();
	test_initrd();
	test_memory();
	test_cmdline();
	test_reject();
	test_reload();
	test_screen_info();
	test_fb_reject();
	test_debian();
	return tap_done();
}
