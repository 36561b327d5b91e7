/*
 * MC146818 RTC: calendar from an injected host clock (checked against
 * the C library's gmtime_r), data formats, the guest setting the clock,
 * control registers and CMOS RAM.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rtc.h"
#include "fake-host.h"
#include "tap.h"
#include "unit-util.h"

#define SEC	0x00
#define MIN	0x02
#define HOUR	0x04
#define WDAY	0x06
#define MDAY	0x07
#define MON	0x08
#define YEAR	0x09
#define REGA	0x0a
#define REGB	0x0b
#define REGC	0x0c
#define REGD	0x0d
#define CENT	0x32

static void
clock_set(struct fake_host *c, int64_t sec, long nsec)
{
	c->wall.tv_sec = (time_t)sec;
	c->wall.tv_nsec = nsec;
}

static void
clock_advance(struct fake_host *c, int64_t sec, long nsec)
{
	c->wall.tv_sec += (time_t)sec;
	c->wall.tv_nsec += nsec;
	if (c->wall.tv_nsec >= 1000000000L) {
		c->wall.tv_nsec -= 1000000000L;
		c->wall.tv_sec++;
	}
}

static struct rtc *
new_rtc(struct fake_host *c)
{
	struct rtc *rtc = rtc_new(&c->host);

	if (rtc == NULL)
		tap_bail("rtc_new failed");
	return rtc;
}

static uint8_t
cmos_read(struct rtc *rtc, uint8_t index)
{
	uint8_t v;

	rtc_device_ops.write(rtc, 0, &index, 1);
	rtc_device_ops.read(rtc, 1, &v, 1);
	return v;
}

static void
cmos_write(struct rtc *rtc, uint8_t index, uint8_t v)
{
	rtc_device_ops.write(rtc, 0, &index, 1);
	rtc_device_ops.write(rtc, 1, &v, 1);
}

static int
bcd(int v)
{
	return (v / 10) << 4 | v % 10;
}

/* All time registers against gmtime_r, in the RTC's current mode. */
static bool
regs_match(struct rtc *rtc, time_t t, bool binary, bool h12)
{
	struct tm tm;
	int year, hour, (*enc)(int);
	uint8_t want_hour;

	if (gmtime_r(&t, &tm) == NULL)
		return false;
	enc = binary ? NULL : bcd;
	year = tm.tm_year + 1900;
#define E(v) (enc ? enc(v) : (v))
	hour = tm.tm_hour;
	if (h12) {
		want_hour = (uint8_t)E(hour % 12 == 0 ? 12 : hour % 12);
		if (hour >= 12)
			want_hour |= 0x80;
	} else {
		want_hour = (uint8_t)E(hour);
	}
	return cmos_read(rtc, SEC) == E(tm.tm_sec) &&
	    cmos_read(rtc, MIN) == E(tm.tm_min) &&
	    cmos_read(rtc, HOUR) == want_hour &&
	    cmos_read(rtc, WDAY) == E(tm.tm_wday + 1) &&
	    cmos_read(rtc, MDAY) == E(tm.tm_mday) &&
	    cmos_read(rtc, MON) == E(tm.tm_mon + 1) &&
	    cmos_read(rtc, YEAR) == E(year % 100) &&
	    cmos_read(rtc, CENT) == E(year / 100);
#undef E
}

static time_t
utc(int year, int mon, int mday, int hour, int min, int sec)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = mday;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	return timegm(&tm);
}

static void
test_defaults(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	uint8_t v;

	TAP_EQ(cmos_read(rtc, REGA), 0x26, "register A defaults to 0x26");
	TAP_EQ(cmos_read(rtc, REGB), 0x02, "register B defaults to 0x02");
	TAP_EQ(cmos_read(rtc, REGC), 0x00, "register C clear");
	TAP_EQ(cmos_read(rtc, REGD), 0x80, "register D: VRT");
	cmos_write(rtc, REGD, 0x00);
	cmos_write(rtc, REGC, 0xff);
	TAP_EQ(cmos_read(rtc, REGD) == 0x80 && cmos_read(rtc, REGC) == 0, 1,
	    "C and D are read-only");
	cmos_write(rtc, REGA, 0xa6);
	TAP_EQ(cmos_read(rtc, REGA), 0x26, "UIP is read-only");
	TAP_EQ(regs_match(rtc, 0, false, false), true,
	    "epoch: 1970-01-01 00:00:00, Thursday, century 19");
	rtc_device_ops.read(rtc, 0, &v, 1);
	TAP_EQ(v, 0xff, "index port reads all ones");

	/* Bit 7 of the index is the NMI mask, not part of the index. */
	cmos_write(rtc, 0x80 | 0x40, 0x77);
	TAP_EQ(cmos_read(rtc, 0x40), 0x77, "index 0xc0 selects byte 0x40");
	TAP_EQ(cmos_read(rtc, 0x80 | REGA), 0x26, "index 0x8a reads A");
	rtc_device_ops.free(rtc);
}

static void
test_dates(void)
{
	static const struct {
		int y, mo, d, h, mi, s;
		const char *what;
	} dates[] = {
		{ 2000, 2, 29, 12, 34, 56, "2000-02-29 (leap day, century)" },
		{ 2024, 2, 29, 23, 59, 59, "2024-02-29 (leap day)" },
		{ 1999, 12, 31, 23, 59, 59, "1999-12-31 23:59:59" },
		{ 2000, 1, 1, 0, 0, 0, "2000-01-01 (century change)" },
		{ 2038, 1, 19, 3, 14, 8, "2038-01-19 03:14:08 (past 31 bits)" },
		{ 2099, 12, 31, 23, 59, 59, "2099-12-31 23:59:59" },
		{ 2100, 1, 1, 0, 0, 0, "2100-01-01" },
		{ 2100, 2, 28, 23, 59, 59, "2100-02-28 (2100 not leap)" },
		{ 2100, 3, 1, 0, 0, 0, "2100-03-01" },
		{ 1900, 3, 1, 0, 0, 0, "1900-03-01 (before the epoch)" },
	};
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	unsigned int i, bad;
	time_t t;

	for (i = 0; i < sizeof(dates) / sizeof(dates[0]); i++) {
		t = utc(dates[i].y, dates[i].mo, dates[i].d, dates[i].h,
		    dates[i].mi, dates[i].s);
		clock_set(&c, t, 999999999);
		TAP_EQ(regs_match(rtc, t, false, false), true, "BCD %s",
		    dates[i].what);
	}

	/* Literal values for one date, not just agreement with libc. */
	clock_set(&c, utc(2100, 2, 28, 23, 59, 59), 0);
	clock_advance(&c, 1, 0);
	TAP_EQ(cmos_read(rtc, MDAY) == 0x01 && cmos_read(rtc, MON) == 0x03 &&
	    cmos_read(rtc, YEAR) == 0x00 && cmos_read(rtc, CENT) == 0x21 &&
	    cmos_read(rtc, WDAY) == 0x02, 1,
	    "2100-02-28 + 1 s = Monday 2100-03-01 (BCD 01 03 00 21, wday 2)");
	clock_set(&c, utc(2024, 2, 29, 0, 0, 0), 0);
	TAP_EQ(cmos_read(rtc, WDAY), 5, "2024-02-29 is a Thursday (5)");

	cmos_write(rtc, REGB, 0x06);
	for (i = 0; i < sizeof(dates) / sizeof(dates[0]); i++) {
		t = utc(dates[i].y, dates[i].mo, dates[i].d, dates[i].h,
		    dates[i].mi, dates[i].s);
		clock_set(&c, t, 0);
		TAP_EQ(regs_match(rtc, t, true, false), true, "binary %s",
		    dates[i].what);
	}

	/* Random instants 1900-2200 in each of the four formats. */
	for (bad = 0, i = 0; i < 20000; i++) {
		uint8_t b = (uint8_t)((i & 1 ? 0x04 : 0) | (i & 2 ? 0 : 0x02));

		t = (time_t)(utc(1900, 1, 1, 0, 0, 0) +
		    (int64_t)(rng() % (300ULL * 366 * 86400)));
		clock_set(&c, t, (long)(rng() % 1000000000));
		cmos_write(rtc, REGB, b);
		if (!regs_match(rtc, t, b & 0x04, !(b & 0x02)))
			bad++;
	}
	TAP_EQ(bad, 0, "20000 random instants, BCD/binary, 12/24 h");
	rtc_device_ops.free(rtc);
}

