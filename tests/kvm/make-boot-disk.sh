#!/bin/sh
# A disk to boot from as a cloud image is booted (vmmd-vm(5) "boot"),
# for the kvm suite's cloud test: a 32 MiB GPT disk with an ext4 root
# file system as partition 1, made as distributions make theirs (sfdisk,
# mkfs.ext4 -d), written as a compressed qcow2 (qemu-img convert -c).
#
#   make-boot-disk.sh OUT KERNEL grub|empty
#
# grub: KERNEL (a test guest) as /boot/vmlinuz-demo, which
# /boot/grub/grub.cfg's default entry boots; empty: no kernel at all.
set -eu
out=$1 kernel=$2 what=$3
uuid=0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
mkdir -p "$tmp/root/etc" "$tmp/root/boot/grub"
echo "UUID=$uuid / ext4 defaults 0 1" >"$tmp/root/etc/fstab"
if [ "$what" = grub ]; then
	cp "$kernel" "$tmp/root/boot/vmlinuz-demo"
	cat >"$tmp/root/boot/grub/grub.cfg" <<CFG
set default="0"
menuentry 'Demo' --id demo {
	search --no-floppy --fs-uuid --set=root $uuid
	linux	/boot/vmlinuz-demo vmmd.from=disk
}
CFG
fi
truncate -s 32M "$tmp/disk.raw"
printf 'label: gpt\nstart=2048, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n' |
    sfdisk -q "$tmp/disk.raw"
mkfs.ext4 -q -F -U "$uuid" -d "$tmp/root" -E offset=1048576 \
    "$tmp/disk.raw" 30000k
qemu-img convert -c -O qcow2 "$tmp/disk.raw" "$out.tmp"
mv "$out.tmp" "$out"
