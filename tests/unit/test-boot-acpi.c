/*
 * ACPI tables (boot-acpi.c, boot-dsdt.c, boot-aml.c): found from the
 * RSDP as an operating system finds them, every checksum, the layouts of
 * the FADT and MADT, and the DSDT's AML disassembled by ACPICA's iasl and
 * compiled back to the same bytes; a kernel-loaded VM's tables byte for
 * byte as they were before firmware got tables of its own.  The table
 * loader's files (boot-table-loader.c), run as a firmware runs them:
 * allocate, patch the pointers, fix the checksums, then walk from the
 * RSDP to the RSDT, FADT, FACS, DSDT and MADT.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot.h"
#include "boot-aml.h"
#include "boot-table-loader.h"
#include "tap.h"
#include "unit-util.h"
#include "scratch.h"
#include "acpi-direct-tables.h"

#define MEM_SIZE	(1024 * 1024)
#define FILL		0x5a

static char tmpdir[256];

static uint8_t
sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len-- > 0)
		s += *p++;
	return s;
}

/* A table at a guest address: checked to lie in the ACPI area. */
static const uint8_t *
table_at(const uint8_t *mem, uint64_t addr, const char *sig)
{
	uint32_t len;

	if (addr < PC_ACPI_TABLES_START || addr + 36 > PC_ACPI_TABLES_END)
		return NULL;
	len = get32(mem + addr + 4);
	if (memcmp(mem + addr, sig, 4) != 0 || len < 36 ||
	    addr + len > PC_ACPI_TABLES_END)
		return NULL;
	return mem + addr;
}

struct tables {
	const uint8_t *rsdp, *xsdt, *fadt, *madt, *dsdt, *facs;
};

static int
find_tables(const uint8_t *mem, struct tables *t)
{
	uint64_t a;
	uint32_t n, i;

	memset(t, 0, sizeof(*t));
	/* The scan an OS makes without a pointer: 16-byte steps. */
	for (a = 0xe0000; a < 0x100000; a += 16)
		if (memcmp(mem + a, "RSD PTR ", 8) == 0)
			break;
	if (a != BOOT_ACPI_RSDP_ADDR)
		return -1;
	t->rsdp = mem + a;
	t->xsdt = table_at(mem, get64(t->rsdp + 24), "XSDT");
	if (t->xsdt == NULL)
		return -1;
	n = (get32(t->xsdt + 4) - 36) / 8;
	for (i = 0; i < n; i++) {
		a = get64(t->xsdt + 36 + 8 * i);
		if (memcmp(mem + a, "FACP", 4) == 0)
			t->fadt = table_at(mem, a, "FACP");
		else if (memcmp(mem + a, "APIC", 4) == 0)
			t->madt = table_at(mem, a, "APIC");
	}
	if (t->fadt == NULL || t->madt == NULL)
		return -1;
	t->dsdt = table_at(mem, get64(t->fadt + 140), "DSDT");
	t->facs = table_at(mem, get64(t->fadt + 132), "FACS");
	if (t->dsdt == NULL || t->facs == NULL ||
	    get32(t->fadt + 40) != get64(t->fadt + 140) ||
	    get32(t->fadt + 36) != 0)
		return -1;
	return 0;
}

static void
check_fadt(const uint8_t *f)
{
	TAP_EQ(get32(f + 4), 276, "FADT: revision 6 length");
	TAP_EQ(f[8], 6, "FADT: revision 6");
	TAP_EQ(get16(f + 46), PC_ACPI_SCI_IRQ, "FADT: SCI on IRQ 9");
	TAP_EQ(get32(f + 48), 0, "FADT: no SMI_CMD: always in ACPI mode");
	tap_ok(get32(f + 56) == PC_ACPI_PM1A_EVT_PORT && f[88] == 4 &&
	    get32(f + 64) == PC_ACPI_PM1A_CNT_PORT && f[89] == 2,
	    "FADT: PM1a event block at 0x%x (4), control at 0x%x (2)",
	    get32(f + 56), get32(f + 64));
	tap_ok(get32(f + 76) == PC_ACPI_PM_TMR_PORT && f[91] == 4 &&
	    f[208] == 1 && f[209] == 32 &&
	    get64(f + 212) == PC_ACPI_PM_TMR_PORT,
	    "FADT: PM timer at 0x%x (4), X_PM_TMR_BLK in system I/O space",
	    get32(f + 76));
	tap_ok((get32(f + 112) & (1U << 8)) == 0,
	    "FADT: a 24-bit PM timer (TMR_VAL_EXT clear)");
	tap_ok(get32(f + 80) == get32(f + 56) + 0xc && f[92] == 4 &&
	    f[220] == 1 && get64(f + 224) == get32(f + 56) + 0xc &&
	    get32(f + 84) == 0 && f[93] == 0,
	    "FADT: a GPE0 block of 4 bytes at PMBA + 0xc, no GPE1");
	tap_ok(f[148] == 1 && f[149] == 32 &&
	    get64(f + 152) == PC_ACPI_PM1A_EVT_PORT && f[172] == 1 &&
	    f[173] == 16 && get64(f + 176) == PC_ACPI_PM1A_CNT_PORT,
	    "FADT: X_PM1a blocks in system I/O space");
	tap_ok((get32(f + 112) & (1U << 4)) == 0,
	    "FADT: fixed-feature power button (PWR_BUTTON clear)");
	tap_ok((get32(f + 112) & (1U << 20)) == 0,
	    "FADT: not hardware-reduced");
	TAP_EQ(get16(f + 109) & 3, 3, "FADT: legacy devices and an 8042");
}