static void
test_12h(void)
{
	static const struct {
		int hour;
		uint8_t bcd, bin;
	} h[] = {
		{ 0, 0x12, 12 }, { 1, 0x01, 1 }, { 11, 0x11, 11 },
		{ 12, 0x92, 0x8c }, { 13, 0x81, 0x81 }, { 23, 0x91, 0x8b },
	};
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	unsigned int i;

	for (i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		clock_set(&c, utc(2021, 6, 1, h[i].hour, 0, 0), 0);
		cmos_write(rtc, REGB, 0x00);
		TAP_EQ(cmos_read(rtc, HOUR), h[i].bcd, "12h BCD: %02d:00 -> %02x",
		    h[i].hour, h[i].bcd);
		cmos_write(rtc, REGB, 0x04);
		TAP_EQ(cmos_read(rtc, HOUR), h[i].bin,
		    "12h binary: %02d:00 -> %02x", h[i].hour, h[i].bin);
	}
	/*
	 * Setting 12h values: 12 AM is midnight, 12 PM noon.  SET is
	 * cleared in 12h mode: the chip does not convert its registers
	 * when the mode changes.
	 */
	cmos_write(rtc, REGB, 0x80);
	cmos_write(rtc, HOUR, 0x12);
	cmos_write(rtc, REGB, 0x00);
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(cmos_read(rtc, HOUR), 0x00, "12h write 12 AM = 00 h");
	cmos_write(rtc, REGB, 0x80);
	cmos_write(rtc, HOUR, 0x92);
	cmos_write(rtc, REGB, 0x00);
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(cmos_read(rtc, HOUR), 0x12, "12h write 12 PM = 12 h");
	cmos_write(rtc, REGB, 0x80);
	cmos_write(rtc, HOUR, 0x87);
	cmos_write(rtc, REGB, 0x00);
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(cmos_read(rtc, HOUR), 0x19, "12h write 7 PM = 19 h");
	rtc_device_ops.free(rtc);
}

/* Linux's mc146818_set_time(): SET, divider reset, write, release. */
static void
test_set_time(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	unsigned int i, bad;
	time_t d;
	uint8_t b;

	clock_set(&c, utc(2010, 5, 5, 10, 0, 0), 300000000);
	b = cmos_read(rtc, REGB);
	cmos_write(rtc, REGB, b | 0x80);
	TAP_EQ(cmos_read(rtc, SEC), 0x00, "SET: time frozen at 10:00:00");
	clock_advance(&c, 5, 0);
	TAP_EQ(cmos_read(rtc, SEC), 0x00, "SET: reads stay frozen");
	cmos_write(rtc, SEC, 0x58);
	cmos_write(rtc, MIN, 0x59);
	cmos_write(rtc, HOUR, 0x23);
	cmos_write(rtc, MDAY, 0x29);
	cmos_write(rtc, MON, 0x02);
	cmos_write(rtc, YEAR, 0x24);
	TAP_EQ(cmos_read(rtc, SEC) == 0x58 && cmos_read(rtc, YEAR) == 0x24, 1,
	    "SET: written bytes read back");
	cmos_write(rtc, REGB, b);
	/* The divider kept running: 0.3 s into the second. */
	clock_advance(&c, 1, 690000000);
	TAP_EQ(cmos_read(rtc, SEC), 0x59, "1.69 s later: 23:59:59");
	clock_advance(&c, 0, 10000000);
	TAP_EQ(regs_match(rtc, utc(2024, 3, 1, 0, 0, 0), false, false), true,
	    "1.7 s later: 2024-03-01 00:00:00 (over the leap day)");
	clock_advance(&c, 86400 * 366, 0);
	TAP_EQ(regs_match(rtc, utc(2025, 3, 2, 0, 0, 0), false, false), true,
	    "host clock runs a year on: so does the guest's");

	/* Divider held in reset: the first update comes 0.5 s later. */
	cmos_write(rtc, REGB, 0x82);
	cmos_write(rtc, REGA, 0x26 | 0x70);
	cmos_write(rtc, SEC, 0x00);
	cmos_write(rtc, MIN, 0x00);
	cmos_write(rtc, HOUR, 0x12);
	cmos_write(rtc, MDAY, 0x01);
	cmos_write(rtc, MON, 0x01);
	cmos_write(rtc, YEAR, 0x30);
	cmos_write(rtc, REGB, 0x02);
	clock_advance(&c, 3, 0);
	TAP_EQ(cmos_read(rtc, SEC), 0x00, "divider reset: still stopped");
	cmos_write(rtc, REGA, 0x26);
	clock_advance(&c, 0, 499999999);
	TAP_EQ(cmos_read(rtc, SEC), 0x00, "released: 0.49 s later 12:00:00");
	clock_advance(&c, 0, 1);
	TAP_EQ(regs_match(rtc, utc(2030, 1, 1, 12, 0, 1), false, false), true,
	    "0.5 s later: 2030-01-01 12:00:01");

	/* Century byte, binary mode. */
	cmos_write(rtc, REGB, 0x86);
	cmos_write(rtc, YEAR, 99);
	cmos_write(rtc, CENT, 20);
	cmos_write(rtc, MON, 12);
	cmos_write(rtc, MDAY, 31);
	cmos_write(rtc, HOUR, 23);
	cmos_write(rtc, MIN, 59);
	cmos_write(rtc, SEC, 59);
	cmos_write(rtc, REGB, 0x06);
	clock_advance(&c, 1, 0);
	TAP_EQ(regs_match(rtc, utc(2100, 1, 1, 0, 0, 0), true, false), true,
	    "binary: 2099-12-31 23:59:59 set, 1 s later 2100-01-01");

	/* A write while running sets that field, the clock runs on. */
	cmos_write(rtc, REGB, 0x02);
	cmos_write(rtc, MIN, 0x30);
	TAP_EQ(cmos_read(rtc, MIN), 0x30, "running: minutes written");
	clock_advance(&c, 61, 0);
	TAP_EQ(regs_match(rtc, utc(2100, 1, 1, 0, 31, 1), false, false), true,
	    "running: 61 s later 00:31:01");

	/* Random dates 1900-2200 set by the guest read back unchanged. */
	for (bad = 0, i = 0; i < 5000; i++) {
		time_t t = (time_t)(utc(1900, 1, 1, 0, 0, 0) +
		    (int64_t)(rng() % (300ULL * 366 * 86400)));
		struct tm tm;
		bool bin = i & 1;
		int (*enc)(int) = bin ? NULL : bcd;

		gmtime_r(&t, &tm);
#define E(v) ((uint8_t)(enc ? enc(v) : (v)))
		cmos_write(rtc, REGB, bin ? 0x86 : 0x82);
		cmos_write(rtc, SEC, E(tm.tm_sec));
		cmos_write(rtc, MIN, E(tm.tm_min));
		cmos_write(rtc, HOUR, E(tm.tm_hour));
		cmos_write(rtc, WDAY, E(tm.tm_wday + 1));
		cmos_write(rtc, MDAY, E(tm.tm_mday));
		cmos_write(rtc, MON, E(tm.tm_mon + 1));
		cmos_write(rtc, YEAR, E((tm.tm_year + 1900) % 100));
		cmos_write(rtc, CENT, E((tm.tm_year + 1900) / 100));
#undef E
		cmos_write(rtc, REGB, bin ? 0x06 : 0x02);
		d = (time_t)(rng() % 100000);
		clock_advance(&c, d, 0);
		if (!regs_match(rtc, t + d, bin, false))
			bad++;
	}
	TAP_EQ(bad, 0, "5000 random dates set through SET run on correctly");

	/* UIE is cleared when SET goes high. */
	cmos_write(rtc, REGB, 0x12);
	cmos_write(rtc, REGB, 0x92);
	TAP_EQ(cmos_read(rtc, REGB), 0x82, "SET going high clears UIE");
	cmos_write(rtc, REGB, 0x02);
	rtc_device_ops.free(rtc);
}

