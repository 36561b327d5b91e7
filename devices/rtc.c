/*
 * MC146818 real-time clock with CMOS RAM, after the Motorola MC146818A
 * datasheet (sections "Address Map", "Time, Calendar and Alarm
 * Locations", "Registers A-D", "Update Cycle" and "Interrupts").
 *
 * The chip counts time itself; here the time registers are derived at
 * each read from the host's UTC clock plus an offset (struct rtc_ts):
 * no timer runs, and the guest's clock keeps running with the host's
 * while nobody looks.  While the clock is stopped (SET, or the divider
 * held in reset) the time registers are plain bytes in ram[], exactly
 * as the chip holds them; when it starts again those bytes become the
 * new offset.  A guest write to a time register while the clock runs is
 * handled the same way: stop, store, start.
 *
 * Interrupts ("Interrupts", "Register C"): the update cycle happens at
 * each second of the guest's clock, so update-ended and alarm events
 * follow the wall clock; the periodic interrupt is a tap of the divider
 * chain, whose phase is kept on the VM clock.  Events are accounted
 * lazily: register C is brought up to date when it is read, when a
 * control register changes, and by a timer, and a timer is armed only
 * while an interrupt the guest enabled needs one (PIE: the periodic
 * timer; UIE or AIE: the update timer).  A guest that only polls or
 * never enables an interrupt arms nothing.
 *
 * IRQ 8 follows IRQF and stays asserted until register C is read
 * ("Interrupts", "Register C"): a guest that never reads C gets one
 * interrupt, as on the chip.  While it is asserted no periodic timer
 * runs at all: the ticks that pass are accounted when C is read, as
 * ticks the guest did not take.
 *
 * Lost ticks: a periodic tick that came while IRQ 8 was still asserted
 * (the guest had not acknowledged the previous one), or whose edge the
 * interrupt controller answers "coalesced", did not reach the guest.
 * Under the slew policy it joins a backlog (capped; the excess is
 * dropped) that is reinjected one edge at a time, at the guest's own
 * pace first: a read of C that acknowledges an interrupt raises the
 * next owed tick at once, at most RTC_ACK_REINJECT_MAX in a row between
 * two real ticks (QEMU bounds it the same way), so catching up cannot
 * starve the guest.  A third timer reinjects what acknowledges do not,
 * while IRQ 8 is low, dividing the tick period into min(backlog,
 * max_slices - 1) + 1 slices, re-evaluated after each attempt, so a
 * large backlog drains fast and a small one gently.  The backlog is
 * rescaled when the guest changes the rate (it stands for lost time,
 * not for a number of interrupts), and dropped when the guest stops the
 * periodic interrupt.  Under discard lost ticks are only counted.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "dev-state.h"
#include "rtc.h"

#define RTC_NREGS		128

/* Address map (datasheet "Address Map", PC century byte at 0x32). */
#define RTC_SECONDS		0x00
#define RTC_SECONDS_ALARM	0x01
#define RTC_MINUTES		0x02
#define RTC_MINUTES_ALARM	0x03
#define RTC_HOURS		0x04
#define RTC_HOURS_ALARM		0x05
#define RTC_DAY_OF_WEEK		0x06
#define RTC_DAY_OF_MONTH	0x07
#define RTC_MONTH		0x08
#define RTC_YEAR		0x09
#define RTC_REG_A		0x0a
#define RTC_REG_B		0x0b
#define RTC_REG_C		0x0c
#define RTC_REG_D		0x0d
#define RTC_CENTURY		0x32

/* Register A */
#define REG_A_UIP		0x80
#define REG_A_DV_MASK		0x70
#define REG_A_DV_RESET		0x60	/* DV2:DV1 = 11: divider held in reset */
#define REG_A_DEFAULT		0x26	/* 32.768 kHz time base, 1024 Hz rate */
#define REG_A_RS_MASK		0x0f

/*
 * UIP rises 244 us (8 cycles of the 32.768 kHz time base) before the
 * update cycle ("Register A", UIP; "Update Cycle").  The update itself
 * is instantaneous here: the time registers change at the second.
 */
#define RTC_UIP_NS		244141

/* Register B */
#define REG_B_SET		0x80
#define REG_B_PIE		0x40
#define REG_B_AIE		0x20
#define REG_B_UIE		0x10
#define REG_B_SQWE		0x08
#define REG_B_DM		0x04	/* 1 = binary, 0 = BCD */
#define REG_B_24H		0x02
#define REG_B_DSE		0x01
#define REG_B_DEFAULT		REG_B_24H

/* Register C */
#define REG_C_IRQF		0x80
#define REG_C_PF		0x40
#define REG_C_AF		0x20
#define REG_C_UF		0x10
#define REG_C_SOURCES		(REG_C_PF | REG_C_AF | REG_C_UF)

/* Register D */
#define REG_D_VRT		0x80

/* The hours register in 12-hour mode: bit 7 set for PM. */
#define RTC_HOURS_PM		0x80

/* An alarm byte with its two high bits set matches any value. */
#define RTC_ALARM_DONT_CARE	0xc0

/* A timer deadline meaning "not armed". */
#define RTC_NEVER		INT64_MAX

/*
 * Reinjections on acknowledge between two real ticks: enough to drain
 * a 0.5 s stall at 1024 Hz (512 ticks) within 20 ms together with the
 * slice timer, few enough that a guest always gets on with its work.
 */
#define RTC_ACK_REINJECT_MAX	32

#define NSEC_PER_SEC		1000000000L
#define SECS_PER_DAY		86400
/* Host clocks outside +-34,000 years are clamped, to keep sums exact. */
#define RTC_HOST_LIMIT		(INT64_C(1) << 40)

/* A point or a distance in time; 0 <= nsec < NSEC_PER_SEC. */
struct rtc_ts {
	int64_t sec;
	long nsec;
};

struct rtc_tm {
	int64_t year;
	int64_t mon;		/* 1-12 */
	int64_t mday;		/* 1-31 */
	int64_t hour;		/* 0-23 */
	int64_t min;
	int64_t sec;
	int64_t wday;		/* 1-7, 1 = Sunday */
};

struct rtc {
	const struct device_host *host;
	uint8_t index;
	/*
	 * Alarm bytes, registers A to C and CMOS RAM; the time registers
	 * only while the clock is stopped.
	 */
	uint8_t ram[RTC_NREGS];
	struct rtc_ts offset;		/* guest clock - host clock */
	/*
	 * The day of week is a counter of its own on the chip; here it
	 * follows the date, shifted by what the guest last set it to.
	 */
	unsigned int wday_adjust;	/* 0-6 */
	bool wday_written;		/* while stopped */
	struct rtc_ts last_host;	/* used if the host clock fails */
	bool irq_level;
	bool irq_masked;		/* the last raise found IRQ 8 masked */
	/*
	 * The interrupt controller dropped the last edge (coalesced: KVM
	 * tracks the RTC's EOI itself and drops an edge raised before the
	 * guest's EOI of the previous one): the line went low again, IRQF
	 * stays set, and only the next tick or reinjection raises again.
	 */
	bool edge_dropped;
	unsigned int ack_run;		/* on-ack reinjections since a tick */
	bool nmi_mask;			/* port 0x70 bit 7: kept, no effect */

	/*
	 * Update cycles up to this guest time are accounted in register C
	 * (UF, AF); meaningful while the clock runs.
	 */
	struct rtc_ts upd_synced;
	/*
	 * The divider chain on the VM clock: its phase 0 was at div_base,
	 * and periodic ticks up to index pt_last (counted at the rate in
	 * register A) are accounted in register C.
	 */
	int64_t div_base;
	int64_t pt_last;

