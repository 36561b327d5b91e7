/*
 * PVH ELF loader: synthetic ELF32 and ELF64 kernels written at the gABI's
 * offsets, good and broken ones (truncated at every length, corrupted at
 * random), checked through hvm_start_info as Xen's start_info.h lays it
 * out.  When VMMD_TEST_VMLINUZ names a Debian kernel and its compressor's
 * command-line tool is installed, the vmlinux inside it is loaded too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot.h"
#include "boot-internal.h"
#include "tap.h"
#include "unit-util.h"
#include "scratch.h"
#include "guest-ram.h"

#define MiB		(1024ULL * 1024)

static char tmpdir[256];

static const char *
tmpname(const char *base)
{
	static char names[8][300];
	static int next;
	char *n = names[next++ % 8];

	snprintf(n, sizeof(names[0]), "%s/%s", tmpdir, base);
	return n;
}

static const char *
write_file(const char *base, const void *buf, size_t len)
{
	const char *name = tmpname(base);
	FILE *fp;

	fp = fopen(name, "wb");
	if (fp == NULL || (len > 0 && fwrite(buf, 1, len, fp) != len) ||
	    fclose(fp) != 0)
		tap_bail("cannot write %s", name);
	return name;
}

static int
has(const char *err, const char *what)
{
	return strstr(err, what) != NULL;
}

/* What a synthetic kernel looks like. */
enum { NOTE_NONE, NOTE_PHDR, NOTE_SECTION };

struct spec {
	int		is64;
	unsigned int	descsz;		/* 4 or 8 (or broken values) */
	uint64_t	entry;
	int		note_where;
	int		prenotes;	/* other notes before the PVH one */
	unsigned int	nseg;
	struct {
		uint64_t paddr, filesz, memsz;
	} seg[4];
	uint16_t	machine;	/* 0: the class's usual one */
};

#define NOTES_OFF	0x400
#define SHDR_OFF	0x600
#define DATA_OFF	0x1000

static uint8_t
seg_byte(unsigned int i, uint64_t j)
{
	return (uint8_t)(i * 16 + j * 13 + 1);
}

static size_t
put_note(uint8_t *p, const char *name, uint32_t type, const void *desc,
    uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1;
	size_t off = 12;

	put32(p, namesz);
	put32(p + 4, descsz);
	put32(p + 8, type);
	memcpy(p + off, name, namesz);
	off += (namesz + 3) & ~3U;
	memcpy(p + off, desc, descsz);
	off += (descsz + 3) & ~3U;
	return off;
}

