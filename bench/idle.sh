#!/bin/sh
# Idle cost of a halted guest: system calls and wake-ups of every process
# of the VMM over a fixed window, vmmd against QEMU on the same test guest,
# measured in one run on this machine.  Prints figures; asserts nothing.
#
#   bench/idle.sh BUILDDIR [SECONDS] [GUEST]
#
# GUEST is a test guest name (default hello: prints, then halts with
# interrupts off; demo prints the time once a second).  Needs strace and
# qemu-system-x86_64 (Debian's qemu-system-x86).
set -eu

build=${1:?usage: bench/idle.sh BUILDDIR [SECONDS] [GUEST]}
secs=${2:-10}
guest=${3:-hello}
build=$(cd "$build" && pwd)
elf=$build/tests/guests/$guest.elf
# The demo guest is shipped: built in daemon/guest/.
[ "$guest" != demo ] || elf=$build/daemon/guest/demo.elf
[ -f "$elf" ] || { echo "no guest $elf" >&2; exit 1; }
for t in strace qemu-system-x86_64; do
	command -v $t >/dev/null || { echo "idle.sh: needs $t" >&2; exit 1; }
done

tmp=$(mktemp -d)
vmmd_pid= qemu_pid=
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null
	[ -n "$vmmd_pid" ] && kill "$vmmd_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# Sum of voluntary context switches (wake-ups) of all threads of PIDs.
wakeups() {
	n=0
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			v=$(awk '/^voluntary_ctxt_switches/ { print $2 }' \
			    "$t"/status 2>/dev/null || echo 0)
			n=$((n + ${v:-0}))
		done
	done
	echo "$n"
}

# measure LABEL PID...: wake-ups over one window (nothing attached),
# then system calls over a second one under strace -c -f.
measure() {
	label=$1; shift
	w0=$(wakeups "$@")
	sleep "$secs"
	w1=$(wakeups "$@")
	args=
	for p in "$@"; do args="$args -p $p"; done
	timeout -s INT "$secs" strace -c -f -o "$tmp/$label.strace" $args \
	    2>/dev/null || true
	# Columns: % time, seconds, usecs/call, calls, [errors], syscall.
	calls=$(awk '$NF == "total" { print $4 }' "$tmp/$label.strace")
	printf '%-28s %10s %10s\n' "$label" "${calls:-0}" "$((w1 - w0))"
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" {
	    printf "    %-24s %10s\n", $NF, $4 }' "$tmp/$label.strace" |
	    head -n 8
}

"$build/daemon/vmmd" -f -s "$tmp/sock" -d "$tmp/state" -g "$elf" \
    2>"$tmp/vmmd.log" &
vmmd_pid=$!
i=0
while [ ! -S "$tmp/sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ctl="$build/ctl/vmctl -s $tmp/sock"
$ctl create idle --kernel "$elf" --memory 32 >/dev/null
$ctl start idle >/dev/null
sleep 2
worker=$($ctl -j info idle | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')

qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities -M pc -m 32 \
    -nodefaults -display none -serial "file:$tmp/qemu.log" -monitor none \
    -kernel "$elf" &
qemu_pid=$!
sleep 6		# SeaBIOS and the option ROM take a few seconds

echo "guest $guest, ${secs} s window, $(nproc) CPUs, $(date -u +%FT%TZ)"
printf '%-28s %10s %10s\n' "process tree" "syscalls" "wake-ups"
measure "vmmd (supervisor)" "$vmmd_pid"
measure "vmmd-worker" "$worker"
measure "qemu-system-x86_64 -M pc" "$qemu_pid"
