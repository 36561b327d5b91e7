/*
 * MC146818 real-time clock and CMOS RAM (Motorola MC146818A).
 *
 * The clock registers are computed from the host's UTC clock at each
 * read, plus an offset the guest sets by writing them, so the guest's
 * clock keeps running with the host's and costs nothing between reads.
 * Bytes 14 to 127 are plain CMOS RAM, except 0x32, the PC's century
 * byte, which belongs to the clock.
 *
 * Interrupts on IRQ 8, held until register C is read: periodic
 * (register A's rate, PIE), alarm (AIE) and update-ended (UIE), with
 * timers on the VM clock armed only while one of them is enabled and
 * the line is low.
 */
#ifndef VMMD_RTC_H
#define VMMD_RTC_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "dev-state.h"
#include "device.h"

struct rtc;

/*
 * What becomes of periodic ticks that coalesced (the guest had not yet
 * taken the previous one).  Guests that keep time by counting ticks
 * (Windows) fall behind for good unless they are reinjected: slew.
 */
enum rtc_lost_ticks {
	RTC_LOST_TICKS_SLEW,	/* count them, reinject them quickly */
	RTC_LOST_TICKS_DISCARD,	/* count them, that is all */
};

/* CMOS bytes the battery keeps: 14 to 127, after the clock's registers. */
#define RTC_NVRAM_FIRST		14
#define RTC_NVRAM_SIZE		(128 - RTC_NVRAM_FIRST)

/*
 * What the PC's battery keeps while the machine is rebuilt (a guest
 * reset rebuilds the RTC with it): the guest clock's offset from the
 * host's clock and the CMOS RAM.  It belongs to whoever outlives the
 * RTC (the worker).  An RTC created with a valid battery starts from
 * it; one created with a new battery (valid false) fills it in.  From
 * then on the RTC writes every change the guest makes through to it,
 * under the device's lock, so nothing needs copying out at teardown.
 * One RTC at a time per battery; read it only while no RTC uses it or
 * under that RTC's lock.
 */
struct rtc_battery {
	bool valid;		/* false: new, the clock starts at host time */
	int64_t offset_sec;	/* guest clock - host clock */
	long offset_nsec;	/* 0 to 999999999 */
	unsigned int wday_adjust;	/* the day of week's own shift, 0-6 */
	uint8_t nvram[RTC_NVRAM_SIZE];	/* CMOS bytes 14 to 127 */
};

#define RTC_BACKLOG_MAX_DEFAULT	1024
#define RTC_SLICES_MAX		32
#define RTC_SLICES_MIN		2

struct rtc_config {
	enum rtc_lost_ticks lost_ticks;
	/* Most coalesced ticks kept for reinjection; 0: the default. */
	unsigned int backlog_max;
	/*
	 * Reinjection divides the tick period into min(backlog,
	 * max_slices - 1) + 1 slices; 0: RTC_SLICES_MAX.  Clamped to
	 * RTC_SLICES_MIN..RTC_SLICES_MAX.
	 */
	unsigned int max_slices;
	/* What outlives a reset (see struct rtc_battery); NULL: nothing. */
	struct rtc_battery *battery;
};

/*
 * The defaults rtc_new() uses: slew, since a guest that counts ticks
 * loses time for good under discard, while one that reads its time
 * elsewhere (Linux) only sees a few extra interrupts after a stall;
 * and it costs nothing until a tick coalesces.  A backlog of 1024 is a
 * second of ticks at the fastest rate Windows uses.
 */
#define RTC_CONFIG_DEFAULT ((struct rtc_config){			\
	.lost_ticks = RTC_LOST_TICKS_SLEW,				\
	.backlog_max = RTC_BACKLOG_MAX_DEFAULT,				\
	.max_slices = RTC_SLICES_MAX,					\
})

/* Periodic interrupt accounting (see rtc.c, "Lost ticks"). */
struct rtc_stats {
	uint64_t raised;	/* periodic ticks due while PIE was set */
	uint64_t delivered;	/* ...whose edge reached the guest in time */
	uint64_t coalesced;	/* ...that merged with an earlier one */
	uint64_t masked;	/* ...that no interrupt controller accepted */
	uint64_t reinjected;	/* coalesced ticks delivered later */
	uint64_t ack_reinjected;	/* ...of them, on a read of C */
	uint64_t dropped;	/* coalesced ticks given up on */
	uint64_t retries;	/* reinjections that coalesced again */
	uint64_t backlog;	/* coalesced ticks waiting for reinjection */
	uint64_t backlog_high;	/* the backlog's high-water mark */
};

/*
 * NULL on ENOMEM.  host must outlive the RTC; its line 0 is IRQ 8 (not
 * raised yet), its wall clock the host's UTC.
 */
struct rtc *rtc_new(const struct device_host *host);
/* The same with a lost-tick policy; cfg NULL: RTC_CONFIG_DEFAULT. */
struct rtc *rtc_new_config(const struct device_host *host,
    const struct rtc_config *cfg);
void rtc_free(struct rtc *rtc);

/* The counters, with every tick up to now accounted first. */
void rtc_get_stats(struct rtc *rtc, struct rtc_stats *st);

/*
 * The periodic interrupt rate for a value of register A, in Hz: 0 when
 * the rate select is 0 or the divider is held in reset.
 */
unsigned int rtc_rate_hz(uint8_t reg_a);

/*
 * Boot-time CMOS contents, index 0 to 127 (others are ignored, and read
 * as 0xff).  For the clock registers (0x00-0x0d and the century byte
 * 0x32) set acts as a guest write would, and get returns what a guest
 * read would, without a read's side effects.
 */
void rtc_cmos_set(struct rtc *rtc, unsigned int index, uint8_t value);
uint8_t rtc_cmos_get(const struct rtc *rtc, unsigned int index);

/* Offset 0: index port 0x70 (bit 7, the NMI mask, is ignored); 1: data. */
extern const struct device_ops rtc_device_ops;
/* Its state section (dev-state.h), for tests and fuzzers. */
extern const struct dev_state_table rtc_state_table;

#endif
