/*
 * PVH ELF loader: ELF32 or ELF64 executables (System V gABI, chapter 4
 * and 5) that carry a Xen note of type XEN_ELFNOTE_PHYS32_ENTRY (18)
 * giving a 32-bit physical entry point.  We load the PT_LOAD segments at
 * their physical addresses and enter in 32-bit protected mode, paging
 * off, with EBX pointing to an hvm_start_info (Xen's public
 * arch-x86/hvm/start_info.h, version 1: with a memory map).  A display's
 * framebuffer appears in that memory map as a reserved range.
 *
 * Everything in the file is untrusted: every offset and size is checked
 * against the file size, with overflow-safe arithmetic, before use.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "boot.h"
#include "boot-internal.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ELF headers are read in host byte order: x86 hosts only"
#endif

#define EI_CLASS		4
#define EI_DATA			5
#define EI_VERSION		6
#define ELFCLASS32		1
#define ELFCLASS64		2
#define ELFDATA2LSB		1
#define EV_CURRENT		1
#define ET_EXEC			2
#define EM_386			3
#define EM_X86_64		62
#define PT_LOAD			1
#define PT_NOTE			4
#define SHT_NOTE		7

struct elf32_ehdr {
	uint8_t		ident[16];
	uint16_t	type;
	uint16_t	machine;
	uint32_t	version;
	uint32_t	entry;
	uint32_t	phoff;
	uint32_t	shoff;
	uint32_t	flags;
	uint16_t	ehsize;
	uint16_t	phentsize;
	uint16_t	phnum;
	uint16_t	shentsize;
	uint16_t	shnum;
	uint16_t	shstrndx;
} __attribute__((packed));
_Static_assert(sizeof(struct elf32_ehdr) == 52, "ELF32 header");
_Static_assert(offsetof(struct elf32_ehdr, phoff) == 28, "e_phoff");

struct elf64_ehdr {
	uint8_t		ident[16];
	uint16_t	type;
	uint16_t	machine;
	uint32_t	version;
	uint64_t	entry;
	uint64_t	phoff;
	uint64_t	shoff;
	uint32_t	flags;
	uint16_t	ehsize;
	uint16_t	phentsize;
	uint16_t	phnum;
	uint16_t	shentsize;
	uint16_t	shnum;
	uint16_t	shstrndx;
} __attribute__((packed));
_Static_assert(sizeof(struct elf64_ehdr) == 64, "ELF64 header");
_Static_assert(offsetof(struct elf64_ehdr, phoff) == 32, "e_phoff");
_Static_assert(offsetof(struct elf64_ehdr, phnum) == 56, "e_phnum");

struct elf32_phdr {
	uint32_t	type;
	uint32_t	offset;
	uint32_t	vaddr;
	uint32_t	paddr;
	uint32_t	filesz;
	uint32_t	memsz;
	uint32_t	flags;
	uint32_t	align;
} __attribute__((packed));
_Static_assert(sizeof(struct elf32_phdr) == 32, "ELF32 program header");

struct elf64_phdr {
	uint32_t	type;
	uint32_t	flags;
	uint64_t	offset;
	uint64_t	vaddr;
	uint64_t	paddr;
	uint64_t	filesz;
	uint64_t	memsz;
	uint64_t	align;
} __attribute__((packed));
_Static_assert(sizeof(struct elf64_phdr) == 56, "ELF64 program header");
_Static_assert(offsetof(struct elf64_phdr, paddr) == 24, "p_paddr");

struct elf32_shdr {
	uint32_t	name;
	uint32_t	type;
	uint32_t	flags;
	uint32_t	addr;
	uint32_t	offset;
	uint32_t	size;
	uint32_t	link;
	uint32_t	info;
	uint32_t	addralign;
	uint32_t	entsize;
} __attribute__((packed));
_Static_assert(sizeof(struct elf32_shdr) == 40, "ELF32 section header");

struct elf64_shdr {
	uint32_t	name;
	uint32_t	type;
	uint64_t	flags;
	uint64_t	addr;
	uint64_t	offset;
	uint64_t	size;
	uint32_t	link;
	uint32_t	info;
	uint64_t	addralign;
	uint64_t	entsize;
} __attribute__((packed));
_Static_assert(sizeof(struct elf64_shdr) == 64, "ELF64 section header");
_Static_assert(offsetof(struct elf64_shdr, offset) == 24, "sh_offset");

struct elf_nhdr {
	uint32_t	namesz;
	uint32_t	descsz;
	uint32_t	type;
} __attribute__((packed));
_Static_assert(sizeof(struct elf_nhdr) == 12, "ELF note header");

#define XEN_ELFNOTE_PHYS32_ENTRY 18

/* hvm_start_info and the tables it points to. */
#define HVM_START_MAGIC		0x336ec578U
#define HVM_START_VERSION	1

