#!/bin/sh
# A cloud image from start to a working ssh, vmmd against QEMU, in one
# boot of the linux suite's nested test host (tests/testhost/README.md):
# the Debian cloud image of tests/linux/build-cloud-image.sh, booted by
# vmmd from its disk (GRUB's choice, cloud-init's seed with a key, passt
# with a forward) through an overlay, then by QEMU with the same kernel
# and initrd given by -kernel/-initrd, the same command line, a seed of
# the same content (genisoimage) and passt on its stream netdev.  Prints
# the seconds from the VMM's start to the first ssh that runs a command,
# and the ratio; times are those of an emulated machine (nested, without
# nested paging), only their ratio means something.
#
#   bench/cloud-boot.sh BUILDDIR
#
# Needs qemu-system-x86, the cloud image (build-cloud-image.sh), passt,
# ssh, ssh-keygen, genisoimage, qemu-img.
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/cloud-boot.sh BUILDDIR}" cloud-boot
img=${VMMD_CLOUD_IMAGE_DIR:-$nested_top/.cache/cloud-image}
for f in debian-cloud.qcow2 vmlinuz initrd.img; do
	[ -f "$img/$f" ] || { echo "no $img/$f: run" \
	    "tests/linux/build-cloud-image.sh" >&2; exit 1; }
done
for p in passt ssh ssh-keygen genisoimage qemu-img; do
	f=$(command -v "$p") || { echo "needs $p" >&2; exit 1; }
	nested_file "$f"
done
# QEMU's virtio-net-pci with no option ROM; the stream netdev is QEMU's.
nested_file "$img/debian-cloud.qcow2" "$img/vmlinuz" "$img/initrd.img"
nested_var BENCH_IMAGE "$img/debian-cloud.qcow2"
nested_var BENCH_KERNEL "$img/vmlinuz"
nested_var BENCH_INITRD "$img/initrd.img"
# Room for a 512 MiB guest at a time, and the image in the initramfs.
VMMD_LINUX_HOST_MIB=${VMMD_LINUX_HOST_MIB:-4096}
VMMD_LINUX_TIMEOUT=${VMMD_LINUX_TIMEOUT:-3000}
VMMD_LINUX_MAX_SILENCE=${VMMD_LINUX_MAX_SILENCE:-1500}
export VMMD_LINUX_HOST_MIB VMMD_LINUX_TIMEOUT VMMD_LINUX_MAX_SILENCE
nested_run "$nested_top/bench/cloud-boot-inner.sh"