	struct device_timer *pt_timer;	/* the next periodic tick (PIE) */
	struct device_timer *upd_timer;	/* the next UF or AF (UIE, AIE) */
	struct device_timer *ri_timer;	/* the next reinjection (backlog) */
	int64_t ri_deadline;
	int64_t pt_deadline;		/* RTC_NEVER: not armed */
	int64_t upd_deadline;
	int64_t upd_target;		/* guest second upd_timer waits for */

	struct rtc_config cfg;
	struct rtc_stats stats;
};

static int64_t
rtc_floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static int64_t
rtc_floormod(int64_t a, int64_t b)
{
	return a - rtc_floordiv(a, b) * b;
}

static struct rtc_ts
rtc_ts_add(struct rtc_ts a, struct rtc_ts b)
{
	struct rtc_ts r = { a.sec + b.sec, a.nsec + b.nsec };

	if (r.nsec >= NSEC_PER_SEC) {
		r.nsec -= NSEC_PER_SEC;
		r.sec++;
	}
	return r;
}

static struct rtc_ts
rtc_ts_sub(struct rtc_ts a, struct rtc_ts b)
{
	struct rtc_ts r = { a.sec - b.sec, a.nsec - b.nsec };

	if (r.nsec < 0) {
		r.nsec += NSEC_PER_SEC;
		r.sec--;
	}
	return r;
}

/*
 * Days since 1970-01-01 of a proleptic Gregorian date.  The year is
 * counted from March so that the leap day ends it; 400-year eras have a
 * fixed length of 146097 days.  Any month and day are accepted and
 * carried over, so bytes a guest wrote can always be turned into a time.
 */
static int64_t
rtc_days_from_civil(int64_t year, int64_t mon, int64_t mday)
{
	int64_t era, yoe, doy, doe, m;

	year += rtc_floordiv(mon - 1, 12);
	m = rtc_floormod(mon - 1, 12) + 1;
	if (m <= 2)
		year--;
	era = rtc_floordiv(year, 400);
	yoe = year - era * 400;				/* 0-399 */
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5;	/* March = 0 */
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	/* 719468: days from 0000-03-01 to 1970-01-01. */
	return era * 146097 + doe - 719468 + (mday - 1);
}

/* The inverse of rtc_days_from_civil(), plus the day of week. */
static void
rtc_civil_from_days(int64_t days, struct rtc_tm *tm)
{
	int64_t z, era, doe, yoe, doy, mp;

	z = days + 719468;
	era = rtc_floordiv(z, 146097);
	doe = z - era * 146097;				/* 0-146096 */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);	/* 0-365 */
	mp = (5 * doy + 2) / 153;			/* March = 0 */
	tm->mday = doy - (153 * mp + 2) / 5 + 1;
	tm->mon = mp < 10 ? mp + 3 : mp - 9;
	tm->year = yoe + era * 400 + (tm->mon <= 2);
	/* 1970-01-01 was a Thursday: day 4 counting from Sunday = 0. */
	tm->wday = rtc_floormod(days + 4, 7) + 1;
}

static void
rtc_tm_from_secs(int64_t secs, struct rtc_tm *tm)
{
	int64_t days = rtc_floordiv(secs, SECS_PER_DAY);
	int64_t sod = secs - days * SECS_PER_DAY;

	rtc_civil_from_days(days, tm);
	tm->hour = sod / 3600;
	tm->min = sod / 60 % 60;
	tm->sec = sod % 60;
}

static int64_t
rtc_tm_to_secs(const struct rtc_tm *tm)
{
	return rtc_days_from_civil(tm->year, tm->mon, tm->mday) * SECS_PER_DAY +
	    tm->hour * 3600 + tm->min * 60 + tm->sec;
}

/* The host's UTC clock, or the last good reading if it fails. */
static struct rtc_ts
rtc_host_now(const struct rtc *rtc)
{
	struct timespec ts;
	struct rtc_ts r;
	int ret;

	ret = device_wall_clock(rtc->host, &ts);
	if (ret != 0 || ts.tv_nsec < 0 || ts.tv_nsec >= NSEC_PER_SEC)
		return rtc->last_host;
	r.sec = ts.tv_sec;
	if (r.sec > RTC_HOST_LIMIT)
		r.sec = RTC_HOST_LIMIT;
	if (r.sec < -RTC_HOST_LIMIT)
		r.sec = -RTC_HOST_LIMIT;
	r.nsec = ts.tv_nsec;
	return r;
}

static struct rtc_ts
rtc_host_sample(struct rtc *rtc)
{
	rtc->last_host = rtc_host_now(rtc);
	return rtc->last_host;
}

/*
 * The clock runs unless SET inhibits the update cycle (register B) or
 * the divider chain is held in reset (register A, DV2:DV1 = 11).
 */
static bool
rtc_running(const struct rtc *rtc)
{
	return !(rtc->ram[RTC_REG_B] & REG_B_SET) &&
	    (rtc->ram[RTC_REG_A] & REG_A_DV_RESET) != REG_A_DV_RESET;
}

static bool
rtc_is_time_reg(unsigned int idx)
{
	switch (idx) {
	case RTC_SECONDS:
	case RTC_MINUTES:
	case RTC_HOURS:
	case RTC_DAY_OF_WEEK:
	case RTC_DAY_OF_MONTH:
	case RTC_MONTH:
	case RTC_YEAR:
	case RTC_CENTURY:
		return true;
	default:
		return false;
	}
}

/* Data mode (register B, DM): BCD or binary. */
static uint8_t
rtc_encode(const struct rtc *rtc, int64_t v)
{
	if (rtc->ram[RTC_REG_B] & REG_B_DM)
		return (uint8_t)rtc_floormod(v, 256);
	v = rtc_floormod(v, 100);
	return (uint8_t)((v / 10) << 4 | v % 10);
}

/* Any byte decodes, also invalid BCD: each nibble counts as a digit. */
static int64_t
rtc_decode(const struct rtc *rtc, uint8_t v)
{
	if (rtc->ram[RTC_REG_B] & REG_B_DM)
		return v;
	return (v >> 4) * 10 + (v & 0x0f);
}

/* Hours: 0-23, or 1-12 with bit 7 for PM (register B, 24/12). */
static uint8_t
rtc_encode_hour(const struct rtc *rtc, int64_t hour)
{
	int64_t h12;

	if (rtc->ram[RTC_REG_B] & REG_B_24H)
		return rtc_encode(rtc, hour);
	h12 = hour % 12 == 0 ? 12 : hour % 12;
	return rtc_encode(rtc, h12) | (hour >= 12 ? RTC_HOURS_PM : 0);
}

static int64_t
rtc_decode_hour(const struct rtc *rtc, uint8_t v)
{
	if (rtc->ram[RTC_REG_B] & REG_B_24H)
		return rtc_decode(rtc, v);
	return rtc_decode(rtc, v & ~RTC_HOURS_PM) % 12 +
	    ((v & RTC_HOURS_PM) ? 12 : 0);
}

static void
rtc_guest_tm(const struct rtc *rtc, struct rtc_ts host, struct rtc_tm *tm)
{
	struct rtc_ts g = rtc_ts_add(host, rtc->offset);

	rtc_tm_from_secs(g.sec, tm);
	tm->wday = (tm->wday - 1 + rtc->wday_adjust) % 7 + 1;
}

static uint8_t
rtc_time_reg(const struct rtc *rtc, const struct rtc_tm *tm, unsigned int idx)
{
	switch (idx) {
	case RTC_SECONDS:
		return rtc_encode(rtc, tm->sec);
	case RTC_MINUTES:
		return rtc_encode(rtc, tm->min);
	case RTC_HOURS:
		return rtc_encode_hour(rtc, tm->hour);
	case RTC_DAY_OF_WEEK:
		return rtc_encode(rtc, tm->wday);
	case RTC_DAY_OF_MONTH:
		return rtc_encode(rtc, tm->mday);
	case RTC_MONTH:
		return rtc_encode(rtc, tm->mon);
	case RTC_YEAR:
		return rtc_encode(rtc, rtc_floormod(tm->year, 100));
	default:	/* RTC_CENTURY */
		return rtc_encode(rtc, rtc_floordiv(tm->year, 100));
	}
}

