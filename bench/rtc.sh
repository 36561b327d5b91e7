#!/bin/sh
# The RTC's periodic interrupt, vmmd against QEMU, in one boot of the
# linux suite's nested test host (a hardware-style /dev/kvm under QEMU's
# emulation, see tests/linux/README.md), on the rtc test guest
# (tests/guests/rtc.c) under vmmd and under QEMU (-M pc -enable-kvm
# -rtc driftfix=slew, the same PVH image):
#   - the periodic interrupt for 10 s: ticks the guest counted, wake-ups
#     (voluntary context switches) and system calls (strace -c -f) of
#     every process of each VMM, per tick, and the ratios vmmd/QEMU;
#   - 3 s with interrupts masked for 0.5 s in the middle: ticks lost and
#     the catch-up after the stall, vmmd with 32 and with 8 slices
#     (rtc_slices) and with discard, QEMU with driftfix=slew and none.
# The rate is 32 Hz (VMMD_BENCH_HZ): the guest inside the test host takes
# a few hundred interrupts a second at most, and reinjection needs room
# on top of the ticks.  Counts are meaningful in the test host; times
# are those of an emulated machine.  Prints figures; asserts nothing.
#
#   bench/rtc.sh BUILDDIR
#
# The test host boots the reference guest's kernel (VMMD_LINUX_GUEST,
# default .cache/linux-guest).  Needs qemu-system-x86 and strace.
set -eu

. "$(dirname "$0")/nested.sh"
nested_init "${1:?usage: bench/rtc.sh BUILDDIR}" rtc
nested_file "$nested_build/tests/guests/rtc.elf"
nested_var BENCH_RTC "$nested_build/tests/guests/rtc.elf"
for v in VMMD_BENCH_HZ VMMD_BENCH_SECONDS; do
	eval "val=\${$v:-}"
	[ -z "$val" ] || nested_var "$v" "$val"
done
nested_run "$nested_top/bench/rtc-inner.sh"
