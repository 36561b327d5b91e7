/*
 * reboot: reset the machine the way the command line says.
 *   mode=i8042   0xfe to port 0x64 (the keyboard controller's reset line)
 *   mode=triple  an empty IDT and an exception: a triple fault
 * Nothing survives a reset, so a test counts the "reboot: starting" lines.
 *
 * Output:
 *   reboot: starting
 *   reboot: resetting via MODE
 *   FAIL: ...  (only if the machine is still running a second later)
 */
#include "runtime/rt.h"

void
guest_main(void)
{
	char mode[16];

	printf("reboot: starting\n");
	if (!cmdline_get("mode", mode, sizeof(mode))) {
		printf("FAIL: no mode= on the command line "
		    "(mode=i8042 or mode=triple)\n");
		return;
	}
	/* Calibrate first: afterwards there is nothing left to wait with. */
	(void)lapic_timer_ticks_per_ms();
	if (strcmp(mode, "i8042") == 0) {
		printf("reboot: resetting via i8042\n");
		i8042_reset();
	} else if (strcmp(mode, "triple") == 0) {
		printf("reboot: resetting via triple\n");
		trap_triple_fault();
	} else {
		printf("FAIL: unknown mode '%s' (mode=i8042 or mode=triple)\n",
		    mode);
		return;
	}
	sleep_ms(1000);
	printf("FAIL: still running 1 s after the %s reset\n", mode);
}
