/*
 * hello: the smallest guest.  Prints a greeting, what the loader passed
 * (command line, memory map) and how long the entry path took, then halts.
 *
 * "fault=ud|pf|de" on the command line then raises that exception, to
 * check that exceptions are reported ("EXCEPTION: ..." and "FAIL: ...").
 *
 * Output:
 *   hello from vmmd test guest
 *   hello: entry to first serial byte: N TSC cycles
 *   hello: cmdline "..."
 *   hello: memmap N entries, N KiB RAM
 *   hello: halting
 */
#include "runtime/rt.h"

static void
hello_fault(const char *what)
{
	uint32_t a = 1, d = 0;

	printf("hello: raising %s\n", what);
	if (strcmp(what, "ud") == 0)
		__asm__ volatile("ud2");
	else if (strcmp(what, "pf") == 0)
		/* Only the first 4 GiB are mapped. */
		(void)*(volatile uint64_t *)phys_ptr(0x100000000ul);
	else if (strcmp(what, "de") == 0)
		__asm__ volatile("divl %2" : "+a"(a), "+d"(d) : "r"(0));
	printf("FAIL: no exception for fault=%s\n", what);
}

void
guest_main(void)
{
	const struct hvm_start_info *si;
	const struct hvm_memmap_entry *mm;
	uint64_t ram = 0;
	uint32_t i;
	char fault[8];

	printf("hello from vmmd test guest\n");
	printf("hello: entry to first serial byte: %lu TSC cycles\n",
	    rt_first_byte_tsc - rt_entry_tsc);
	printf("hello: cmdline \"%s\"\n", cmdline());
	si = boot_start_info();
	if (si != NULL && si->version >= 1 && si->memmap_paddr != 0) {
		mm = phys_ptr(si->memmap_paddr);
		for (i = 0; i < si->memmap_entries; i++)
			if (mm[i].type == 1)
				ram += mm[i].size;
		printf("hello: memmap %u entries, %lu KiB RAM\n",
		    si->memmap_entries, ram >> 10);
	}
	if (cmdline_get("fault", fault, sizeof(fault))) {
		hello_fault(fault);
		return;
	}
	printf("hello: halting\n");
}
