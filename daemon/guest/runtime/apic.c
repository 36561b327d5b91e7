/*
 * Local APIC (xAPIC mode, 0xfee00000) and the IOAPIC (0xfec00000).
 *
 * The local APIC timer runs at a rate the guest cannot know, so it is
 * calibrated once against PIT channel 2 (a 1.193182 MHz count that needs
 * no interrupt routing) and then used for all delays: a delay is a
 * one-shot timer and HLT, never a polling loop.
 */
#include "rt.h"

#define LAPIC_BASE	0xfee00000u
#define LAPIC_ID	0x020
#define LAPIC_EOI	0x0b0
#define LAPIC_SVR	0x0f0
#define LAPIC_ICR_LO	0x300
#define LAPIC_ICR_HI	0x310
#define LAPIC_LVT_TIMER	0x320
#define LAPIC_LVT_LINT0	0x350
#define LAPIC_TMR_INIT	0x380
#define LAPIC_TMR_CUR	0x390
#define LAPIC_TMR_DIV	0x3e0

#define SVR_ENABLE	0x100
#define ICR_PENDING	0x1000
#define LVT_MASKED	0x10000
#define LVT_PERIODIC	0x20000
#define LVT_EXTINT	0x700
#define TMR_DIV_16	0x3

#define IOAPIC_BASE	0xfec00000u
#define IOAPIC_REGSEL	0x00
#define IOAPIC_WIN	0x10
#define IOAPIC_REDTBL	0x10
#define IOAPIC_LEVEL	0x8000	/* trigger mode: level */

#define PIT_CH2		0x42
#define PIT_CMD		0x43
#define PIT_PORT_B	0x61
#define PIT_HZ		1193182u

/*
 * KVM's local APIC counts at 1 GHz; divided by 16 that is 62500 ticks per
 * millisecond.  Used only if calibration gives nonsense.
 */
#define LAPIC_DEFAULT_TICKS_MS	62500u

static uint32_t lapic_ticks_ms;
static volatile uint64_t lapic_timer_fired;
static void (*lapic_periodic_fn)(void);

static uint32_t
lapic_read(uint32_t reg)
{
	return mmio_read32(LAPIC_BASE + reg);
}

static void
lapic_write(uint32_t reg, uint32_t v)
{
	mmio_write32(LAPIC_BASE + reg, v);
}

void
lapic_enable(void)
{
	lapic_write(LAPIC_SVR, SVR_ENABLE | VEC_SPURIOUS);
	trap_set_ack(lapic_eoi);
}

uint32_t
lapic_id(void)
{
	return lapic_read(LAPIC_ID) >> 24;
}

void
lapic_eoi(void)
{
	lapic_write(LAPIC_EOI, 0);
}

/* Lets the 8259 reach this CPU through LINT0 (virtual wire mode). */
void
lapic_set_lint0_extint(void)
{
	lapic_write(LAPIC_LVT_LINT0, LVT_EXTINT);
}

int
lapic_send_ipi(uint32_t apic_id, uint32_t icr)
{
	int i;

	lapic_write(LAPIC_ICR_HI, apic_id << 24);
	lapic_write(LAPIC_ICR_LO, icr);
	for (i = 0; i < 1000; i++)
		if ((lapic_read(LAPIC_ICR_LO) & ICR_PENDING) == 0)
			return 0;
	return -1;
}

static void
lapic_timer_irq(struct trap_frame *f)
{
	lapic_timer_fired++;
	lapic_eoi();
	if (lapic_periodic_fn != NULL)
		lapic_periodic_fn();
}

/*
 * Count local APIC ticks over ms milliseconds of PIT channel 2 in mode 0
 * (its OUT goes high at terminal count and shows in port 0x61 bit 5).
 * Polling is unavoidable here but lasts only ms milliseconds.
 */
