#!/bin/sh
# What an exit costs, and what exit statistics add to it
# (bench/exit-cost.c), where the native /dev/kvm cannot run it: in one
# boot of the linux suite's nested test host (a hardware-style /dev/kvm
# under QEMU's emulation, see tests/testhost/README.md): (a) a bare KVM_RUN
# loop, (b) vmmd with exit statistics off, (c) on, (d) QEMU -M pc on the
# same PVH test guest (tests/guests/exits.c), ROUNDS alternating rounds
# of N port writes each; microseconds per exit, the ratios to (a), and
# one exit's segments inside vmmd.  Times in the test host are those of
# an emulated machine: compare them with each other only.  Prints
# figures; asserts nothing.
#
#   bench/exit-stats.sh BUILDDIR [ROUNDS [N]]     (default 3 rounds, 20000)
#
# The test host boots the reference guest's kernel (VMMD_LINUX_GUEST,
# default .cache/linux-guest).  Needs qemu-system-x86 and strace.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/exit-stats.sh BUILDDIR [ROUNDS [N]]}" \
    exit-stats
b=$nested_build
nested_file "$b/bench/exit-cost" "$b/tests/guests/exits.elf" \
    "$b/daemon/guest/demo.elf"
nested_var BENCH_PROG "$b/bench/exit-cost"
nested_var VMMD_GUEST_EXITS "$b/tests/guests/exits.elf"
nested_var BENCH_ROUNDS "${2:-3}"
nested_var BENCH_N "${3:-20000}"
VMMD_LINUX_MAX_SILENCE=${VMMD_LINUX_MAX_SILENCE:-600} \
    nested_run "$nested_top/bench/exit-stats-inner.sh"