/* Build the ELF file into buf (zeroed, large enough); returns its size. */
static size_t
build(const struct spec *s, uint8_t *buf)
{
	static const uint8_t gnu_id[20] = { 1, 2, 3, 4, 5 };
	uint8_t desc[16];
	size_t notes_len = 0, len, phoff = 0x40, ph;
	unsigned int i, phnum;
	uint64_t j;

	memset(buf, 0, DATA_OFF + 4 * 0x1000);
	phnum = s->nseg + (s->note_where == NOTE_PHDR);

	/* Notes first: their size goes into the headers. */
	if (s->prenotes) {
		notes_len += put_note(buf + NOTES_OFF + notes_len, "GNU", 3,
		    gnu_id, 20);
		notes_len += put_note(buf + NOTES_OFF + notes_len, "Xen", 5,
		    "xen-3.0", 8);
		notes_len += put_note(buf + NOTES_OFF + notes_len, "Linux",
		    18, "abcde", 5);	/* type 18, but not Xen's */
	}
	if (s->note_where != NOTE_NONE) {
		memset(desc, 0, sizeof(desc));
		put64(desc, s->entry);
		notes_len += put_note(buf + NOTES_OFF + notes_len, "Xen", 18,
		    desc, s->descsz);
	}

	memcpy(buf, "\177ELF", 4);
	buf[4] = s->is64 ? 2 : 1;
	buf[5] = 1;			/* little-endian */
	buf[6] = 1;
	put16(buf + 16, 2);		/* ET_EXEC */
	put16(buf + 18, s->machine ? s->machine : s->is64 ? 62 : 3);
	put32(buf + 20, 1);
	if (s->is64) {
		put64(buf + 24, s->entry | 0xffffffff80000000ULL);
		put64(buf + 32, phoff);
		put64(buf + 40, s->note_where == NOTE_SECTION ? SHDR_OFF : 0);
		put16(buf + 52, 64);
		put16(buf + 54, 56);
		put16(buf + 56, (uint16_t)phnum);
		put16(buf + 58, 64);
		put16(buf + 60, s->note_where == NOTE_SECTION ? 2 : 0);
	} else {
		put32(buf + 24, (uint32_t)s->entry);
		put32(buf + 28, (uint32_t)phoff);
		put32(buf + 32, s->note_where == NOTE_SECTION ? SHDR_OFF : 0);
		put16(buf + 40, 52);
		put16(buf + 42, 32);
		put16(buf + 44, (uint16_t)phnum);
		put16(buf + 46, 40);
		put16(buf + 48, s->note_where == NOTE_SECTION ? 2 : 0);
	}

	len = DATA_OFF;
	for (i = 0; i < phnum; i++) {
		uint32_t type = i < s->nseg ? 1 : 4;
		uint64_t off, pa, fs, ms, al;

		if (i < s->nseg) {
			off = DATA_OFF + i * 0x1000ULL;
			pa = s->seg[i].paddr;
			fs = s->seg[i].filesz;
			ms = s->seg[i].memsz;
			al = 0x1000;
			for (j = 0; j < fs; j++)
				buf[off + j] = seg_byte(i, j);
			if (fs > 0)
				len = off + fs;
		} else {
			off = NOTES_OFF;
			pa = 0;
			fs = ms = notes_len;
			al = 4;
		}
		if (s->is64) {
			ph = phoff + i * 56;
			put32(buf + ph, type);
			put32(buf + ph + 4, 5);
			put64(buf + ph + 8, off);
			put64(buf + ph + 16, pa | 0xffffffff80000000ULL);
			put64(buf + ph + 24, pa);
			put64(buf + ph + 32, fs);
			put64(buf + ph + 40, ms);
			put64(buf + ph + 48, al);
		} else {
			ph = phoff + i * 32;
			put32(buf + ph, type);
			put32(buf + ph + 4, (uint32_t)off);
			put32(buf + ph + 8, (uint32_t)pa);
			put32(buf + ph + 12, (uint32_t)pa);
			put32(buf + ph + 16, (uint32_t)fs);
			put32(buf + ph + 20, (uint32_t)ms);
			put32(buf + ph + 24, 5);
			put32(buf + ph + 28, (uint32_t)al);
		}
	}
	if (s->note_where == NOTE_SECTION) {
		/* Section 0 is the null section; section 1 the notes. */
		if (s->is64) {
			ph = SHDR_OFF + 64;
			put32(buf + ph + 4, 7);
			put64(buf + ph + 24, NOTES_OFF);
			put64(buf + ph + 32, notes_len);
			put64(buf + ph + 48, 4);
		} else {
			ph = SHDR_OFF + 40;
			put32(buf + ph + 4, 7);
			put32(buf + ph + 16, NOTES_OFF);
			put32(buf + ph + 20, (uint32_t)notes_len);
			put32(buf + ph + 32, 4);
		}
	}
	return len;
}

static struct spec
spec_default(int is64, unsigned int descsz)
{
	struct spec s;

	memset(&s, 0, sizeof(s));
	s.is64 = is64;
	s.descsz = descsz;
	s.entry = 0x100040;
	s.note_where = NOTE_PHDR;
	s.nseg = 2;
	s.seg[0].paddr = 0x100000;
	s.seg[0].filesz = 0x800;
	s.seg[0].memsz = 0x800;
	s.seg[1].paddr = 0x200000;
	s.seg[1].filesz = 0x100;
	s.seg[1].memsz = 0x3000;	/* 0x2f00 bytes of .bss */
	return s;
}

static uint8_t elfbuf[DATA_OFF + 4 * 0x1000];

static int
load_spec(const struct spec *s, struct boot_mem *m, const char *initrd,
    const char *cmdline, struct boot_cpu *cpu, char *err, size_t errlen)
{
	struct boot_args a = { .ncpus = 1 };
	size_t len = build(s, elfbuf);

	a.kernel = write_file("k", elfbuf, len);
	a.initrd = initrd;
	a.cmdline = cmdline;
	a.ncpus = 1;
	return boot_load(m, &a, cpu, err, errlen);
}

static void
check_segments(const struct spec *s, const struct boot_mem *m,
    const char *what)
{
	unsigned int i;
	uint64_t j;
	int data_ok = 1, bss_ok = 1, after_ok = 1;

	for (i = 0; i < s->nseg; i++) {
		const uint8_t *p = m->low + s->seg[i].paddr;

		for (j = 0; j < s->seg[i].filesz; j++)
			if (p[j] != seg_byte(i, j))
				data_ok = 0;
		for (; j < s->seg[i].memsz; j++)
			if (p[j] != 0)
				bss_ok = 0;
		/* The fill pattern survives just past the segment. */
		if (p[s->seg[i].memsz] != 0xaa)
			after_ok = 0;
	}
	tap_ok(data_ok, "%s: segment contents at p_paddr", what);
	tap_ok(bss_ok, "%s: .bss (p_memsz > p_filesz) zeroed", what);
	tap_ok(after_ok, "%s: nothing written past p_memsz", what);
}

