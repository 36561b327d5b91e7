/*
 * MC146818 real-time clock (datasheet: "Address Map", registers A and B).
 * The time registers are read only while no update is in progress, and
 * read again until two passes agree.  Register B says whether they hold
 * BCD or binary and whether the hour is 12- or 24-hour.
 */
#include "rt.h"

#define CMOS_INDEX	0x70
#define CMOS_DATA	0x71

#define RTC_SEC		0x00
#define RTC_MIN		0x02
#define RTC_HOUR	0x04
#define RTC_DAY		0x07
#define RTC_MON		0x08
#define RTC_YEAR	0x09
#define RTC_REG_A	0x0a
#define RTC_REG_B	0x0b
#define RTC_CENTURY	0x32

#define REG_A_UIP	0x80
#define REG_B_24H	0x02
#define REG_B_BINARY	0x04
#define HOUR_PM		0x80

uint8_t
cmos_read(uint8_t reg)
{
	outb(CMOS_INDEX, reg);
	return inb(CMOS_DATA);
}

void
cmos_write(uint8_t reg, uint8_t v)
{
	outb(CMOS_INDEX, reg);
	outb(CMOS_DATA, v);
}

uint8_t
cmos_reg_b(void)
{
	return cmos_read(RTC_REG_B);
}

struct rtc_raw {
	uint8_t sec, min, hour, day, mon, year, century;
};

static int
rtc_read_raw(struct rtc_raw *r)
{
	int i;

	/* An update takes under 2 ms; bound the wait anyway. */
	for (i = 0; i < 10000; i++)
		if ((cmos_read(RTC_REG_A) & REG_A_UIP) == 0)
			break;
	if (i == 10000)
		return -1;
	r->sec = cmos_read(RTC_SEC);
	r->min = cmos_read(RTC_MIN);
	r->hour = cmos_read(RTC_HOUR);
	r->day = cmos_read(RTC_DAY);
	r->mon = cmos_read(RTC_MON);
	r->year = cmos_read(RTC_YEAR);
	r->century = cmos_read(RTC_CENTURY);
	return 0;
}

static int
bcd(uint8_t v)
{
	return (v >> 4) * 10 + (v & 0x0f);
}

int
cmos_read_time(struct rtc_time *t)
{
	struct rtc_raw a, b;
	uint8_t regb;
	int tries, century;
	bool pm;

	if (rtc_read_raw(&a) != 0)
		return -1;
	for (tries = 0; tries < 5; tries++) {
		if (rtc_read_raw(&b) != 0)
			return -1;
		if (memcmp(&a, &b, sizeof(a)) == 0)
			break;
		a = b;
	}
	if (tries == 5)
		return -1;

	regb = cmos_read(RTC_REG_B);
	pm = (regb & REG_B_24H) == 0 && (a.hour & HOUR_PM) != 0;
	a.hour &= (regb & REG_B_24H) ? 0xff : 0x7f;
	if ((regb & REG_B_BINARY) == 0) {
		t->sec = bcd(a.sec);
		t->min = bcd(a.min);
		t->hour = bcd(a.hour);
		t->day = bcd(a.day);
		t->mon = bcd(a.mon);
		t->year = bcd(a.year);
		century = bcd(a.century);
	} else {
		t->sec = a.sec;
		t->min = a.min;
		t->hour = a.hour;
		t->day = a.day;
		t->mon = a.mon;
		t->year = a.year;
		century = a.century;
	}
	if ((regb & REG_B_24H) == 0) {
		/* 12 AM is midnight, 12 PM noon. */
		if (t->hour == 12)
			t->hour = 0;
		if (pm)
			t->hour += 12;
	}
	/* A clock without a century register: assume the 2000s. */
	if (century < 19 || century > 99)
		century = 20;
	t->year += century * 100;
	return 0;
}

static bool
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int
month_days(int y, int m)
{
	static const uint8_t days[12] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};

	return days[m - 1] + (m == 2 && is_leap(y));
}

bool
rtc_time_valid(const struct rtc_time *t)
{
	return t->year >= 1970 && t->year <= 9999 &&
	    t->mon >= 1 && t->mon <= 12 &&
	    t->day >= 1 && t->day <= month_days(t->year, t->mon) &&
	    t->hour >= 0 && t->hour <= 23 &&
	    t->min >= 0 && t->min <= 59 &&
	    t->sec >= 0 && t->sec <= 59;
}

/* Seconds since 1970-01-01T00:00:00Z (no leap seconds, as in Unix). */
uint64_t
rtc_time_to_epoch(const struct rtc_time *t)
{
	uint64_t days = 0;
	int y, m;

	for (y = 1970; y < t->year; y++)
		days += is_leap(y) ? 366 : 365;
	for (m = 1; m < t->mon; m++)
		days += month_days(t->year, m);
	days += t->day - 1;
	return days * 86400 + t->hour * 3600 + t->min * 60 + t->sec;
}

void
rtc_time_from_epoch(struct rtc_time *t, uint64_t epoch)
{
	uint64_t days = epoch / 86400;
	uint32_t secs = epoch % 86400;
	int y = 1970, m = 1;

	while (days >= (uint64_t)(is_leap(y) ? 366 : 365)) {
		days -= is_leap(y) ? 366 : 365;
		y++;
	}
	while (days >= (uint64_t)month_days(y, m)) {
		days -= month_days(y, m);
		m++;
	}
	t->year = y;
	t->mon = m;
	t->day = (int)days + 1;
	t->hour = secs / 3600;
	t->min = secs / 60 % 60;
	t->sec = secs % 60;
}

/* A clock tick: cheaper than a round trip through epoch seconds. */
void
rtc_time_add_second(struct rtc_time *t)
{
	if (++t->sec < 60)
		return;
	t->sec = 0;
	if (++t->min < 60)
		return;
	t->min = 0;
	if (++t->hour < 24)
		return;
	t->hour = 0;
	if (++t->day <= month_days(t->year, t->mon))
		return;
	t->day = 1;
	if (++t->mon <= 12)
		return;
	t->mon = 1;
	t->year++;
}
