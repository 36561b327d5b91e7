#!/bin/sh
# Restoring a snapshot against starting the guest afresh, for RAM sizes
# of 64 MiB to 2 GiB, pair by pair in one run on this machine's
# /dev/kvm: vm.start of the demo guest (PVH) to its first console line,
# against vm.restore of a snapshot of it to a running guest and to its
# next console line (restore-start.c says how each is timed).  A restore
# maps the snapshot's RAM lazily, so it should cost about what a start
# costs whatever the RAM size.  Prints a table with the ratios restore /
# start; asserts nothing.
#
#   bench/snapshot-restore.sh BUILDDIR [PAIRS]     (default 5 pairs)
#
# ninja -C BUILDDIR bench-restore-start builds what it needs and runs it.
# Needs a /dev/kvm that opens here (the nested test host would time an
# emulated machine); the snapshots go into the private vmmd's scratch
# directory (sparse: a few MiB each).
set -eu

build=${1:?usage: bench/snapshot-restore.sh BUILDDIR [PAIRS]}
pairs=${2:-5}
build=$(cd "$build" && pwd)
if [ ! -c /dev/kvm ] || ! (: <>/dev/kvm) 2>/dev/null; then
	echo "snapshot-restore: /dev/kvm does not open here" >&2
	exit 1
fi
if grep -qwE 'vmx|svm' /proc/cpuinfo; then
	kvm="hardware virtualization ($(grep -owE 'vmx|svm' /proc/cpuinfo |
	    sort -u | tr '\n' ' ' | sed 's/ $//'))"
else
	kvm="a software KVM (no vmx or svm in /proc/cpuinfo: $(ls /sys/module |
	    grep '^kvm' | tr '\n' ' ' | sed 's/ $//'))"
fi
echo "restore against start, demo guest (PVH), $pairs pairs a size," \
    "$(nproc) CPUs, $(date -u +%FT%TZ)"
echo "natively on /dev/kvm: $kvm"
echo "start:line     vm.start to the first console line"
echo "restore:run    vm.restore to its reply (the guest runs)"
echo "restore:line   vm.restore to the echo of a line typed once it runs"
env VMMD_BIN="$build/daemon/vmmd" \
    VMMD_WORKER_BIN="$build/daemon/vmmd-worker" \
    VMMD_GUEST_DEMO="$build/daemon/guest/demo.elf" \
    "$build/bench/restore-start" "$pairs" 64 256 1024 2048
