#!/bin/sh
# Boot media for the firmware tests, made from Debian's GRUB without loop
# devices or root, as an installer or a BIOS disk is laid out:
#
#   make-firmware-media.sh OUT eltorito|hybrid|biosdisk [prompt]
#   make-firmware-media.sh OUT installer KERNEL INITRD
#
# eltorito   an El Torito-only ISO: GRUB's i386-pc-eltorito core as a
#            no-emulation boot image (xorriso); SeaBIOS boots it only
#            from a CD-type drive
# hybrid     grub-mkrescue's hybrid ISO: El Torito and an MBR, so it
#            boots as a CD and as a disk
# biosdisk   an 8 MiB MBR disk: a FAT partition (mformat, mcopy) holding
#            grub.cfg, GRUB's boot.img in the MBR's first 440 bytes and
#            its core.img (grub-mkimage -O i386-pc) from sector 1
# installer  a hybrid ISO whose GRUB boots KERNEL and INITRD (Debian's
#            netboot installer) with the console on ttyS0
#
# Each GRUB puts its output on the serial port and the screen, echoes
# VMMD-MEDIA-<KIND>-OK (KIND in capitals) and halts; with "prompt" it
# stays at its command line instead (an idle boot loader, for bench/).
# OUT is written whole or not at all.
set -eu
out=$1 kind=$2
shift 2
mods="biosdisk part_msdos iso9660 fat normal echo serial terminal halt"
mods="$mods sleep linux"
grubpc=/usr/lib/grub/i386-pc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
mkdir -p "$tmp/tree/boot/grub"
cfg=$tmp/tree/boot/grub/grub.cfg

upper=$(printf '%s' "$kind" | tr a-z A-Z)
{
	echo 'serial --unit=0 --speed=115200'
	echo 'terminal_input serial console'
	echo 'terminal_output serial console'
	echo "echo VMMD-MEDIA-$upper-OK"
} >"$cfg"
case $kind in
eltorito|hybrid|biosdisk)
	if [ "${1:-}" != prompt ]; then
		echo halt >>"$cfg"
	fi ;;
installer)
	cp "$1" "$tmp/tree/boot/vmlinuz"
	cp "$2" "$tmp/tree/boot/initrd.gz"
	cat >>"$cfg" <<'CFG'
linux /boot/vmlinuz console=ttyS0,115200n8 ---
initrd /boot/initrd.gz
boot
CFG
	;;
*)	echo "make-firmware-media.sh: $kind: eltorito, hybrid, biosdisk" \
	    "or installer" >&2
	exit 2 ;;
esac

case $kind in
eltorito)
	grub-mkimage -O i386-pc-eltorito -p /boot/grub \
	    -o "$tmp/tree/core.img" $mods
	xorriso -as mkisofs -quiet -b core.img -no-emul-boot \
	    -boot-load-size 4 -boot-info-table -o "$tmp/out" "$tmp/tree" ;;
hybrid|installer)
	# Only the BIOS platform: the ISO's EFI image would need mformat
	# too, and the tests boot it under SeaBIOS.
	grub-mkrescue -d "$grubpc" -o "$tmp/out" "$tmp/tree" \
	    >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; } ;;
biosdisk)
	# The partition from 1 MiB to the end; GRUB's core in the gap
	# before it (sectors 1..2047), as grub-install puts it.
	truncate -s 8M "$tmp/out"
	printf 'label: dos\nstart=2048, type=c, bootable\n' |
	    sfdisk -q "$tmp/out"
	truncate -s 7M "$tmp/part"
	mformat -i "$tmp/part" -v VMMDBOOT ::
	mmd -i "$tmp/part" ::/boot ::/boot/grub
	mcopy -i "$tmp/part" "$cfg" ::/boot/grub/grub.cfg
	dd if="$tmp/part" of="$tmp/out" bs=1M seek=1 conv=notrunc \
	    status=none
	grub-mkimage -O i386-pc -p '(hd0,msdos1)/boot/grub' \
	    -o "$tmp/core.img" $mods
	size=$(wc -c <"$tmp/core.img")
	if [ "$size" -gt $((2047 * 512)) ]; then
		echo "make-firmware-media.sh: core.img: $size bytes" >&2
		exit 1
	fi
	# boot.img's code and its disk address packet only: the disk
	# signature and the partition table after byte 440 stay sfdisk's.
	dd if="$grubpc/boot.img" of="$tmp/out" bs=440 count=1 conv=notrunc \
	    status=none
	dd if="$tmp/core.img" of="$tmp/out" bs=512 seek=1 conv=notrunc \
	    status=none ;;
esac
mv "$tmp/out" "$out.tmp"
mv "$out.tmp" "$out"
