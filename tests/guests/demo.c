/*
 * demo: the guest users see when they start a VM without a kernel.
 * It shows the time once a second (local APIC timer, seeded from the
 * CMOS clock), echoes what is typed on the console, and shuts down on
 * Ctrl-Alt-Del, which is what "vmctl stop" sends.  Between events the CPU
 * halts, and each event is a few dozen lines of work.
 *
 * Output:
 *   vmmd demo guest ... (banner)
 *   demo: clock 2026-11-30 06:30:00 UTC (from CMOS)
 *   demo: 2026-11-30 06:30:01 UTC    (every second)
 *   demo: ctrl-alt-del received, goodbye
 */
#include "runtime/rt.h"

/* Re-read the CMOS clock this often, so timer drift cannot accumulate. */
#define RESYNC_SECONDS	600

static struct rtc_time now;
static unsigned since_sync;
static struct cad_state cad;
static volatile bool cad_seen;

static void
demo_tick(void)
{
	struct rtc_time t;

	rtc_time_add_second(&now);
	if (++since_sync >= RESYNC_SECONDS) {
		since_sync = 0;
		if (cmos_read_time(&t) == 0 && rtc_time_valid(&t))
			now = t;
	}
	printf("demo: %04d-%02d-%02d %02d:%02d:%02d UTC\n", now.year, now.mon,
	    now.day, now.hour, now.min, now.sec);
}

static void
demo_rx(uint8_t c)
{
	if (c == '\r')
		cons_write("\r\n", 2);
	else if (c == 0x7f || c == '\b')
		cons_write("\b \b", 3);
	else
		cons_write((const char *)&c, 1);
}

static void
demo_key(uint8_t sc)
{
	if (cad_feed(&cad, sc))
		cad_seen = true;
}

void
guest_main(void)
{
	printf("\n"
	    "vmmd demo guest\n"
	    "  A tiny guest kernel: it prints the time once a second, echoes\n"
	    "  what you type, and shuts down cleanly on Ctrl-Alt-Del\n"
	    "  (\"vmctl stop\" sends one).\n"
	    "  Detach from \"vmctl console\" with Ctrl-].\n"
	    "\n");
	if (cmos_read_time(&now) != 0 || !rtc_time_valid(&now)) {
		printf("demo: CMOS clock unreadable, counting from 1970\n");
		rtc_time_from_epoch(&now, 0);
	} else {
		printf("demo: clock %04d-%02d-%02d %02d:%02d:%02d UTC "
		    "(from CMOS)\n", now.year, now.mon, now.day, now.hour,
		    now.min, now.sec);
	}

	if (lapic_timer_calibrate(50) != 0)
		printf("demo: timer calibration failed, assuming 1 GHz\n");
	serial_rx_irq_enable(demo_rx);
	if (i8042_kbd_irq_enable(demo_key) != 0)
		printf("demo: keyboard controller not responding\n");
	lapic_timer_periodic_ms(1000, demo_tick);

	for (;;) {
		cli();
		if (cad_seen)
			break;
		idle();
	}
	lapic_timer_stop();
	sti();
	printf("\ndemo: ctrl-alt-del received, goodbye\n");
	i8042_reset();
	sleep_ms(1000);
	printf("FAIL: still running 1 s after the i8042 reset\n");
}