/* The clock stops: the time registers become bytes in ram[]. */
static void
rtc_stop(struct rtc *rtc, struct rtc_ts host)
{
	static const unsigned int regs[] = { RTC_SECONDS, RTC_MINUTES,
	    RTC_HOURS, RTC_DAY_OF_WEEK, RTC_DAY_OF_MONTH, RTC_MONTH,
	    RTC_YEAR, RTC_CENTURY };
	struct rtc_tm tm;
	size_t i;

	rtc_guest_tm(rtc, host, &tm);
	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		rtc->ram[regs[i]] = rtc_time_reg(rtc, &tm, regs[i]);
	rtc->wday_written = false;
}

/*
 * The clock starts from the bytes in ram[].  The fraction of a second
 * continues from the divider chain's phase: SET only inhibits updates
 * (register B, SET), it does not stop the divider.
 */
static void
rtc_start(struct rtc *rtc, struct rtc_ts host)
{
	struct rtc_ts g = rtc_ts_add(host, rtc->offset);
	struct rtc_tm tm, now;

	tm.sec = rtc_decode(rtc, rtc->ram[RTC_SECONDS]);
	tm.min = rtc_decode(rtc, rtc->ram[RTC_MINUTES]);
	tm.hour = rtc_decode_hour(rtc, rtc->ram[RTC_HOURS]);
	tm.mday = rtc_decode(rtc, rtc->ram[RTC_DAY_OF_MONTH]);
	tm.mon = rtc_decode(rtc, rtc->ram[RTC_MONTH]);
	tm.year = rtc_decode(rtc, rtc->ram[RTC_CENTURY]) * 100 +
	    rtc_decode(rtc, rtc->ram[RTC_YEAR]);
	g.sec = rtc_tm_to_secs(&tm);
	rtc->offset = rtc_ts_sub(g, host);
	if (rtc->wday_written) {
		rtc->wday_adjust = 0;
		rtc_guest_tm(rtc, host, &now);
		rtc->wday_adjust = (unsigned int)rtc_floormod(
		    rtc_decode(rtc, rtc->ram[RTC_DAY_OF_WEEK]) - now.wday, 7);
	}
}

static void rtc_upd_restart(struct rtc *rtc, struct rtc_ts host);

/* Stop or start the clock after a write to register A or B. */
static void
rtc_update_running(struct rtc *rtc, bool was_running, struct rtc_ts host)
{
	bool running = rtc_running(rtc);

	if (was_running && !running) {
		rtc_stop(rtc, host);
	} else if (!was_running && running) {
		rtc_start(rtc, host);
		rtc_upd_restart(rtc, host);
	}
}

static int rtc_irq_edge(struct rtc *rtc);

/*
 * IRQF (register C, bit 7) is set when a flag in C is set with its
 * enable bit in B; the IRQ pin follows IRQF ("Register C", IRQF), until
 * a read of C clears it.
 */
static void
rtc_update_irq(struct rtc *rtc)
{
	uint8_t *c = &rtc->ram[RTC_REG_C];
	bool level;

	level = (*c & rtc->ram[RTC_REG_B] & REG_C_SOURCES) != 0;
	if (level)
		*c |= REG_C_IRQF;
	else
		*c &= ~REG_C_IRQF;
	if (level == rtc->irq_level)
		return;
	if (!level) {
		rtc->irq_level = false;
		rtc->edge_dropped = false;
		(void)device_irq_set(rtc->host, 0, false);
		return;
	}
	if (!rtc->edge_dropped)
		(void)rtc_irq_edge(rtc);
}

/* --- interrupt sources ------------------------------------------------ */

unsigned int
rtc_rate_hz(uint8_t reg_a)
{
	unsigned int rs = reg_a & REG_A_RS_MASK;

	/*
	 * "Periodic Interrupt Rate" table, 32.768 kHz time base: rate
	 * select n gives 65536 >> n Hz for n = 3 (8192 Hz) to 15 (2 Hz);
	 * 1 and 2 repeat 8 and 9 (256 and 128 Hz); 0 is off; a divider
	 * held in reset produces nothing.  The other time bases (DV =
	 * 000, 001) name other crystals; the PC has a 32.768 kHz one, so
	 * they are treated alike.
	 */
	if ((reg_a & REG_A_DV_RESET) == REG_A_DV_RESET || rs == 0)
		return 0;
	if (rs <= 2)
		rs += 7;
	return 65536u >> rs;
}

static unsigned int
rtc_hz(const struct rtc *rtc)
{
	return rtc_rate_hz(rtc->ram[RTC_REG_A]);
}

/*
 * Periodic tick k of a rate is the first nanosecond at which the
 * divider has counted k periods: div_base + ceil(k * 1e9 / hz).
 */
static int64_t
rtc_tick_index(const struct rtc *rtc, int64_t now, unsigned int hz)
{
	if (now <= rtc->div_base)
		return 0;
	return (int64_t)((__int128)(now - rtc->div_base) * hz / NSEC_PER_SEC);
}

static int64_t
rtc_tick_time(const struct rtc *rtc, int64_t k, unsigned int hz)
{
	return rtc->div_base +
	    (int64_t)(((__int128)k * NSEC_PER_SEC + hz - 1) / hz);
}

/* The guest's clock now (host must be a fresh sample). */
static struct rtc_ts
rtc_guest_now(const struct rtc *rtc, struct rtc_ts host)
{
	return rtc_ts_add(host, rtc->offset);
}

/* Does an alarm byte match a time byte ("Alarm", don't-care codes)? */
static bool
rtc_alarm_byte(uint8_t alarm, uint8_t now)
{
	return (alarm & RTC_ALARM_DONT_CARE) == RTC_ALARM_DONT_CARE ||
	    alarm == now;
}

/*
 * The first guest second in [from, to] at whose update cycle the alarm
 * matches, or RTC_NEVER.  The chip compares the alarm bytes with the
 * time bytes after each update ("Alarm"): so do we, in the current data
 * mode.  An alarm that can match does so within a day; the search skips
 * whole hours and minutes that cannot match, so it is short.
 */
static int64_t
rtc_next_alarm(const struct rtc *rtc, int64_t from, int64_t to)
{
	uint8_t as = rtc->ram[RTC_SECONDS_ALARM];
	uint8_t am = rtc->ram[RTC_MINUTES_ALARM];
	uint8_t ah = rtc->ram[RTC_HOURS_ALARM];
	struct rtc_tm tm;
	int64_t t;

	if (to - from > 2 * SECS_PER_DAY)
		to = from + 2 * SECS_PER_DAY;
	for (t = from; t <= to;) {
		rtc_tm_from_secs(t, &tm);
		if (!rtc_alarm_byte(ah, rtc_encode_hour(rtc, tm.hour)))
			t += 3600 - tm.min * 60 - tm.sec;
		else if (!rtc_alarm_byte(am, rtc_encode(rtc, tm.min)))
			t += 60 - tm.sec;
		else if (!rtc_alarm_byte(as, rtc_encode(rtc, tm.sec)))
			t++;
		else
			return t;
	}
	return RTC_NEVER;
}

/*
 * The flags of register C that events since the last accounting would
 * add (PF, UF, AF), without accounting them.  PF is set at each
 * periodic tick whether or not PIE is ("Register C", PF); UF after each
 * update cycle, AF after one whose time matched the alarm, both only
 * while the clock runs.
 */