static void
check_memmap(const struct boot_mem *m, const char *what)
{
	const uint8_t *si = m->low + 0x6000, *e;
	static const uint64_t want[4][3] = {
		{ 0, 0x9fc00, 1 },
		{ 0x9fc00, 0x400, 2 },
		{ 0xe0000, 0x20000, 2 },
		{ 0x100000, 0, 1 },
	};
	uint64_t map = get64(si + 40);
	unsigned int i;
	int ok;

	TAP_EQ(get32(si + 48), 4U, "%s: 4 memory map entries", what);
	ok = map != 0 && map < 0x30000 && map + 4 * 24 <= 0x30000;
	for (i = 0; ok && i < 4; i++) {
		e = m->low + map + i * 24;
		ok = get64(e) == want[i][0] && get32(e + 16) == want[i][2] &&
		    get32(e + 20) == 0 && get64(e + 8) == (want[i][1] ?
		    want[i][1] : m->low_size - 0x100000);
	}
	tap_ok(ok, "%s: memory map entries (at 0x%llx)", what,
	    (unsigned long long)map);
}

static void
test_elf64(void)
{
	struct spec s = spec_default(1, 8);
	struct boot_mem m = guest_ram_new(32 * MiB, 0, 0xaa);
	struct boot_cpu cpu;
	uint8_t initrd[10000], *si, *mod;
	const char *rd;
	uint64_t code, mods, addr;
	char err[256] = "junk";
	int r, i;

	for (i = 0; i < (int)sizeof(initrd); i++)
		initrd[i] = (uint8_t)(i * 3);
	rd = write_file("rd", initrd, sizeof(initrd));
	memset(&cpu, 0xee, sizeof(cpu));
	r = load_spec(&s, &m, rd, "console=ttyS0 foo", &cpu, err,
	    sizeof(err));
	tap_ok(r == 0 && err[0] == '\0', "ELF64, 8-byte note: loads (%s)",
	    err);
	tap_ok(boot_probe(tmpname("k"), err, sizeof(err)) == 0,
	    "ELF64: boot_probe accepts it (%s)", err);
	TAP_EQ(cpu.mode, BOOT_CPU_PROT32, "ELF64: 32-bit protected mode");
	TAP_EQ(cpu.rip, 0x100040ULL, "ELF64: EIP from the note, not e_entry");
	TAP_EQ(cpu.rbx, 0x6000ULL, "ELF64: EBX = hvm_start_info");
	TAP_EQ(cpu.code_sel, 0x10, "ELF64: CS selector 0x10");
	TAP_EQ(cpu.data_sel, 0x18, "ELF64: DS selector 0x18");
	TAP_EQ(cpu.gdt_base, 0x500ULL, "ELF64: GDT at 0x500");
	code = get64(m.low + 0x500 + 0x10);
	tap_ok((code >> 47 & 1) && (code >> 43 & 1) && (code >> 54 & 1) &&
	    !(code >> 53 & 1) && (code & 0xffff) == 0xffff &&
	    (code >> 48 & 0xf) == 0xf && (code >> 55 & 1) &&
	    (code >> 16 & 0xffffff) == 0 && (code >> 56) == 0,
	    "ELF64: flat 32-bit code segment (0x%016llx)",
	    (unsigned long long)code);
	tap_ok(cpu.gdt_limit >= 0x1f, "ELF64: GDT limit 0x%x", cpu.gdt_limit);
	check_segments(&s, &m, "ELF64");

	si = m.low + 0x6000;
	TAP_EQ(get32(si), 0x336ec578U, "ELF64: start_info magic");
	TAP_EQ(get32(si + 4), 1U, "ELF64: start_info version 1");
	TAP_EQ(get32(si + 8), 0U, "ELF64: flags 0");
	TAP_EQ(get32(si + 12), 1U, "ELF64: one module");
	TAP_EQ(get64(si + 32), 0xe0000ULL, "ELF64: the RSDP at 0xe0000");
	addr = get64(si + 24);
	tap_ok(addr != 0 && addr + 18 <= 32 * MiB &&
	    strcmp((char *)m.low + addr, "console=ttyS0 foo") == 0,
	    "ELF64: command line at 0x%llx", (unsigned long long)addr);
	mods = get64(si + 16);
	tap_ok(mods != 0 && mods + 32 <= 0x30000, "ELF64: module list at 0x%llx",
	    (unsigned long long)mods);
	mod = m.low + mods;
	TAP_EQ(get64(mod + 8), (uint64_t)sizeof(initrd),
	    "ELF64: module 0 size");
	TAP_EQ(get64(mod), (32 * MiB - sizeof(initrd)) & ~0xfffULL,
	    "ELF64: initrd at the top of RAM, page aligned");
	TAP_EQ(get64(mod + 16), 0ULL, "ELF64: module has no command line");
	tap_ok(memcmp(m.low + get64(mod), initrd, sizeof(initrd)) == 0,
	    "ELF64: initrd contents");
	check_memmap(&m, "ELF64");
	tap_ok(memcmp(m.low + 0x9fc00, "_MP_", 4) == 0, "ELF64: MP table");
	guest_ram_free(&m);
}