static void
test_wday(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);

	clock_set(&c, utc(2023, 1, 1, 0, 0, 0), 0);	/* a Sunday */
	TAP_EQ(cmos_read(rtc, WDAY), 1, "2023-01-01: Sunday = 1");
	/* Date set, day of week left alone: it follows the date. */
	cmos_write(rtc, REGB, 0x82);
	cmos_write(rtc, MDAY, 0x04);
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(cmos_read(rtc, WDAY), 4, "date set to the 4th: Wednesday");
	/* The guest's own day of week is a counter it may set. */
	cmos_write(rtc, WDAY, 0x07);
	TAP_EQ(cmos_read(rtc, WDAY), 7, "guest sets Saturday");
	clock_advance(&c, 86400, 0);
	TAP_EQ(cmos_read(rtc, WDAY), 1, "a day later: Sunday, it counts on");
	rtc_device_ops.free(rtc);
}

static void
test_ram_and_misc(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	unsigned int i, bad = 0;
	uint8_t buf[4];

	for (i = 14; i < 128; i++)
		if (i != CENT)
			cmos_write(rtc, (uint8_t)i, (uint8_t)(i * 3 + 1));
	for (i = 14; i < 128; i++)
		if (i != CENT && cmos_read(rtc, (uint8_t)i) != (uint8_t)(i * 3 + 1))
			bad++;
	TAP_EQ(bad, 0, "CMOS RAM 14-127 keeps its bytes");
	for (i = 14; i < 128; i++)
		if (i != CENT && rtc_cmos_get(rtc, i) != (uint8_t)(i * 3 + 1))
			bad++;
	TAP_EQ(bad, 0, "rtc_cmos_get sees them");
	rtc_cmos_set(rtc, 0x15, 0x80);
	rtc_cmos_set(rtc, 200, 0x11);
	TAP_EQ(cmos_read(rtc, 0x15), 0x80, "rtc_cmos_set reaches the guest");
	TAP_EQ(rtc_cmos_get(rtc, 200), 0xff, "index >= 128: 0xff");
	cmos_write(rtc, 0x01, 0x33);
	cmos_write(rtc, 0x03, 0x44);
	cmos_write(rtc, 0x05, 0xc0);
	TAP_EQ(cmos_read(rtc, 0x01) == 0x33 && cmos_read(rtc, 0x03) == 0x44 &&
	    cmos_read(rtc, 0x05) == 0xc0, 1, "alarm registers keep bytes");

	clock_set(&c, utc(2020, 1, 2, 3, 4, 5), 0);
	TAP_EQ(rtc_cmos_get(rtc, MIN), 0x04, "rtc_cmos_get of a time register");
	TAP_EQ(cmos_read(rtc, HOUR), 0x03, "guest read of the same clock");
	c.wall_error = 1;
	clock_advance(&c, 100, 0);
	TAP_EQ(cmos_read(rtc, SEC), 0x05, "host clock failing: last reading");
	c.wall_error = 0;

	/* UIP: set only in the last 244 us of each second. */
	for (bad = 0, i = 0; i < 4000; i++) {
		clock_advance(&c, 0, 250000 + 7);
		if (!!(cmos_read(rtc, REGA) & 0x80) !=
		    (c.wall.tv_nsec >= 1000000000L - 244141))
			bad++;
	}
	TAP_EQ(bad, 0, "UIP set exactly in the 244 us before each update");

	/* 2-byte access at 0x70: index then data. */
	buf[0] = REGD;
	buf[1] = 0;
	rtc_device_ops.write(rtc, 0, buf, 1);
	rtc_device_ops.read(rtc, 0, buf, 2);
	TAP_EQ(buf[0] == 0xff && buf[1] == 0x80, 1, "2-byte read: ff, data");
	buf[0] = 0x50;
	buf[1] = 0x99;
	rtc_device_ops.write(rtc, 0, buf, 2);
	TAP_EQ(cmos_read(rtc, 0x50), 0x99, "2-byte write: index, data");

	TAP_EQ(c.irq_calls, 0, "no interrupt enabled, none raised");
	rtc_device_ops.free(rtc);
	rtc_free(NULL);
}

static void
test_fuzz(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	uint8_t buf[8], v;
	unsigned int i, j, bad = 0;
	uint64_t off;

	rng_state = 0xfeedfacecafebeefULL;
	for (i = 0; i < 300000; i++) {
		switch (rng() % 6) {
		case 0:
			off = rng() % 4 == 0 ? rng() : rng() % 4;
			rtc_device_ops.read(rtc, off, buf,
			    (unsigned int)(rng() % 9));
			break;
		case 1:
		case 2:
			off = rng() % 4 == 0 ? rng() : rng() % 4;
			for (j = 0; j < 8; j++)
				buf[j] = (uint8_t)rng();
			rtc_device_ops.write(rtc, off, buf,
			    (unsigned int)(rng() % 9));
			break;
		case 3:
			/* Any clock, including absurd ones. */
			if (rng() % 50 == 0)
				c.wall.tv_sec = (time_t)rng();
			else
				clock_advance(&c, (int64_t)(rng() % 100000), 0);
			c.wall_error = rng() % 20 == 0;
			break;
		case 4:
			rtc_cmos_set(rtc, (unsigned int)(rng() % 200),
			    (uint8_t)rng());
			(void)rtc_cmos_get(rtc, (unsigned int)(rng() % 200));
			break;
		default:
			v = cmos_read(rtc, REGA);
			if (v & 0x80)
				bad++;
			if (cmos_read(rtc, REGD) != 0x80)
				bad++;
			v = cmos_read(rtc, (uint8_t)rng());
			(void)v;
			break;
		}
	}
	TAP_EQ(bad, 0, "fuzz: UIP never set, D always 0x80");
	TAP_EQ(c.irq_bad, 0, "fuzz: every line change was a change");
	TAP_EQ(c.irq[0], (rtc_cmos_get(rtc, REGC) & 0x80) != 0,
	    "fuzz: the line follows IRQF");
	/* After the storm a sane setting still works. */
	c.wall_error = 0;
	clock_set(&c, utc(2024, 2, 29, 1, 2, 3), 0);
	cmos_write(rtc, REGA, 0x26);
	cmos_write(rtc, REGB, 0x82);
	cmos_write(rtc, SEC, 0x03);
	cmos_write(rtc, MIN, 0x02);
	cmos_write(rtc, HOUR, 0x01);
	cmos_write(rtc, WDAY, 0x05);
	cmos_write(rtc, MDAY, 0x29);
	cmos_write(rtc, MON, 0x02);
	cmos_write(rtc, YEAR, 0x24);
	cmos_write(rtc, CENT, 0x20);
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(regs_match(rtc, utc(2024, 2, 29, 1, 2, 3), false, false), true,
	    "fuzz: clock set afterwards reads back right");
	rtc_device_ops.free(rtc);
}

