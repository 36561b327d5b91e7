#!/bin/sh
# The RTC's periodic interrupt, vmmd against QEMU in one run, on the rtc
# test guest (tests/guests/rtc-guest.c) under vmmd and under QEMU (-M pc
# -enable-kvm -rtc driftfix=slew, the same PVH image):
#   - the periodic interrupt for 10 s: ticks the guest counted, wake-ups
#     (voluntary context switches) and system calls (strace -c -f) of
#     every process of each VMM, per tick, and the ratios vmmd/QEMU;
#     how late vmmd's device timers fired (p50, p99, worst);
#   - 3 s with interrupts masked for 0.5 s in the middle: ticks seen,
#     lost, and the catch-up after the stall, vmmd with 32 and with 8
#     slices (rtc_slices) and with discard, QEMU with driftfix=slew and
#     none.
# Where /dev/kvm opens here it runs directly, at 1024 Hz: times are this
# host's (on a software KVM backend, not those of hardware).  Elsewhere
# (or with VMMD_BENCH_NESTED=1) in one boot of the linux suite's nested
# test host (a hardware-style /dev/kvm under QEMU's emulation, see
# tests/testhost/README.md) at 32 Hz: the guest inside takes a few hundred
# interrupts a second at most, and reinjection needs room on top of the
# ticks; counts are meaningful there, times are those of an emulated
# machine.  VMMD_BENCH_HZ sets the rate.  Prints figures; asserts nothing.
#
#   bench/rtc.sh BUILDDIR
#
# The test host boots the reference guest's kernel (VMMD_LINUX_GUEST,
# default .cache/linux-guest).  Needs qemu-system-x86 and strace.
set -eu

build=$(cd "${1:?usage: bench/rtc.sh BUILDDIR}" && pwd)
. "$(dirname "$0")/direct-host.sh"
direct_run "$build" "$(dirname "$0")/rtc-inner.sh" \
    BENCH_RTC="$build/tests/guests/rtc.elf" \
    VMMD_BENCH_HZ="${VMMD_BENCH_HZ:-1024}"
. "$(dirname "$0")/nested-host.sh"
nested_init "$build" rtc
nested_file "$nested_build/tests/guests/rtc.elf"
nested_var BENCH_RTC "$nested_build/tests/guests/rtc.elf"
for v in VMMD_BENCH_HZ VMMD_BENCH_SECONDS; do
	eval "val=\${$v:-}"
	[ -z "$val" ] || nested_var "$v" "$val"
done
nested_run "$nested_top/bench/rtc-inner.sh"