static void
test_variants(void)
{
	struct spec s;
	struct boot_mem m = guest_ram_new(64 * MiB, 0, 0xaa);
	struct boot_cpu cpu;
	uint8_t *si;
	char err[256];
	int r;

	/* ELF32 with a 4-byte note, no initrd, no command line. */
	s = spec_default(0, 4);
	s.entry = 0x200010;
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	si = m.low + 0x6000;
	tap_ok(r == 0 && cpu.rip == 0x200010 && cpu.mode == BOOT_CPU_PROT32,
	    "ELF32, 4-byte note: loads, EIP 0x%llx (%s)",
	    (unsigned long long)cpu.rip, err);
	check_segments(&s, &m, "ELF32");
	tap_ok(get32(si) == 0x336ec578U && get32(si + 12) == 0 &&
	    get64(si + 16) == 0, "ELF32: no modules");
	tap_ok(get64(si + 24) != 0 && m.low[get64(si + 24)] == '\0',
	    "ELF32: empty command line");
	check_memmap(&m, "ELF32");

	s = spec_default(1, 4);
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == 0 && cpu.rip == 0x100040, "ELF64 with a 4-byte note (%s)",
	    err);
	s = spec_default(0, 8);
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == 0 && cpu.rip == 0x100040, "ELF32 with an 8-byte note (%s)",
	    err);

	/* The PVH note among others, and only in a section. */
	s = spec_default(1, 8);
	s.prenotes = 1;
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == 0 && cpu.rip == 0x100040, "note found after others (%s)",
	    err);
	s.note_where = NOTE_SECTION;
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == 0 && cpu.rip == 0x100040,
	    "ELF64: note found in an SHT_NOTE section (%s)", err);
	s.is64 = 0;
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == 0 && cpu.rip == 0x100040,
	    "ELF32: note found in an SHT_NOTE section (%s)", err);

	/* Segments in base memory above the loader's area are fine. */
	s = spec_default(1, 8);
	s.seg[0].paddr = 0x30000;
	s.entry = 0x30000;
	r = load_spec(&s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == 0, "segment at 0x30000 in base memory (%s)", err);
	guest_ram_free(&m);
}

static void
expect(const struct spec *s, uint64_t ram, int want, const char *what,
    const char *desc)
{
	struct boot_mem m = guest_ram_new(ram, 0, 0);
	struct boot_cpu cpu;
	char err[256];
	int r;

	r = load_spec(s, &m, NULL, NULL, &cpu, err, sizeof(err));
	tap_ok(r == want && has(err, what), "%s: %d (%s)", desc, r, err);
	guest_ram_free(&m);
}

static void
expect_probe(const struct spec *s, int want, const char *what,
    const char *desc)
{
	char err[256];
	size_t len = build(s, elfbuf);
	int r;

	r = boot_probe(write_file("k", elfbuf, len), err, sizeof(err));
	tap_ok(r == want && has(err, what), "probe %s: %d (%s)", desc, r,
	    err);
}