/* --- interrupts ------------------------------------------------------- */

#define MS	1000000LL
#define SECOND	1000000000LL

/* Flags a simulated guest saw in register C, one read per interrupt. */
struct isr_tally {
	unsigned int irqs, pf, af, uf;
	int64_t last_irq;	/* VM time of the last one */
	int64_t first_af, first_uf;
};

/*
 * Run VM time forward by ns while a guest's interrupt handler (t not
 * NULL) reads register C at each interrupt, as Linux and Windows do:
 * after each timer the fake host fires, and after each read of C (which
 * may raise the next owed tick at once), look at the line.
 */
static void
run_guest(struct fake_host *c, struct rtc *rtc, int64_t ns,
    struct isr_tally *t)
{
	int64_t end = c->vm_now + ns, next;
	unsigned int run;
	uint8_t v;

	for (;;) {
		for (run = 0; t != NULL && c->irq[0] && run < 1000; run++) {
			v = cmos_read(rtc, REGC);
			t->irqs++;
			t->last_irq = c->vm_now;
			t->pf += (v & 0x40) != 0;
			if ((v & 0x20) && t->af++ == 0)
				t->first_af = c->vm_now;
			if ((v & 0x10) && t->uf++ == 0)
				t->first_uf = c->vm_now;
		}
		next = fake_host_next_deadline(c);
		if (next > end) {
			fake_host_advance(c, end - c->vm_now);
			break;
		}
		fake_host_advance(c, next > c->vm_now ? next - c->vm_now : 0);
	}
}

static void
test_rates(void)
{
	static const unsigned int hz[16] = { 0, 256, 128, 8192, 4096, 2048,
	    1024, 512, 256, 128, 64, 32, 16, 8, 4, 2 };
	unsigned int rs, bad = 0, bad_count = 0;
	struct rtc_stats st;

	for (rs = 0; rs < 16; rs++) {
		if (rtc_rate_hz((uint8_t)(0x20 | rs)) != hz[rs])
			bad++;
		if (rtc_rate_hz((uint8_t)(0x60 | rs)) != 0 ||
		    rtc_rate_hz((uint8_t)(0x70 | rs)) != 0)
			bad++;
	}
	TAP_EQ(bad, 0, "rate select 0-15: off, 256, 128, 8192 >> (n - 3)"
	    "; divider in reset: off");
	TAP_EQ(rtc_rate_hz(0x06) == 1024 && rtc_rate_hz(0x16) == 1024, 1,
	    "other time bases count as the PC's 32.768 kHz");

	/* Every rate, counted over one second of VM time. */
	for (rs = 0; rs < 16; rs++) {
		struct fake_host c = FAKE_HOST_INITIALIZER(c);
		struct rtc *rtc = new_rtc(&c);

		struct isr_tally t = { 0 };

		cmos_write(rtc, REGA, (uint8_t)(0x20 | rs));
		cmos_write(rtc, REGB, 0x42);
		run_guest(&c, rtc, SECOND, &t);
		rtc_get_stats(rtc, &st);
		if (st.raised != hz[rs] || c.rises[0] != hz[rs] ||
		    st.delivered != hz[rs] || t.irqs != hz[rs])
			bad_count++;
		if (rs == 0 && c.timer_arms != 0)
			bad_count++;
		rtc_device_ops.free(rtc);
	}
	TAP_EQ(bad_count, 0, "each rate select, C read at each interrupt: "
	    "its number of ticks in 1 s, one edge each; rate 0 arms nothing");
}

static void
test_periodic(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	struct isr_tally t = { 0 };
	struct rtc_stats st;
	unsigned int arms, rises;
	uint64_t owed;

	/* PF without PIE: polled, no timer, no interrupt. */
	fake_host_advance(&c, 10 * MS);
	TAP_EQ(cmos_read(rtc, REGC), 0x40, "PIE off: PF set, no IRQF");
	TAP_EQ(cmos_read(rtc, REGC), 0x00, "C read again: clear");
	fake_host_advance(&c, 500 * 1000);
	TAP_EQ(cmos_read(rtc, REGC), 0x00, "less than a period: no PF");
	TAP_EQ(c.timer_arms + c.irq_calls, 0, "no timer, no interrupt");

	/* 1024 Hz under PIE, a handler reading C each time. */
	cmos_write(rtc, REGB, 0x42);
	TAP_EQ(fake_host_timers_armed(&c), 1, "PIE: one timer armed");
	run_guest(&c, rtc, SECOND, &t);
	rtc_get_stats(rtc, &st);
	TAP_EQ(t.irqs, 1024, "1024 Hz: 1024 interrupts in 1 s");
	TAP_EQ(t.pf, 1024, "each with PF");
	TAP_EQ(st.raised == 1024 && st.delivered == 1024 &&
	    st.coalesced == 0, 1, "counters: 1024 raised, 1024 delivered");
	TAP_EQ(c.irq[0], false, "reading C lowered the line");
	TAP_EQ(c.irq_bad, 0, "no redundant line changes");

	/*
	 * Without a handler: IRQ 8 stays asserted until C is read, one
	 * edge for all the ticks meanwhile, and no timer runs for them.
	 */
	rises = c.rises[0];
	fake_host_advance(&c, 10 * MS);
	TAP_EQ(c.irq[0], true, "no C read: the line stays high");
	TAP_EQ(c.rises[0] - rises, 1, "one edge for 10 ms of ticks");
	TAP_EQ(fake_host_timers_armed(&c), 0, "no timer while it is held");
	arms = c.timer_arms;
	fake_host_advance(&c, 100 * MS);
	TAP_EQ(c.timer_arms - arms, 0, "a guest that does not read C costs "
	    "no timer");
	rtc_get_stats(rtc, &st);
	owed = st.raised - 1024 - 1;	/* ticks since the one taken */
	TAP_EQ(owed >= 111 && st.delivered == 1025 && st.coalesced == owed &&
	    st.backlog == owed, 1, "the held ticks count as coalesced: %llu "
	    "raised, %llu coalesced, backlog %llu",
	    (unsigned long long)st.raised, (unsigned long long)st.coalesced,
	    (unsigned long long)st.backlog);
	TAP_EQ(cmos_read(rtc, REGC), 0xc0, "C: IRQF | PF");
	TAP_EQ(c.irq[0] && c.rises[0] - rises == 2, 1,
	    "the read raises the next owed tick at once");
	run_guest(&c, rtc, 20 * MS, &t);
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.backlog == 0 && st.reinjected == owed &&
	    st.ack_reinjected >= 32, 1, "a handler that reads C takes them "
	    "all: %llu reinjected, %llu on acknowledge",
	    (unsigned long long)st.reinjected,
	    (unsigned long long)st.ack_reinjected);
	TAP_EQ(c.rises[0] - rises, 1 + owed + (st.raised - 1025 - owed),
	    "one rising edge per tick taken (%u)", c.rises[0] - rises);
	TAP_EQ(c.irq[0], false, "C read: line low");

	/* Rate change: the new rate from the next tick. */
	cmos_write(rtc, REGA, 0x2f);		/* 2 Hz */
	arms = c.timer_arms;
	rtc_get_stats(rtc, &st);
	run_guest(&c, rtc, 2 * SECOND, &t);
	{
		struct rtc_stats st2;

		rtc_get_stats(rtc, &st2);
		TAP_EQ(st2.raised - st.raised, 4, "2 Hz: 4 ticks in 2 s");
		TAP_EQ(c.timer_arms - arms, 4, "one timer arm per tick");
	}

	/* Divider held in reset: no ticks, no timer. */
	cmos_write(rtc, REGA, 0x76);
	TAP_EQ(fake_host_timers_armed(&c), 0, "divider reset: no timer");
	rtc_get_stats(rtc, &st);
	fake_host_advance(&c, SECOND);
	(void)cmos_read(rtc, REGC);
	TAP_EQ(cmos_read(rtc, REGC), 0, "divider reset: no PF");
	cmos_write(rtc, REGA, 0x26);
	{
		struct rtc_stats st2;

		fake_host_advance(&c, SECOND);
		rtc_get_stats(rtc, &st2);
		TAP_EQ(st2.raised - st.raised, 1024,
		    "divider released: 1024 Hz again");
	}

	/* SET stops updates, not the divider. */
	cmos_write(rtc, REGB, 0xc2);
	rtc_get_stats(rtc, &st);
	fake_host_advance(&c, 100 * MS);
	{
		struct rtc_stats st2;

		rtc_get_stats(rtc, &st2);
		TAP_EQ(st2.raised - st.raised, 102, "SET: periodic ticks go on");
	}
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(fake_host_timers_armed(&c), 0, "PIE cleared: timer cancelled");
	rtc_device_ops.free(rtc);
}

