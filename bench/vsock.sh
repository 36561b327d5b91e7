#!/bin/sh
# vsock's cost to the VMM, vmmd against QEMU, in one boot of the linux
# suite's nested test host (tests/testhost/README.md; its kernel has
# vhost-vsock): the reference guest echoes on vsock port 1234
# (vsock-echo, started by its init), and the test host sends it MIB MiB
# (vsock-echo send), which come back, once under vmmd ("vsock": {}) and
# once under QEMU (-M pc -enable-kvm, -device vhost-vsock-pci).  Around
# each transfer: the system calls of the VMM's processes (strace -c -f)
# and their wake-ups (voluntary context switches of every thread), per
# MiB, with the ratios vmmd/QEMU.  With vhost the data path is the
# kernel's: the goal is no system call and no wake-up per packet.
# Counts are meaningful in the test host; times are not.  Prints
# figures; asserts nothing but that both transfers came back whole.
#
#   bench/vsock.sh BUILDDIR [MIB]        (MIB: default 64)
#
# Needs qemu-system-x86, strace, cpio.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/vsock.sh BUILDDIR [MIB]}" vsock
mib=${2:-64}
case $mib in
''|*[!0-9]*) echo "MIB: a number of MiB, not '$mib'" >&2; exit 1 ;;
esac

# The guest: the reference guest with one more inittab entry.
nested_guest_begin vmlinuz vmlinux busybox cmdline
nested_guest_end "::respawn:/usr/bin/vsock-echo listen 1234"

[ -x "$nested_build/tests/linux/vsock-echo" ] ||
    { echo "no $nested_build/tests/linux/vsock-echo: build first" >&2; exit 1; }
nested_file "$nested_build/tests/linux/vsock-echo"
nested_var BENCH_ECHO "$nested_build/tests/linux/vsock-echo"
nested_var BENCH_MIB "$mib"
# QEMU's vhost-vsock-pci wants no ROM; its -M pc wants SeaBIOS (packed).
nested_run "$nested_top/bench/vsock-inner.sh"