static void
test_bad(void)
{
	struct spec s;
	struct boot_mem m;
	struct boot_cpu cpu;
	size_t len;
	char err[256];
	int r;

	s = spec_default(1, 8);
	s.note_where = NOTE_NONE;
	expect(&s, 32 * MiB, -ENOEXEC, "no PVH entry point", "no note");
	expect_probe(&s, -ENOEXEC, "no PVH entry point", "no note");
	s.prenotes = 1;
	expect(&s, 32 * MiB, -ENOEXEC, "no PVH entry point",
	    "only other notes");

	s = spec_default(1, 2);
	expect(&s, 32 * MiB, -ENOEXEC, "2-byte value", "2-byte note value");

	s = spec_default(1, 8);
	s.seg[1].paddr = 0x3000000;
	expect(&s, 32 * MiB, -EFBIG,
	    "ELF segment at 0x3000000-0x3002fff beyond guest RAM",
	    "segment outside RAM");
	expect_probe(&s, 0, "", "segment outside a small RAM");
	s.seg[1].paddr = 0x1ffe000;	/* .bss crosses the end of RAM */
	expect(&s, 32 * MiB, -EFBIG, "beyond guest RAM",
	    ".bss beyond the end of RAM");
	s.seg[1].paddr = 0xbffff000;
	expect_probe(&s, -ENOEXEC, "beyond guest RAM",
	    "segment into the PCI hole");
	s.seg[1].paddr = 0xfffffffffffff000ULL;
	expect_probe(&s, -ENOEXEC, "wraps around", "segment wraps around");

	s = spec_default(1, 8);
	s.seg[1].paddr = 0x8000;
	expect(&s, 32 * MiB, -ENOEXEC, "overlaps the loader's tables",
	    "segment over the boot tables");
	s.seg[1].paddr = 0x9f000;
	expect(&s, 32 * MiB, -ENOEXEC, "overlaps the EBDA",
	    "segment over the EBDA");
	s.seg[1].paddr = 0xf8000;
	expect(&s, 32 * MiB, -ENOEXEC, "overlaps the EBDA",
	    "segment in the BIOS area");

	s = spec_default(1, 8);
	s.seg[1].filesz = 0x200;
	s.seg[1].memsz = 0x100;
	expect(&s, 32 * MiB, -ENOEXEC, "more file bytes",
	    "p_filesz > p_memsz");

	s = spec_default(0, 4);
	s.entry = 0x500000;
	expect(&s, 32 * MiB, -ENOEXEC, "outside the loadable segments",
	    "entry outside the segments");

	s = spec_default(1, 8);
	s.machine = 40;	/* ARM */
	expect(&s, 32 * MiB, -ENOEXEC, "not for x86", "ARM ELF");
	s = spec_default(1, 8);
	s.nseg = 0;
	expect(&s, 32 * MiB, -ENOEXEC, "no loadable segments",
	    "no PT_LOAD");

	/* Header corruption, one field at a time. */
	s = spec_default(1, 8);
	len = build(&s, elfbuf);
	m = guest_ram_new(32 * MiB, 0, 0);
	{
		static const struct {
			size_t off, size;
			uint64_t val;
			const char *what, *desc;
		} c[] = {
			{ 4, 1, 3, "unknown class", "ELF class 3" },
			{ 5, 1, 2, "little-endian", "big-endian ELF" },
			{ 16, 2, 3, "not an executable", "ET_DYN" },
			{ 32, 8, 0x10000, "program headers lie beyond",
			    "e_phoff beyond the file" },
			{ 32, 8, 0xffffffffffffffc0ULL,
			    "program headers lie beyond", "e_phoff huge" },
			{ 54, 2, 8, "program header size", "e_phentsize 8" },
			{ 56, 2, 0, "no program headers", "e_phnum 0" },
			{ 56, 2, 0xffff, "too many", "e_phnum 0xffff" },
			{ 56, 2, 200, "program headers lie beyond",
			    "e_phnum 200" },
			{ 0x40 + 8, 8, 0x100000, "beyond the end of the file",
			    "p_offset beyond the file" },
			{ 0x40 + 32, 8, 0xffffffffffff0000ULL,
			    "more file bytes", "p_filesz huge" },
			{ 0x40 + 2 * 56 + 8, 8, 0x7ffffff0,
			    "note area lies beyond", "note p_offset" },
			{ 0x40 + 2 * 56 + 32, 8, 0x10000000,
			    "note area lies beyond", "note p_filesz" },
			{ NOTES_OFF + 4, 4, 0x1000, "runs past",
			    "note descsz past its area" },
			{ NOTES_OFF, 4, 0xfffffff0U, "runs past",
			    "note namesz huge" },
		};
		unsigned int i;
		uint8_t *copy = malloc(len);

		for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			memcpy(copy, elfbuf, len);
			if (c[i].size == 1)
				copy[c[i].off] = (uint8_t)c[i].val;
			else if (c[i].size == 2)
				put16(copy + c[i].off, (uint16_t)c[i].val);
			else if (c[i].size == 4)
				put32(copy + c[i].off, (uint32_t)c[i].val);
			else
				put64(copy + c[i].off, c[i].val);
			struct boot_args a = { write_file("k", copy, len),
			    NULL, NULL, 1, { 0 } };
			r = boot_load(&m, &a, &cpu, err, sizeof(err));
			tap_ok(r == -ENOEXEC && has(err, c[i].what),
			    "%s: %d (%s)", c[i].desc, r, err);
		}
		free(copy);
	}
	guest_ram_free(&m);
}