static void
test_update_and_alarm(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct isr_tally t = { 0 };
	struct rtc *rtc;
	unsigned int arms;

	c.wall_follows_vm = true;
	clock_set(&c, utc(2024, 6, 1, 11, 59, 50), 300000000);
	rtc = new_rtc(&c);

	/* UIP: the last 244 us before each second, never under SET. */
	TAP_EQ(cmos_read(rtc, REGA), 0x26, "0.3 s: UIP clear");
	fake_host_advance(&c, 699755 * 1000LL);
	TAP_EQ(cmos_read(rtc, REGA), 0x26, "0.999755 s: UIP clear");
	fake_host_advance(&c, 1000);
	TAP_EQ(cmos_read(rtc, REGA), 0xa6, "0.999756 s: UIP set");
	TAP_EQ(cmos_read(rtc, SEC), 0x50, "...seconds not yet updated");
	cmos_write(rtc, REGB, 0x82);
	TAP_EQ(cmos_read(rtc, REGA), 0x26, "SET: UIP clear");
	cmos_write(rtc, REGB, 0x02);
	fake_host_advance(&c, 244 * 1000);
	TAP_EQ(cmos_read(rtc, SEC), 0x51, "the update: 11:59:51, UIP falls");
	TAP_EQ(cmos_read(rtc, REGA), 0x26, "UIP clear after the update");
	TAP_EQ(cmos_read(rtc, REGC), 0x50, "UF set (polled, no UIE), PF too");
	TAP_EQ(c.timer_arms, 0, "polling UIP and UF arms nothing");

	/* Update-ended interrupts: once a second, at the second. */
	clock_set(&c, utc(2024, 6, 1, 11, 59, 51), 300000000);
	(void)cmos_read(rtc, REGC);
	cmos_write(rtc, REGB, 0x12);
	memset(&t, 0, sizeof(t));
	{
		int64_t start = c.vm_now;

		run_guest(&c, rtc, 10 * SECOND, &t);
		TAP_EQ(t.irqs == 10 && t.uf == 10, 1,
		    "UIE: 10 update interrupts in 10 s");
		TAP_EQ(t.first_uf - start, 700 * MS, "the first at the second");
		TAP_EQ(t.last_irq - start, 9700 * MS, "the last 9 s later");
	}
	TAP_EQ(cmos_read(rtc, SEC), 0x01, "12:00:01");
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(fake_host_timers_armed(&c), 0, "UIE cleared: no timer");

	/* Alarm at 12:00:05 exactly: one AF, at that second. */
	cmos_write(rtc, 0x01, 0x05);
	cmos_write(rtc, 0x03, 0x00);
	cmos_write(rtc, 0x05, 0x12);
	memset(&t, 0, sizeof(t));
	arms = c.timer_arms;
	cmos_write(rtc, REGB, 0x22);
	{
		int64_t start = c.vm_now;

		run_guest(&c, rtc, 10 * SECOND, &t);
		TAP_EQ(t.irqs == 1 && t.af == 1, 1, "AIE: one alarm interrupt");
		TAP_EQ(t.first_af - start, 3700 * MS,
		    "at 12:00:05, 3.7 s after 12:00:01.3");
	}
	TAP_EQ(c.timer_arms - arms, 2,
	    "AIE alone: the timer waits for the alarm, not each second");

	/* Don't-care seconds and hours: every second of 12:01. */
	cmos_write(rtc, 0x01, 0xc0);
	cmos_write(rtc, 0x03, 0x01);
	cmos_write(rtc, 0x05, 0xff);
	memset(&t, 0, sizeof(t));
	run_guest(&c, rtc, 120 * SECOND, &t);
	TAP_EQ(t.af, 60, "xx:01:** matches 60 times in 2 min");

	/* Don't-care minutes and hours: every minute at :30. */
	cmos_write(rtc, 0x01, 0x30);
	cmos_write(rtc, 0x03, 0xc5);
	cmos_write(rtc, 0x05, 0xd0);
	memset(&t, 0, sizeof(t));
	run_guest(&c, rtc, 180 * SECOND, &t);
	TAP_EQ(t.af, 3, "**:**:30 matches 3 times in 3 min");

	/* 12-hour mode: 1 PM is 0x81; polled AF across the hour. */
	cmos_write(rtc, REGB, 0x00);
	(void)cmos_read(rtc, REGC);
	cmos_write(rtc, 0x01, 0x00);
	cmos_write(rtc, 0x03, 0x00);
	cmos_write(rtc, 0x05, 0x81);
	clock_set(&c, utc(2024, 6, 1, 12, 59, 0), 0);
	(void)cmos_read(rtc, REGC);
	fake_host_advance(&c, 59 * SECOND);
	TAP_EQ(cmos_read(rtc, REGC), 0x50, "12:59:59 PM: UF, no AF");
	fake_host_advance(&c, SECOND);
	TAP_EQ(cmos_read(rtc, REGC), 0x70, "1:00:00 PM: AF (polled)");
	fake_host_advance(&c, 5 * SECOND);
	TAP_EQ(cmos_read(rtc, REGC), 0x50, "1:00:05 PM: no AF again");

	/* SET: no updates, no alarm. */
	cmos_write(rtc, REGB, 0x22 | 0x80);
	cmos_write(rtc, 0x01, 0xc0);
	cmos_write(rtc, 0x03, 0xc0);
	cmos_write(rtc, 0x05, 0xc0);
	(void)cmos_read(rtc, REGC);
	fake_host_advance(&c, 3 * SECOND);
	TAP_EQ(cmos_read(rtc, REGC), 0x40, "SET: PF only, no UF, no AF");
	TAP_EQ(fake_host_timers_armed(&c), 0, "SET: no update timer");
	cmos_write(rtc, REGB, 0x22);
	fake_host_advance(&c, SECOND);
	TAP_EQ(c.irq[0], true, "SET cleared, all don't-care: AF next second");
	TAP_EQ(cmos_read(rtc, REGC), 0xf0, "C: IRQF | PF | AF | UF");
	TAP_EQ(c.irq[0], false, "and the line falls");
	cmos_write(rtc, REGB, 0x02);
	rtc_device_ops.free(rtc);
}

