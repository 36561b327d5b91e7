#!/bin/sh
# bench/idle.sh and the start-latency benchmark where the native /dev/kvm
# cannot run them: in one boot of the linux suite's nested test host (a
# hardware-style /dev/kvm under QEMU's emulation, see
# tests/testhost/README.md), for one vmmd build or two side by side (say a
# build of an older commit, to compare before and after a change):
#   - a halted test guest (hello): system calls (strace -c -f) and
#     wake-ups (voluntary context switches) of the supervisor and of the
#     worker over 10 s, and of QEMU (-enable-kvm -M pc) on the same guest;
#   - vm.start to the guest's first serial byte (bench/start-latency.c),
#     6 starts a round (VMMD_BENCH_STARTS), two rounds, the builds
#     alternating.
# Counts are meaningful in the test host; times are those of an emulated
# machine (inflated): compare them only with each other.  Prints figures;
# asserts nothing.
#
#   bench/idle-kvm.sh BUILDDIR [OTHER_BUILDDIR]
#
# Both builds run the same guest image (BUILDDIR's hello.elf).  The test
# host boots the reference guest's kernel (VMMD_LINUX_GUEST, default
# .cache/linux-guest).  Needs qemu-system-x86 and strace.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/idle-kvm.sh BUILDDIR [OTHER_BUILDDIR]}" \
    idle-kvm
builds=
for b in "$nested_build" ${2:+"$(cd "$2" && pwd)"}; do
	nested_file "$b/daemon/vmmd" "$b/daemon/vmmd-worker" "$b/ctl/vmctl" \
	    "$b/bench/start-latency"
	# The worker's VNC module, where the build has one.
	[ ! -f "$b/daemon/vmmd-vnc.so" ] || nested_file "$b/daemon/vmmd-vnc.so"
	# The commit the build was made from, to label it.
	src=$(sed -n 's/^Source dir: //p' "$b/meson-logs/meson-log.txt" \
	    2>/dev/null | head -n 1)
	rev=$(git -C "${src:-/nonexistent}" rev-parse --short HEAD \
	    2>/dev/null || echo unknown)
	[ -z "$(git -C "${src:-/nonexistent}" status --porcelain \
	    --untracked-files=no 2>/dev/null)" ] || rev=$rev+
	builds="$builds $b:$(basename "$b")@$rev"
done
nested_file "$nested_build/tests/guests/hello.elf" \
    "$nested_build/daemon/guest/demo.elf"
nested_var BENCH_BUILDS "$builds"
nested_var BENCH_HELLO "$nested_build/tests/guests/hello.elf"
nested_var BENCH_DEMO "$nested_build/daemon/guest/demo.elf"
for v in VMMD_BENCH_SECONDS VMMD_BENCH_STARTS VMMD_BENCH_LATENCY_LIMIT \
    VMMD_TEST_KEEP; do
	eval "val=\${$v:-}"
	[ -z "$val" ] || nested_var "$v" "$val"
done
# The inner script speaks at least every 90 s: a test host silent for
# 150 s has hung (see idle-kvm-inner.sh), and run.sh boots it again.
VMMD_LINUX_MAX_SILENCE=${VMMD_LINUX_MAX_SILENCE:-150} \
    nested_run "$nested_top/bench/idle-kvm-inner.sh"