/* Load the default ELF64 spec with a framebuffer. */
static int
load_fb(struct boot_mem *m, const struct boot_fb *fb, char *err,
    size_t errlen)
{
	struct spec s = spec_default(1, 8);
	struct boot_args a = { .ncpus = 1, .fb = *fb };
	struct boot_cpu cpu;
	size_t len = build(&s, elfbuf);

	a.kernel = write_file("k", elfbuf, len);
	return boot_load(m, &a, &cpu, err, errlen);
}

/* Memory map entry i of the hvm_start_info at 0x6000. */
static int
memmap_is(const struct boot_mem *m, unsigned int i, uint64_t addr,
    uint64_t size, uint32_t type)
{
	const uint8_t *si = m->low + 0x6000;
	const uint8_t *e = m->low + get64(si + 40) + i * 24;

	return i < get32(si + 48) && get64(e) == addr &&
	    get64(e + 8) == size && get32(e + 16) == type &&
	    get32(e + 20) == 0;
}

static void
test_fb(void)
{
	struct boot_mem m = guest_ram_new(32 * MiB, 0, 0xaa);
	struct boot_fb fb = {
		.base = PC_FRAMEBUFFER_ADDR, .size = 3 * MiB, .width = 1024,
		.height = 768, .stride = 4096,
	};
	const uint8_t *si = m.low + 0x6000;
	char err[256];
	int r;

	r = load_fb(&m, &fb, err, sizeof(err));
	tap_ok(r == 0, "PVH with a 1024x768 framebuffer (%s)", err);
	TAP_EQ(get32(si + 48), 5U, "fb: 5 memory map entries");
	tap_ok(memmap_is(&m, 0, 0, 0x9fc00, 1) &&
	    memmap_is(&m, 1, 0x9fc00, 0x400, 2) &&
	    memmap_is(&m, 2, 0xe0000, 0x20000, 2) &&
	    memmap_is(&m, 3, 0x100000, 31 * MiB, 1),
	    "fb: the RAM and firmware entries as without a display");
	tap_ok(memmap_is(&m, 4, 0xd0000000, 3 * MiB, 2),
	    "fb: reserved entry 0xd0000000-0xd02fffff last");

	/* With high RAM the map stays sorted: the hole before 4 GiB. */
	m.high_size = 1024 * MiB;
	fb.size = 8294400;	/* 1920x1080 */
	fb.width = 1920;
	fb.height = 1080;
	fb.stride = 7680;
	r = load_fb(&m, &fb, err, sizeof(err));
	tap_ok(r == 0 && get32(si + 48) == 6U &&
	    memmap_is(&m, 3, 0x100000, 31 * MiB, 1) &&
	    memmap_is(&m, 4, 0xd0000000, 8294400, 2) &&
	    memmap_is(&m, 5, 0x100000000ULL, 1024 * MiB, 1),
	    "fb: 1920x1080 reserved between low and high RAM (%s)", err);
	m.high_size = 0;

	/* No display: the map as before. */
	fb.base = 0;
	r = load_fb(&m, &fb, err, sizeof(err));
	tap_ok(r == 0 && get32(si + 48) == 4U &&
	    memmap_is(&m, 3, 0x100000, 31 * MiB, 1),
	    "base 0: no reserved entry, 4 entries (%s)", err);

	/* Bad geometry is refused before anything is loaded. */
	fb.base = PC_FRAMEBUFFER_ADDR;
	fb.stride = 1920;
	memset(m.low + 0x6000, 0x33, 64);
	r = load_fb(&m, &fb, err, sizeof(err));
	tap_ok(r == -EINVAL && has(err, "does not hold a line") &&
	    get32(si) == 0x33333333U,
	    "PVH: stride too small refused, nothing written (%s)", err);
	fb.stride = 7680;
	fb.base = 0x1000000;
	r = load_fb(&m, &fb, err, sizeof(err));
	tap_ok(r == -EINVAL && has(err, "overlaps low RAM"),
	    "PVH: framebuffer in RAM refused (%s)", err);
	guest_ram_free(&m);
}

