/*
 * Guest RAM for the boot loader tests: low bytes of anonymous memory
 * (so a 1 GiB guest costs what it touches) and high bytes above 4 GiB
 * that exist only as a size.  Header-only; include it after tap.h.
 */
#ifndef VMMD_GUEST_RAM_H
#define VMMD_GUEST_RAM_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "boot.h"

/* How much of low RAM guest_ram_new() dirties. */
#define GUEST_RAM_DIRTY		(4ULL << 20)

/*
 * With fill >= 0, the first GUEST_RAM_DIRTY bytes are set to it, where
 * the loader must clean up after itself: zeroed is false either way.
 * Bails out when the memory cannot be had.
 */
static inline struct boot_mem
guest_ram_new(uint64_t low, uint64_t high, int fill)
{
	struct boot_mem m;
	void *p;

	p = mmap(NULL, low, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		tap_bail("cannot map %llu bytes", (unsigned long long)low);
	if (fill >= 0)
		memset(p, fill, low < GUEST_RAM_DIRTY ? low : GUEST_RAM_DIRTY);
	m.low = p;
	m.low_size = low;
	m.zeroed = false;	/* dirtied on purpose: the loader must clean */
	m.high_size = high;
	return m;
}

static inline void
guest_ram_free(struct boot_mem *m)
{
	munmap(m->low, m->low_size);
}

#endif
