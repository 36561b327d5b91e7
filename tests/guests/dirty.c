/*
 * dirty: a guest that writes its RAM all the time and checks that it
 * reads back what it wrote, for live migration's rounds: pages it
 * wrote while a round ran must reach the target in a later one.
 *
 * "mib=N" (default 8) MiB from 16 MiB up are its area.  Pass P writes
 * P into one word of every page of it, after checking that the word
 * holds P - 1, the previous pass's: a page the migration left behind
 * shows an older pass.  Every "every=N" passes (default 1000) it prints
 * a line.
 *
 * Output:
 *   dirty: N MiB from 0x1000000
 *   dirty: pass P          (every N passes)
 *   FAIL: dirty: page at 0x... holds Q in pass P
 */
#include "runtime/rt.h"

#define DIRTY_BASE	(16ul << 20)
#define DIRTY_PAGE	4096ul

void
guest_main(void)
{
	unsigned long mib = cmdline_get_ulong("mib", 8);
	unsigned long every = cmdline_get_ulong("every", 1000);
	unsigned long pages = (mib << 20) / DIRTY_PAGE, i;
	volatile uint64_t *w;
	uint64_t pass, got;

	if (every == 0)
		every = 1;
	printf("dirty: %lu MiB from %#lx\n", mib, DIRTY_BASE);
	for (pass = 1;; pass++) {
		for (i = 0; i < pages; i++) {
			w = phys_ptr(DIRTY_BASE + i * DIRTY_PAGE +
			    (pass % 512) * 8);
			/* The word this pass writes was the last pass's too:
			 * each pass moves on by one word, so compare the
			 * previous pass's word. */
			got = *(volatile uint64_t *)phys_ptr(DIRTY_BASE +
			    i * DIRTY_PAGE + ((pass - 1) % 512) * 8);
			if (pass > 1 && got != pass - 1) {
				printf("FAIL: dirty: page at %#lx holds %lu in "
				    "pass %lu\n", DIRTY_BASE + i * DIRTY_PAGE,
				    (unsigned long)got, (unsigned long)pass);
				halt_forever();
			}
			*w = pass;
		}
		if (pass % every == 0)
			printf("dirty: pass %lu\n", (unsigned long)pass);
	}
}
