/*
 * Direct kernel boot: Linux bzImage (64-bit boot protocol) and PVH ELF.
 *
 * The loaders work on a host mapping of guest RAM and never touch KVM:
 * they write the kernel, initrd, command line, boot tables and (for the
 * 64-bit protocol) page tables and GDT into guest memory, and describe
 * the CPU state the boot vCPU must start in.  The worker applies that
 * state with KVM_SET_SREGS/KVM_SET_REGS.
 */
#ifndef VMMD_BOOT_H
#define VMMD_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "boot-tables.h"
#include "pc-layout.h"

/*
 * Fixed layout of what the loaders write below 1 MiB.  All of it is
 * ordinary RAM in the e820 map (the kernel copies what it keeps before
 * it reuses the memory) except the MP table, which is in reserved memory.
 *
 *   0x00500  GDT: 0x10 flat code (64- or 32-bit), 0x18 flat data,
 *            0x20 a 32-bit TSS (base 0, limit 0x67) for TR
 *   0x06000  PVH: hvm_start_info, then the module list and memory map
 *   0x07000  bzImage: boot_params ("zero page")
 *   0x08000  scratch stack, growing down from 0x9000 (initial RSP)
 *   0x09000  PML4, 0x0a000 PDPT, 0x0b000-0x0efff four page directories:
 *            the first 4 GiB identity-mapped with 2 MiB pages
 *   0x20000  command line (up to 64 KiB with its NUL)
 *   0x30000  end of the loader's area: PVH segments may start here
 *   0x9fc00  MP floating pointer (EBDA, reserved)
 *   0xe0000  ACPI: RSDP, FACS, XSDT, FADT, MADT, DSDT (reserved)
 *   0xf0000  MP configuration table (it does not fit in the EBDA's
 *            first KiB: 128 PCI interrupt entries); reserved like a BIOS
 *   1 MiB    bzImage protected-mode kernel; PVH segments (at p_paddr)
 *   top      initrd, as high in low RAM as the kernel allows
 */
#define BOOT_GDT_ADDR		0x500ULL
#define BOOT_GDT_CODE_SEL	0x10	/* the kernel's __BOOT_CS */
#define BOOT_GDT_DATA_SEL	0x18	/* the kernel's __BOOT_DS */
#define BOOT_GDT_TSS_SEL	0x20	/* busy 32-bit TSS, base 0, limit 0x67 */
#define BOOT_PVH_INFO_ADDR	0x6000ULL
#define BOOT_ZERO_PAGE_ADDR	0x7000ULL
#define BOOT_STACK_TOP		0x9000ULL
#define BOOT_PML4_ADDR		0x9000ULL
#define BOOT_PDPT_ADDR		0xa000ULL
#define BOOT_PD_ADDR		0xb000ULL	/* 4 pages */
#define BOOT_CMDLINE_ADDR	0x20000ULL
#define BOOT_CMDLINE_MAX	0x10000ULL	/* bytes, including the NUL */
#define BOOT_AREA_END		0x30000ULL
#define BOOT_KERNEL_ADDR	PC_HIGH_MEM_START
#define BOOT_MIN_LOW_SIZE	0x200000ULL	/* 2 MiB: layout + something */

/*
 * Guest RAM as the loaders see it: one host mapping of everything below
 * PC_PCI_HOLE_START (low_size bytes from guest physical 0), plus
 * high_size bytes at PC_HIGH_RAM_START that the loaders only describe
 * in memory maps and never write.
 */
struct boot_mem {
	uint8_t *low;
	uint64_t low_size;
	uint64_t high_size;
	/*
	 * The caller knows low RAM is all zero (a fresh anonymous mapping):
	 * the loader then skips clearing its areas, which would only fault
	 * in pages for nothing.
	 */
	bool zeroed;
};

/*
 * A linear framebuffer (x8r8g8b8, 4 bytes a pixel) the loaders describe:
 * bzImage guests through boot_params' screen_info (VIDEO_TYPE_VLFB),
 * PVH guests as a reserved range of their memory map.  base 0: none.
 */
struct boot_fb {
	uint64_t base;		/* guest physical, PC_FRAMEBUFFER_ADDR */
	uint64_t size;		/* bytes mapped, page-aligned */
	uint32_t width;
	uint32_t height;
	uint32_t stride;	/* bytes a line */
};

struct boot_args {
	const char *kernel;	/* path; required */
	const char *initrd;	/* path or NULL */
	const char *cmdline;	/* NULL means empty */
	unsigned int ncpus;	/* for the MP table */
	struct boot_fb fb;	/* the display, if any */
};

enum boot_cpu_mode {
	BOOT_CPU_LONG64,	/* 64-bit boot protocol: long mode, paging on */
	BOOT_CPU_PROT32,	/* PVH: 32-bit protected mode, paging off */
	/*
	 * Firmware: the PC's reset state, real mode at code_sel:rip with
	 * CS's base at 0xffff0000 (the top of 4 GiB until the first far
	 * jump); nothing else of boot_cpu applies.
	 */
	BOOT_CPU_RESET,
};

/* Boot vCPU state produced by a loader. */
struct boot_cpu {
	enum boot_cpu_mode mode;
	uint64_t rip;
	uint64_t rsp;
	uint64_t rsi;		/* bzImage: boot_params */
	uint64_t rbx;		/* PVH: hvm_start_info */
	uint64_t cr3;		/* BOOT_CPU_LONG64 only */
	uint64_t gdt_base;	/* a flat GDT the loader wrote */
	uint16_t gdt_limit;
	uint16_t code_sel;	/* selectors into that GDT */
	uint16_t data_sel;
};

/* One e820 entry, as the kernel's boot_params and hvm_memmap carry it. */
struct boot_e820 {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};
#define BOOT_E820_RAM		1
#define BOOT_E820_RESERVED	2
#define BOOT_E820_MAX		8

/*
 * Load the kernel named by args into mem, detecting its format.  On
 * failure returns a negative errno and writes a one-line reason into err
 * (which never mentions the path: the caller adds context).  -ENOEXEC
 * means the file is neither a bzImage nor a PVH ELF kernel, -EINVAL that
 * it is one but malformed, -EFBIG that the kernel or initrd does not fit
 * in the guest's RAM: all three the definition's fault, not the host's
 * (-ENOMEM is the host's).
 */
int boot_load(const struct boot_mem *mem, const struct boot_args *args,
    struct boot_cpu *cpu, char *err, size_t errlen);

/*
 * Check that path is a kernel boot_load could load (a bzImage with the
 * 64-bit entry point, or an ELF file with a PVH entry note) without
 * loading it.  0 if so; -ENOEXEC with a reason in err if not; another
 * negative errno (and a reason) if the file cannot be opened or read.
 */
int boot_probe(const char *path, char *err, size_t errlen);

/* Fill out[] with the guest's memory map; returns the number of entries. */
unsigned int boot_e820_build(const struct boot_mem *mem,
    struct boot_e820 out[BOOT_E820_MAX]);

#endif
