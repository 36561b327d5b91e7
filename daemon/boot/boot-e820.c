/*
 * The guest's physical memory map, in the form of the BIOS INT 15h
 * E820h call (ACPI 6.x, 15.1): the bzImage loader copies it into
 * boot_params and the PVH loader into hvm_start_info's memmap.
 */
#include <errno.h>

#include "boot.h"
#include "boot-internal.h"

/* Room for what boot_e820_build makes plus the framebuffer's entry. */
_Static_assert(BOOT_E820_BUILT_MAX + 1 <= BOOT_E820_MAX,
    "the e820 map has no room for the framebuffer's reserved entry");

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
	/*
	 * 0xa0000-0xdffff: the legacy VGA and option ROM hole, not listed.
	 * The ACPI tables and the BIOS area after them: one reserved range.
	 */
	n = e820_add(out, n, PC_ACPI_TABLES_START, PC_HIGH_MEM_START,
	    BOOT_E820_RESERVED);
	n = e820_add(out, n, PC_HIGH_MEM_START, low, BOOT_E820_RAM);
	if (mem->high_size > 0)
		n = e820_add(out, n, PC_HIGH_RAM_START,
		    PC_HIGH_RAM_START + mem->high_size, BOOT_E820_RAM);
	return n;
}

int
boot_e820_insert(struct boot_e820 map[BOOT_E820_MAX], unsigned int n,
    uint64_t addr, uint64_t size, uint32_t type)
{
	unsigned int i, at;

	if (size == 0 || addr + size < addr)
		return -EINVAL;
	if (n >= BOOT_E820_MAX)
		return -ENOSPC;
	for (at = 0; at < n && map[at].addr < addr; at++)
		;
	if ((at > 0 && map[at - 1].addr + map[at - 1].size > addr) ||
	    (at < n && addr + size > map[at].addr))
		return -EINVAL;
	for (i = n; i > at; i--)
		map[i] = map[i - 1];
	map[at].addr = addr;
	map[at].size = size;
	map[at].type = type;
	return (int)n + 1;
}
