/*
 * rtc: the MC146818's interrupts and the clock across a reboot, chosen
 * with "test=" on the command line ("irq=pic" takes IRQ 8 through the
 * 8259 instead of the IOAPIC).  Times are measured with the TSC,
 * calibrated against PIT channel 2 (rounds of 50 ms, each bounded by
 * TSC readings around the port accesses, so that a vCPU kept off its
 * CPU widens a round's bounds instead of lengthening it), so they do
 * not depend on the RTC; "rtc: tsc N kHz (+- M ppm)" says how exact.
 *
 * test=periodic  periodic interrupts at 1024 Hz (register A 0x26; or
 *   "hz=N", a power of 2 from 2 to 8192) for 3 s ("secs=N"),
 *   interrupts masked (cli) from 1.25 s to 1.75 s ("stall=MS" from
 *   1.25 s on; 0: never), so that the ticks of the stall coalesce.
 *   The handler reads register C, counts and stamps (and the runtime
 *   sends the EOI), no more: CPL0 code may be emulated.  IRQ 8 stays
 *   high until C is read, on the chip as on QEMU and vmmd, so a guest
 *   that never reads it gets one interrupt.  The catch-up after the stall
 *   ends at the tick that brings the count to what is due by the guest's
 *   clock (less one, for the divider's phase).  First the guest measures
 *   what one interrupt costs it, with a handler that reads an RTC
 *   register as the tick handler does (200 self-IPIs): the fastest any
 *   backlog of ticks can be taken, whatever the VMM does.
 *     rtc: tsc N kHz (+- M ppm)
 *     rtc: an interrupt costs N ns
 *     rtc: periodic HZ Hz: start
 *     rtc: periodic HZ Hz: N ticks before the stall (HZ * 1.25 due)
 *     rtc: periodic HZ Hz: N ticks at the end of the stall
 *     rtc: periodic HZ Hz: N ticks 20 ms after the stall
 *     rtc: periodic HZ Hz: caught up N us after the stall, M ticks
 *     rtc: periodic HZ Hz: N ticks in 3000 ms, 500 ms stalled
 *     PASS
 *   With "drain=host" the guest does not stop its periodic interrupt
 *   when its 3 s are over: the device may still owe it ticks (coalesced
 *   while its vCPU did not run, on a loaded host), and clearing PIE
 *   drops them.  It prints the same lines, the ticks still coming, then
 *   keeps taking them until a byte comes on COM1 (the host sends one
 *   once the device reports its backlog empty), at most 120 s
 *   ("drainsecs=N"), then stops and counts again:
 *     rtc: periodic HZ Hz: N ticks in 3000 ms, 500 ms stalled
 *     rtc: periodic HZ Hz: waiting for the host's word to stop
 *     rtc: periodic HZ Hz: stopped: N ticks in M ms
 *     PASS | FAIL: no word from the host in N s
 * test=alarm  update-ended and alarm interrupts (UIE, AIE), the alarm
 *   set 3 s ahead; each interrupt reads register C and the time:
 *     rtc: update at HH:MM:SS (N ms)        for 5 updates
 *     rtc: alarm at HH:MM:SS (set HH:MM:SS)
 *     PASS | FAIL: reason
 * test=clock  on the first boot (CMOS bytes 0x7e, 0x7f not yet "RT"),
 *   sets the clock to 2001-02-03 04:05:06 UTC, writes "RT" there and
 *   resets through the keyboard controller; after the reboot reads the
 *   clock back:
 *     rtc: clock set to 2001-02-03T04:05:06Z epoch=981173106
 *     rtc: resetting via i8042
 *     rtc: after reboot 2001-02-03T04:05:09Z epoch=981173109, 3 s later
 *     PASS | FAIL: reason
 */
#include "runtime/rt.h"

#define RTC_IRQ		8
#define REG_SEC_ALARM	0x01
#define REG_MIN_ALARM	0x03
#define REG_HOUR_ALARM	0x05
#define REG_A		0x0a
#define REG_B		0x0b
#define REG_C		0x0c
#define REG_B_SET	0x80
#define REG_B_PIE	0x40
#define REG_B_AIE	0x20
#define REG_B_UIE	0x10
#define REG_C_AF	0x20
#define REG_C_UF	0x10

