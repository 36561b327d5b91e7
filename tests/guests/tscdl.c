/*
 * tscdl: the local APIC timer in TSC-deadline mode, waited for.  Each
 * round writes IA32_TSC_DEADLINE 2e9 TSC cycles ahead (about a second
 * on today's hosts), says so, and halts until the timer's interrupt.
 * A guest restored from a snapshot taken while it waits must get its
 * interrupt: the deadline is part of the vCPU's state.
 *
 * Output:
 *   tscdl: round N armed
 *   tscdl: round N fired
 *   tscdl: no TSC deadline timer      (CPUID.1:ECX[24] clear) and it halts
 */
#include "runtime/rt.h"

#define VEC_TSCDL		0x52
#define LAPIC_LVT_TIMER		0xfee00320u
#define LVT_TSC_DEADLINE	0x40000
#define MSR_TSC_DEADLINE	0x6e0
#define AHEAD			2000000000ull

static volatile uint64_t fired;

static void
tscdl_irq(struct trap_frame *f)
{
	(void)f;
	fired++;
	lapic_eoi();
}

static inline void
tscdl_wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v),
	    "d"((uint32_t)(v >> 32)) : "memory");
}

void
guest_main(void)
{
	uint32_t a = 1, b, c = 0, d;
	uint64_t n, want;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (!(c & (1u << 24))) {
		printf("tscdl: no TSC deadline timer\n");
		return;
	}
	trap_set_handler(VEC_TSCDL, tscdl_irq);
	mmio_write32(LAPIC_LVT_TIMER, LVT_TSC_DEADLINE | VEC_TSCDL);
	for (n = 1;; n++) {
		want = fired + 1;
		tscdl_wrmsr(MSR_TSC_DEADLINE, rdtsc() + AHEAD);
		printf("tscdl: round %lu armed\n", n);
		while (fired < want)
			idle();
		printf("tscdl: round %lu fired\n", n);
	}
}
