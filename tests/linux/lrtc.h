/*
 * The reference guest's RTC (the MC146818 under the kernel's rtc-cmos
 * driver): hwclock against the host's clock, the chip's interrupts as
 * the guest's kernel takes them (counted by rtc-ticks, which
 * build-guest.sh puts in the initramfs), and a clock the guest sets
 * surviving its reboot.
 */
#ifndef LRTC_H
#define LRTC_H

#include "lguest.h"

/* Where lr_set_clock left the clock, for lr_check_clock_kept. */
struct lr_clock {
	long	set;		/* the epoch second the guest set */
	double	host0, host1;	/* host time (ms) around the setting */
};

/* hwclock -r agrees with the host's clock within a second. */
void	lr_check_read(struct lg_vm *vm, lg_check_fn check);
/*
 * The periodic interrupt at LR_PIE_HZ for LR_PIE_SECONDS, and /dev/rtc0's
 * update interrupts (the chip's alarm), counted on IRQ 8 in the guest
 * against its elapsed time and against the device's counters.
 */
void	lr_check_irq(struct lg_vm *vm, lg_check_fn check);
/* hwclock -w with another time (2031); false if that failed. */
bool	lr_set_clock(struct lg_vm *vm, lg_check_fn check, struct lr_clock *);
/* After a guest reboot: hwclock -r and the kernel's clock kept it. */
void	lr_check_clock_kept(struct lg_vm *vm, lg_check_fn check,
	    const struct lr_clock *);

#endif
