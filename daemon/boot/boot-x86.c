/*
 * x86 tables both entry protocols need: a flat GDT and, for the 64-bit
 * boot protocol, identity-mapped page tables.  Descriptor and page table
 * formats: Intel SDM vol. 3A, 3.4.5 (segment descriptors), 7.2.2 (TSS
 * descriptor) and 4.5 (4-level paging).
 */
#include <string.h>

#include "boot.h"
#include "boot-internal.h"

/* Segment descriptor fields (SDM 3A, figure 3-8). */
#define SEG_LIMIT_LOW(l)	((uint64_t)((l) & 0xffff))
#define SEG_LIMIT_HIGH(l)	((uint64_t)(((l) >> 16) & 0xf) << 48)
#define SEG_TYPE(t)		((uint64_t)(t) << 40)
#define SEG_S			(1ULL << 44)	/* code or data, not system */
#define SEG_P			(1ULL << 47)
#define SEG_L			(1ULL << 53)	/* 64-bit code */
#define SEG_DB			(1ULL << 54)	/* 32-bit default size */
#define SEG_G			(1ULL << 55)	/* limit in 4 KiB units */

/*
 * Types with the accessed bit already set: the CPU would otherwise write
 * it into the GDT on the first segment load.
 */
#define SEG_TYPE_CODE_RX_A	0xb
#define SEG_TYPE_DATA_RW_A	0x3
#define SEG_TYPE_TSS32_BUSY	0xb

#define GDT_ENTRIES		5	/* null, unused, code, data, TSS */

/* Page table entry bits (SDM 3A, 4.5). */
#define PTE_P			0x001ULL
#define PTE_RW			0x002ULL
#define PTE_PS			0x080ULL	/* 2 MiB page in a PD entry */

#define PD_PAGE_SIZE		0x200000ULL
#define PT_ENTRIES		512
#define IDENTITY_PDS		4		/* 4 x 1 GiB = first 4 GiB */

_Static_assert(BOOT_PD_ADDR + IDENTITY_PDS * 4096 <= BOOT_CMDLINE_ADDR,
    "page directories overlap the command line");
_Static_assert(BOOT_GDT_ADDR + GDT_ENTRIES * 8 <= BOOT_PVH_INFO_ADDR,
    "GDT overlaps the PVH start info");
_Static_assert(BOOT_GDT_TSS_SEL == 0x20, "TSS selector is GDT entry 4");

static void
gdt_put(const struct boot_mem *mem, unsigned int sel, uint64_t desc)
{
	memcpy(mem->low + BOOT_GDT_ADDR + sel, &desc, sizeof(desc));
}

void
boot_x86_write_gdt(const struct boot_mem *mem, int long_mode,
    struct boot_cpu *cpu)
{
	const uint64_t flat = SEG_LIMIT_LOW(0xfffff) | SEG_LIMIT_HIGH(0xfffff) |
	    SEG_S | SEG_P | SEG_G;
	uint64_t code, data, tss;

	/* In long mode D must be clear when L is set. */
	code = flat | SEG_TYPE(SEG_TYPE_CODE_RX_A) |
	    (long_mode ? SEG_L : SEG_DB);
	data = flat | SEG_TYPE(SEG_TYPE_DATA_RW_A) | SEG_DB;
	/* The task register PVH asks for: base 0, limit 0x67, busy. */
	tss = SEG_LIMIT_LOW(0x67) | SEG_TYPE(SEG_TYPE_TSS32_BUSY) | SEG_P;

	memset(mem->low + BOOT_GDT_ADDR, 0, GDT_ENTRIES * 8);
	gdt_put(mem, BOOT_GDT_CODE_SEL, code);
	gdt_put(mem, BOOT_GDT_DATA_SEL, data);
	gdt_put(mem, BOOT_GDT_TSS_SEL, tss);

	cpu->gdt_base = BOOT_GDT_ADDR;
	cpu->gdt_limit = GDT_ENTRIES * 8 - 1;
	cpu->code_sel = BOOT_GDT_CODE_SEL;
	cpu->data_sel = BOOT_GDT_DATA_SEL;
}

/*
 * Identity-map the first 4 GiB with 2 MiB pages: one PML4 entry, four
 * PDPT entries, four full page directories.  1 GiB pages would save the
 * directories but need CPUID.80000001H:EDX.Page1GB, which a guest CPU
 * model may not offer.
 */
void
boot_x86_write_page_tables(const struct boot_mem *mem, struct boot_cpu *cpu)
{
	uint64_t e;
	unsigned int i;

	memset(mem->low + BOOT_PML4_ADDR, 0, 4096);
	memset(mem->low + BOOT_PDPT_ADDR, 0, 4096);

	e = BOOT_PDPT_ADDR | PTE_P | PTE_RW;
	memcpy(mem->low + BOOT_PML4_ADDR, &e, sizeof(e));
	for (i = 0; i < IDENTITY_PDS; i++) {
		e = (BOOT_PD_ADDR + i * 4096ULL) | PTE_P | PTE_RW;
		memcpy(mem->low + BOOT_PDPT_ADDR + i * 8, &e, sizeof(e));
	}
	for (i = 0; i < IDENTITY_PDS * PT_ENTRIES; i++) {
		e = i * PD_PAGE_SIZE | PTE_P | PTE_RW | PTE_PS;
		memcpy(mem->low + BOOT_PD_ADDR + i * 8ULL, &e, sizeof(e));
	}
	cpu->cr3 = BOOT_PML4_ADDR;
}