/* The sorted insertion into an e820 map, on its own. */
static void
test_e820_insert(void)
{
	struct boot_e820 map[BOOT_E820_MAX] = {
		{ 0x1000, 0x1000, 1 }, { 0x5000, 0x1000, 1 },
	};
	int n = 2;

	n = boot_e820_insert(map, (unsigned int)n, 0x3000, 0x1000, 2);
	tap_ok(n == 3 && map[1].addr == 0x3000 && map[1].type == 2 &&
	    map[2].addr == 0x5000, "insert in the middle keeps order");
	n = boot_e820_insert(map, (unsigned int)n, 0x0, 0x1000, 2);
	tap_ok(n == 4 && map[0].addr == 0 && map[1].addr == 0x1000,
	    "insert at the front");
	n = boot_e820_insert(map, (unsigned int)n, 0x9000, 0x1000, 2);
	tap_ok(n == 5 && map[4].addr == 0x9000, "insert at the end");
	TAP_EQ(boot_e820_insert(map, 5, 0x2800, 0x1000, 2), -EINVAL,
	    "overlapping the next entry refused");
	TAP_EQ(boot_e820_insert(map, 5, 0x1800, 0x100, 2), -EINVAL,
	    "overlapping the previous entry refused");
	TAP_EQ(boot_e820_insert(map, 5, 0x7000, 0, 2), -EINVAL,
	    "empty entry refused");
	TAP_EQ(boot_e820_insert(map, BOOT_E820_MAX, 0x7000, 0x1000, 2),
	    -ENOSPC, "full map refused");
}

/* Every truncation of a valid file is refused; none crashes. */
static void
test_truncated(void)
{
	struct spec s = spec_default(1, 8);
	struct boot_mem m = guest_ram_new(32 * MiB, 0, 0);
	struct boot_args a = { .ncpus = 1 };
	struct boot_cpu cpu;
	size_t len, cut, bad = 0, n = 0;
	char err[256];
	int r, p, is64;

	for (is64 = 0; is64 <= 1; is64++) {
		s = spec_default(is64, 8);
		len = build(&s, elfbuf);
		for (cut = 0; cut < len; cut += cut < 0x800 ? 1 : 29) {
			a.kernel = write_file("k", elfbuf, cut);
			r = boot_load(&m, &a, &cpu, err, sizeof(err));
			p = boot_probe(a.kernel, err, sizeof(err));
			n++;
			if (r != -ENOEXEC || p != -ENOEXEC || err[0] == '\0') {
				if (bad++ < 5)
					tap_diag("cut at %zu: %d/%d (%s)", cut,
					    r, p, err);
			}
		}
	}
	tap_ok(bad == 0, "%zu truncated ELF files refused with -ENOEXEC", n);
	guest_ram_free(&m);
}

/* Random corruption of the headers and notes: errors, never crashes. */
static void
test_fuzz(void)
{
	struct spec s;
	struct boot_mem m = guest_ram_new(32 * MiB, 0, 0);
	struct boot_args a = { .ncpus = 1 };
	struct boot_cpu cpu;
	uint8_t copy[sizeof(elfbuf)];
	uint32_t seed = 12345;
	size_t len;
	unsigned int i, k, nflip, loaded = 0, noerr = 0;
	char err[256];
	int r;

	for (i = 0; i < 1500; i++) {
		s = spec_default(i & 1, i & 2 ? 8 : 4);
		s.prenotes = (i & 4) != 0;
		s.note_where = i & 8 ? NOTE_SECTION : NOTE_PHDR;
		len = build(&s, elfbuf);
		memcpy(copy, elfbuf, len);
		seed = seed * 1103515245 + 12345;
		nflip = 1 + (seed >> 16) % 4;
		/* Hit the bytes that mean something: headers and notes. */
		for (k = 0; k < nflip; k++) {
			size_t at;

			seed = seed * 1103515245 + 12345;
			at = (seed >> 8) % 0x180;
			if (at >= 0x100)
				at = SHDR_OFF + (at - 0x100);
			else if (at >= 0xb0)
				at = NOTES_OFF + (at - 0xb0);
			copy[at] = (uint8_t)(seed >> 24);
		}
		a.kernel = write_file("fuzz", copy, len);
		err[0] = '\0';
		r = boot_load(&m, &a, &cpu, err, sizeof(err));
		if (r == 0)
			loaded++;
		else if (err[0] == '\0')
			noerr++;
		r = boot_probe(a.kernel, err, sizeof(err));
		if (r < 0 && err[0] == '\0')
			noerr++;
	}
	tap_ok(noerr == 0, "1500 corrupted files: every failure has a reason "
	    "(%u still loaded)", loaded);
	guest_ram_free(&m);
}