static uint8_t
rtc_pending(const struct rtc *rtc, struct rtc_ts host, int64_t vm_now)
{
	unsigned int hz = rtc_hz(rtc);
	struct rtc_ts g;
	uint8_t flags = 0;

	if (hz != 0 && rtc_tick_index(rtc, vm_now, hz) > rtc->pt_last)
		flags |= REG_C_PF;
	if (rtc_running(rtc)) {
		g = rtc_guest_now(rtc, host);
		if (g.sec > rtc->upd_synced.sec) {
			flags |= REG_C_UF;
			if (rtc_next_alarm(rtc, rtc->upd_synced.sec + 1,
			    g.sec) != RTC_NEVER)
				flags |= REG_C_AF;
		}
	}
	return flags;
}

/*
 * A rising edge on IRQ 8, IRQF being set.  The pin stays high until
 * register C is read: while it is, a tick has no edge of its own (the
 * guest has not acknowledged the previous one) and is answered without
 * asking the interrupt controller, coalesced, or masked if the last
 * raise found IRQ 8 masked.  An edge the controller answers coalesced
 * was dropped, not queued (KVM's I/O APIC drops an RTC edge raised
 * before the guest's EOI of the previous one): the line is lowered
 * again at once, so that the next tick or reinjection makes an edge of
 * its own, since a line left high after a dropped edge would never
 * interrupt the guest again.  Returns what the raise achieved: an enum
 * device_irq_status or -errno.
 */
static int
rtc_irq_edge(struct rtc *rtc)
{
	int st;

	if (rtc->irq_level)
		return rtc->irq_masked ? DEVICE_IRQ_MASKED :
		    DEVICE_IRQ_COALESCED;
	st = device_irq_set(rtc->host, 0, true);
	rtc->irq_masked = st == DEVICE_IRQ_MASKED;
	rtc->edge_dropped = st == DEVICE_IRQ_COALESCED;
	rtc->irq_level = !rtc->edge_dropped;
	if (rtc->edge_dropped)
		(void)device_irq_set(rtc->host, 0, false);
	return st;
}

/* The backlog becomes n (slew), the excess over the cap dropped. */
static void
rtc_backlog_set(struct rtc *rtc, uint64_t n)
{
	struct rtc_stats *st = &rtc->stats;

	if (n > rtc->cfg.backlog_max) {
		st->dropped += n - rtc->cfg.backlog_max;
		n = rtc->cfg.backlog_max;
	}
	st->backlog = n;
	if (n > st->backlog_high)
		st->backlog_high = n;
}

static void
rtc_backlog_drop(struct rtc *rtc)
{
	rtc->stats.dropped += rtc->stats.backlog;
	rtc->stats.backlog = 0;
}

/* n periodic ticks that did not reach the guest in time. */
static void
rtc_ticks_lost(struct rtc *rtc, uint64_t n)
{
	rtc->stats.coalesced += n;
	if (rtc->cfg.lost_ticks == RTC_LOST_TICKS_SLEW)
		rtc_backlog_set(rtc, rtc->stats.backlog + n);
	else
		rtc->stats.dropped += n;
}

/*
 * The rate changed from old_hz to new_hz: the backlog keeps the time
 * it stands for, backlog * new_hz / old_hz ticks of the new rate.
 */
static void
rtc_backlog_rescale(struct rtc *rtc, unsigned int old_hz,
    unsigned int new_hz)
{
	if (rtc->stats.backlog == 0)
		return;
	if (old_hz == 0 || new_hz == 0) {
		rtc_backlog_drop(rtc);
		return;
	}
	rtc_backlog_set(rtc, rtc->stats.backlog * new_hz / old_hz);
}

/*
 * n periodic ticks are due with PIE set, the last one now: one edge for
 * them all.  Ticks that got no edge of their own (n > 1: they passed
 * while IRQ 8 was held, or the timer came too late for them) count as
 * coalesced; with IRQ 8 masked, nobody listens and all n count as masked.
 */
static void
rtc_ticks(struct rtc *rtc, uint64_t n)
{
	int st;

	rtc->stats.raised += n;
	rtc->ram[RTC_REG_C] |= REG_C_IRQF;
	st = rtc_irq_edge(rtc);
	if (st == DEVICE_IRQ_DELIVERED) {
		rtc->stats.delivered++;
		n--;
	} else if (st != DEVICE_IRQ_COALESCED) {
		rtc->stats.masked += n;
		n = 0;
	}
	if (n > 0)
		rtc_ticks_lost(rtc, n);
}

/* Account the periodic ticks up to vm_now: PF, and edges under PIE. */
static void
rtc_periodic_sync(struct rtc *rtc, int64_t vm_now)
{
	unsigned int hz = rtc_hz(rtc);
	int64_t k;

	if (hz == 0)
		return;
	k = rtc_tick_index(rtc, vm_now, hz);
	if (k <= rtc->pt_last)
		return;
	rtc->ram[RTC_REG_C] |= REG_C_PF;
	if (rtc->ram[RTC_REG_B] & REG_B_PIE) {
		rtc_ticks(rtc, (uint64_t)(k - rtc->pt_last));
		rtc->ack_run = 0;
	}
	rtc->pt_last = k;
}

/*
 * Bring register C up to date (not IRQF: see rtc_update_irq).  Called
 * before anything that changes how events are counted.
 */
static void
rtc_sync(struct rtc *rtc)
{
	int64_t vm_now = device_vm_clock(rtc->host);
	struct rtc_ts host = { 0, 0 };
	uint8_t flags;

	if (rtc_running(rtc))
		host = rtc_host_sample(rtc);
	flags = rtc_pending(rtc, host, vm_now);
	rtc->ram[RTC_REG_C] |= flags & (REG_C_UF | REG_C_AF);
	rtc_periodic_sync(rtc, vm_now);
	/* Also if the host clock went back: no update is owed then. */
	if (rtc_running(rtc))
		rtc->upd_synced = rtc_guest_now(rtc, host);
}

/* The clock (re)started or was set: no update cycle is owed. */
static void
rtc_upd_restart(struct rtc *rtc, struct rtc_ts host)
{
	rtc->upd_synced = rtc_guest_now(rtc, host);
}

/* The rate or the divider changed: count ticks of the new rate from now. */
static void
rtc_periodic_restart(struct rtc *rtc, int64_t vm_now)
{
	unsigned int hz = rtc_hz(rtc);

	rtc->pt_last = hz != 0 ? rtc_tick_index(rtc, vm_now, hz) : 0;
}

static void
rtc_timer_set(struct rtc *rtc, struct device_timer *t, int64_t *cur,
    int64_t want)
{
	if (want == *cur)
		return;
	if (want == RTC_NEVER)
		device_timer_cancel(rtc->host, t);
	else
		device_timer_arm(rtc->host, t, want);
	*cur = want;
}

/*
 * One reinjection slice: the tick period divided into
 * min(backlog, max_slices - 1) + 1 parts (2 to 32 by default).
 */
static int64_t
rtc_slice_ns(const struct rtc *rtc, unsigned int hz)
{
	uint64_t n = rtc->stats.backlog;

	if (n > rtc->cfg.max_slices - 1)
		n = rtc->cfg.max_slices - 1;
	return NSEC_PER_SEC / hz / (int64_t)(n + 1);
}

/*
 * Arm exactly the timers an enabled interrupt needs, each only when its
 * deadline changes: the periodic one while PIE is set and the divider
 * ticks, but not armed anew while IRQ 8 is high (a tick then changes
 * nothing the read of C that lowers it does not account, and that read
 * arms it: left where it stands, it fires once more and stops, so a
 * guest that reads C at every tick costs one arming per tick and one
 * that never does costs nothing); the reinjection one while a backlog
 * waits under PIE and IRQ 8 is low; the update one while UIE or AIE is
 * set and the clock runs, for the next second (UIE) or the next alarm
 * (AIE alone).
 */