struct pvh_start_info {
	uint32_t	magic;
	uint32_t	version;
	uint32_t	flags;
	uint32_t	nr_modules;
	uint64_t	modlist_paddr;
	uint64_t	cmdline_paddr;
	uint64_t	rsdp_paddr;
	uint64_t	memmap_paddr;	/* version 1 */
	uint32_t	memmap_entries;	/* version 1 */
	uint32_t	reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct pvh_start_info) == 56, "hvm_start_info");
_Static_assert(offsetof(struct pvh_start_info, modlist_paddr) == 16, "mods");
_Static_assert(offsetof(struct pvh_start_info, cmdline_paddr) == 24, "cmd");
_Static_assert(offsetof(struct pvh_start_info, memmap_paddr) == 40, "map");
_Static_assert(offsetof(struct pvh_start_info, memmap_entries) == 48, "n");

struct pvh_module {
	uint64_t	paddr;
	uint64_t	size;
	uint64_t	cmdline_paddr;
	uint64_t	reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct pvh_module) == 32, "hvm_modlist_entry");

struct pvh_memmap {
	uint64_t	addr;
	uint64_t	size;
	uint32_t	type;
	uint32_t	reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct pvh_memmap) == 24, "hvm_memmap_table_entry");

#define PVH_MODLIST_ADDR	(BOOT_PVH_INFO_ADDR + 0x40)
#define PVH_MEMMAP_ADDR		(BOOT_PVH_INFO_ADDR + 0x80)
_Static_assert(PVH_MODLIST_ADDR >= BOOT_PVH_INFO_ADDR +
    sizeof(struct pvh_start_info), "module list overlaps start info");
_Static_assert(PVH_MEMMAP_ADDR >= PVH_MODLIST_ADDR + sizeof(struct pvh_module),
    "memory map overlaps module list");
_Static_assert(PVH_MEMMAP_ADDR + BOOT_E820_MAX * sizeof(struct pvh_memmap) <=
    BOOT_ZERO_PAGE_ADDR, "PVH tables overlap the zero page");

/* Limits on what a sane kernel has, against absurd allocations. */
#define PVH_MAX_PHDRS		512
#define PVH_MAX_SHDRS		4096
#define PVH_MAX_ENTSIZE		512
#define PVH_MAX_LOAD		32
#define PVH_MAX_NOTES		(1024 * 1024)	/* bytes of one note area */

struct pvh_seg {
	uint64_t	offset;
	uint64_t	paddr;
	uint64_t	filesz;
	uint64_t	memsz;
};

struct pvh_image {
	int		 is64;
	uint64_t	 entry;
	int		 have_entry;
	unsigned int	 nseg;
	struct pvh_seg	 seg[PVH_MAX_LOAD];
	uint64_t	 end;		/* end of the highest segment */
};

/* Class-independent views of the headers we use. */
struct pvh_ehdr {
	uint64_t	phoff;
	uint64_t	shoff;
	unsigned int	phentsize, phnum;
	unsigned int	shentsize, shnum;
};

struct pvh_phdr {
	uint32_t	type;
	uint64_t	offset, paddr, filesz, memsz, align;
};

static int
pvh_read_ehdr(const struct boot_file *f, struct pvh_image *img,
    struct pvh_ehdr *eh, char *err, size_t errlen)
{
	struct elf32_ehdr e32;
	struct elf64_ehdr e64;
	const uint8_t *id = f->head;
	unsigned int type, machine;
	size_t min_ph;

