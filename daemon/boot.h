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

#include <stddef.h>
#include <stdint.h>

/* Guest physical memory map used by every loader. */
#define BOOT_LOW_MEM_END	0x9fc00ULL	/* base memory, then the EBDA */
#define BOOT_EBDA_START		0x9fc00ULL	/* MP table lives here */
#define BOOT_BIOS_START		0xf0000ULL	/* reserved, like a PC's BIOS */
#define BOOT_HIGH_MEM_START	0x100000ULL	/* 1 MiB: kernels load here */
#define BOOT_PCI_HOLE_START	0xc0000000ULL	/* RAM stops at 3 GiB ... */
#define BOOT_HIGH_RAM_START	0x100000000ULL	/* ... and resumes at 4 GiB */

/*
 * Guest RAM as the loaders see it: one host mapping of everything below
 * BOOT_PCI_HOLE_START (low_size bytes from guest physical 0), plus
 * high_size bytes at BOOT_HIGH_RAM_START that the loaders only describe
 * in memory maps and never write.
 */
struct boot_mem {
	uint8_t *low;
	uint64_t low_size;
	uint64_t high_size;
};

struct boot_args {
	const char *kernel;	/* path; required */
	const char *initrd;	/* path or NULL */
	const char *cmdline;	/* NULL means empty */
	unsigned int ncpus;	/* for the MP table */
};

enum boot_cpu_mode {
	BOOT_CPU_LONG64,	/* 64-bit boot protocol: long mode, paging on */
	BOOT_CPU_PROT32,	/* PVH: 32-bit protected mode, paging off */
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
 * means the file is neither a bzImage nor a PVH ELF kernel.
 */
int boot_load(const struct boot_mem *mem, const struct boot_args *args,
    struct boot_cpu *cpu, char *err, size_t errlen);

/* Fill out[] with the guest's memory map; returns the number of entries. */
unsigned int boot_e820_build(const struct boot_mem *mem,
    struct boot_e820 out[BOOT_E820_MAX]);

/*
 * Write an MP floating pointer and configuration table (version 1.4:
 * one processor entry per vCPU with APIC ID = index, the ISA bus, the
 * IOAPIC at 0xfec00000 and the 16 ISA interrupts routed to it) at
 * guest physical address addr.  Returns bytes written or -errno.
 */
int boot_mptable_write(uint8_t *mem, uint64_t mem_size, uint64_t addr,
    unsigned int ncpus);

#endif