int
lapic_timer_calibrate(unsigned ms)
{
	uint32_t count, elapsed;
	long spins;
	uint8_t b;

	if (ms == 0 || ms > 50)
		ms = 50;
	count = PIT_HZ * ms / 1000;
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_LAPIC_TIMER);
	lapic_write(LAPIC_TMR_DIV, TMR_DIV_16);

	b = inb(PIT_PORT_B);
	outb(PIT_PORT_B, (b & ~0x02) | 0x01);	/* gate on, speaker off */
	outb(PIT_CMD, 0xb0);			/* ch2, lo/hi, mode 0 */
	outb(PIT_CH2, (uint8_t)count);
	lapic_write(LAPIC_TMR_INIT, 0xffffffffu);
	outb(PIT_CH2, (uint8_t)(count >> 8));	/* counting starts here */
	for (spins = 0; spins < 200000; spins++)
		if (inb(PIT_PORT_B) & 0x20)
			break;
	elapsed = 0xffffffffu - lapic_read(LAPIC_TMR_CUR);
	lapic_write(LAPIC_TMR_INIT, 0);
	outb(PIT_PORT_B, b & ~0x03);

	lapic_ticks_ms = elapsed / ms;
	/* Accept 1 MHz .. 10 GHz bus rates (divided by 16). */
	if (lapic_ticks_ms < 62 || lapic_ticks_ms > 625000) {
		lapic_ticks_ms = LAPIC_DEFAULT_TICKS_MS;
		return -1;
	}
	return 0;
}

uint32_t
lapic_timer_ticks_per_ms(void)
{
	if (lapic_ticks_ms == 0)
		lapic_timer_calibrate(10);
	return lapic_ticks_ms;
}

static void
lapic_timer_setup(void)
{
	(void)lapic_timer_ticks_per_ms();
	trap_set_handler(VEC_LAPIC_TIMER, lapic_timer_irq);
	lapic_write(LAPIC_TMR_DIV, TMR_DIV_16);
}

void
lapic_timer_oneshot_us(uint64_t us)
{
	uint64_t ticks;

	lapic_timer_setup();
	ticks = us * lapic_ticks_ms / 1000;
	if (ticks == 0)
		ticks = 1;
	if (ticks > 0xffffffffu)
		ticks = 0xffffffffu;
	lapic_periodic_fn = NULL;
	lapic_write(LAPIC_LVT_TIMER, VEC_LAPIC_TIMER);
	lapic_write(LAPIC_TMR_INIT, (uint32_t)ticks);
}

void
lapic_timer_periodic_ms(uint32_t ms, void (*fn)(void))
{
	uint64_t ticks;

	lapic_timer_setup();
	ticks = (uint64_t)ms * lapic_ticks_ms;
	if (ticks > 0xffffffffu)
		ticks = 0xffffffffu;
	lapic_periodic_fn = fn;
	lapic_write(LAPIC_LVT_TIMER, VEC_LAPIC_TIMER | LVT_PERIODIC);
	lapic_write(LAPIC_TMR_INIT, (uint32_t)ticks);
}

void
lapic_timer_stop(void)
{
	lapic_write(LAPIC_TMR_INIT, 0);
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_LAPIC_TIMER);
	lapic_periodic_fn = NULL;
}

/*
 * The one way a test guest waits: with interrupts on, halting between
 * them, until done(arg) holds or us microseconds have passed on the local
 * APIC timer's one-shot (in chunks that fit its 32-bit counter; of 1 ms
 * with a done(), so that it is checked at least that often).  done() runs with interrupts off, before each halt and after
 * each interrupt, so an answer that comes early ends the wait early and
 * one that comes late is still seen within the bound: how a driver waits
 * for a device, never by a count of loop turns, which a faster host runs
 * through before an asynchronous answer (an ioeventfd's, say) has come.
 */