	memset(eh, 0, sizeof(*eh));
	if (f->head_len < 16)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file is truncated in its identification");
	if (id[EI_CLASS] != ELFCLASS32 && id[EI_CLASS] != ELFCLASS64)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file has an unknown class %u", id[EI_CLASS]);
	if (id[EI_DATA] != ELFDATA2LSB)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file is not little-endian");
	if (id[EI_VERSION] != EV_CURRENT)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file has an unknown version %u", id[EI_VERSION]);

	img->is64 = id[EI_CLASS] == ELFCLASS64;
	if (img->is64) {
		if (f->head_len < sizeof(e64))
			return boot_fail(err, errlen, -ENOEXEC,
			    "ELF file is truncated in its header");
		memcpy(&e64, f->head, sizeof(e64));
		type = e64.type;
		machine = e64.machine;
		eh->phoff = e64.phoff;
		eh->shoff = e64.shoff;
		eh->phentsize = e64.phentsize;
		eh->phnum = e64.phnum;
		eh->shentsize = e64.shentsize;
		eh->shnum = e64.shnum;
		min_ph = sizeof(struct elf64_phdr);
	} else {
		if (f->head_len < sizeof(e32))
			return boot_fail(err, errlen, -ENOEXEC,
			    "ELF file is truncated in its header");
		memcpy(&e32, f->head, sizeof(e32));
		type = e32.type;
		machine = e32.machine;
		eh->phoff = e32.phoff;
		eh->shoff = e32.shoff;
		eh->phentsize = e32.phentsize;
		eh->phnum = e32.phnum;
		eh->shentsize = e32.shentsize;
		eh->shnum = e32.shnum;
		min_ph = sizeof(struct elf32_phdr);
	}
	if (type != ET_EXEC)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file is not an executable (type %u)", type);
	if (machine != EM_X86_64 && !(machine == EM_386 && !img->is64))
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file is not for x86 (machine %u)", machine);
	if (eh->phnum == 0)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file has no program headers");
	if (eh->phnum > PVH_MAX_PHDRS)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file has too many program headers (%u)", eh->phnum);
	if (eh->phentsize < min_ph || eh->phentsize > PVH_MAX_ENTSIZE)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF program header size %u is invalid", eh->phentsize);
	if (eh->phoff > f->size ||
	    (uint64_t)eh->phnum * eh->phentsize > f->size - eh->phoff)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF program headers lie beyond the end of the file");
	return 0;
}

static void
pvh_decode_phdr(const struct pvh_image *img, const uint8_t *p,
    struct pvh_phdr *ph)
{
	struct elf32_phdr p32;
	struct elf64_phdr p64;

	if (img->is64) {
		memcpy(&p64, p, sizeof(p64));
		ph->type = p64.type;
		ph->offset = p64.offset;
		ph->paddr = p64.paddr;
		ph->filesz = p64.filesz;
		ph->memsz = p64.memsz;
		ph->align = p64.align;
	} else {
		memcpy(&p32, p, sizeof(p32));
		ph->type = p32.type;
		ph->offset = p32.offset;
		ph->paddr = p32.paddr;
		ph->filesz = p32.filesz;
		ph->memsz = p32.memsz;
		ph->align = p32.align;
	}
}

/*
 * Look through one note area for the PVH entry note.  Notes are padded
 * to 4 bytes (what every x86 toolchain emits, in ELF64 too) unless the
 * area says 8.
 */
static int
pvh_scan_notes(struct pvh_image *img, const uint8_t *buf, uint64_t len,
    uint64_t align, char *err, size_t errlen)
{
	struct elf_nhdr nh;
	uint64_t off = 0, name, desc, next, a;

	a = align == 8 ? 8 : 4;
	while (len - off >= sizeof(nh)) {
		memcpy(&nh, buf + off, sizeof(nh));
		name = off + sizeof(nh);
		/* namesz and descsz are 32-bit: no 64-bit overflow here. */
		desc = name + ((nh.namesz + a - 1) & ~(a - 1));
		if (desc > len || nh.descsz > len - desc)
			return boot_fail(err, errlen, -ENOEXEC,
			    "ELF note at offset %llu runs past its area",
			    (unsigned long long)off);
		next = desc + ((nh.descsz + a - 1) & ~(a - 1));

		if (nh.type == XEN_ELFNOTE_PHYS32_ENTRY &&
		    ((nh.namesz == 4 && memcmp(buf + name, "Xen", 4) == 0) ||
		    (nh.namesz == 3 && memcmp(buf + name, "Xen", 3) == 0))) {
			if (nh.descsz == 4)
				img->entry = boot_le32(buf + desc);
			else if (nh.descsz == 8)
				img->entry = boot_le64(buf + desc);
			else
				return boot_fail(err, errlen, -ENOEXEC,
				    "PVH entry note has a %u-byte value, 4 "
				    "or 8 expected", nh.descsz);
			img->have_entry = 1;
			return 0;
		}
		/* The last note's padding may be cut off. */
		if (next >= len)
			break;
		off = next;
	}
	return 0;
}