static void
rtc_arm_timers(struct rtc *rtc)
{
	unsigned int hz = rtc_hz(rtc);
	uint8_t b = rtc->ram[RTC_REG_B];
	int64_t want, target;
	struct rtc_ts host, left;

	want = RTC_NEVER;
	if ((b & REG_B_PIE) && hz != 0 && (!rtc->irq_level ||
	    rtc->pt_deadline != RTC_NEVER))
		want = rtc_tick_time(rtc, rtc->pt_last + 1, hz);
	rtc_timer_set(rtc, rtc->pt_timer, &rtc->pt_deadline, want);

	/*
	 * Reinjection: once armed, a slice from the last attempt; so a
	 * tick or register access in between does not move it.
	 */
	want = RTC_NEVER;
	if (rtc->stats.backlog > 0 && (b & REG_B_PIE) && hz != 0 &&
	    !rtc->irq_level) {
		want = rtc->ri_deadline;
		if (want == RTC_NEVER)
			want = device_vm_clock(rtc->host) +
			    rtc_slice_ns(rtc, hz);
	}
	rtc_timer_set(rtc, rtc->ri_timer, &rtc->ri_deadline, want);

	want = RTC_NEVER;
	target = RTC_NEVER;
	if ((b & (REG_B_UIE | REG_B_AIE)) && rtc_running(rtc)) {
		target = rtc->upd_synced.sec + 1;
		if (!(b & REG_B_UIE))
			target = rtc_next_alarm(rtc, target,
			    target + SECS_PER_DAY);
	}
	if (target == RTC_NEVER) {
		rtc_timer_set(rtc, rtc->upd_timer, &rtc->upd_deadline,
		    RTC_NEVER);
	} else if (target != rtc->upd_target ||
	    rtc->upd_deadline == RTC_NEVER) {
		host = rtc_host_sample(rtc);
		left = rtc_ts_sub((struct rtc_ts){ target, 0 },
		    rtc_guest_now(rtc, host));
		want = device_vm_clock(rtc->host);
		if (left.sec >= 0)
			want += left.sec * NSEC_PER_SEC + left.nsec;
		rtc_timer_set(rtc, rtc->upd_timer, &rtc->upd_deadline, want);
	}
	rtc->upd_target = target;
}

static void
rtc_pt_fire(void *dev)
{
	struct rtc *rtc = dev;

	rtc->pt_deadline = RTC_NEVER;
	rtc_periodic_sync(rtc, device_vm_clock(rtc->host));
	rtc_update_irq(rtc);
	rtc_arm_timers(rtc);
}

/*
 * One owed tick, if any: PF and a fresh edge, as the tick would have
 * had.  What the raise achieved (enum device_irq_status or -errno),
 * -ENOENT when nothing is owed, -EBUSY while IRQ 8 is held (the read of
 * C that lowers it goes on).
 */
static int
rtc_reinject(struct rtc *rtc)
{
	struct rtc_stats *st = &rtc->stats;
	int ret;

	if (st->backlog == 0 || !(rtc->ram[RTC_REG_B] & REG_B_PIE) ||
	    rtc_hz(rtc) == 0)
		return -ENOENT;
	if (rtc->irq_level)
		return -EBUSY;
	rtc->ram[RTC_REG_C] |= REG_C_PF | REG_C_IRQF;
	ret = rtc_irq_edge(rtc);
	if (ret == DEVICE_IRQ_DELIVERED) {
		st->backlog--;
		st->reinjected++;
	} else if (ret == DEVICE_IRQ_COALESCED) {
		st->retries++;
	} else {
		rtc_backlog_drop(rtc);	/* nobody listens */
	}
	return ret;
}

/*
 * The reinjection timer: one owed tick, IRQ 8 being low.  Whatever the
 * raise achieved, the line is high afterwards and the timer stops: a
 * raise the controller merged with a pending one (the guest is still
 * not taking interrupts) is taken with it, and the read of C that
 * acknowledges it goes on.
 */
static void
rtc_ri_fire(void *dev)
{
	struct rtc *rtc = dev;

	rtc->ri_deadline = RTC_NEVER;
	rtc_periodic_sync(rtc, device_vm_clock(rtc->host));
	(void)rtc_reinject(rtc);
	rtc_update_irq(rtc);
	rtc_arm_timers(rtc);
}

/*
 * Account every event up to now, as a timer at now would: the update
 * timer's work, and what a look at the counters does first, so that they
 * include the ticks that passed while IRQ 8 was held (no timer runs
 * then).
 */
static void
rtc_account(struct rtc *rtc)
{
	rtc_sync(rtc);
	rtc_update_irq(rtc);
	rtc_arm_timers(rtc);
}

static void
rtc_upd_fire(void *dev)
{
	struct rtc *rtc = dev;

	rtc->upd_deadline = RTC_NEVER;
	rtc_account(rtc);
}

/* What a read of register idx returns, without a read's side effects. */
static uint8_t
rtc_peek(const struct rtc *rtc, unsigned int idx, struct rtc_ts host,
    int64_t vm_now)
{
	struct rtc_tm tm;
	struct rtc_ts g;
	uint8_t c;

	if (rtc_is_time_reg(idx)) {
		if (!rtc_running(rtc))
			return rtc->ram[idx];
		rtc_guest_tm(rtc, host, &tm);
		return rtc_time_reg(rtc, &tm, idx);
	}
	switch (idx) {
	case RTC_REG_A:
		/*
		 * UIP is set from 244 us before each update until the
		 * update ("Register A", UIP), the update being the instant
		 * the second changes: software that waits for UIP to fall
		 * (or for UF) sees it fall exactly when the seconds move.
		 * SET or a divider in reset inhibits updates: no UIP.
		 */
		if (!rtc_running(rtc))
			return rtc->ram[RTC_REG_A] & ~REG_A_UIP;
		g = rtc_guest_now(rtc, host);
		if (g.nsec >= NSEC_PER_SEC - RTC_UIP_NS)
			return rtc->ram[RTC_REG_A] | REG_A_UIP;
		return rtc->ram[RTC_REG_A] & ~REG_A_UIP;
	case RTC_REG_C:
		c = rtc->ram[RTC_REG_C] | rtc_pending(rtc, host, vm_now);
		if (c & rtc->ram[RTC_REG_B] & REG_C_SOURCES)
			c |= REG_C_IRQF;
		return c;
	case RTC_REG_D:
		return REG_D_VRT;	/* the RAM and time are valid */
	default:
		return rtc->ram[idx];
	}
}

static uint8_t
rtc_read_reg(struct rtc *rtc, unsigned int idx)
{
	struct rtc_ts host = { 0, 0 };
	uint8_t v;

	if (idx == RTC_REG_C) {
		/*
		 * Reading register C returns and clears all its flags,
		 * and so lowers IRQ ("Register C").
		 */
		rtc_sync(rtc);
		v = rtc->ram[RTC_REG_C];
		if (v & rtc->ram[RTC_REG_B] & REG_C_SOURCES)
			v |= REG_C_IRQF;
		rtc->ram[RTC_REG_C] = 0;
		rtc_update_irq(rtc);
		/*
		 * The guest acknowledged an interrupt: the next owed tick
		 * at once, at the pace the guest takes them (bounded in a
		 * row, see RTC_ACK_REINJECT_MAX).
		 */
		if ((v & REG_C_PF) && rtc->ack_run < RTC_ACK_REINJECT_MAX &&
		    rtc_reinject(rtc) == DEVICE_IRQ_DELIVERED) {
			rtc->ack_run++;
			rtc->stats.ack_reinjected++;
		}
		rtc_arm_timers(rtc);
		return v;
	}
	if ((rtc_is_time_reg(idx) || idx == RTC_REG_A) && rtc_running(rtc))
		host = rtc_host_sample(rtc);
	return rtc_peek(rtc, idx, host, 0);
}

