/*
 * smp: start every application processor and have each one report.
 *
 * The processors come from the MP table (vmmd writes one at 0x9fc00),
 * unless the command line says cpus=N: then APIC IDs 0..N-1 are started,
 * which is also the fallback without a table (and then N defaults to 1).
 *
 * Output:
 *   mptable: found at 0xADDR, N cpus | mptable: not found
 *   mptable: cpu apic_id=M           (one per enabled processor)
 *   cpu N apic_id M                  (one per running CPU, BSP first)
 *   smp: N cpus up
 *   PASS | FAIL: reason
 */
#include "runtime/rt.h"

/* Real mode is emulated slowly; give the APs plenty of time. */
#define AP_TIMEOUT_MS	5000

static void
ap_report(unsigned cpu, uint32_t apic_id)
{
	printf("cpu %u apic_id %u\n", cpu, apic_id);
}

void
guest_main(void)
{
	uint32_t ids[SMP_MAX_CPUS], pa = 0;
	unsigned long want;
	int n, i, up;

	printf("smp: starting\n");
	n = mptable_cpus(ids, SMP_MAX_CPUS, &pa);
	if (n >= 0) {
		printf("mptable: found at 0x%x, %d cpus\n", pa, n);
		for (i = 0; i < n; i++)
			printf("mptable: cpu apic_id=%u\n", ids[i]);
	} else {
		printf("mptable: not found\n");
	}
	if (n <= 0 || cmdline_get_ulong("cpus", 0) != 0) {
		want = cmdline_get_ulong("cpus", 1);
		if (want < 1 || want > SMP_MAX_CPUS) {
			printf("FAIL: bad cpus=%lu\n", want);
			return;
		}
		n = (int)want;
		for (i = 0; i < n; i++)
			ids[i] = i;
	}

	ap_report(0, lapic_id());
	up = smp_start_aps(ids, n, ap_report, AP_TIMEOUT_MS);
	printf("smp: %d cpus up\n", up);
	if (up == n)
		printf("PASS\n");
	else
		printf("FAIL: %d of %d cpus came up\n", up, n);
}
