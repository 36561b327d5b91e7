/*
 * MC146818 real-time clock and CMOS RAM (Motorola MC146818A).
 *
 * The clock registers are computed from the host's UTC clock at each
 * read, plus an offset the guest sets by writing them, so the guest's
 * clock keeps running with the host's and costs nothing between reads.
 * Bytes 14 to 127 are plain CMOS RAM, except 0x32, the PC's century
 * byte, which belongs to the clock.
 */
#ifndef VMMD_RTC_H
#define VMMD_RTC_H

#include <stdint.h>
#include <time.h>

#include "device.h"

struct rtc;

/*
 * NULL on ENOMEM.  host must outlive the RTC; its line 0 is IRQ 8 (not
 * raised yet), its wall clock the host's UTC.
 */
struct rtc *rtc_new(const struct device_host *host);
void rtc_free(struct rtc *rtc);

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

#endif