#define PIT_CH2		0x42
#define PIT_CMD		0x43
#define PIT_PORT_B	0x61
#define PIT_HZ		1193182u

#define MARK_0		0x7e
#define MARK_1		0x7f

static uint64_t tsc_hz;

/*
 * One measurement of 50 ms of PIT channel 2 (mode 0) in TSC ticks:
 * *lo and *hi bound it.  The count starts at the port write of its
 * high byte and OUT rises at its end; each is known only between two
 * TSC readings around the port access that saw it (the write; the
 * last read that found OUT low and the first that found it high).
 * Time the vCPU spent off its CPU there (a loaded host) widens the
 * bounds, it does not bias a figure taken inside them.  -1 if the PIT
 * never got there.
 */
static int
tsc_per_50ms(uint64_t *lo, uint64_t *hi)
{
	uint32_t count = PIT_HZ / 20;
	uint64_t s0, s1, e0, e1, before = 0;
	long spins;
	uint8_t b;

	b = inb(PIT_PORT_B);
	outb(PIT_PORT_B, (b & ~0x02) | 0x01);	/* gate on, speaker off */
	outb(PIT_CMD, 0xb0);			/* ch2, lo/hi, mode 0 */
	outb(PIT_CH2, (uint8_t)count);
	s0 = rdtsc();
	outb(PIT_CH2, (uint8_t)(count >> 8));	/* counting starts here */
	s1 = rdtsc();
	e0 = s1;
	for (spins = 0; spins < 1000000; spins++) {
		before = rdtsc();
		if (inb(PIT_PORT_B) & 0x20)
			break;
		e0 = before;		/* OUT was still low after this */
	}
	e1 = rdtsc();
	outb(PIT_PORT_B, b & ~0x03);
	if (spins == 1000000)
		return -1;
	*lo = e0 > s1 ? e0 - s1 : 0;
	*hi = e1 - s0;
	return 0;
}

/*
 * TSC ticks a second, and in *ppm how far off it may be; 0 if no round
 * completed.  The midpoint of the narrowest bounds (tsc_per_50ms) of up
 * to 20 rounds, stopping at the first within 250 ppm (about 85 ppm is
 * usual natively).  Not the least of plain measurements: on a host
 * loaded several times over the vCPU can be off its CPU when OUT rises
 * in every round, and such a figure came out up to 5% high, every time
 * the guest measured as much short, and its tick counts as much above
 * what its own clock allowed.
 */
static uint64_t
tsc_calibrate(unsigned long *ppm)
{
	uint64_t lo, hi, best_lo = 0, best_hi = 0;
	int i;

	for (i = 0; i < 20; i++) {
		if (tsc_per_50ms(&lo, &hi) != 0)
			continue;
		if (best_hi == 0 || hi - lo < best_hi - best_lo) {
			best_lo = lo;
			best_hi = hi;
		}
		if ((best_hi - best_lo) * 4000 <= best_hi + best_lo)
			break;
	}
	if (best_hi == 0)
		return 0;
	*ppm = (best_hi - best_lo) * 1000000 / (best_hi + best_lo);
	return (best_lo + best_hi) / 2 * 20;
}

static uint64_t
ms_to_tsc(uint64_t ms)
{
	return tsc_hz * ms / 1000;
}

/* --- test=periodic ------------------------------------------------------ */

#define VEC_SELF	0x60

static volatile uint32_t ticks;
/* The catch-up: set by test_periodic while it lasts, ended by a tick. */
static volatile bool catching;
static volatile uint64_t periodic_t0, caught_at;
static volatile uint32_t caught_ticks;
static uint64_t periodic_hz;
static volatile unsigned int self_irqs;
static volatile bool host_said_stop;

static void
periodic_tick(void)
{
	uint64_t now = rdtsc();

	(void)cmos_read(REG_C);		/* acknowledges: IRQ 8 goes low */
	ticks++;
	/* ticks >= due - 1, due = (now - t0) * hz / tsc_hz */
	if (catching && (ticks + 1) * tsc_hz >= (now - periodic_t0) *
	    periodic_hz) {
		caught_at = now;
		caught_ticks = ticks;
		catching = false;
	}
}

static void
periodic_host_byte(uint8_t c)
{
	(void)c;
	host_said_stop = true;
}