static void
check_madt(const uint8_t *m, unsigned int ncpus)
{
	uint32_t len = get32(m + 4), off;
	unsigned int lapics = 0, ioapics = 0, ids_ok = 1, nmi = 0;
	int irq0 = -1, sci = -1;
	uint16_t sci_flags = 0;

	TAP_EQ(get32(m + 36), PC_LAPIC_ADDR, "MADT: local APIC address");
	TAP_EQ(get32(m + 40) & 1, 1, "MADT: PCAT_COMPAT");
	for (off = 44; off + 2 <= len && m[off + 1] >= 2; off += m[off + 1]) {
		switch (m[off]) {
		case 0:
			if (m[off + 3] != lapics || m[off + 2] != lapics ||
			    (get32(m + off + 4) & 1) == 0)
				ids_ok = 0;
			lapics++;
			break;
		case 1:
			ioapics++;
			if (m[off + 2] != ncpus ||
			    get32(m + off + 4) != PC_IOAPIC_ADDR ||
			    get32(m + off + 8) != 0)
				ids_ok = 0;
			break;
		case 2:
			if (m[off + 3] == 0)
				irq0 = (int)get32(m + off + 4);
			if (m[off + 3] == PC_ACPI_SCI_IRQ) {
				sci = (int)get32(m + off + 4);
				sci_flags = get16(m + off + 8);
			}
			break;
		case 4:
			if (m[off + 2] == 0xff && m[off + 5] == 1)
				nmi++;
			break;
		}
	}
	TAP_EQ(off, len, "MADT %u CPUs: entries fill the table exactly",
	    ncpus);
	tap_ok(lapics == ncpus && ioapics == 1 && ids_ok,
	    "MADT %u CPUs: %u local APICs (IDs 0..n-1), one IOAPIC with ID n",
	    ncpus, lapics);
	TAP_EQ(irq0, PC_IRQ0_IOAPIC_PIN, "MADT: IRQ 0 on pin 2");
	tap_ok(sci == PC_ACPI_SCI_IRQ && sci_flags == 0xd,
	    "MADT: SCI on pin 9, level-triggered, active high");
	TAP_EQ(nmi, 1, "MADT: NMI on LINT1 of every local APIC");
}