/* A guest that never enables an interrupt costs nothing. */
static void
test_no_timer_unless_asked(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc;
	unsigned int i;

	c.wall_follows_vm = true;
	clock_set(&c, utc(2024, 1, 1, 0, 0, 0), 0);
	rtc = new_rtc(&c);
	for (i = 0; i < 1000; i++) {
		fake_host_advance(&c, 7 * MS);
		(void)cmos_read(rtc, (uint8_t)(i % 14));
		(void)cmos_read(rtc, REGA);
		if (i % 100 == 0) {
			cmos_write(rtc, REGB, 0x82);
			cmos_write(rtc, MIN, 0x10);
			cmos_write(rtc, REGB, 0x02);
			cmos_write(rtc, REGA, (uint8_t)(0x20 | (i / 100)));
			cmos_write(rtc, 0x01, (uint8_t)i);
			cmos_write(rtc, 0x40, (uint8_t)i);
		}
	}
	fake_host_advance(&c, 3600 * SECOND);
	TAP_EQ(c.timer_arms, 0, "no interrupt enabled: no timer ever armed");
	TAP_EQ(c.irq_calls, 0, "and no interrupt line touched");
	TAP_EQ(fake_host_timers_armed(&c), 0, "nothing armed now");
	rtc_device_ops.free(rtc);
}

/* Named values for vm.info. */
struct diag_capture {
	struct device_diag d;
	char keys[32][24];
	uint64_t vals[32];
	unsigned int n;
};

static void
diag_capture_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct diag_capture *dc = (struct diag_capture *)d;

	(void)fmt;
	if (dc->n < 32) {
		snprintf(dc->keys[dc->n], sizeof(dc->keys[0]), "%s", key);
		dc->vals[dc->n++] = value;
	}
}

static bool
diag_get(const struct diag_capture *dc, const char *key, uint64_t *v)
{
	unsigned int i;

	for (i = 0; i < dc->n; i++) {
		if (strcmp(dc->keys[i], key) == 0) {
			*v = dc->vals[i];
			return true;
		}
	}
	return false;
}

static void
test_diag(void)
{
	static const char *const keys[] = { "reg_a", "reg_b", "reg_c",
	    "nmi_mask", "periodic_hz", "ticks_raised", "ticks_delivered",
	    "ticks_coalesced", "ticks_dropped", "ticks_masked",
	    "ticks_reinjected", "reinject_retries", "backlog",
	    "backlog_high", "backlog_max", "max_slices",
	    "lost_ticks_slew" };
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	struct diag_capture dc;
	unsigned int i, missing = 0;
	uint8_t idx = 0x80 | REGA;
	uint64_t v;

	memset(&dc, 0, sizeof(dc));
	dc.d.put = diag_capture_put;
	cmos_write(rtc, REGB, 0x4a);
	fake_host_advance(&c, 100 * MS);
	rtc_device_ops.write(rtc, 0, &idx, 1);
	rtc_device_ops.diag(rtc, &dc.d);
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!diag_get(&dc, keys[i], &v)) {
			tap_diag("missing %s", keys[i]);
			missing++;
		}
	TAP_EQ(missing, 0, "diag names the registers and tick counters");
	TAP_EQ(diag_get(&dc, "ticks_raised", &v) && v == 102, 1,
	    "diag: 102 ticks in 100 ms");
	TAP_EQ(diag_get(&dc, "nmi_mask", &v) && v == 1, 1,
	    "diag: the NMI mask bit written to port 0x70 is kept");
	TAP_EQ(diag_get(&dc, "reg_b", &v) && v == 0x4a, 1,
	    "diag: SQWE kept in B");
	rtc_device_ops.write(rtc, 0, &idx, 1);
	TAP_EQ(cmos_read(rtc, REGB), 0x4a, "register B keeps SQWE");
	rtc_device_ops.free(rtc);
}

/* The figures the RTC declares (figure.h), as /metrics sees them. */
struct figure_capture {
	struct device_diag d;
	const struct figure *figs[32];
	uint64_t vals[32];
	unsigned int n, puts;
	bool put_twice;
};

static void
figure_capture_put(struct device_diag *d, const char *key, uint64_t value,
    enum device_diag_format fmt)
{
	struct figure_capture *fc = (struct figure_capture *)d;

	(void)key;
	(void)value;
	(void)fmt;
	fc->puts++;
}

static void
figure_capture_figure(struct device_diag *d, const struct figure *f,
    uint64_t value)
{
	struct figure_capture *fc = (struct figure_capture *)d;

	for (unsigned int i = 0; i < fc->n; i++)
		if (strcmp(fc->figs[i]->key, f->key) == 0)
			fc->put_twice = true;
	if (fc->n < 32) {
		fc->figs[fc->n] = f;
		fc->vals[fc->n++] = value;
	}
}

static const struct figure *
figure_get(const struct figure_capture *fc, const char *key, uint64_t *v)
{
	for (unsigned int i = 0; i < fc->n; i++)
		if (strcmp(fc->figs[i]->key, key) == 0) {
			*v = fc->vals[i];
			return fc->figs[i];
		}
	return NULL;
}

static void
test_diag_figures(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	struct figure_capture fc;
	const struct figure *f;
	unsigned int i, bad = 0;
	uint64_t v;

	memset(&fc, 0, sizeof(fc));
	fc.d.put = figure_capture_put;
	fc.d.figure = figure_capture_figure;
	cmos_write(rtc, REGB, 0x4a);
	fake_host_advance(&c, 100 * MS);
	rtc_device_ops.diag(rtc, &fc.d);
	/* index, nmi_mask, reg_a, reg_b, reg_c, irq_level, lost_ticks_slew */
	TAP_EQ(fc.puts, 7, "diag: the registers and flags as plain values");
	TAP_EQ(fc.n, 13, "diag: 13 figures with their declarations");
	TAP_EQ(fc.put_twice, 0, "diag: no figure twice");
	for (i = 0; i < fc.n; i++) {
		f = fc.figs[i];
		if (f->help == NULL || f->help[0] == '\0' ||
		    f->kind == FIGURE_HISTOGRAM || (f->metric != NULL &&
		    (strncmp(f->metric, "vmmd_rtc_", 9) != 0 ||
		    strstr(f->metric, "_total") != NULL))) {
			tap_diag("figure %s: declared wrong", f->key);
			bad++;
		}
	}
	TAP_EQ(bad, 0, "diag: each figure has help and a vmmd_rtc_ family "
	    "or none");
	f = figure_get(&fc, "ticks_raised", &v);
	TAP_EQ(f != NULL && v == 102 && f->kind == FIGURE_COUNTER &&
	    strcmp(f->metric, "vmmd_rtc_ticks_raised") == 0, 1,
	    "diag: ticks_raised, a counter: 102 ticks in 100 ms");
	f = figure_get(&fc, "ticks_coalesced", &v);
	TAP_EQ(f != NULL && f->kind == FIGURE_COUNTER &&
	    strcmp(f->metric, "vmmd_rtc_ticks_coalesced") == 0, 1,
	    "diag: ticks_coalesced, a counter of its own family");
	f = figure_get(&fc, "backlog", &v);
	TAP_EQ(f != NULL && f->kind == FIGURE_GAUGE &&
	    strcmp(f->metric, "vmmd_rtc_tick_backlog") == 0, 1,
	    "diag: backlog, a gauge");
	f = figure_get(&fc, "periodic_hz", &v);
	TAP_EQ(f != NULL && v == 1024 && f->kind == FIGURE_GAUGE &&
	    f->unit == FIGURE_UNIT_HERTZ, 1, "diag: periodic_hz, in hertz");
	f = figure_get(&fc, "ticks_masked", &v);
	TAP_EQ(f != NULL && f->metric == NULL, 1,
	    "diag: ticks_masked, vm.info's alone");
	rtc_device_ops.free(rtc);
}

/*
 * The stall of issue 8: 1024 Hz, 1 s fine, 0.5 s in which every edge
 * coalesces (the guest has interrupts off: no handler runs either),
 * then fine again until 3 s.  Returns the VM time from the end of the
 * stall until the backlog is gone (-1: never), with stats at 3 s.
 */