bool
wait_us(bool (*done)(void *arg), void *arg, uint64_t us)
{
	/* An answer may come without an interrupt (a masked vector). */
	uint64_t max_chunk = done != NULL ? 1000 : 50000;
	uint64_t flags, chunk, target;
	bool held = false;

	flags = irq_save();
	for (;;) {
		if (done != NULL && done(arg)) {
			held = true;
			break;
		}
		if (us == 0)
			break;
		chunk = us > max_chunk ? max_chunk : us;
		us -= chunk;
		target = lapic_timer_fired + 1;
		lapic_timer_oneshot_us(chunk);
		while (lapic_timer_fired < target) {
			if (done != NULL && done(arg)) {
				held = true;
				lapic_timer_stop();
				goto out;
			}
			idle();
			cli();
		}
	}
out:
	irq_restore(flags);
	return held;
}

/*
 * wait_us() without HLT: interrupts on, done(arg) polled with PAUSE
 * between polls, until it holds or us microseconds have passed on the
 * local APIC timer counting down masked (its count read, no interrupt
 * needed).  For a guest that waits for a device thousands of times a
 * second (vblkr): in the nested test host a halted vCPU was seen to
 * sleep on in KVM after its APIC timer expired (vm.info's apic view:
 * the count run out, nothing requested or in service; no timer of it
 * queued in the kernel), a stall of that host's own, which a guest that
 * halts that often meets now and then.  Costs a busy vCPU meanwhile.
 */
bool
wait_us_polling(bool (*done)(void *arg), void *arg, uint64_t us)
{
	uint64_t flags, chunk, ticks;
	bool held = false;
	unsigned int i;

	(void)lapic_timer_ticks_per_ms();
	flags = irq_save();
	sti();
	for (;;) {
		chunk = us > 1000 ? 1000 : us;
		ticks = chunk * lapic_ticks_ms / 1000;
		lapic_periodic_fn = NULL;
		lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_LAPIC_TIMER);
		lapic_write(LAPIC_TMR_DIV, TMR_DIV_16);
		lapic_write(LAPIC_TMR_INIT, ticks != 0 ? (uint32_t)ticks : 1);
		while (lapic_read(LAPIC_TMR_CUR) != 0) {
			if (done != NULL && (held = done(arg)))
				goto out;
			for (i = 0; i < 64; i++)
				cpu_relax();
		}
		if ((done != NULL && (held = done(arg))) ||
		    (us -= chunk) == 0)
			break;
	}
out:
	lapic_write(LAPIC_TMR_INIT, 0);
	irq_restore(flags);
	return held;
}

uint64_t
lapic_timer_count(void)
{
	return lapic_timer_fired;
}

void
sleep_us(uint64_t us)
{
	(void)wait_us(NULL, NULL, us);
}

void
sleep_ms(uint64_t ms)
{
	sleep_us(ms * 1000);
}

static void
ioapic_write(uint32_t reg, uint32_t v)
{
	mmio_write32(IOAPIC_BASE + IOAPIC_REGSEL, reg);
	mmio_write32(IOAPIC_BASE + IOAPIC_WIN, v);
}

/* Edge-triggered, active high, fixed delivery: what ISA interrupts need. */
void
ioapic_route(unsigned pin, uint8_t vector, uint32_t apic_id)
{
	ioapic_write(IOAPIC_REDTBL + 2 * pin + 1, apic_id << 24);
	ioapic_write(IOAPIC_REDTBL + 2 * pin, vector);
}

/* A PCI INTx pin: level triggered, active low. */
void
ioapic_route_level(unsigned pin, uint8_t vector, uint32_t apic_id)
{
	ioapic_write(IOAPIC_REDTBL + 2 * pin + 1, apic_id << 24);
	ioapic_write(IOAPIC_REDTBL + 2 * pin, vector | 1u << 13 | 1u << 15);
}

/* Level triggered, active high: the ACPI SCI as the MADT describes it. */
void
ioapic_route_level_high(unsigned pin, uint8_t vector, uint32_t apic_id)
{
	ioapic_write(IOAPIC_REDTBL + 2 * pin + 1, apic_id << 24);
	ioapic_write(IOAPIC_REDTBL + 2 * pin, vector | IOAPIC_LEVEL);
}

void
ioapic_mask(unsigned pin)
{
	ioapic_write(IOAPIC_REDTBL + 2 * pin, LVT_MASKED);
}
