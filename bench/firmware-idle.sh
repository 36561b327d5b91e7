#!/bin/sh
# An idle guest in its firmware or boot loader: system calls of vmmd's
# supervisor and worker, and of QEMU -M pc (-enable-kvm, the same
# bios-256k.bin and medium), over SECONDS (strace -c -f -p) in one run on
# this machine's /dev/kvm, nobody watching.  Then the guest's exits over
# as long, by reason, from vmmd's exit statistics (vmctl stats), which
# say what makes the worker's system calls.  Prints figures; asserts
# nothing.
#
#   bench/firmware-idle.sh BUILDDIR [SECONDS]
#
# Two states: SeaBIOS's "No bootable device" (a VM with no medium; it
# retries after 60 s, so each window ends before that) and GRUB's prompt
# (the BIOS disk of tests/kvm/make-firmware-media.sh, made here with
# "prompt" so that GRUB stays at its command line, as a virtio disk).
# Both VMMs run at once, as in idle.sh (QEMU without its image lock:
# vmmd holds one on the disk).  Needs strace, qemu-system-x86,
# seabios, and GRUB's tools and mtools for the prompt's disk.
set -eu

build=${1:?usage: bench/firmware-idle.sh BUILDDIR [SECONDS]}
secs=${2:-10}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'fw_cleanup; rm -rf "$tmp"' EXIT INT TERM
. "$here/firmware-lib.sh"
limit=300000		# ms to reach a state

# syscalls LABEL PID...: the total of one window and its top calls.
syscalls() {
	label=$1
	shift
	args=
	for p in "$@"; do args="$args -p $p"; done
	timeout -s INT "$secs" strace -c -f -o "$tmp/strace" $args \
	    2>/dev/null || true
	# Columns: % time, seconds, usecs/call, calls, [errors], syscall.
	calls=$(awk '$NF == "total" { print $4 }' "$tmp/strace")
	printf '  %-28s %10s\n' "$label" "${calls:-0}"
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" {
	    printf "    %-26s %10s\n", $NF, $4 }' "$tmp/strace" | head -n 5
}

# exits NAME: the guest's exits over one window, by reason.
exits() {
	$fw_ctl stats "$1" --enable --reset >/dev/null
	sleep "$secs"
	$fw_ctl stats "$1" >"$tmp/stats" 2>&1 || true
	$fw_ctl stats "$1" --disable >/dev/null 2>&1 || true
	echo "  vmmd exit statistics over ${secs} s (vmctl stats $1):"
	sed -n '1,24s/^/    /p' "$tmp/stats"
}

# state LABEL NAME TEXT QEMU-LOG QEMU-OPTIONS...: both VMMs to TEXT, then
# the windows.
state() {
	label=$1 name=$2 text=$3 qlog=$4
	shift 4
	$fw_ctl start "$name" >/dev/null
	fw_qemu "$qlog" "$@"
	vlog=$tmp/state/console/$name.log
	if ! fw_wait "$vlog" "$text" "$limit" ||
	    ! fw_wait "$qlog" "$text" "$limit"; then
		echo "$label: \"$text\" not reached in $((limit / 1000)) s" >&2
		exit 1
	fi
	sleep 3
	echo "$label (\"$text\"), ${secs} s windows:"
	syscalls "vmmd (supervisor)" "$fw_vmmd_pid"
	syscalls "vmmd-worker" "$(fw_worker "$name")"
	syscalls "qemu-system-x86_64 -M pc" "$fw_qemu_pid"
	exits "$name"
	fw_qemu_stop
	$fw_ctl stop "$name" --force >/dev/null
}

sh "$top/tests/kvm/make-firmware-media.sh" "$tmp/prompt.img" biosdisk prompt
fw_vmmd_start
fw_vmmd_create nb
fw_vmmd_create gp --disk "$tmp/prompt.img,readonly,format=raw"

echo "idle in firmware, $(nproc) CPUs, $(date -u +%FT%TZ), SeaBIOS $fw_bios"
state "SeaBIOS, no bootable device" nb "No bootable device" "$tmp/q-nb.log"
# GRUB's banner comes with its prompt; SeaBIOS's serial console, which
# copies the screen's text with cursor moves, can cut the prompt itself.
state "GRUB's prompt, BIOS disk on virtio" gp "GNU GRUB  version" \
    "$tmp/q-gp.log" \
    -drive "file=$tmp/prompt.img,format=raw,if=virtio,readonly=on,file.locking=off"