static int
pvh_read_notes(const struct boot_file *f, struct pvh_image *img,
    uint64_t offset, uint64_t size, uint64_t align, char *err, size_t errlen)
{
	uint8_t *buf;
	int r;

	if (offset > f->size || size > f->size - offset)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF note area lies beyond the end of the file");
	if (size > PVH_MAX_NOTES)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF note area is too large (%llu bytes)",
		    (unsigned long long)size);
	if (size == 0)
		return 0;
	buf = malloc(size);
	if (buf == NULL)
		return boot_fail(err, errlen, -ENOMEM, "out of memory");
	r = boot_file_read(f, buf, size, offset, err, errlen);
	if (r == 0)
		r = pvh_scan_notes(img, buf, size, align, err, errlen);
	free(buf);
	return r;
}

/* The PVH note was not in a PT_NOTE segment: try SHT_NOTE sections. */
static int
pvh_section_notes(const struct boot_file *f, struct pvh_image *img,
    const struct pvh_ehdr *eh, char *err, size_t errlen)
{
	struct elf32_shdr s32;
	struct elf64_shdr s64;
	uint64_t tsize, type, offset, size, align;
	size_t min_sh;
	uint8_t *tab;
	unsigned int i;
	int r = 0;

	if (eh->shoff == 0 || eh->shnum == 0)
		return 0;
	min_sh = img->is64 ? sizeof(s64) : sizeof(s32);
	if (eh->shnum > PVH_MAX_SHDRS || eh->shentsize < min_sh ||
	    eh->shentsize > PVH_MAX_ENTSIZE)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF section header table is invalid");
	tsize = (uint64_t)eh->shnum * eh->shentsize;
	if (eh->shoff > f->size || tsize > f->size - eh->shoff)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF section headers lie beyond the end of the file");
	tab = malloc(tsize);
	if (tab == NULL)
		return boot_fail(err, errlen, -ENOMEM, "out of memory");
	r = boot_file_read(f, tab, tsize, eh->shoff, err, errlen);
	for (i = 0; r == 0 && i < eh->shnum && !img->have_entry; i++) {
		if (img->is64) {
			memcpy(&s64, tab + (size_t)i * eh->shentsize,
			    sizeof(s64));
			type = s64.type;
			offset = s64.offset;
			size = s64.size;
			align = s64.addralign;
		} else {
			memcpy(&s32, tab + (size_t)i * eh->shentsize,
			    sizeof(s32));
			type = s32.type;
			offset = s32.offset;
			size = s32.size;
			align = s32.addralign;
		}
		if (type == SHT_NOTE)
			r = pvh_read_notes(f, img, offset, size, align, err,
			    errlen);
	}
	free(tab);
	return r;
}

/*
 * Where a segment may go, whatever the RAM size: not over the loader's
 * tables, the EBDA or the legacy hole, and not above the low RAM.
 */
static int
pvh_check_placement(uint64_t start, uint64_t end, char *err, size_t errlen)
{
	if (end > PC_PCI_HOLE_START)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF segment at 0x%llx-0x%llx beyond guest RAM: segments "
		    "must end below 0x%llx", (unsigned long long)start,
		    (unsigned long long)end - 1, PC_PCI_HOLE_START);
	if (start < BOOT_AREA_END)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF segment at 0x%llx-0x%llx overlaps the loader's "
		    "tables below 0x%llx", (unsigned long long)start,
		    (unsigned long long)end - 1, BOOT_AREA_END);
	if (start < PC_HIGH_MEM_START && end > PC_LOW_MEM_END)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF segment at 0x%llx-0x%llx overlaps the EBDA and BIOS "
		    "area 0x%llx-0x%llx", (unsigned long long)start,
		    (unsigned long long)end - 1, PC_LOW_MEM_END,
		    PC_HIGH_MEM_START - 1);
	return 0;
}

