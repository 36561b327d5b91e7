#!/bin/sh
# Firmware start to the boot loader's first output: vmmd --firmware bios
# against qemu-system-x86_64 -M pc -enable-kvm on the same bios-256k.bin
# and the same boot media, pair by pair in one run on this machine's
# /dev/kvm.  Prints figures and ratios; asserts nothing.
#
#   bench/firmware-boot.sh BUILDDIR [PAIRS]
#
# The media are the kvm suite's (tests/kvm/make-firmware-media.sh, made
# by ninja into BUILDDIR/tests/kvm): the El Torito-only ISO as a CD (vmmd:
# ATAPI on AHCI; QEMU -M pc: ATAPI on its PIIX IDE) and the BIOS disk as
# a virtio-blk disk on both.  Each pair boots vmmd, then QEMU.  From the
# VMM's start (vmctl start; QEMU's exec) to SeaBIOS's banner and to
# GRUB's marker, its first output on the serial port (GRUB writes to the
# screen before its grub.cfg moves it there).  Both firmwares print on
# COM1 (etc/sercon-port) and show the boot menu without waiting, as vmmd
# sets them.  Needs strace (checked by firmware-lib.sh), qemu-system-x86,
# seabios.
set -eu

build=${1:?usage: bench/firmware-boot.sh BUILDDIR [PAIRS]}
pairs=${2:-3}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'fw_cleanup; rm -rf "$tmp"' EXIT INT TERM
. "$here/firmware-lib.sh"
iso=${VMMD_MEDIA_ELTORITO:-$build/tests/kvm/media-eltorito.img}
disk=${VMMD_MEDIA_BIOSDISK:-$build/tests/kvm/media-biosdisk.img}
for m in "$iso" "$disk"; do
	[ -f "$m" ] || { echo "no medium $m: ninja -C BUILDDIR" \
	    "tests/kvm/$(basename "$m")" >&2; exit 1; }
done
limit=300000		# ms: a boot that takes longer is reported lost

banner='SeaBIOS (version'
fw_vmmd_start
fw_vmmd_create cd --cdrom "$iso"
fw_vmmd_create vd --disk "$disk,readonly,format=raw"

# one VMM NAME MARKER: "BANNER_MS MARKER_MS" of one boot ("- -" if lost).
one() {
	log=$tmp/$1-$2.log
	rm -f "$log"
	case $1 in
	vmmd)	log=$tmp/state/console/$2.log
		: >"$log" 2>/dev/null || true
		t0=$(fw_now)
		$fw_ctl start "$2" >/dev/null ;;
	qemu)	t0=$(fw_now)
		case $2 in
		cd) fw_qemu "$log" -drive \
		    "file=$iso,format=raw,media=cdrom,if=ide,readonly=on" ;;
		vd) fw_qemu "$log" -drive \
		    "file=$disk,format=raw,if=virtio,readonly=on" ;;
		esac ;;
	esac
	b=- m=-
	if fw_wait "$log" "$banner" "$limit"; then
		b=$(($(fw_now) - t0))
		if fw_wait "$log" "$3" "$limit"; then
			m=$(($(fw_now) - t0))
		fi
	fi
	case $1 in
	vmmd)	$fw_ctl stop "$2" --force >/dev/null ;;
	qemu)	fw_qemu_stop ;;
	esac
	echo "$b $m"
}

echo "firmware start to GRUB's first output, $pairs pairs, $(nproc) CPUs," \
    "$(date -u +%FT%TZ)"
echo "SeaBIOS $fw_bios; ms from the VMM's start; ratio vmmd/QEMU of the marker"
printf '%-22s %4s %12s %12s %12s %12s %7s\n' medium pair "vmmd banner" \
    "vmmd GRUB" "QEMU banner" "QEMU GRUB" ratio
for what in cd vd; do
	case $what in
	cd) label="El Torito ISO as CD" marker=VMMD-MEDIA-ELTORITO-OK ;;
	vd) label="BIOS disk, virtio" marker=VMMD-MEDIA-BIOSDISK-OK ;;
	esac
	p=1
	while [ "$p" -le "$pairs" ]; do
		set -- $(one vmmd "$what" "$marker") $(one qemu "$what" "$marker")
		ratio=$(awk -v a="$2" -v b="$4" 'BEGIN { if (a == "-" ||
		    b == "-" || b == 0) print "-"; else printf "%.2f", a / b }')
		printf '%-22s %4s %12s %12s %12s %12s %7s\n' "$label" "$p" \
		    "$1" "$2" "$3" "$4" "$ratio"
		p=$((p + 1))
	done
done
