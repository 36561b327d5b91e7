#!/bin/sh
# Runs inside the linux suite's test host (see idle-linux.sh): the
# reference guest idle at its shell under vmmd, then under QEMU, with the
# system calls of each VMM's processes (strace -c -f) and the guest's exits
# by reason (KVM's per-VM counters in debugfs) over the same window.
# Prints TAP comments and one test point, for run.sh.
set -u
secs=${VMMD_BENCH_SECONDS:-10}
settle=${VMMD_BENCH_SETTLE:-20}
g=$VMMD_LINUX_GUEST
cmdline=$(cat "$g/cmdline")
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
say() { echo "# $*"; }

# The console log with the kernel's messages taken out of the lines
# they interrupted: the guest's init and its kernel print at once, and
# "[    5.1] message" can land in the middle of the banner.
console_text() {
	tr -d '\r' 2>/dev/null <"$1" | awk '
	match($0, /\[ *[0-9]+\.[0-9]+\]/) {
		part = part substr($0, 1, RSTART - 1)
		next
	}
	{ print part $0; part = "" }'
}

# wait_for FILE TEXT SECONDS
wait_for() {
	i=0
	while [ $i -lt "$3" ]; do
		console_text "$1" | grep -q "$2" && return 0
		sleep 1; i=$((i + 1))
	done
	return 1
}

# KVM's counters of the one VM a process owns, as "name value" lines.
kvm_stats() {
	d=$(ls -d /sys/kernel/debug/kvm/"$1"-* 2>/dev/null | head -n 1)
	[ -n "$d" ] || return 0
	for f in "$d"/*; do
		[ -f "$f" ] || continue
		v=$(cat "$f" 2>/dev/null) || continue
		case $v in *[!0-9]*|"") continue ;; esac
		echo "$(basename "$f") $v"
	done
}

# measure LABEL KVMPID PID...
measure() {
	label=$1; kpid=$2; shift 2
	args=
	for p in "$@"; do args="$args -p $p"; done
	kvm_stats "$kpid" >/tmp/k0
	timeout -s INT "$secs" strace -c -f -o /tmp/st $args 2>/tmp/st.err ||
	    true
	[ -s /tmp/st ] || say "strace: $(head -c 300 /tmp/st.err)"
	kvm_stats "$kpid" >/tmp/k1
	calls=$(awk '$NF == "total" { print $4 }' /tmp/st)
	say "$label: ${calls:-0} system calls in $secs s"
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $NF, $4 }' /tmp/st |
	    head -n 6 | while read -r n c; do say "    $n $c"; done
	say "$label: guest exits by reason in $secs s (KVM debugfs)"
	awk 'NR == FNR { a[$1] = $2; next }
	    ($1 ~ /exits|halt_wakeup|irq_injections|insn_emulation/) &&
	    $2 - a[$1] > 0 { printf "#     %s %d\n", $1, $2 - a[$1] }' \
	    /tmp/k0 /tmp/k1
}

say "idle reference guest, ${settle} s to settle, ${secs} s window"
"$VMMD_BIN" -s /tmp/bench/control.sock -d /tmp/bench -g "$VMMD_GUEST_DEMO"
"$VMCTL_BIN" -s /tmp/bench/control.sock create idle --kernel "$g/vmlinuz" \
    --initrd "$g/initramfs.cpio.gz" --cmdline "$cmdline" --memory 256M \
    --vcpus 2 >/dev/null
"$VMCTL_BIN" -s /tmp/bench/control.sock start idle >/dev/null
ok=1
wait_for /tmp/bench/console/idle.log "reference guest ready" 120 ||
    { ok=0; say "vmmd: no banner; last: $(tail -c 200 /tmp/bench/console/idle.log)"; }
sleep "$settle"
worker=$("$VMCTL_BIN" -s /tmp/bench/control.sock -j info idle |
    sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
measure vmmd "$worker" "$(pidof "$(basename "$VMMD_BIN")")" \
    "$worker"
"$VMCTL_BIN" -s /tmp/bench/control.sock stop --force idle >/dev/null

qemu-system-x86_64 -enable-kvm -cpu host -M pc \
    -m 256 -smp 2 -nodefaults -display none -monitor none \
    -serial file:/tmp/qemu-idle.log -kernel "$g/vmlinuz" \
    -initrd "$g/initramfs.cpio.gz" -append "$cmdline" &
qemu=$!
wait_for /tmp/qemu-idle.log "reference guest ready" 120 ||
    { ok=0; say "qemu: no banner; last: $(tail -c 200 /tmp/qemu-idle.log)"; }
sleep "$settle"
measure "qemu -M pc" "$qemu" "$qemu"
kill "$qemu"
[ $ok = 1 ] && echo "ok 1 - both guests reached their shell" ||
    echo "not ok 1 - a guest did not reach its shell"
echo "1..1"