static int
pvh_parse(const struct boot_file *f, struct pvh_image *img, char *err,
    size_t errlen)
{
	struct pvh_ehdr eh;
	struct pvh_phdr ph;
	struct pvh_seg *s;
	uint8_t *tab;
	uint64_t tsize;
	unsigned int i;
	int r;

	memset(img, 0, sizeof(*img));
	r = pvh_read_ehdr(f, img, &eh, err, errlen);
	if (r < 0)
		return r;

	tsize = (uint64_t)eh.phnum * eh.phentsize;
	tab = malloc(tsize);
	if (tab == NULL)
		return boot_fail(err, errlen, -ENOMEM, "out of memory");
	r = boot_file_read(f, tab, tsize, eh.phoff, err, errlen);
	for (i = 0; r == 0 && i < eh.phnum; i++) {
		pvh_decode_phdr(img, tab + (size_t)i * eh.phentsize, &ph);
		if (ph.type == PT_NOTE && !img->have_entry) {
			r = pvh_read_notes(f, img, ph.offset, ph.filesz,
			    ph.align, err, errlen);
			continue;
		}
		if (ph.type != PT_LOAD || ph.memsz == 0)
			continue;
		if (ph.filesz > ph.memsz) {
			r = boot_fail(err, errlen, -ENOEXEC,
			    "ELF segment %u has more file bytes than memory "
			    "bytes", i);
			break;
		}
		if (ph.offset > f->size || ph.filesz > f->size - ph.offset) {
			r = boot_fail(err, errlen, -ENOEXEC,
			    "ELF segment %u lies beyond the end of the file "
			    "(file is truncated?)", i);
			break;
		}
		if (ph.paddr > UINT64_MAX - ph.memsz) {
			r = boot_fail(err, errlen, -ENOEXEC,
			    "ELF segment %u wraps around the address space",
			    i);
			break;
		}
		r = pvh_check_placement(ph.paddr, ph.paddr + ph.memsz, err,
		    errlen);
		if (r < 0)
			break;
		if (img->nseg == PVH_MAX_LOAD) {
			r = boot_fail(err, errlen, -ENOEXEC,
			    "ELF file has more than %d loadable segments",
			    PVH_MAX_LOAD);
			break;
		}
		s = &img->seg[img->nseg++];
		s->offset = ph.offset;
		s->paddr = ph.paddr;
		s->filesz = ph.filesz;
		s->memsz = ph.memsz;
		if (s->paddr + s->memsz > img->end)
			img->end = s->paddr + s->memsz;
	}
	free(tab);
	if (r < 0)
		return r;

	if (!img->have_entry) {
		r = pvh_section_notes(f, img, &eh, err, errlen);
		if (r < 0)
			return r;
	}
	if (!img->have_entry)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file has no PVH entry point (Xen note "
		    "XEN_ELFNOTE_PHYS32_ENTRY): not a PVH kernel");
	if (img->nseg == 0)
		return boot_fail(err, errlen, -ENOEXEC,
		    "ELF file has no loadable segments");
	for (i = 0; i < img->nseg; i++) {
		s = &img->seg[i];
		if (img->entry >= s->paddr && img->entry - s->paddr < s->memsz)
			return 0;
	}
	return boot_fail(err, errlen, -ENOEXEC,
	    "PVH entry point 0x%llx is outside the loadable segments",
	    (unsigned long long)img->entry);
}

/* Any ELF file is ours; pvh_parse says what it lacks to be booted. */
static bool
pvh_recognises(const struct boot_file *f)
{
	static const uint8_t elfmag[4] = { 0x7f, 'E', 'L', 'F' };

	return f->head_len >= 4 && memcmp(f->head, elfmag, 4) == 0;
}

static int
pvh_probe(const struct boot_file *f, char *err, size_t errlen)
{
	struct pvh_image img;

	return pvh_parse(f, &img, err, errlen);
}

