/*
 * ACPI tables (boot-acpi.c, boot-dsdt.c, boot-aml.c): found from the
 * RSDP as an operating system finds them, every checksum, the layouts of
 * the FADT and MADT, and the DSDT's AML disassembled by ACPICA's iasl and
 * compiled back to the same bytes.
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
#include "tap.h"
#include "unit-util.h"
#include "scratch.h"

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
	tap_ok(get32(f + 80) == 0 && f[92] == 0, "FADT: no GPE block");
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

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", scratch_new("acpi"));
	check_aml();
	check_tables(1, 1);
	check_tables(4, 0);
	check_tables(BOOT_MAX_CPUS, 0);
	check_errors();
	return tap_done();
}
