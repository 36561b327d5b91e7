#!/bin/sh
# Live migration, vmmd against QEMU, in one boot of the linux suite's
# nested test host (tests/testhost/README.md): a guest of MIB MiB moved
# between two VMMs on the test host, idle (the demo guest, which
# touches little of its RAM) and busy (the dirty test guest writing
# every page of a BUSY MiB area all the time), once from one vmmd to
# another (vmctl migrate --to unix:, the target's control socket) and
# once from one QEMU to another (-M pc -enable-kvm, migrate to
# -incoming unix:), both with a 300 ms downtime bound.  Prints each
# migration's rounds (QEMU: its dirty sync count), pages and bytes
# sent, total time and downtime.  Counts are meaningful in the test
# host; times are those of an emulated machine, so compare the two
# VMMs with each other, never with a figure taken elsewhere.  A
# migration that has not ended after 300 s is cancelled and said so.
# Asserts nothing but that the guests ran on at the target.
#
#   bench/migrate.sh BUILDDIR [MIB... ]   (default 256 1024)
#
# VMMD_BENCH_BUSY_MIB (default 32): the busy guest's area.
# Needs qemu-system-x86, strace, cpio.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/migrate.sh BUILDDIR [MIB...]}" migrate
shift
sizes=${*:-256 1024}
max=0
for m in $sizes; do
	case $m in
	''|*[!0-9]*) echo "MIB: a number of MiB, not '$m'" >&2; exit 1 ;;
	esac
	[ "$m" -ge 64 ] || { echo "MIB: at least 64, not $m" >&2; exit 1; }
	[ "$m" -le "$max" ] || max=$m
done
dirty=$nested_build/tests/guests/dirty.elf
[ -f "$dirty" ] || { echo "no $dirty: build first" >&2; exit 1; }
nested_file "$dirty"
nested_var BENCH_DIRTY "$dirty"
nested_var BENCH_SIZES "$sizes"
nested_var BENCH_BUSY_MIB "${VMMD_BENCH_BUSY_MIB:-32}"
# Two guests of the largest size at once (source and target), and room
# for the test host itself.
VMMD_LINUX_HOST_MIB=${VMMD_LINUX_HOST_MIB:-$((2 * max + 1024))}
export VMMD_LINUX_HOST_MIB
VMMD_LINUX_TIMEOUT=${VMMD_LINUX_TIMEOUT:-3000}
# A phase prints nothing until it ends, which takes minutes emulated:
# only a longer silence means the test host hung.
VMMD_LINUX_MAX_SILENCE=${VMMD_LINUX_MAX_SILENCE:-1500}
export VMMD_LINUX_MAX_SILENCE
nested_run "$nested_top/bench/migrate-inner.sh"
