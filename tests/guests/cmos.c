/*
 * cmos: read the date and time from the CMOS clock and print them with
 * the matching Unix time, so a test can compare with the host's clock.
 *
 * With "regb=N" (decimal) on the command line the guest first writes N
 * to register B, to read the clock in binary and/or 12-hour format.
 *
 * Output:
 *   cmos: regB=0xBB (bcd|binary, 24h|12h)
 *   cmos: 2026-11-30T06:30:00Z epoch=1796020200
 *   PASS | FAIL: reason
 */
#include "runtime/rt.h"

void
guest_main(void)
{
	struct rtc_time t;
	unsigned long set;
	uint8_t regb;

	set = cmdline_get_ulong("regb", 256);
	if (set < 256)
		cmos_write(0x0b, (uint8_t)set);
	regb = cmos_reg_b();
	printf("cmos: regB=0x%02x (%s, %s)\n", regb,
	    (regb & 0x04) ? "binary" : "bcd", (regb & 0x02) ? "24h" : "12h");
	if (cmos_read_time(&t) != 0) {
		printf("FAIL: clock never stable (update in progress)\n");
		return;
	}
	printf("cmos: %04d-%02d-%02dT%02d:%02d:%02dZ epoch=%lu\n",
	    t.year, t.mon, t.day, t.hour, t.min, t.sec,
	    rtc_time_valid(&t) ? rtc_time_to_epoch(&t) : 0);
	if (rtc_time_valid(&t))
		printf("PASS\n");
	else
		printf("FAIL: invalid date/time\n");
}
