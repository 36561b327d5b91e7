/*
 * The guest's physical memory map, in the form of the BIOS INT 15h
 * E820h call (ACPI 6.x, 15.1): the bzImage loader copies it into
 * boot_params and the PVH loader into hvm_start_info's memmap.
 */
#include "boot.h"

static unsigned int
e820_add(struct boot_e820 out[BOOT_E820_MAX], unsigned int n, uint64_t addr,
    uint64_t end, uint32_t type)
{
	if (end <= addr || n >= BOOT_E820_MAX)
		return n;
	out[n].addr = addr;
	out[n].size = end - addr;
	out[n].type = type;
	return n + 1;
}

unsigned int
boot_e820_build(const struct boot_mem *mem, struct boot_e820 out[BOOT_E820_MAX])
{
	uint64_t low = mem->low_size;
	unsigned int n = 0;

	if (low > PC_PCI_HOLE_START)
		low = PC_PCI_HOLE_START;
	/* Base memory, then the EBDA holding the MP table. */
	n = e820_add(out, n, 0, low < PC_LOW_MEM_END ? low : PC_LOW_MEM_END,
	    BOOT_E820_RAM);
	n = e820_add(out, n, PC_EBDA_START, 0xa0000, BOOT_E820_RESERVED);
	/* 0xa0000-0xeffff: the legacy VGA and option ROM hole, not listed. */
	n = e820_add(out, n, PC_BIOS_START, PC_HIGH_MEM_START,
	    BOOT_E820_RESERVED);
	n = e820_add(out, n, PC_HIGH_MEM_START, low, BOOT_E820_RAM);
	if (mem->high_size > 0)
		n = e820_add(out, n, PC_HIGH_RAM_START,
		    PC_HIGH_RAM_START + mem->high_size, BOOT_E820_RAM);
	return n;
}
