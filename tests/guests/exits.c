/*
 * exits: known numbers of exits, for the exit statistics.  Each byte
 * received on COM1 starts a round: the boot CPU writes "outs" times to
 * port 0x80 (the POST port) and reads "reads" times from an MMIO address
 * where no device and no memory is (the start of the PCI window), then
 * says so.  In the first round it also starts the other CPUs, each of
 * which writes "ap_outs" times to port 0x80 before it reports.  Between
 * rounds the CPU halts (input is interrupt driven).
 *
 * Command line: outs=N (default 1000), reads=N (default 100),
 * ap_outs=N (default 300), auto=N (rounds run at once, without input:
 * for a VMM whose console is hard to type into).
 *
 * Output: "exits: ready", then after each round (after "exits: N cpus
 * up" in the first) "exits: round N done: C cycles for the port
 * writes" (the TSC over the boot CPU's loop of writes, for benchmarks).
 */
#include "runtime/rt.h"

#define EXITS_PORT	0x80
#define EXITS_MMIO	0xc0000000ul	/* PC_PCI_MMIO_START: nothing there */

static volatile unsigned exits_rounds_asked;
static unsigned long exits_ap_outs;

static void
exits_byte(uint8_t c)
{
	(void)c;
	exits_rounds_asked++;
}

static void
exits_ap(unsigned cpu, uint32_t apic_id)
{
	unsigned long i;

	(void)cpu;
	(void)apic_id;
	for (i = 0; i < exits_ap_outs; i++)
		outb(EXITS_PORT, (uint8_t)i);
}

void
guest_main(void)
{
	unsigned long outs = cmdline_get_ulong("outs", 1000);
	unsigned long reads = cmdline_get_ulong("reads", 100);
	uint32_t ids[SMP_MAX_CPUS];
	unsigned round = 0;
	unsigned long i;
	uint64_t t0, t1;
	int n, up;

	exits_ap_outs = cmdline_get_ulong("ap_outs", 300);
	exits_rounds_asked = (unsigned)cmdline_get_ulong("auto", 0);
	serial_rx_irq_enable(exits_byte);
	printf("exits: ready\n");
	for (;;) {
		cli();
		while (exits_rounds_asked == round) {
			idle();
			cli();
		}
		sti();
		round++;
		if (round == 1 && (n = mptable_cpus(ids, SMP_MAX_CPUS,
		    NULL)) > 1) {
			up = smp_start_aps(ids, n, exits_ap, 5000);
			printf("exits: %d cpus up\n", up);
		}
		t0 = rdtsc();
		for (i = 0; i < outs; i++)
			outb(EXITS_PORT, (uint8_t)i);
		t1 = rdtsc();
		for (i = 0; i < reads; i++)
			(void)mmio_read32((uintptr_t)phys_ptr(EXITS_MMIO));
		printf("exits: round %u done: %lu cycles for the port writes\n",
		    round, t1 - t0);
	}
}