static void
rtc_write_reg_now(struct rtc *rtc, unsigned int idx, uint8_t v)
{
	struct rtc_ts host;
	bool was_running = rtc_running(rtc);
	unsigned int old_hz;
	int64_t vm_now;
	uint8_t old;

	if (rtc_is_time_reg(idx)) {
		if (!was_running) {
			rtc->ram[idx] = v;
			if (idx == RTC_DAY_OF_WEEK)
				rtc->wday_written = true;
			return;
		}
		/* Stop, store, start: the phase of the second is kept. */
		rtc_sync(rtc);
		host = rtc->last_host;
		rtc_stop(rtc, host);
		rtc->ram[idx] = v;
		if (idx == RTC_DAY_OF_WEEK)
			rtc->wday_written = true;
		rtc_start(rtc, host);
		rtc_upd_restart(rtc, host);
		rtc_arm_timers(rtc);
		return;
	}
	switch (idx) {
	case RTC_REG_A:
		rtc_sync(rtc);
		vm_now = device_vm_clock(rtc->host);
		host = rtc_host_sample(rtc);
		old = rtc->ram[RTC_REG_A];
		old_hz = rtc_hz(rtc);
		rtc->ram[RTC_REG_A] = v & ~REG_A_UIP;	/* UIP is read-only */
		if ((old & REG_A_DV_RESET) == REG_A_DV_RESET &&
		    (v & REG_A_DV_RESET) != REG_A_DV_RESET) {
			/*
			 * Divider released: "the first update cycle begins
			 * one-half second later" (register A, DV0-DV2),
			 * and the periodic taps start from there too.
			 */
			struct rtc_ts g = rtc_ts_add(host, rtc->offset);

			g.nsec = NSEC_PER_SEC / 2;
			rtc->offset = rtc_ts_sub(g, host);
			rtc->div_base = vm_now - NSEC_PER_SEC / 2;
			rtc_periodic_restart(rtc, vm_now);
		} else if (rtc_hz(rtc) != old_hz) {
			rtc_periodic_restart(rtc, vm_now);
		}
		rtc_backlog_rescale(rtc, old_hz, rtc_hz(rtc));
		rtc_update_running(rtc, was_running, host);
		rtc_update_irq(rtc);
		rtc_arm_timers(rtc);
		break;
	case RTC_REG_B:
		rtc_sync(rtc);
		host = rtc_host_sample(rtc);
		old = rtc->ram[RTC_REG_B];
		rtc->ram[RTC_REG_B] = v;
		/* SET going high also clears UIE (register B, UIE). */
		if (!(old & REG_B_SET) && (v & REG_B_SET))
			rtc->ram[RTC_REG_B] &= ~REG_B_UIE;
		/* The guest no longer wants ticks: none are owed. */
		if (!(v & REG_B_PIE))
			rtc_backlog_drop(rtc);
		/*
		 * SQWE enables the square-wave pin, DSE daylight saving
		 * changes: neither is wired on a PC, the bits are kept.
		 */
		rtc_update_running(rtc, was_running, host);
		rtc_update_irq(rtc);
		rtc_arm_timers(rtc);
		break;
	case RTC_REG_C:
	case RTC_REG_D:
		break;		/* read-only */
	case RTC_SECONDS_ALARM:
	case RTC_MINUTES_ALARM:
	case RTC_HOURS_ALARM:
		/* Updates so far were compared with the old alarm. */
		rtc_sync(rtc);
		rtc->ram[idx] = v;
		rtc_update_irq(rtc);
		rtc_arm_timers(rtc);
		break;
	default:
		rtc->ram[idx] = v;
		break;
	}
}

/*
 * The battery follows every write: the clock's offset while it runs
 * (a stopped clock's offset is still the one it last ran with), and the
 * CMOS RAM byte written.  The century byte is part of the clock.
 */
static void
rtc_battery_write(struct rtc *rtc, unsigned int idx)
{
	struct rtc_battery *b = rtc->cfg.battery;

	if (b == NULL)
		return;
	if (idx >= RTC_NVRAM_FIRST && idx < RTC_NREGS && idx != RTC_CENTURY)
		b->nvram[idx - RTC_NVRAM_FIRST] = rtc->ram[idx];
	if (rtc_running(rtc)) {
		b->offset_sec = rtc->offset.sec;
		b->offset_nsec = rtc->offset.nsec;
		b->wday_adjust = rtc->wday_adjust;
	}
	b->valid = true;
}

/* Start from what the battery kept, or fill a new one in. */
static void
rtc_battery_load(struct rtc *rtc)
{
	struct rtc_battery *b = rtc->cfg.battery;
	unsigned int i;

	if (b == NULL)
		return;
	if (!b->valid) {
		for (i = RTC_NVRAM_FIRST; i < RTC_NREGS; i++)
			rtc_battery_write(rtc, i);
		return;
	}
	if (b->offset_nsec >= 0 && b->offset_nsec < NSEC_PER_SEC &&
	    b->offset_sec >= -2 * RTC_HOST_LIMIT &&
	    b->offset_sec <= 2 * RTC_HOST_LIMIT) {
		rtc->offset.sec = b->offset_sec;
		rtc->offset.nsec = b->offset_nsec;
	}
	rtc->wday_adjust = b->wday_adjust % 7;
	for (i = RTC_NVRAM_FIRST; i < RTC_NREGS; i++)
		if (i != RTC_CENTURY)
			rtc->ram[i] = b->nvram[i - RTC_NVRAM_FIRST];
}

static void
rtc_write_reg(struct rtc *rtc, unsigned int idx, uint8_t v)
{
	rtc_write_reg_now(rtc, idx, v);
	rtc_battery_write(rtc, idx);
}

/*
 * Port 0x70 (write-only on a PC: reads float high) selects the register
 * and carries the NMI mask in bit 7, which we ignore; port 0x71 is the
 * data.  A wider access is a run of byte accesses.
 */
static void
rtc_read(void *dev, uint64_t offset, void *data, unsigned int size)
{
	struct rtc *rtc = dev;
	uint8_t *p = data;
	unsigned int i;

	for (i = 0; i < size; i++) {
		if (offset <= 1 && offset + i == 1)
			p[i] = rtc_read_reg(rtc, rtc->index);
		else
			p[i] = 0xff;
	}
}

static void
rtc_write(void *dev, uint64_t offset, const void *data, unsigned int size)
{
	struct rtc *rtc = dev;
	const uint8_t *p = data;
	unsigned int i;

	for (i = 0; i < size; i++) {
		if (offset == 0 && i == 0) {
			rtc->index = p[i] & 0x7f;
			rtc->nmi_mask = (p[i] & 0x80) != 0;
		}
		else if (offset <= 1 && offset + i == 1)
			rtc_write_reg(rtc, rtc->index, p[i]);
	}
}

void
rtc_cmos_set(struct rtc *rtc, unsigned int index, uint8_t value)
{
	if (index < RTC_NREGS)
		rtc_write_reg(rtc, index, value);
}

uint8_t
rtc_cmos_get(const struct rtc *rtc, unsigned int index)
{
	struct rtc_ts host = { 0, 0 };

	if (index >= RTC_NREGS)
		return 0xff;
	if (rtc_running(rtc))
		host = rtc_host_now(rtc);
	return rtc_peek(rtc, index, host, device_vm_clock(rtc->host));
}