/*
 * drain=host: keeps taking ticks until the host's byte comes (or
 * drainsecs have passed: false), so that every tick the device owes
 * arrives before PIE is cleared.  The ticks themselves wake the halt.
 */
static bool
periodic_wait_host(unsigned long hz)
{
	uint64_t deadline;
	unsigned long secs = cmdline_get_ulong("drainsecs", 120);

	printf("rtc: periodic %lu Hz: waiting for the host's word to stop\n",
	    hz);
	deadline = rdtsc() + ms_to_tsc(secs * 1000);
	while (!host_said_stop && rdtsc() < deadline)
		idle();
	if (host_said_stop)
		return true;
	printf("FAIL: no word from the host in %lu s\n", secs);
	return false;
}

static void
self_irq(struct trap_frame *f)
{
	(void)cmos_read(REG_A);		/* as periodic_tick reads C */
	self_irqs++;
	lapic_eoi();
}

/*
 * What one interrupt with an RTC register read costs this guest, in ns,
 * or 0 if the self-IPIs did not all come within 2 s (the LAPIC timer
 * wakes the halt then).  The guest halts between them: a guest spinning
 * at CPL0 under an emulating KVM backend takes interrupts only between
 * batches of emulated instructions, which would measure the backend.
 */
static uint64_t
irq_cost_ns(void)
{
	uint64_t t0, fired = lapic_timer_count();
	unsigned int i, want;

	trap_set_handler(VEC_SELF, self_irq);
	lapic_timer_oneshot_us(2000000);
	t0 = rdtsc();
	for (i = 0; i < 200; i++) {
		cli();
		want = self_irqs + 1;
		/* Fixed delivery, asserted, to ourselves (shorthand self). */
		(void)lapic_send_ipi(0, VEC_SELF | 0x4000 | 1u << 18);
		for (;;) {
			cli();
			if (self_irqs >= want)
				break;
			if (lapic_timer_count() != fired) {
				sti();
				return 0;
			}
			idle();
		}
	}
	t0 = rdtsc() - t0;
	lapic_timer_stop();
	sti();
	return t0 * 1000000 / (tsc_hz / 1000) / 200;
}

static void
test_periodic(void)
{
	uint64_t t0, stall, unstall, caught, end, cost;
	uint32_t before, at_unstall, after20 = 0, total;
	unsigned long hz = cmdline_get_ulong("hz", 1024);
	unsigned long secs = cmdline_get_ulong("secs", 3);
	unsigned long stall_ms = cmdline_get_ulong("stall", 500);
	char drain[8];
	bool by_host = cmdline_get("drain", drain, sizeof(drain)) &&
	    strcmp(drain, "host") == 0;
	unsigned int rs;
	bool seen20 = false, heard = true;

	/* Rate select n gives 65536 >> n Hz, for n = 3 to 15. */
	for (rs = 3; rs <= 15 && (65536ul >> rs) != hz; rs++)
		;
	if (rs > 15) {
		printf("FAIL: hz=%lu is not a power of 2 from 2 to 8192\n", hz);
		return;
	}
	if (secs < 2 || secs > 3600 || 1250 + stall_ms + 250 > secs * 1000) {
		printf("FAIL: secs=%lu stall=%lu: want 2 to 3600 s, the stall "
		    "ending 250 ms before\n", secs, stall_ms);
		return;
	}
	cost = irq_cost_ns();
	if (cost != 0)
		printf("rtc: an interrupt costs %lu ns\n", cost);
	else
		printf("rtc: an interrupt costs ? ns (a self-IPI did not "
		    "come)\n");
	periodic_hz = hz;
	if (by_host && serial_rx_irq_enable(periodic_host_byte) != 0) {
		printf("FAIL: no COM1 input interrupt\n");
		return;
	}
	irq_enable(RTC_IRQ, periodic_tick);
	cmos_write(REG_A, 0x20 | rs);		/* 32.768 kHz time base */
	(void)cmos_read(REG_C);
	printf("rtc: periodic %lu Hz: start\n", hz);
	t0 = rdtsc();
	periodic_t0 = t0;
	stall = t0 + ms_to_tsc(1250);
	unstall = t0 + ms_to_tsc(1250 + stall_ms);
	caught = unstall + ms_to_tsc(20);
	end = t0 + ms_to_tsc(secs * 1000);
	cmos_write(REG_B, cmos_reg_b() | REG_B_PIE);
	while (rdtsc() < stall)
		idle();
	cli();
	before = ticks;
	while (rdtsc() < unstall)
		cpu_relax();
	at_unstall = ticks;
	catching = true;
	sti();
	while (rdtsc() < end) {
		idle();
		if (!seen20 && rdtsc() >= caught) {
			after20 = ticks;
			seen20 = true;
		}
	}
	if (!by_host) {
		cli();
		cmos_write(REG_B, cmos_reg_b() & ~REG_B_PIE);
		sti();
		irq_disable(RTC_IRQ);
	}
	total = ticks;
	printf("rtc: periodic %lu Hz: %u ticks before the stall (%lu due)\n",
	    hz, before, hz * 5 / 4);
	printf("rtc: periodic %lu Hz: %u ticks at the end of the stall\n",
	    hz, at_unstall);
	printf("rtc: periodic %lu Hz: %u ticks 20 ms after the stall\n", hz,
	    after20);
	if (!catching)
		printf("rtc: periodic %lu Hz: caught up %lu us after the "
		    "stall, %u ticks\n", hz, (caught_at - unstall) * 1000000 / tsc_hz,
		    caught_ticks - at_unstall);
	printf("rtc: periodic %lu Hz: %u ticks in %lu ms, %lu ms stalled\n",
	    hz, total, secs * 1000, stall_ms);
	if (by_host) {
		/* Still ticking: the figures above are the 3 s's. */
		heard = periodic_wait_host(hz);
		cli();
		cmos_write(REG_B, cmos_reg_b() & ~REG_B_PIE);
		total = ticks;
		end = rdtsc();
		sti();
		irq_disable(RTC_IRQ);
		printf("rtc: periodic %lu Hz: stopped: %u ticks in %lu ms\n",
		    hz, total, (end - t0) * 1000 / tsc_hz);
	}
	if (heard)
		printf("PASS\n");
}