static int64_t
stall(const struct rtc_config *cfg, struct rtc_stats *st)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct isr_tally t = { 0 };
	struct rtc *rtc = rtc_new_config(&c.host, cfg);
	int64_t end_stall, caught = -1;

	if (rtc == NULL)
		tap_bail("rtc_new_config failed");
	cmos_write(rtc, REGB, 0x42);
	run_guest(&c, rtc, SECOND, &t);
	c.raise_status = DEVICE_IRQ_COALESCED;
	run_guest(&c, rtc, SECOND / 2, NULL);
	c.raise_status = DEVICE_IRQ_DELIVERED;
	end_stall = c.vm_now;
	while (c.vm_now < 3 * SECOND) {
		run_guest(&c, rtc, 10000, &t);	/* 10 us steps */
		rtc_get_stats(rtc, st);
		if (caught < 0 && st->backlog == 0)
			caught = c.vm_now - end_stall;
	}
	if (fake_host_timers_armed(&c) != 1)
		caught = -2;			/* a timer left behind */
	rtc_device_ops.free(rtc);
	return caught;
}

static void
test_lost_ticks(void)
{
	struct rtc_config cfg = RTC_CONFIG_DEFAULT;
	struct rtc_stats st;
	int64_t t32, t8;

	t32 = stall(&cfg, &st);
	tap_diag("slew, 32 slices: backlog %llu, caught up %.3f ms after "
	    "the stall, %llu retries", (unsigned long long)st.backlog_high,
	    (double)t32 / MS, (unsigned long long)st.retries);
	TAP_EQ(st.raised, 3072, "slew: 3072 ticks in 3 s at 1024 Hz");
	TAP_EQ(st.coalesced, 512, "slew: 512 coalesced in the 0.5 s stall");
	TAP_EQ(st.backlog_high, 512, "slew: backlog high-water mark 512");
	TAP_EQ(st.delivered + st.reinjected, st.raised,
	    "slew: every tick delivered, in time or reinjected");
	TAP_EQ(st.dropped == 0 && st.backlog == 0, 1, "slew: none dropped");
	TAP_EQ(t32 > 0 && t32 <= 20 * MS, 1,
	    "slew, 32 slices: caught up within 20 ms of VM time");

	cfg.max_slices = 8;
	t8 = stall(&cfg, &st);
	tap_diag("slew, 8 slices: caught up %.3f ms after the stall",
	    (double)t8 / MS);
	TAP_EQ(st.delivered + st.reinjected == st.raised && st.dropped == 0,
	    1, "slew, 8 slices: every tick delivered too");
	TAP_EQ(t8 > t32, 1, "8 slices catch up slower than 32");
	tap_diag("catch-up after 0.5 s at 1024 Hz: 32 slices %.3f ms, "
	    "8 slices %.3f ms (%.1fx)", (double)t32 / MS, (double)t8 / MS,
	    (double)t8 / (double)t32);

	cfg = RTC_CONFIG_DEFAULT;
	cfg.backlog_max = 100;
	(void)stall(&cfg, &st);
	TAP_EQ(st.backlog_high == 100 && st.dropped == 412 &&
	    st.reinjected == 100, 1, "backlog capped at 100: 412 dropped");

	cfg = RTC_CONFIG_DEFAULT;
	cfg.lost_ticks = RTC_LOST_TICKS_DISCARD;
	(void)stall(&cfg, &st);
	TAP_EQ(st.coalesced == 512 && st.dropped == 512 &&
	    st.reinjected == 0 && st.backlog_high == 0, 1,
	    "discard: 512 ticks lost");
	TAP_EQ(st.delivered, 3072 - 512, "discard: the guest saw 2560");
}

/* Slices, rescaling, and what ends a backlog. */
static void
test_backlog(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	struct rtc_stats st;

	cmos_write(rtc, REGB, 0x42);
	c.raise_status = DEVICE_IRQ_COALESCED;
	fake_host_advance(&c, SECOND / 4);	/* 256 ticks lost */
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.backlog, 256, "backlog 256 at 1024 Hz");
	TAP_EQ(fake_host_timers_armed(&c), 2, "each edge dropped: the line "
	    "low again, the periodic and the reinjection timer run");

	/* The rate halves: 256 ticks of 1/1024 s are 128 of 1/512 s. */
	cmos_write(rtc, REGA, 0x27);
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.backlog, 128, "1024 -> 512 Hz: backlog 128");
	cmos_write(rtc, REGA, 0x23);
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.backlog, 1024, "512 -> 8192 Hz: 2048, capped at 1024");
	TAP_EQ(st.dropped, 1024, "the excess dropped");
	cmos_write(rtc, REGA, 0x26);
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.backlog, 128, "8192 -> 1024 Hz: 128");

	/*
	 * A handler that reads C: the read that acknowledges raises the
	 * next owed tick at once, at most 32 in a row between two real
	 * ticks; the slice timer (a period / 32 while the backlog is large)
	 * reinjects the rest while the line is low.
	 */
	c.raise_status = DEVICE_IRQ_DELIVERED;
	{
		struct isr_tally t = { 0 };
		struct rtc_stats st0 = st;
		uint64_t ack, slices;

		run_guest(&c, rtc, SECOND / 1024, &t);
		rtc_get_stats(rtc, &st);
		ack = st.ack_reinjected - st0.ack_reinjected;
		slices = st.reinjected - st0.reinjected - ack;
		tap_diag("one period: %llu reinjected on acknowledge, %llu by "
		    "slices, backlog %llu", (unsigned long long)ack,
		    (unsigned long long)slices,
		    (unsigned long long)st.backlog);
		TAP_EQ(ack >= 32 && ack <= 64, 1, "on acknowledge: 32 in a row "
		    "at each real tick, at most 2 ticks in a period (%llu)",
		    (unsigned long long)ack);
		TAP_EQ(slices >= 24 && slices <= 33, 1, "by slices: about 31 "
		    "a period while the backlog is large (%llu)",
		    (unsigned long long)slices);
		run_guest(&c, rtc, 3 * SECOND / 1024, &t);
		rtc_get_stats(rtc, &st);
		TAP_EQ(st.backlog, 0, "128 owed ticks taken within 4 periods");
	}

	/* PIE off: the guest wants no ticks, none are owed. */
	c.raise_status = DEVICE_IRQ_COALESCED;
	fake_host_advance(&c, 10 * MS);
	cmos_write(rtc, REGB, 0x02);
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.backlog, 0, "PIE cleared: backlog dropped");
	TAP_EQ(fake_host_timers_armed(&c), 0, "and no timer left");

	/* Masked: nobody listens, nothing queued. */
	c.raise_status = DEVICE_IRQ_MASKED;
	cmos_write(rtc, REGB, 0x42);
	fake_host_advance(&c, 10 * MS);
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.masked >= 10 && st.backlog == 0, 1,
	    "masked ticks counted, not queued");
	cmos_write(rtc, REGB, 0x02);
	rtc_device_ops.free(rtc);
}

/*
 * A dropped edge: KVM's I/O APIC answers "coalesced" to an RTC edge
 * raised before the guest's EOI of the previous one, and drops it, so
 * a guest takes an interrupt only for an edge answered "delivered".
 * The line must not stay high after a dropped edge: the guest would
 * never be interrupted again, never read C, and no tick would come.
 */