/* Run argv in tmpdir, its output thrown away; its exit status. */
static int
run(char *const argv[])
{
	pid_t pid;
	int status, fd;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (chdir(tmpdir) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int
write_file(const char *name, const void *p, size_t len)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if ((f = fopen(path, "wb")) == NULL)
		return -1;
	n = fwrite(p, 1, len, f);
	return fclose(f) == 0 && n == len ? 0 : -1;
}

static char *
read_file(const char *name, size_t *len)
{
	char path[512], *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static unsigned int
count(const char *hay, const char *needle)
{
	unsigned int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

/*
 * iasl -d turns the tables into source; compiling the DSDT's source
 * again must give back our AML byte for byte (after the header, whose
 * creator fields iasl writes as its own).
 */
static void
check_iasl(const struct tables *t)
{
	char *argv[6], *dsl, *aml;
	size_t len, aml_len;
	uint32_t dlen = get32(t->dsdt + 4);
	char entry[64];
	unsigned int slot, prt_ok = 1;

	if (run((char *[]){ "iasl", "-v", NULL }) != 0) {
		tap_skip("iasl not installed (Debian's acpica-tools)");
		return;
	}
	if (write_file("dsdt.dat", t->dsdt, dlen) < 0 ||
	    write_file("facp.dat", t->fadt, get32(t->fadt + 4)) < 0 ||
	    write_file("apic.dat", t->madt, get32(t->madt + 4)) < 0)
		tap_bail("cannot write the tables into %s", tmpdir);
	argv[0] = "iasl";
	argv[1] = "-d";
	argv[2] = "dsdt.dat";
	argv[3] = NULL;
	TAP_EQ(run(argv), 0, "iasl -d: the DSDT disassembles");
	argv[2] = "facp.dat";
	TAP_EQ(run(argv), 0, "iasl -d: the FADT disassembles");
	argv[2] = "apic.dat";
	TAP_EQ(run(argv), 0, "iasl -d: the MADT disassembles");

	dsl = read_file("dsdt.dsl", &len);
	tap_ok(dsl != NULL, "iasl -d wrote dsdt.dsl");
	if (dsl == NULL)
		return;
	tap_ok(strstr(dsl, "Device (PCI0)") != NULL &&
	    strstr(dsl, "EisaId (\"PNP0A08\")") != NULL &&
	    strstr(dsl, "EisaId (\"PNP0A03\")") != NULL,
	    "DSDT: PCI0 is a PNP0A08 root bridge, compatible with PNP0A03");
	tap_ok(strstr(dsl, "WordBusNumber") != NULL &&
	    strstr(dsl, "0xC000,             // Range Minimum") != NULL &&
	    strstr(dsl, "0xC0000000,         // Range Minimum") != NULL &&
	    strstr(dsl, "0xCFFFFFFF,         // Range Maximum") != NULL,
	    "DSDT: _CRS has bus 0, the I/O and the MMIO windows");
	/* Every slot's four entries, with the GSI the swizzle gives. */
	for (slot = 0; slot < PC_PCI_SLOTS && prt_ok; slot++) {
		snprintf(entry, sizeof(entry), "0x%04XFFFF", slot);
		if (slot > 0 && count(dsl, entry) != 4)
			prt_ok = 0;
	}
	tap_ok(prt_ok && count(dsl, "Package (0x04)") == 128 &&
	    count(dsl, "0x10\n") + count(dsl, "0x11\n") +
	    count(dsl, "0x12\n") + count(dsl, "0x13\n") >= 128,
	    "DSDT: _PRT has 4 entries for each of the 32 slots");
	tap_ok(strstr(dsl, "Name (\\_S5, Package (0x02)") != NULL,
	    "DSDT: \\_S5");
	tap_ok(strstr(dsl, "EisaId (\"PNP0303\")") != NULL &&
	    strstr(dsl, "EisaId (\"PNP0F13\")") != NULL &&
	    strstr(dsl, "EisaId (\"PNP0501\")") != NULL &&
	    strstr(dsl, "EisaId (\"PNP0B00\")") != NULL,
	    "DSDT: keyboard, mouse, COM1 and RTC");
	tap_ok(strstr(dsl, "Device (VGEN)") != NULL &&
	    strstr(dsl, "Name (_CID, \"VM_GEN_COUNTER\")") != NULL &&
	    strstr(dsl, "Name (ADDR, Package (0x02)\n            {\n"
	    "                0x000FF000, \n                Zero\n") != NULL,
	    "DSDT: VGEN, a VM_GEN_COUNTER whose ADDR is PC_VMGENID_ADDR");
	tap_ok(strstr(dsl, "Scope (\\_GPE)") != NULL &&
	    strstr(dsl, "Method (_E00, 0, NotSerialized)") != NULL &&
	    strstr(dsl, "Notify (\\_SB.VGEN, 0x80)") != NULL,
	    "DSDT: GPE 0's \\_GPE._E00 notifies VGEN (0x80)");
	free(dsl);

	/* -on: names as written (iasl would drop the root prefix). */
	argv[0] = "iasl";
	argv[1] = "-on";
	argv[2] = "-p";
	argv[3] = "again";
	argv[4] = "dsdt.dsl";
	argv[5] = NULL;
	TAP_EQ(run(argv), 0, "iasl: the disassembled DSDT compiles");
	aml = read_file("again.aml", &aml_len);
	tap_ok(aml != NULL && aml_len == dlen &&
	    memcmp(aml + 36, t->dsdt + 36, dlen - 36) == 0,
	    "iasl: compiled again, the same %u bytes of AML", dlen - 36);
	free(aml);
}

/*
 * The loader's DSDT, disassembled where iasl is installed: the 32-bit
 * window from the end of low RAM to the IOAPIC, and a 64-bit one.
 */
static void
check_loader_iasl(const uint8_t *dsdt)
{
	char *argv[4], *dsl;
	size_t len;

	if (run((char *[]){ "iasl", "-v", NULL }) != 0) {
		tap_skip("iasl not installed (Debian's acpica-tools)");
		return;
	}
	if (write_file("ldsdt.dat", dsdt, get32(dsdt + 4)) < 0)
		tap_bail("cannot write the DSDT into %s", tmpdir);
	argv[0] = "iasl";
	argv[1] = "-d";
	argv[2] = "ldsdt.dat";
	argv[3] = NULL;
	dsl = run(argv) == 0 ? read_file("ldsdt.dsl", &len) : NULL;
	tap_ok(dsl != NULL && strstr(dsl, "0x02000000,         // Range "
	    "Minimum") != NULL && strstr(dsl, "0xFEBFFFFF,         // Range "
	    "Maximum") != NULL && strstr(dsl, "QWordMemory") != NULL &&
	    strstr(dsl, "0x0000000100000000, // Range Minimum") != NULL &&
	    strstr(dsl, "0x00000008FFFFFFFF, // Range Maximum") != NULL,
	    "iasl -d: the loader's DSDT has the firmware's 32-bit and "
	    "64-bit windows");
	tap_ok(dsl != NULL && strstr(dsl, "VGEN") == NULL &&
	    strstr(dsl, "_GPE") == NULL,
	    "iasl -d: the loader's DSDT has no VGEN (no generation ID)");
	free(dsl);
}

static uint64_t
fnv64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n-- > 0) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/*
 * A kernel-loaded VM's tables do not change by accident (they did not
 * when their builder learnt to serve the table loader; they did on
 * purpose for the GPE0 block and the VGEN device): the bytes for one
 * vCPU, and a hash of the whole 64 KiB area for 4 and BOOT_MAX_CPUS.
 */
static void
check_direct_unchanged(void)
{
	static const struct {
		unsigned int ncpus;
		int len;
		uint64_t hash;
	} pinned[] = {
		{ 1, 2620, 0xd638f1ad880aaa8aULL },
		{ 4, 2652, 0xb8354b699a7fe90cULL },
		{ BOOT_MAX_CPUS, 4652, 0x5050e467cdfecadaULL },
	};
	const size_t area = PC_ACPI_TABLES_END - PC_ACPI_TABLES_START;
	uint8_t *mem = calloc(1, MEM_SIZE);
	unsigned int i;
	int r;

	if (mem == NULL)
		tap_bail("out of memory");
	r = boot_acpi_write(mem, MEM_SIZE, 1);
	tap_ok(r == (int)sizeof(acpi_direct_1cpu) &&
	    memcmp(mem + PC_ACPI_TABLES_START, acpi_direct_1cpu,
	    sizeof(acpi_direct_1cpu)) == 0,
	    "1 CPU: the kernel-loaded tables, byte for byte as before "
	    "(%d bytes)", r);
	for (i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
		memset(mem, 0, MEM_SIZE);
		r = boot_acpi_write(mem, MEM_SIZE, pinned[i].ncpus);
		tap_ok(r == pinned[i].len && fnv64(mem + PC_ACPI_TABLES_START,
		    area) == pinned[i].hash,
		    "%u CPUs: the kernel-loaded tables' area as before",
		    pinned[i].ncpus);
	}
	free(mem);
}

/* A file of the table loader's, as a firmware holds it. */
struct fw_file {
	const char *name;
	uint8_t *data;		/* where the firmware put it, in mem */
	uint32_t size;
	uint64_t addr;
};

/*
 * Run the loader's commands as SeaBIOS and OVMF do, placing the files
 * in mem (guest physical 0..MEM_SIZE): the tables in "high" memory at
 * 0x80000, the RSDP in the F segment at 0xf0000.  -1 at the first
 * command a firmware would refuse.
 */
static int
run_loader(const struct boot_fw_acpi *fa, uint8_t *mem,
    struct fw_file files[2], unsigned int *counts)
{
	const uint8_t *e;
	struct fw_file *f, *src;
	uint32_t cmd, off, start, len, align;
	uint64_t v;
	unsigned int i, j, k;

	files[0] = (struct fw_file){ BOOT_ACPI_TABLES_FILE, NULL,
	    sizeof(fa->tables), 0 };
	files[1] = (struct fw_file){ BOOT_ACPI_RSDP_FILE, NULL,
	    sizeof(fa->rsdp), 0 };
	for (i = 0; i < BOOT_LOADER_ENTRIES; i++) {
		e = fa->loader + i * BOOT_LOADER_ENTRY;
		cmd = get32(e);
		f = src = NULL;
		for (j = 0; j < 2; j++) {
			if (strncmp((const char *)e + 4, files[j].name,
			    BOOT_LOADER_NAME) == 0)
				f = &files[j];
			if (strncmp((const char *)e + 4 + BOOT_LOADER_NAME,
			    files[j].name, BOOT_LOADER_NAME) == 0)
				src = &files[j];
		}
		if (cmd < 1 || cmd > 3 || f == NULL)
			return -1;
		counts[cmd]++;
		switch (cmd) {
		case BOOT_LOADER_ALLOCATE:
			align = get32(e + 4 + BOOT_LOADER_NAME);
			k = e[8 + BOOT_LOADER_NAME];
			if (f->data != NULL || align == 0 ||
			    (align & (align - 1)) != 0)
				return -1;
			f->addr = k == BOOT_LOADER_ZONE_HIGH ? 0x80000 :
			    k == BOOT_LOADER_ZONE_FSEG ? 0xf0000 : 0;
			if (f->addr == 0 || (f->addr & (align - 1)) != 0)
				return -1;
			f->data = mem + f->addr;
			memcpy(f->data, f == &files[0] ? fa->tables :
			    fa->rsdp, f->size);
			break;
		case BOOT_LOADER_ADD_POINTER:
			off = get32(e + 4 + 2 * BOOT_LOADER_NAME);
			k = e[8 + 2 * BOOT_LOADER_NAME];
			if (src == NULL || f->data == NULL ||
			    src->data == NULL || (k != 1 && k != 2 && k != 4 &&
			    k != 8) || off > f->size || k > f->size - off)
				return -1;
			v = 0;
			memcpy(&v, f->data + off, k);
			if (v >= src->size)
				return -1;	/* not into the source file */
			v += src->addr;
			memcpy(f->data + off, &v, k);
			break;
		case BOOT_LOADER_ADD_CHECKSUM:
			off = get32(e + 4 + BOOT_LOADER_NAME);
			start = get32(e + 8 + BOOT_LOADER_NAME);
			len = get32(e + 12 + BOOT_LOADER_NAME);
			if (f->data == NULL || off >= f->size ||
			    start > f->size || len > f->size - start ||
			    off < start || off >= start + len)
				return -1;
			f->data[off] -= sum(f->data + start, len);
			break;
		}
	}
	return files[0].data != NULL && files[1].data != NULL ? 0 : -1;
}

/* A table by address, inside the placed tables blob. */
static const uint8_t *
fw_table(const uint8_t *mem, const struct fw_file *t, uint64_t addr,
    const char *sig)
{
	uint32_t len;

	if (addr < t->addr || addr + 36 > t->addr + t->size)
		return NULL;
	len = get32(mem + addr + 4);
	if (memcmp(mem + addr, sig, 4) != 0 || addr + len > t->addr + t->size)
		return NULL;
	return mem + addr;
}

/*
 * The loader's files for ncpus vCPUs and the PM base at pm_base, run
 * and walked.
 */
static void
check_loader(unsigned int ncpus, uint16_t pm_base)
{
	struct boot_acpi_config cfg;
	struct boot_fw_acpi *fa = calloc(1, sizeof(*fa));
	uint8_t *mem = calloc(1, MEM_SIZE);
	struct fw_file files[2];
	unsigned int counts[4] = { 0 }, n, i;
	const uint8_t *rsdp, *rsdt, *fadt = NULL, *madt = NULL, *dsdt, *facs;
	int sums_ok;

	if (fa == NULL || mem == NULL)
		tap_bail("out of memory");
	boot_acpi_config_direct(&cfg, ncpus);
	cfg.pm_base = pm_base;
	cfg.dsdt.mmio32_min = 0x2000000;
	cfg.dsdt.mmio32_max = 0xfebfffff;
	cfg.dsdt.mmio64_min = 0x100000000ULL;
	cfg.dsdt.mmio64_len = 0x800000000ULL;
	cfg.dsdt.vmgenid_addr = 0;	/* as firmware.c: none */
	TAP_EQ(boot_fw_acpi_build(fa, &cfg), 0,
	    "loader, %u CPUs: the three files built", ncpus);
	tap_ok(run_loader(fa, mem, files, counts) == 0,
	    "loader, %u CPUs: every command runs as a firmware runs it",
	    ncpus);
	tap_ok(counts[1] == 2 && counts[2] == 6 && counts[3] == 5,
	    "loader: 2 allocations, 6 pointers, 5 checksums (%u, %u, %u)",
	    counts[1], counts[2], counts[3]);
	if (files[0].data == NULL || files[1].data == NULL) {
		free(fa);
		free(mem);
		return;
	}
	rsdp = files[1].data;
	tap_ok(memcmp(rsdp, "RSD PTR ", 8) == 0 && rsdp[15] == 0 &&
	    sum(rsdp, BOOT_ACPI_RSDP_V1_LEN) == 0,
	    "loader: RSDP revision 0, in the F segment, checksum zero");
	rsdt = fw_table(mem, &files[0], get32(rsdp + 16), "RSDT");
	tap_ok(rsdt != NULL && sum(rsdt, get32(rsdt + 4)) == 0,
	    "loader: the RSDP points at the RSDT, whose checksum is zero");
	if (rsdt == NULL) {
		free(fa);
		free(mem);
		return;
	}
	n = (get32(rsdt + 4) - 36) / 4;
	for (i = 0; i < n; i++) {
		uint32_t a = get32(rsdt + 36 + 4 * i);

		if (fadt == NULL)
			fadt = fw_table(mem, &files[0], a, "FACP");
		if (madt == NULL)
			madt = fw_table(mem, &files[0], a, "APIC");
	}
	tap_ok(n == 2 && fadt != NULL && madt != NULL,
	    "loader: the RSDT lists the FADT and the MADT");
	if (fadt == NULL || madt == NULL) {
		free(fa);
		free(mem);
		return;
	}
	dsdt = fw_table(mem, &files[0], get32(fadt + 40), "DSDT");
	facs = fw_table(mem, &files[0], get32(fadt + 36), "FACS");
	tap_ok(dsdt != NULL && facs != NULL &&
	    get64(fadt + 140) == get32(fadt + 40) && get64(fadt + 132) == 0,
	    "loader: the FADT points at the FACS (FIRMWARE_CTRL) and the "
	    "DSDT (both fields)");
	if (dsdt == NULL || facs == NULL) {
		free(fa);
		free(mem);
		return;
	}
	tap_ok(get32(facs + 4) == 64 && ((facs - mem) & 63) == 0,
	    "loader: FACS 64 bytes, 64-byte aligned");
	sums_ok = sum(fadt, get32(fadt + 4)) == 0 &&
	    sum(madt, get32(madt + 4)) == 0 &&
	    sum(dsdt, get32(dsdt + 4)) == 0;
	tap_ok(sums_ok, "loader: FADT, MADT and DSDT checksums zero after "
	    "the patching");
	tap_ok(get32(fadt + 56) == pm_base && get32(fadt + 64) ==
	    (uint32_t)pm_base + 4 && get32(fadt + 76) ==
	    (uint32_t)pm_base + 8 && get64(fadt + 152) == pm_base &&
	    get64(fadt + 176) == (uint32_t)pm_base + 4 &&
	    get64(fadt + 212) == (uint32_t)pm_base + 8,
	    "loader: the FADT's PM1a blocks and timer at the PM base 0x%x",
	    pm_base);
	if (pm_base == PC_ACPI_PM1A_EVT_PORT)
		check_fadt(fadt);
	check_madt(madt, ncpus);
	if (ncpus == 1)
		check_loader_iasl(dsdt);
	free(fa);
	free(mem);
}

static void
check_tables(unsigned int ncpus, int with_iasl)
{
	uint8_t *mem = malloc(MEM_SIZE);
	struct tables t;
	size_t i;
	int r, untouched = 1;

	if (mem == NULL)
		tap_bail("out of memory");
	memset(mem, FILL, MEM_SIZE);
	r = boot_acpi_write(mem, MEM_SIZE, ncpus);
	tap_ok(r > 0 && (uint64_t)r <= PC_ACPI_TABLES_END -
	    PC_ACPI_TABLES_START, "%u CPUs: tables written (%d bytes)",
	    ncpus, r);
	for (i = 0; i < MEM_SIZE; i++)
		if ((i < PC_ACPI_TABLES_START || i >= PC_ACPI_TABLES_END) &&
		    mem[i] != FILL)
			untouched = 0;
	tap_ok(untouched, "%u CPUs: nothing written outside 0xe0000-0xeffff",
	    ncpus);
	if (find_tables(mem, &t) < 0) {
		tap_ok(0, "%u CPUs: RSDP found by a scan, XSDT, FADT, MADT, "
		    "FACS, DSDT reached from it", ncpus);
		free(mem);
		return;
	}
	tap_ok(1, "%u CPUs: RSDP found by a scan, XSDT, FADT, MADT, FACS, "
	    "DSDT reached from it", ncpus);
	tap_ok(sum(t.rsdp, 20) == 0 && sum(t.rsdp, 36) == 0 &&
	    t.rsdp[15] == 2 && get32(t.rsdp + 20) == 36,
	    "RSDP: revision 2, both checksums");
	tap_ok(sum(t.xsdt, get32(t.xsdt + 4)) == 0 &&
	    sum(t.fadt, get32(t.fadt + 4)) == 0 &&
	    sum(t.madt, get32(t.madt + 4)) == 0 &&
	    sum(t.dsdt, get32(t.dsdt + 4)) == 0,
	    "%u CPUs: XSDT, FADT, MADT and DSDT checksums", ncpus);
	tap_ok(get32(t.facs + 4) == 64 && ((t.facs - mem) & 63) == 0,
	    "FACS: 64 bytes, 64-byte aligned");
	TAP_EQ(t.dsdt[8], 2, "DSDT: revision 2 (64-bit integers)");
	check_fadt(t.fadt);
	check_madt(t.madt, ncpus);
	if (with_iasl)
		check_iasl(&t);
	free(mem);
}

static void
check_errors(void)
{
	uint8_t *mem = calloc(1, MEM_SIZE);

	if (mem == NULL)
		tap_bail("out of memory");
	TAP_EQ(boot_acpi_write(mem, MEM_SIZE, 0), -EINVAL, "0 CPUs refused");
	TAP_EQ(boot_acpi_write(mem, MEM_SIZE, BOOT_MAX_CPUS + 1), -EINVAL,
	    "%d CPUs refused", BOOT_MAX_CPUS + 1);
	TAP_EQ(boot_acpi_write(mem, 0xe8000, 1), -ENOSPC,
	    "RAM that ends inside the ACPI area refused");
	free(mem);
}

/* The encoder on its own: lengths, names, what it refuses. */
static void
check_aml(void)
{
	uint8_t buf[128], big[70];
	struct aml a;
	size_t m;

	aml_init(&a, buf, sizeof(buf));
	aml_eisaid(&a, "PNP0A03");
	tap_ok(a.err == 0 && a.len == 5 && buf[0] == 0x0c &&
	    get32(buf + 1) == 0x030ad041, "AML: EisaId(PNP0A03) = 0x030AD041");

	aml_init(&a, buf, sizeof(buf));
	aml_name(&a, "\\_SB.PCI0");
	tap_ok(a.err == 0 && a.len == 10 && memcmp(buf,
	    "\\\x2e_SB_PCI0", 10) == 0, "AML: \\_SB.PCI0 as a dual name");
	aml_init(&a, buf, sizeof(buf));
	aml_name(&a, "_S5");
	tap_ok(a.err == 0 && memcmp(buf, "_S5_", 4) == 0,
	    "AML: short names padded with _");
	aml_init(&a, buf, sizeof(buf));
	aml_name(&a, "pci0");
	TAP_EQ(a.err, -EINVAL, "AML: lower case names refused");
	aml_init(&a, buf, sizeof(buf));
	aml_name(&a, "ABCDE");
	TAP_EQ(a.err, -EINVAL, "AML: five-character segments refused");

	/* A package length crossing 63 takes two bytes. */
	aml_init(&a, buf, sizeof(buf));
	m = aml_package_begin(&a, 0);
	memset(big, 0, sizeof(big));
	aml_bytes(&a, big, 62);
	aml_end(&a, m);
	tap_ok(a.err == 0 && a.len == 1 + 2 + 63 && buf[1] == (0x40 | (65 &
	    0xf)) && buf[2] == 65 >> 4, "AML: two-byte package length");
	aml_init(&a, buf, sizeof(buf));
	m = aml_package_begin(&a, 0);
	aml_bytes(&a, big, 61);
	aml_end(&a, m);
	tap_ok(a.err == 0 && buf[1] == 63, "AML: one-byte package length");

	aml_init(&a, buf, 8);
	aml_string(&a, "too long a string");
	TAP_EQ(a.err, -ENOSPC, "AML: no room is an error");
	m = a.len;
	aml_integer(&a, 1);
	TAP_EQ(a.len, m, "AML: and nothing more is written after it");
}

/*
 * The root bridge's memory windows in a DSDT: the first DWord (32-bit)
 * and QWord (64-bit) memory address space descriptors, min and max.
 * false when one is missing.
 */
static bool
dsdt_windows(const uint8_t *dsdt, size_t len, uint64_t w32[2],
    uint64_t w64[2])
{
	bool got32 = false, got64 = false;
	size_t i;

	for (i = 0; i + 46 <= len; i++) {
		if (!got32 && dsdt[i] == 0x87 && dsdt[i + 1] == 23 &&
		    dsdt[i + 2] == 0 && dsdt[i + 3] == 0) {
			w32[0] = get32(dsdt + i + 10);
			w32[1] = get32(dsdt + i + 14);
			got32 = true;
		}
		if (!got64 && dsdt[i] == 0x8a && dsdt[i + 1] == 43 &&
		    dsdt[i + 2] == 0 && dsdt[i + 3] == 0) {
			w64[0] = get64(dsdt + i + 14);
			w64[1] = get64(dsdt + i + 22);
			got64 = true;
		}
	}
	return got32 && got64;
}

/*
 * A firmware VM's windows from where its BARs are (boot_dsdt_fw_windows)
 * into the DSDT's AML: the RAM layout's alone without BARs (as before),
 * stretched to cover a 32-bit BAR above the IOAPIC, 64-bit BARs high in
 * the address space or below high RAM's end, one at the very top
 * without wrapping; a BAR left in low RAM moves nothing.
 */
static void
check_fw_windows(void)
{
	static const struct {
		const char *what;
		uint64_t low, high;
		struct boot_pci_span span;
		uint64_t w32[2], w64[2];
	} cases[] = {
		{ "no BARs: the RAM layout's", 0x7fe0000, 0,
		    { .any32 = false }, { 0x7fe0000, 0xfebfffff },
		    { 0x100000000ULL, 0x8ffffffffULL } },
		{ "32-bit BARs in the hole", 0x80000000ULL,
		    0x40000000ULL, { .any32 = true, .lo32 = 0xc0000000ULL,
		    .hi32 = 0xc0ffffffULL },
		    { 0x80000000ULL, 0xfebfffff },
		    { 0x140000000ULL, 0x93fffffffULL } },
		{ "a 32-bit BAR above the IOAPIC", 0x7fe0000, 0,
		    { .any32 = true, .lo32 = 0xc0000000ULL,
		    .hi32 = 0xfed00fffULL },
		    { 0x7fe0000, 0xfed00fff },
		    { 0x100000000ULL, 0x8ffffffffULL } },
		{ "a BAR left in low RAM moves nothing", 0x7fe0000, 0,
		    { .any32 = true, .lo32 = 0x100000, .hi32 = 0x100fff },
		    { 0x7fe0000, 0xfebfffff },
		    { 0x100000000ULL, 0x8ffffffffULL } },
		{ "64-bit BARs at 512 GiB (SeaBIOS, high)", 0x7fe0000, 0,
		    { .any64 = true, .lo64 = 0x8000000000ULL,
		    .hi64 = 0x8000803fffULL },
		    { 0x7fe0000, 0xfebfffff },
		    { 0x100000000ULL, 0x803fffffffULL } },
		{ "a 64-bit BAR below high RAM's end", 0x80000000ULL,
		    0x200000000ULL,
		    { .any64 = true, .lo64 = 0x140002000ULL,
		    .hi64 = 0x140003fffULL },
		    { 0x80000000ULL, 0xfebfffff },
		    { 0x140000000ULL, 0xaffffffffULL } },
		{ "a BAR at the very top", 0x7fe0000, 0,
		    { .any64 = true, .lo64 = 0xffffffffffff0000ULL,
		    .hi64 = UINT64_MAX },
		    { 0x7fe0000, 0xfebfffff },
		    { 0x100000000ULL, UINT64_MAX } },
	};
	static uint8_t buf[8192];
	struct boot_dsdt_config d;
	uint64_t w32[2] = { 0 }, w64[2] = { 0 };
	size_t i;
	bool ok;
	int len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&d, 0, sizeof(d));
		boot_dsdt_fw_windows(&d, cases[i].low, cases[i].high,
		    &cases[i].span);
		len = boot_dsdt_build(buf, sizeof(buf), &d);
		/* Read before the check's arguments, which C orders not. */
		ok = len > 0 && dsdt_windows(buf, (size_t)len, w32, w64);
		tap_ok(ok && w32[0] == cases[i].w32[0] &&
		    w32[1] == cases[i].w32[1] && w64[0] == cases[i].w64[0] &&
		    w64[1] == cases[i].w64[1],
		    "windows, %s: 0x%llx-0x%llx, 0x%llx-0x%llx", cases[i].what,
		    (unsigned long long)w32[0], (unsigned long long)w32[1],
		    (unsigned long long)w64[0], (unsigned long long)w64[1]);
	}
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", scratch_new("acpi"));
	check_aml();
	check_tables(1, 1);
	check_tables(4, 0);
	check_tables(BOOT_MAX_CPUS, 0);
	check_errors();
	check_direct_unchanged();
	check_loader(1, PC_ACPI_PM1A_EVT_PORT);
	check_loader(BOOT_MAX_CPUS, 0xb000);
	check_fw_windows();
	return tap_done();
}