static int
pvh_load(const struct boot_mem *mem, const struct boot_file *f,
    const struct boot_args *args, struct boot_cpu *cpu, char *err,
    size_t errlen)
{
	struct pvh_start_info si;
	struct pvh_module mod;
	struct pvh_memmap mm;
	struct boot_e820 map[BOOT_E820_MAX];
	struct pvh_image img;
	struct pvh_seg *s;
	uint64_t floor, initrd_addr = 0, initrd_size = 0;
	unsigned int i, n;
	int r;

	r = pvh_parse(f, &img, err, errlen);
	if (r < 0)
		return r;
	for (i = 0; i < img.nseg; i++) {
		s = &img.seg[i];
		if (!boot_mem_fits(mem, s->paddr, s->memsz))
			return boot_fail(err, errlen, -EFBIG,
			    "ELF segment at 0x%llx-0x%llx beyond guest RAM "
			    "(%llu MiB below 0x%llx)",
			    (unsigned long long)s->paddr,
			    (unsigned long long)(s->paddr + s->memsz - 1),
			    (unsigned long long)mem->low_size >> 20,
			    PC_PCI_HOLE_START);
	}

	r = boot_cmdline_write(mem, args->cmdline, BOOT_CMDLINE_MAX - 1, err,
	    errlen);
	if (r < 0)
		return r;

	for (i = 0; i < img.nseg; i++) {
		s = &img.seg[i];
		r = boot_file_read(f, mem->low + s->paddr, s->filesz,
		    s->offset, err, errlen);
		if (r < 0)
			return r;
		/* The rest of the segment (.bss) reads as zero. */
		memset(mem->low + s->paddr + s->filesz, 0,
		    s->memsz - s->filesz);
	}

	if (args->initrd != NULL) {
		floor = img.end > PC_HIGH_MEM_START ? img.end :
		    PC_HIGH_MEM_START;
		r = boot_initrd_load(mem, args->initrd, floor, mem->low_size,
		    &initrd_addr, &initrd_size, err, errlen);
		if (r < 0)
			return r;
	}

	memset(mem->low + BOOT_PVH_INFO_ADDR, 0, 4096);
	memset(&si, 0, sizeof(si));
	si.magic = HVM_START_MAGIC;
	si.version = HVM_START_VERSION;
	si.cmdline_paddr = BOOT_CMDLINE_ADDR;
	if (initrd_size > 0) {
		memset(&mod, 0, sizeof(mod));
		mod.paddr = initrd_addr;
		mod.size = initrd_size;
		memcpy(mem->low + PVH_MODLIST_ADDR, &mod, sizeof(mod));
		si.nr_modules = 1;
		si.modlist_paddr = PVH_MODLIST_ADDR;
	}
	n = boot_e820_build(mem, map);
	/*
	 * A display: its framebuffer is a reserved range of the memory map,
	 * the only way a PVH guest (no screen_info) can learn it is there.
	 */
	if (args->fb.base != 0) {
		r = boot_e820_insert(map, n, args->fb.base, args->fb.size,
		    BOOT_E820_RESERVED);
		if (r < 0)
			return boot_fail(err, errlen, r, "cannot add the "
			    "framebuffer at 0x%llx to the memory map: %s",
			    (unsigned long long)args->fb.base,
			    r == -ENOSPC ? "no room" : "overlaps an entry");
		n = (unsigned int)r;
	}
	for (i = 0; i < n; i++) {
		memset(&mm, 0, sizeof(mm));
		mm.addr = map[i].addr;
		mm.size = map[i].size;
		mm.type = map[i].type;
		memcpy(mem->low + PVH_MEMMAP_ADDR + i * sizeof(mm), &mm,
		    sizeof(mm));
	}
	si.memmap_paddr = PVH_MEMMAP_ADDR;
	si.memmap_entries = n;
	/* boot.c writes the tables once the loader is done. */
	si.rsdp_paddr = BOOT_ACPI_RSDP_ADDR;
	memcpy(mem->low + BOOT_PVH_INFO_ADDR, &si, sizeof(si));

	boot_x86_write_gdt(mem, 0, cpu);
	cpu->mode = BOOT_CPU_PROT32;
	cpu->rip = img.entry;
	cpu->rbx = BOOT_PVH_INFO_ADDR;
	cpu->rsp = BOOT_STACK_TOP;
	return 0;
}

const struct boot_loader boot_loader_pvh = {
	.name = "PVH ELF",
	.recognises = pvh_recognises,
	.probe = pvh_probe,
	.load = pvh_load,
};