static void
test_dropped_edge(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc *rtc = new_rtc(&c);
	struct rtc_stats st;
	unsigned int taken = 0, seen;
	int64_t end;

	cmos_write(rtc, REGB, 0x42);
	c.raise_status = DEVICE_IRQ_COALESCED;
	fake_host_advance(&c, SECOND / 1024 + 1000);	/* one tick */
	TAP_EQ(c.rises[0] == 1 && !c.irq[0], 1, "a dropped edge: the line is "
	    "low again");
	c.raise_status = DEVICE_IRQ_DELIVERED;
	/* The guest: one handler run, reading C, per delivered edge. */
	end = c.vm_now + 20 * MS;
	while (c.vm_now < end) {
		fake_host_advance(&c, 10000);
		for (seen = c.delivered[0]; taken < seen; taken++)
			(void)cmos_read(rtc, REGC);
	}
	rtc_get_stats(rtc, &st);
	tap_ok(taken >= 20 && st.backlog == 0 && st.reinjected == 1,
	    "the next ticks interrupt the guest (%u in 20 ms), and the "
	    "dropped one is reinjected (%llu)", taken,
	    (unsigned long long)st.reinjected);
	cmos_write(rtc, REGB, 0x02);
	rtc_device_ops.free(rtc);
}

/* Random guest and host behaviour with time moving: invariants hold. */
static void
test_fuzz_timers(void)
{
	static const int status[] = { DEVICE_IRQ_DELIVERED,
	    DEVICE_IRQ_DELIVERED, DEVICE_IRQ_COALESCED, DEVICE_IRQ_MASKED };
	static const uint8_t regs[] = { REGA, REGB, REGC, 0x01, 0x03, 0x05,
	    SEC, MIN, HOUR };
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc_config cfg = RTC_CONFIG_DEFAULT;
	struct rtc_stats st;
	struct rtc *rtc;
	unsigned int i, bad = 0;

	rng_state = 0x5eed5eed5eed5eedULL;
	c.wall_follows_vm = true;
	cfg.backlog_max = 300;
	rtc = rtc_new_config(&c.host, &cfg);
	if (rtc == NULL)
		tap_bail("rtc_new_config failed");
	for (i = 0; i < 20000; i++) {
		switch (rng() % 4) {
		case 0: {
			uint8_t r = regs[rng() % (sizeof(regs) / sizeof(regs[0]))];
			uint8_t v = (uint8_t)rng();

			if (r == REGA)
				v = (uint8_t)((rng() % 8 == 0 ? 0x70 : 0x20) |
				    (v & 0x0f));
			cmos_write(rtc, r, v);
			break;
		}
		case 1:
			(void)cmos_read(rtc, REGC);
			break;
		case 2:
			c.raise_status = status[rng() % 4];
			break;
		default:
			run_guest(&c, rtc, (int64_t)(rng() % (20 * MS)),
			    rng() % 2 ? NULL : &(struct isr_tally){ 0 });
			break;
		}
		rtc_get_stats(rtc, &st);
		if (st.backlog > 300 || fake_host_timers_armed(&c) > 3)
			bad++;
	}
	TAP_EQ(bad, 0, "fuzz with time: backlog within its cap, <= 3 timers");
	TAP_EQ(c.irq_bad, 0, "fuzz with time: every line change a change");
	rtc_get_stats(rtc, &st);
	TAP_EQ(st.raised, st.delivered + st.coalesced + st.masked,
	    "fuzz with time: every tick delivered, coalesced or masked");
	tap_diag("fuzz: %llu ticks, %llu coalesced, %llu reinjected, "
	    "%llu dropped", (unsigned long long)st.raised,
	    (unsigned long long)st.coalesced,
	    (unsigned long long)st.reinjected, (unsigned long long)st.dropped);
	cmos_write(rtc, REGB, 0x02);
	TAP_EQ(fake_host_timers_armed(&c), 0,
	    "fuzz with time: interrupts off, no timer left");
	rtc_device_ops.free(rtc);
}

/*
 * A guest reset rebuilds the RTC: one created from the first one's
 * battery reads the clock the guest set (advanced by the host time
 * that passed, not reset to the host's) and the same CMOS RAM.
 */
static void
test_battery(void)
{
	struct fake_host c = FAKE_HOST_INITIALIZER(c);
	struct rtc_config cfg = RTC_CONFIG_DEFAULT;
	struct rtc_battery bat;
	struct rtc *rtc;

	memset(&bat, 0xee, sizeof(bat));
	bat.valid = false;
	cfg.battery = &bat;
	clock_set(&c, (int64_t)utc(2026, 11, 30, 6, 30, 0), 250000000);
	rtc = rtc_new_config(&c.host, &cfg);
	if (rtc == NULL)
		tap_bail("rtc_new_config failed");
	TAP_EQ(bat.valid && bat.offset_sec == 0 && bat.offset_nsec == 0 &&
	    bat.nvram[0x40 - RTC_NVRAM_FIRST] == 0, 1,
	    "battery: a new one is filled in at creation");
	TAP_EQ(regs_match(rtc, utc(2026, 11, 30, 6, 30, 0), false, false),
	    true, "battery: a new one starts at host time");
	/* The guest sets the clock as Linux does: SET, time, clear SET. */
	cmos_write(rtc, REGB, 0x82);
	cmos_write(rtc, SEC, 0x06);
	cmos_write(rtc, MIN, 0x05);
	cmos_write(rtc, HOUR, 0x04);
	cmos_write(rtc, WDAY, 0x01);	/* not the real Saturday */
	cmos_write(rtc, MDAY, 0x03);
	cmos_write(rtc, MON, 0x02);
	cmos_write(rtc, YEAR, 0x01);
	cmos_write(rtc, CENT, 0x20);
	cmos_write(rtc, REGB, 0x02);
	cmos_write(rtc, 0x40, 0x5a);
	cmos_write(rtc, 0x7f, 0xa5);
	TAP_EQ(cmos_read(rtc, SEC), 0x06, "battery: the guest set the clock");
	rtc_free(rtc);

	/* The reset took 7.5 s of host time. */
	clock_advance(&c, 7, 500000000);
	rtc = rtc_new_config(&c.host, &cfg);
	if (rtc == NULL)
		tap_bail("rtc_new_config failed");
	TAP_EQ(cmos_read(rtc, SEC) == 0x13 && cmos_read(rtc, MIN) == 0x05 &&
	    cmos_read(rtc, HOUR) == 0x04 && cmos_read(rtc, MDAY) == 0x03 &&
	    cmos_read(rtc, MON) == 0x02 && cmos_read(rtc, YEAR) == 0x01 &&
	    cmos_read(rtc, CENT) == 0x20, 1,
	    "battery: the set time, 7 s later, after a rebuild");
	TAP_EQ(cmos_read(rtc, WDAY), 0x01,
	    "battery: the day of week the guest set");
	TAP_EQ(cmos_read(rtc, 0x40) == 0x5a && cmos_read(rtc, 0x7f) == 0xa5,
	    1, "battery: CMOS RAM kept");
	rtc_free(rtc);

	/* No battery: a rebuilt RTC forgets. */
	rtc = rtc_new(&c.host);
	TAP_EQ(cmos_read(rtc, 0x40) == 0 &&
	    cmos_read(rtc, YEAR) == 0x26, 1,
	    "battery: without one, host time and empty RAM");
	rtc_free(rtc);
}

int
main(void)
{
	/* The sequence test_dates and test_set_time draw from. */
	rng_state = 0x0123456789abcdefULL;
	test_defaults();
	test_dates();
	test_12h();
	test_set_time();
	test_wday();
	test_ram_and_misc();
	test_fuzz();
	test_rates();
	test_periodic();
	test_update_and_alarm();
	test_no_timer_unless_asked();
	test_diag();
	test_diag_figures();
	test_lost_ticks();
	test_backlog();
	test_dropped_edge();
	test_fuzz_timers();
	test_battery();
	return tap_done();
}