/* --- test=alarm --------------------------------------------------------- */

static volatile uint8_t rtc_flags;

static void
alarm_irq(void)
{
	rtc_flags |= cmos_read(REG_C);
}

static uint8_t
bcd(int v)
{
	return (uint8_t)((v / 10) << 4 | v % 10);
}

static void
test_alarm(void)
{
	struct rtc_time now, alarm, t;
	uint64_t last, deadline, epoch_prev = 0, epoch, tsc;
	int updates = 0;
	bool alarmed = false, ok = true, late;
	uint8_t f;

	if (cmos_reg_b() & 0x04) {
		printf("FAIL: expected BCD mode\n");
		return;
	}
	if (cmos_read_time(&now) != 0) {
		printf("FAIL: clock never stable\n");
		return;
	}
	rtc_time_from_epoch(&alarm, rtc_time_to_epoch(&now) + 3);
	cmos_write(REG_SEC_ALARM, bcd(alarm.sec));
	cmos_write(REG_MIN_ALARM, bcd(alarm.min));
	cmos_write(REG_HOUR_ALARM, bcd(alarm.hour));
	irq_enable(RTC_IRQ, alarm_irq);
	cli();
	(void)cmos_read(REG_C);
	rtc_flags = 0;
	cmos_write(REG_B, cmos_reg_b() | REG_B_UIE | REG_B_AIE);
	sti();
	last = rdtsc();
	deadline = last + ms_to_tsc(10000);
	while (updates < 5 && rdtsc() < deadline) {
		idle();
		cli();
		f = rtc_flags;
		rtc_flags = 0;
		if (f == 0 || cmos_read_time(&t) != 0) {
			sti();
			continue;
		}
		sti();
		tsc = rdtsc();
		epoch = rtc_time_to_epoch(&t);
		/*
		 * Off its CPU for over a second and a half (a loaded host),
		 * the guest finds two updates in one flag, as on hardware,
		 * and reads the time after the alarm's second: that is no
		 * fault of the chip.  Running on time, it must see every
		 * second.
		 */
		late = tsc - last > ms_to_tsc(1500);
		if (late)
			printf("rtc: the guest ran %lu ms late\n",
			    (tsc - last) * 1000 / tsc_hz);
		if (f & REG_C_UF) {
			printf("rtc: update at %02d:%02d:%02d (%lu ms)\n", t.hour,
			    t.min, t.sec, (tsc - last) * 1000 / tsc_hz);
			if (epoch_prev != 0 && epoch != epoch_prev + 1 &&
			    !(late && epoch > epoch_prev)) {
				printf("FAIL: update at second %lu after %lu\n",
				    epoch, epoch_prev);
				ok = false;
			}
			epoch_prev = epoch;
			last = tsc;
			updates++;
		}
		if (f & REG_C_AF) {
			printf("rtc: alarm at %02d:%02d:%02d (set "
			    "%02d:%02d:%02d)\n", t.hour, t.min, t.sec,
			    alarm.hour, alarm.min, alarm.sec);
			if (alarmed || (epoch != rtc_time_to_epoch(&alarm) &&
			    !(late && epoch > rtc_time_to_epoch(&alarm)))) {
				printf("FAIL: alarm at the wrong second\n");
				ok = false;
			}
			alarmed = true;
		}
	}
	cmos_write(REG_B, cmos_reg_b() & ~(REG_B_UIE | REG_B_AIE));
	irq_disable(RTC_IRQ);
	if (updates < 5)
		printf("FAIL: %d update interrupts in 10 s\n", updates);
	else if (!alarmed)
		printf("FAIL: no alarm interrupt\n");
	else if (ok)
		printf("PASS\n");
}