/* Pull the vmlinux out of a bzImage with the compressor's own tool. */
static const char *
extract_vmlinux(const char *vmlinuz, const char **why)
{
	static const struct {
		uint8_t magic[6];
		size_t len;
		const char *tool;
	} fmt[] = {
		{ { 0xfd, '7', 'z', 'X', 'Z', 0 }, 6, "xz" },
		{ { 0x28, 0xb5, 0x2f, 0xfd }, 4, "zstd" },
		{ { 0x1f, 0x8b }, 2, "gzip" },
	};
	char cmd[1024];
	uint8_t *buf, *pl;
	uint64_t pm, off, plen;
	long size;
	FILE *fp;
	unsigned int i;
	int st;

	fp = fopen(vmlinuz, "rb");
	if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 ||
	    (size = ftell(fp)) < 0x1000 || fseek(fp, 0, SEEK_SET) != 0) {
		*why = "cannot read the vmlinuz";
		return NULL;
	}
	buf = malloc((size_t)size);
	if (buf == NULL || fread(buf, 1, (size_t)size, fp) != (size_t)size)
		tap_bail("cannot read %s", vmlinuz);
	fclose(fp);
	pm = (buf[0x1f1] ? buf[0x1f1] + 1ULL : 5ULL) * 512;
	off = pm + get32(buf + 0x248);
	plen = get32(buf + 0x24c);
	if (plen < 8 || off + plen > (uint64_t)size) {
		free(buf);
		*why = "no payload in the vmlinuz";
		return NULL;
	}
	pl = buf + off;
	for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++)
		if (memcmp(pl, fmt[i].magic, fmt[i].len) == 0)
			break;
	if (i == sizeof(fmt) / sizeof(fmt[0])) {
		free(buf);
		*why = "payload compression not handled by this test";
		return NULL;
	}
	/* The payload ends with the 4-byte uncompressed size: drop it. */
	write_file("payload", pl, plen - 4);
	free(buf);
	snprintf(cmd, sizeof(cmd), "%s -dc < '%s' > '%s' 2>/dev/null",
	    fmt[i].tool, tmpname("payload"), tmpname("vmlinux"));
	st = system(cmd);
	unlink(tmpname("payload"));
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		*why = WIFEXITED(st) && WEXITSTATUS(st) == 127 ?
		    "decompressor not installed" : "decompression failed";
		return NULL;
	}
	tap_diag("vmlinux extracted with %s", fmt[i].tool);
	return tmpname("vmlinux");
}

static void
test_vmlinux(void)
{
	const char *vmlinuz = getenv("VMMD_TEST_VMLINUZ");
	const char *path = getenv("VMMD_TEST_VMLINUX"), *why = NULL;
	struct boot_mem m;
	struct boot_args a = { .ncpus = 1 };
	struct boot_cpu cpu;
	uint8_t eh[64 + 56], *data;
	uint64_t off, pa, fs;
	char err[256];
	FILE *fp;
	int r, n = 4;

	if (path == NULL || path[0] == '\0') {
		if (vmlinuz == NULL || vmlinuz[0] == '\0')
			why = "no Debian vmlinuz given";
		else
			path = extract_vmlinux(vmlinuz, &why);
	}
	if (path == NULL) {
		while (n-- > 0)
			tap_skip(why);
		return;
	}
	r = boot_probe(path, err, sizeof(err));
	tap_ok(r == 0, "vmlinux has a PVH entry note: boot_probe %d (%s)", r,
	    err);
	m = guest_ram_new(256 * MiB, 0, 0);
	a.kernel = path;
	a.initrd = NULL;
	a.cmdline = "console=ttyS0";
	a.ncpus = 1;
	r = boot_load(&m, &a, &cpu, err, sizeof(err));
	tap_ok(r == 0 && cpu.mode == BOOT_CPU_PROT32 && cpu.rbx == 0x6000 &&
	    get32(m.low + 0x6000) == 0x336ec578U,
	    "vmlinux loads as PVH: %d (%s), entry 0x%llx", r, err,
	    (unsigned long long)cpu.rip);
	tap_ok(cpu.rip >= 0x100000 && cpu.rip < 256 * MiB,
	    "vmlinux: PVH entry at a physical address");

	/* The first segment's first page is where its p_paddr says. */
	fp = fopen(path, "rb");
	if (fp == NULL || fread(eh, 1, sizeof(eh), fp) != sizeof(eh))
		tap_bail("cannot read %s", path);
	off = get64(eh + 64 + 8);
	pa = get64(eh + 64 + 24);
	fs = get64(eh + 64 + 32);
	data = malloc(4096);
	tap_ok(eh[4] == 2 && get32(eh + 64) == 1 && fs >= 4096 &&
	    pa + 4096 <= 256 * MiB && data != NULL &&
	    fseek(fp, (long)off, SEEK_SET) == 0 &&
	    fread(data, 1, 4096, fp) == 4096 &&
	    memcmp(m.low + pa, data, 4096) == 0,
	    "vmlinux: first PT_LOAD at p_paddr 0x%llx",
	    (unsigned long long)pa);
	free(data);
	fclose(fp);
	guest_ram_free(&m);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", scratch_new("pvh"));

	test_elf64();
	test_variants();
	test_bad();
	test_truncated();
	test_fuzz();
	test_fb();
	test_e820_insert();
	test_vmlinux();
	return tap_done();
}