struct rtc *
rtc_new_config(const struct device_host *host, const struct rtc_config *cfg)
{
	struct rtc *rtc;

	rtc = calloc(1, sizeof(*rtc));
	if (rtc == NULL)
		return NULL;
	rtc->host = host;
	rtc->cfg = cfg != NULL ? *cfg : RTC_CONFIG_DEFAULT;
	if (rtc->cfg.lost_ticks != RTC_LOST_TICKS_DISCARD)
		rtc->cfg.lost_ticks = RTC_LOST_TICKS_SLEW;
	if (rtc->cfg.backlog_max == 0)
		rtc->cfg.backlog_max = RTC_BACKLOG_MAX_DEFAULT;
	if (rtc->cfg.max_slices == 0 || rtc->cfg.max_slices > RTC_SLICES_MAX)
		rtc->cfg.max_slices = RTC_SLICES_MAX;
	if (rtc->cfg.max_slices < RTC_SLICES_MIN)
		rtc->cfg.max_slices = RTC_SLICES_MIN;
	rtc->ram[RTC_REG_A] = REG_A_DEFAULT;
	rtc->ram[RTC_REG_B] = REG_B_DEFAULT;
	rtc->pt_deadline = RTC_NEVER;
	rtc->upd_deadline = RTC_NEVER;
	rtc->upd_target = RTC_NEVER;
	rtc->ri_deadline = RTC_NEVER;
	/* Made now, armed only when the guest enables an interrupt. */
	rtc->pt_timer = device_timer_new(host, rtc_pt_fire, rtc);
	if (rtc->pt_timer == NULL)
		goto free_rtc;
	rtc->upd_timer = device_timer_new(host, rtc_upd_fire, rtc);
	if (rtc->upd_timer == NULL)
		goto free_pt;
	rtc->ri_timer = device_timer_new(host, rtc_ri_fire, rtc);
	if (rtc->ri_timer == NULL)
		goto free_upd;
	rtc->div_base = device_vm_clock(host);
	rtc_periodic_restart(rtc, rtc->div_base);
	rtc_battery_load(rtc);
	rtc_upd_restart(rtc, rtc_host_sample(rtc));
	return rtc;

free_upd:
	device_timer_free(host, rtc->upd_timer);
free_pt:
	device_timer_free(host, rtc->pt_timer);
free_rtc:
	free(rtc);
	return NULL;
}

struct rtc *
rtc_new(const struct device_host *host)
{
	return rtc_new_config(host, NULL);
}

void
rtc_free(struct rtc *rtc)
{
	if (rtc == NULL)
		return;
	device_timer_free(rtc->host, rtc->ri_timer);
	device_timer_free(rtc->host, rtc->upd_timer);
	device_timer_free(rtc->host, rtc->pt_timer);
	free(rtc);
}

void
rtc_get_stats(struct rtc *rtc, struct rtc_stats *st)
{
	rtc_account(rtc);
	*st = rtc->stats;
}

#define RTC_STATE(nm, ty, m, ...)					\
	{ .name = (nm), .type = (ty), DEV_STATE_AT(struct rtc, m),	\
	    __VA_ARGS__ }

/*
 * The chip as the guest sees it, the clock's offset from the host's,
 * where the divider chain stands on the VM clock, and the lost-tick
 * accounting with its backlog, and the deadlines of the periodic and
 * reinjection timers (RTC_NEVER: not armed), which the rules of
 * rtc_arm_timers do not always derive from the registers (a periodic
 * timer left armed while IRQ 8 is high, a reinjection a slice after
 * the last attempt).  Not saved, as they follow from it: the update
 * timer (from the clock) and the configuration (the VM's definition
 * gives it).  Signed numbers are kept as their two's complement.
 */
static const struct dev_state_field rtc_state_fields[] = {
	RTC_STATE("cmos", DEV_STATE_BYTES, ram),
	RTC_STATE("index", DEV_STATE_U8, index, .max = RTC_NREGS - 1),
	RTC_STATE("nmi_mask", DEV_STATE_BOOL, nmi_mask),
	RTC_STATE("offset_sec", DEV_STATE_U64, offset.sec),
	RTC_STATE("offset_nsec", DEV_STATE_U64, offset.nsec,
	    .max = NSEC_PER_SEC - 1),
	RTC_STATE("wday_adjust", DEV_STATE_U32, wday_adjust, .max = 6),
	RTC_STATE("wday_written", DEV_STATE_BOOL, wday_written),
	RTC_STATE("last_host_sec", DEV_STATE_U64, last_host.sec),
	RTC_STATE("last_host_nsec", DEV_STATE_U64, last_host.nsec,
	    .max = NSEC_PER_SEC - 1),
	RTC_STATE("irq_level", DEV_STATE_BOOL, irq_level),
	RTC_STATE("irq_masked", DEV_STATE_BOOL, irq_masked),
	RTC_STATE("edge_dropped", DEV_STATE_BOOL, edge_dropped),
	RTC_STATE("ack_run", DEV_STATE_U32, ack_run,
	    .max = RTC_ACK_REINJECT_MAX),
	RTC_STATE("upd_synced_sec", DEV_STATE_U64, upd_synced.sec),
	RTC_STATE("upd_synced_nsec", DEV_STATE_U64, upd_synced.nsec,
	    .max = NSEC_PER_SEC - 1),
	RTC_STATE("div_base", DEV_STATE_U64, div_base),
	RTC_STATE("pt_last", DEV_STATE_U64, pt_last),
	RTC_STATE("pt_deadline", DEV_STATE_U64, pt_deadline),
	RTC_STATE("ri_deadline", DEV_STATE_U64, ri_deadline),
	RTC_STATE("ticks_raised", DEV_STATE_U64, stats.raised),
	RTC_STATE("ticks_delivered", DEV_STATE_U64, stats.delivered),
	RTC_STATE("ticks_coalesced", DEV_STATE_U64, stats.coalesced),
	RTC_STATE("ticks_masked", DEV_STATE_U64, stats.masked),
	RTC_STATE("ticks_reinjected", DEV_STATE_U64, stats.reinjected),
	RTC_STATE("ticks_ack_reinjected", DEV_STATE_U64,
	    stats.ack_reinjected),
	RTC_STATE("ticks_dropped", DEV_STATE_U64, stats.dropped),
	RTC_STATE("reinject_retries", DEV_STATE_U64, stats.retries),
	RTC_STATE("backlog", DEV_STATE_U64, stats.backlog),
	RTC_STATE("backlog_high", DEV_STATE_U64, stats.backlog_high),
};

/* Within +-limit seconds. */
static bool
rtc_state_sec_ok(int64_t sec, int64_t limit)
{
	return sec >= -limit && sec <= limit;
}

/*
 * What the bounds cannot say: times within the ranges the clock's sums
 * stay exact in, the last update cycle near the clock, the divider chain not ahead of the VM clock (which is
 * restored before the devices), the backlog within this VM's cap.
 */
