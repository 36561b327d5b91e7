#!/bin/sh
# vsock's cost to the VMM, vmmd against QEMU, in one boot of the linux
# suite's nested test host (tests/linux/README.md; its kernel has
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
g=$nested_work/guest
stage=$nested_work/guest-stage
rm -rf "$g" "$stage"
mkdir -p "$g" "$stage/etc"
cp -R "$nested_guest/host-modules" "$g/"
for f in vmlinuz vmlinux busybox cmdline; do
	cp "$nested_guest/$f" "$g/$f"
done
gzip -dc "$nested_guest/initramfs.cpio.gz" |
    (cd "$stage" && cpio -i --quiet etc/inittab)
[ -s "$stage/etc/inittab" ] ||
    { echo "no etc/inittab in $nested_guest/initramfs.cpio.gz" >&2; exit 1; }
echo "::respawn:/usr/bin/vsock-echo listen 1234" >>"$stage/etc/inittab"
{
	cat "$nested_guest/initramfs.cpio.gz"
	(cd "$stage" && find . | LC_ALL=C sort |
	    cpio -o -H newc -R 0:0 --quiet) | gzip -9n
} >"$g/initramfs.cpio.gz"
nested_guest=$g

[ -x "$nested_build/tests/linux/vsock-echo" ] ||
    { echo "no $nested_build/tests/linux/vsock-echo: build first" >&2; exit 1; }
nested_file "$nested_build/tests/linux/vsock-echo"
nested_var BENCH_ECHO "$nested_build/tests/linux/vsock-echo"
nested_var BENCH_MIB "$mib"
# QEMU's vhost-vsock-pci wants no ROM; its -M pc wants SeaBIOS (packed).
nested_run "$nested_top/bench/vsock-inner.sh"
