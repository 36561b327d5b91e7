/*
 * cad: wait for Ctrl-Alt-Del on the keyboard (IRQ 1), then reset through
 * the keyboard controller, as a PC does.  This is how a VMM's graceful
 * stop request (scan codes 1d 38 53, then d3 b8 9d) ends the guest.
 *
 * Output:
 *   cad: ready
 *   cad: scancode 0xSS               (for every byte from the keyboard)
 *   cad: ctrl-alt-del, shutting down
 *   FAIL: ...  (only if the reset did not happen)
 */
#include "runtime/rt.h"

static struct cad_state cad;
static volatile bool cad_seen;

static void
cad_key(uint8_t sc)
{
	printf("cad: scancode 0x%02x\n", sc);
	if (cad_feed(&cad, sc))
		cad_seen = true;
}

void
guest_main(void)
{
	(void)lapic_timer_ticks_per_ms();
	if (i8042_kbd_irq_enable(cad_key) != 0)
		printf("cad: warning: keyboard controller not responding\n");
	printf("cad: ready\n");
	for (;;) {
		cli();
		if (cad_seen)
			break;
		idle();
	}
	sti();
	printf("cad: ctrl-alt-del, shutting down\n");
	i8042_reset();
	sleep_ms(1000);
	printf("FAIL: still running 1 s after the i8042 reset\n");
}