/* --- test=clock --------------------------------------------------------- */

static void
print_time(const char *what, const struct rtc_time *t)
{
	printf("rtc: %s %04d-%02d-%02dT%02d:%02d:%02dZ epoch=%lu", what,
	    t->year, t->mon, t->day, t->hour, t->min, t->sec,
	    rtc_time_to_epoch(t));
}

static void
test_clock(void)
{
	/* 2001-02-03T04:05:06Z, a Saturday. */
	static const uint8_t set[][2] = {
		{ 0x00, 0x06 }, { 0x02, 0x05 }, { 0x04, 0x04 },
		{ 0x06, 0x07 }, { 0x07, 0x03 }, { 0x08, 0x02 },
		{ 0x09, 0x01 }, { 0x32, 0x20 },
	};
	const uint64_t set_epoch = 981173106;
	struct rtc_time t;
	uint64_t e;
	size_t i;

	if (cmos_read(MARK_0) == 'R' && cmos_read(MARK_1) == 'T') {
		if (cmos_read_time(&t) != 0) {
			printf("FAIL: clock never stable\n");
			return;
		}
		e = rtc_time_to_epoch(&t);
		print_time("after reboot", &t);
		printf(", %ld s later\n", (long)(e - set_epoch));
		if (e < set_epoch || e > set_epoch + 120)
			printf("FAIL: the clock did not keep the set time\n");
		else
			printf("PASS\n");
		return;
	}
	/* As Linux sets it: SET, the registers, SET cleared. */
	cmos_write(REG_B, cmos_reg_b() | REG_B_SET);
	for (i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		cmos_write(set[i][0], set[i][1]);
	cmos_write(REG_B, cmos_reg_b() & ~REG_B_SET);
	cmos_write(MARK_0, 'R');
	cmos_write(MARK_1, 'T');
	if (cmos_read_time(&t) != 0) {
		printf("FAIL: clock never stable\n");
		return;
	}
	print_time("clock set to", &t);
	printf("\n");
	/* Calibrate first: afterwards there is nothing left to wait with. */
	(void)lapic_timer_ticks_per_ms();
	printf("rtc: resetting via i8042\n");
	i8042_reset();
	sleep_ms(1000);
	printf("FAIL: still running 1 s after the reset\n");
}

void
guest_main(void)
{
	char test[16];
	unsigned long tsc_ppm = 0;

	tsc_hz = tsc_calibrate(&tsc_ppm);
	printf("rtc: tsc %lu kHz (+- %lu ppm)\n", tsc_hz / 1000, tsc_ppm);
	if (tsc_hz < 1000000) {
		printf("FAIL: TSC calibration\n");
		return;
	}
	if (!cmdline_get("test", test, sizeof(test))) {
		printf("FAIL: no test= on the command line\n");
		return;
	}
	if (strcmp(test, "periodic") == 0)
		test_periodic();
	else if (strcmp(test, "alarm") == 0)
		test_alarm();
	else if (strcmp(test, "clock") == 0)
		test_clock();
	else
		printf("FAIL: unknown test '%s'\n", test);
}
