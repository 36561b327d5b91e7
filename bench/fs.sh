#!/bin/sh
# A shared directory's cost to the VMM, vmmd against QEMU, in one boot of
# the linux suite's nested test host (tests/testhost/README.md): the
# reference guest mounts a virtio-fs share served by Debian's virtiofsd
# (the same program, the same options) under vmmd (--fs, which starts
# it) and under QEMU (-M pc -enable-kvm, vhost-user-fs-pci, guest RAM a
# shared memfd, virtiofsd started by this script), and runs three
# phases: seqwrite (dd MIB MiB in 1 MiB blocks, conv=fsync), seqread
# (the same file after dropping the guest's caches) and smallfiles
# (FILES files of 4 KiB made, fsynced, read back after dropping the
# caches, removed).  Around each phase: the guest's exits (KVM's
# debugfs) and the system calls of the VMM's processes and of the
# virtiofsd processes, apart (strace -c -f).  With vhost-user the data
# path is the guest's and virtiofsd's: the goal is no system call of the
# VMM per request.  Counts are meaningful in the test host; times are
# not.  Prints figures; asserts nothing but that every phase ran.
#
#   bench/fs.sh BUILDDIR [MIB [FILES]]    (default 256 MiB, 200 files)
#
# Needs qemu-system-x86 and qemu-system-common (virtiofsd), strace, cpio.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/fs.sh BUILDDIR [MIB [FILES]]}" fs
mib=${2:-256}
files=${3:-200}
for n in "$mib" "$files"; do
	case $n in
	''|*[!0-9]*) echo "MIB and FILES: numbers, not '$n'" >&2; exit 1 ;;
	esac
done
virtiofsd=/usr/lib/qemu/virtiofsd
[ -x "$virtiofsd" ] ||
    { echo "needs $virtiofsd (apt-get install qemu-system-common)" >&2; exit 1; }

# The guest: the reference guest (its initramfs loads virtiofs) with the
# phases' script run once by its init.
nested_guest_begin vmlinuz vmlinux busybox
echo "$(cat "$nested_guest/cmdline") fsbench_mib=$mib fsbench_files=$files" \
    >"$g/cmdline"
cp "$nested_top/bench/fs-guest.sh" "$stage/usr/bin/fs-guest"
chmod 755 "$stage/usr/bin/fs-guest"
nested_guest_end "::once:/usr/bin/fs-guest"
nested_file "$virtiofsd"
# QEMU's vhost-user-fs-pci wants no ROM; its -M pc wants SeaBIOS (packed).
VMMD_LINUX_TIMEOUT=${VMMD_LINUX_TIMEOUT:-3000}
# A phase prints nothing until it ends, which takes minutes emulated:
# only a longer silence means the test host hung.
VMMD_LINUX_MAX_SILENCE=${VMMD_LINUX_MAX_SILENCE:-1500}
export VMMD_LINUX_MAX_SILENCE
nested_run "$nested_top/bench/fs-inner.sh"
