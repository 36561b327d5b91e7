#!/bin/sh
# The reference Debian guest idle at its shell, under vmmd and under QEMU
# (-enable-kvm -M pc, the same kernel and initramfs), in one boot of the
# linux suite's test host: system calls of each VMM's processes and the
# guest's exits by reason over the same window.  Counts are meaningful in
# the nested test host; times are not.  Prints figures; asserts nothing.
#
#   bench/idle-linux.sh BUILDDIR [GUESTDIR]
#
# GUESTDIR defaults to .cache/linux-guest (tests/linux/build-guest.sh).
# Needs qemu-system-x86 and strace.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: bench/idle-linux.sh BUILDDIR [GUESTDIR]}" && pwd)
guest=${2:-$top/.cache/linux-guest}
[ -f "$guest/vmlinuz" ] || { echo "no reference guest in $guest" >&2; exit 1; }

qemu=$(command -v qemu-system-x86_64) || { echo "needs qemu" >&2; exit 1; }
strace=$(command -v strace) || { echo "needs strace" >&2; exit 1; }
# QEMU and its firmware go to the same paths in the test host, so that
# QEMU's built-in search paths find them.
firmware=
for f in /usr/share/seabios/bios-256k.bin /usr/share/qemu/linuxboot_dma.bin \
    /usr/share/qemu/kvmvapic.bin; do
	[ -f "$f" ] && firmware="$firmware $f"
done

VMMD_LINUX_MODE=nested \
VMMD_LINUX_GUEST=$guest \
VMMD_LINUX_WORKDIR=$build/bench/idle-linux \
VMMD_LINUX_SCENARIOS=$top/bench/idle-linux-inner.sh \
VMMD_BIN=$build/daemon/vmmd \
VMMD_WORKER_BIN=$build/daemon/vmmd-worker \
VMCTL_BIN=$build/ctl/vmctl \
VMMD_GUEST_DEMO=$build/daemon/guest/demo.elf \
VMMD_HOST_EXTRA="$qemu $strace $firmware" \
    sh "$top/tests/testhost/boot.sh"
