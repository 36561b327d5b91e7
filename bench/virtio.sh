#!/bin/sh
# Disk and network I/O, vmmd against QEMU, in one boot of the linux
# suite's nested test host (tests/testhost/README.md): the reference guest
# with two virtio-blk disks, one on a raw image and one on a fresh qcow2
# image (qemu-img create: 64 KiB clusters, no backing file), and
# virtio-net on a TAP device, under vmmd, then under QEMU (-M pc
# -enable-kvm, virtio-blk-pci on QEMU's own raw and qcow2 drivers,
# virtio-net-pci with vnet_hdr, the same kernel, initramfs and command
# line).  In each, the guest moves MIB MiB in 4 KiB blocks: sequential
# writes and reads (busybox dd, O_DIRECT) and random writes and reads
# (virtio-rand.c, a fixed seed) on the raw disk (phases raw-*), then on
# the qcow2 disk twice: first while its clusters are allocated (qnew-*),
# then once more over the clusters already there (qagain-*: rewrites);
# then TCP from the test host and TCP to it (busybox nc).  Around each
# phase: the guest's exits (KVM's debugfs, which counts the same way
# whatever the VMM) and the system calls of the VMM's processes (strace
# -c -f).  Prints both per MiB with the ratios vmmd/QEMU, and a table of
# the qcow2 phases against the raw ones (qcow2/raw) for each VMM.
# Counts are meaningful in the test host; times are not.  Prints
# figures; asserts nothing but that every phase ran and that qemu-img
# check finds each VMM's qcow2 image clean afterwards.
#
#   bench/virtio.sh BUILDDIR [MIB]        (MIB: default 4, at most 32)
#
# VMMD_BENCH_PHASES="netin netout" (say) runs only those phases; a qagain
# phase is a rewrite only after the qnew one of the same kind.
#
# The guest is the reference guest (VMMD_LINUX_GUEST, default
# .cache/linux-guest) with one more archive appended to its initramfs:
# virtio-rand, and virtio-guest.sh run once by its init.  Needs
# qemu-system-x86, qemu-utils, strace, cpio and a C compiler with a
# static libc.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/virtio.sh BUILDDIR [MIB]}" virtio
mib=${2:-${VMMD_BENCH_MIB:-4}}
case $mib in
''|*[!0-9]*) echo "MIB: a number of MiB, not '$mib'" >&2; exit 1 ;;
esac
[ "$mib" -ge 1 ] && [ "$mib" -le 32 ] ||
    { echo "MIB: 1 to 32 (the image is 64 MiB)" >&2; exit 1; }

# The benchmark's guest: the reference guest's files, its initramfs with
# an archive of ours after it (the kernel unpacks both, later files
# replacing earlier ones), the size on its command line.
nested_guest_begin vmlinuz vmlinux busybox
phases=$(echo ${VMMD_BENCH_PHASES:-} | tr ' ' ,)
for p in $(echo "$phases" | tr , ' '); do
	case $p in
	raw-*|qnew-*|qagain-*)
		case ${p#*-} in
		seqwrite|seqread|randwrite|randread) ;;
		*) echo "VMMD_BENCH_PHASES: no phase '$p'" >&2; exit 1 ;;
		esac ;;
	netin|netout) ;;
	*) echo "VMMD_BENCH_PHASES: no phase '$p'" >&2; exit 1 ;;
	esac
done
echo "$(cat "$nested_guest/cmdline") vbench_mib=$mib${phases:+ vbench_phases=$phases}" \
    >"$g/cmdline"
${CC:-cc} -static -Os -s -std=gnu17 -Wall -Wextra -Wmissing-prototypes \
    -Wstrict-prototypes -Werror -o "$stage/usr/bin/virtio-rand" \
    "$nested_top/bench/virtio-rand.c" ||
    { echo "cannot build virtio-rand.c (static: needs libc6-dev)" >&2; exit 1; }
cp "$nested_top/bench/virtio-guest.sh" "$stage/usr/bin/virtio-guest"
chmod 755 "$stage/usr/bin/virtio-guest"
nested_guest_end "::once:/usr/bin/virtio-guest"

# qemu-img makes the qcow2 images inside and checks them afterwards.
qemu_img=$(command -v qemu-img) ||
    { echo "needs qemu-img (apt-get install qemu-utils)" >&2; exit 1; }
nested_file "$qemu_img"

# QEMU's virtio-net-pci ROM, when there is one (romfile= otherwise).
[ -f /usr/share/qemu/efi-virtio.rom ] &&
    nested_file /usr/share/qemu/efi-virtio.rom
# Fourteen phases a VMM: more than nested_run's default of 900 s.
VMMD_LINUX_TIMEOUT=${VMMD_LINUX_TIMEOUT:-3000}
nested_run "$nested_top/bench/virtio-inner.sh"