static int
rtc_state_check(const void *state, struct dev_state_error *err)
{
	const struct rtc *rtc = state;
	int64_t now = device_vm_clock(rtc->host);
	unsigned int hz = rtc_hz(rtc);

	if (!rtc_state_sec_ok(rtc->offset.sec, 2 * RTC_HOST_LIMIT) ||
	    !rtc_state_sec_ok(rtc->last_host.sec, RTC_HOST_LIMIT) ||
	    !rtc_state_sec_ok(rtc->upd_synced.sec, 3 * RTC_HOST_LIMIT))
		return dev_state_fail(err, -ERANGE,
		    "rtc: a time beyond 2^40 seconds");
	/* Updates are counted from upd_synced to the guest's now. */
	if (rtc_running(rtc) && !rtc_state_sec_ok(rtc->upd_synced.sec -
	    rtc_guest_now(rtc, rtc_host_now(rtc)).sec, INT64_C(1) << 32))
		return dev_state_fail(err, -ERANGE,
		    "rtc: the last update is 2^32 s from the clock");
	if (rtc->ram[RTC_REG_A] & REG_A_UIP)
		return dev_state_fail(err, -EINVAL, "rtc: UIP is stored");
	if (rtc->irq_level && rtc->edge_dropped)
		return dev_state_fail(err, -EINVAL,
		    "rtc: a dropped edge with IRQ 8 high");
	if (rtc->div_base > now || rtc->div_base < now - (INT64_C(1) << 62))
		return dev_state_fail(err, -ERANGE,
		    "rtc: divider phase %lld, VM clock %lld",
		    (long long)rtc->div_base, (long long)now);
	if (rtc->pt_last < 0 ||
	    (hz != 0 && rtc->pt_last > rtc_tick_index(rtc, now, hz)))
		return dev_state_fail(err, -ERANGE,
		    "rtc: periodic tick %lld is ahead of the VM clock",
		    (long long)rtc->pt_last);
	if ((rtc->pt_deadline != RTC_NEVER &&
	    (rtc->pt_deadline > now + NSEC_PER_SEC ||
	    rtc->pt_deadline < now - (INT64_C(1) << 62))) ||
	    (rtc->ri_deadline != RTC_NEVER &&
	    (rtc->ri_deadline > now + NSEC_PER_SEC ||
	    rtc->ri_deadline < now - (INT64_C(1) << 62))))
		return dev_state_fail(err, -ERANGE,
		    "rtc: a timer more than a second ahead");
	if (rtc->stats.backlog > rtc->cfg.backlog_max)
		return dev_state_fail(err, -ERANGE,
		    "rtc: backlog %llu over this VM's %u",
		    (unsigned long long)rtc->stats.backlog,
		    rtc->cfg.backlog_max);
	return 0;
}

const struct dev_state_table rtc_state_table = {
	DEV_STATE_TABLE("rtc", 1, struct rtc, rtc_state_fields),
	.check = rtc_state_check,
};

/* Every tick up to now accounted first, as a look at the counters does. */
static int
rtc_save(void *dev, struct dev_state_buf *out)
{
	struct rtc *rtc = dev;

	rtc_account(rtc);
	return dev_state_save(&rtc_state_table, rtc, out);
}

static void
rtc_swap(int64_t *a, int64_t *b)
{
	int64_t t = *a;

	*a = *b;
	*b = t;
}

/*
 * The loaded state takes over: IRQ 8 at its level, the battery
 * following the clock and CMOS RAM, the periodic and reinjection timers
 * at their deadlines on the VM clock, then every timer as the loaded
 * registers want it.
 */
static int
rtc_load(void *dev, const void *buf, size_t len,
    struct dev_state_error *err)
{
	struct rtc *rtc = dev;
	bool level = rtc->irq_level;
	int64_t pt = rtc->pt_deadline, ri = rtc->ri_deadline;
	unsigned int i;
	int rc;

	rc = dev_state_load(&rtc_state_table, rtc, buf, len, err);
	if (rc < 0)
		return rc;
	/* What is armed now is the instance's own, not the section's. */
	rtc_swap(&rtc->pt_deadline, &pt);
	rtc_swap(&rtc->ri_deadline, &ri);
	if (rtc->irq_level != level)
		(void)device_irq_set(rtc->host, 0, rtc->irq_level);
	for (i = RTC_NVRAM_FIRST; i < RTC_NREGS; i++)
		rtc_battery_write(rtc, i);
	rtc_timer_set(rtc, rtc->pt_timer, &rtc->pt_deadline, pt);
	rtc_timer_set(rtc, rtc->ri_timer, &rtc->ri_deadline, ri);
	rtc_timer_set(rtc, rtc->upd_timer, &rtc->upd_deadline, RTC_NEVER);
	rtc->upd_target = RTC_NEVER;
	rtc_arm_timers(rtc);
	return 0;
}

static void
rtc_ops_free(void *dev)
{
	rtc_free(dev);
}

static uint64_t
rtc_figure_hz(const void *src)
{
	return rtc_hz(src);
}

/* The periodic interrupt's rate and what became of its ticks. */
static const struct figure rtc_figure_rows[] = {
	{ "periodic_hz", "vmmd_rtc_periodic_hertz", FIGURE_GAUGE,
	    FIGURE_UNIT_HERTZ, "The RTC's periodic interrupt rate",
	    .get = rtc_figure_hz },
	{ "ticks_raised", "vmmd_rtc_ticks_raised", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "RTC periodic interrupts raised",
	    FIGURE_AT(struct rtc, stats.raised) },
	{ "ticks_delivered", "vmmd_rtc_ticks_delivered", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "RTC periodic interrupts the guest took",
	    FIGURE_AT(struct rtc, stats.delivered) },
	{ "ticks_coalesced", "vmmd_rtc_ticks_coalesced", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE,
	    "RTC periodic interrupts not delivered in time (coalesced)",
	    FIGURE_AT(struct rtc, stats.coalesced) },
	{ "ticks_masked", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "RTC periodic ticks no interrupt controller accepted",
	    FIGURE_AT(struct rtc, stats.masked) },
	{ "ticks_dropped", "vmmd_rtc_ticks_dropped", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE,
	    "RTC ticks lost for good (backlog full or policy discard)",
	    FIGURE_AT(struct rtc, stats.dropped) },
	{ "ticks_reinjected", "vmmd_rtc_ticks_reinjected", FIGURE_COUNTER,
	    FIGURE_UNIT_NONE, "Coalesced RTC ticks reinjected",
	    FIGURE_AT(struct rtc, stats.reinjected) },
	{ "ticks_ack_reinjected", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "Coalesced RTC ticks reinjected on a read of register C",
	    FIGURE_AT(struct rtc, stats.ack_reinjected) },
	{ "reinject_retries", NULL, FIGURE_COUNTER, FIGURE_UNIT_NONE,
	    "RTC reinjections that coalesced again",
	    FIGURE_AT(struct rtc, stats.retries) },
	{ "backlog", "vmmd_rtc_tick_backlog", FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "Coalesced RTC ticks waiting to be reinjected",
	    FIGURE_AT(struct rtc, stats.backlog) },
	{ "backlog_high", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "The RTC tick backlog's high-water mark",
	    FIGURE_AT(struct rtc, stats.backlog_high) },
	{ "backlog_max", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "The most coalesced RTC ticks kept for reinjection", FIGURE_AT(struct rtc, cfg.backlog_max) },
	{ "max_slices", NULL, FIGURE_GAUGE, FIGURE_UNIT_NONE,
	    "The most slices an RTC period is divided into to reinject",
	    FIGURE_AT(struct rtc, cfg.max_slices) },
};

static const struct figure_table rtc_figures = FIGURE_TABLE(rtc_figure_rows);

/* Registers as a read would show them, and the periodic tick counters. */
static void
rtc_diag(void *dev, struct device_diag *d)
{
	struct rtc *rtc = dev;

	rtc_account(rtc);

	device_diag_put(d, "index", rtc->index, DEVICE_DIAG_HEX);
	device_diag_put(d, "nmi_mask", rtc->nmi_mask, DEVICE_DIAG_BOOL);
	device_diag_put(d, "reg_a", rtc_cmos_get(rtc, RTC_REG_A),
	    DEVICE_DIAG_HEX);
	device_diag_put(d, "reg_b", rtc->ram[RTC_REG_B], DEVICE_DIAG_HEX);
	device_diag_put(d, "reg_c", rtc_cmos_get(rtc, RTC_REG_C),
	    DEVICE_DIAG_HEX);
	device_diag_put(d, "irq_level", rtc->irq_level, DEVICE_DIAG_BOOL);
	device_diag_figures(d, &rtc_figures, rtc);
	device_diag_put(d, "lost_ticks_slew",
	    rtc->cfg.lost_ticks == RTC_LOST_TICKS_SLEW, DEVICE_DIAG_BOOL);
}

const struct device_ops rtc_device_ops = {
	.name = "rtc",
	.read = rtc_read,
	.write = rtc_write,
	.diag = rtc_diag,
	.save = rtc_save,
	.load = rtc_load,
	.free = rtc_ops_free,
};
