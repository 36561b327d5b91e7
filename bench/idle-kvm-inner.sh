#!/bin/sh
# Runs inside the nested test host (see idle-kvm.sh): for each vmmd build
# in BENCH_BUILDS ("DIR:LABEL ..."), the halted hello guest's idle cost
# (supervisor and worker: wake-ups over one window, system calls over a
# second one under strace -c -f), vm.start-to-first-byte (each build's
# bench/start-latency) in two rounds with the builds alternating, then
# QEMU -M pc's idle cost on the same guest.  Prints TAP comments and one test point.
set -u
. "$(dirname "$0")/nested-lib.sh"

secs=${VMMD_BENCH_SECONDS:-10}
# Few starts a round: with 20 a round, the emulated test host's kernel
# has locked up (soft lockups on both CPUs) in the middle of the series;
# run.sh then boots it again.
starts=${VMMD_BENCH_STARTS:-6}
lat_limit=${VMMD_BENCH_LATENCY_LIMIT:-90}
res=/tmp/idle-results
: >"$res"
ok=1

say "idle: hello guest (halted, interrupts off), 32 MiB, ${secs} s windows"

# idle_measure BUILD PROCESS PID...: one result line.
idle_measure() {
	w0=$(wakeups "$3")
	sleep "$secs"
	w1=$(wakeups "$3")
	calls=$(syscalls "$secs" /tmp/st "$3")
	echo "$1 $2 $calls $((w1 - w0))" >>"$res"
	say "$1 $2: $calls system calls, $((w1 - w0)) wake-ups"
	top_syscalls /tmp/st 5
}

n=0
for spec in $BENCH_BUILDS; do
	dir=${spec%:*} label=${spec##*:}
	n=$((n + 1))
	sock=/tmp/idle$n.sock state=/tmp/idle$n
	"$dir/daemon/vmmd" -f -s "$sock" -d "$state" -g "$BENCH_DEMO" \
	    2>"/tmp/vmmd$n.log" &
	sup=$!
	wait_socket "$sock" 20 || { ok=0; say "$label: no socket"; }
	ctl="$dir/ctl/vmctl -s $sock"
	$ctl create idle --kernel "$BENCH_HELLO" --memory 32 >/dev/null
	$ctl start idle >/dev/null
	wait_for "$state/console/idle.log" "hello: halting" 60 ||
	    { ok=0; say "$label: $(tail -c 300 "$state/console/idle.log")"; }
	sleep 2
	worker=$($ctl -j info idle | json_num pid)
	idle_measure "$label" supervisor "$sup"
	idle_measure "$label" worker "$worker"
	$ctl stop --force idle >/dev/null
	stop_pid "$sup"
done

# Start latency: each build's own bench program (the same source),
# two rounds, the second in the opposite order.
order=$BENCH_BUILDS
rev=
for spec in $BENCH_BUILDS; do rev="$spec $rev"; done
for round in 1 2; do
	for spec in $order; do
		dir=${spec%:*} label=${spec##*:}
		VMMD_BIN="$dir/daemon/vmmd" \
		    VMMD_WORKER_BIN="$dir/daemon/vmmd-worker" \
		    VMMD_GUEST_DEMO="$BENCH_DEMO" \
		    VMMD_GUEST_HELLO="$BENCH_HELLO" \
		    timeout -s TERM "$lat_limit" "$dir/bench/start-latency" \
		    "$starts" >/tmp/lat.out 2>&1 </dev/null
		line=$(grep median /tmp/lat.out)
		if [ -n "$line" ]; then
			say "$label round $round: $line"
			echo "lat $label $round $line" >>"$res"
		else
			ok=0
			say "$label round $round: no figure within $lat_limit s:"
			tail -n 20 /tmp/lat.out | sed 's/^/#   /'
		fi
	done
	order=$rev
done

: >/tmp/qemu.log
say "qemu -M pc: booting the same guest"
qemu-system-x86_64 -enable-kvm -M pc -cpu host -m 32 -nodefaults \
    -display none -monitor none -serial file:/tmp/qemu.log \
    -kernel "$BENCH_HELLO" 2>/tmp/qemu.err &
qemu=$!
wait_for /tmp/qemu.log "hello: halting" 120 ||
    { ok=0; say "qemu: $(tail -c 300 /tmp/qemu.log) $(cat /tmp/qemu.err)"; }
sleep 2
idle_measure qemu "-M pc" "$qemu"
stop_pid "$qemu"

say ""
say "idle (halted guest), ${secs} s windows: wake-ups over an unstraced"
say "window, system calls over the next one under strace -c -f"
awk '$1 != "lat" {
	p = $2 == "-M" ? "-M pc" : $2; c = $2 == "-M" ? $4 : $3
	wk = $2 == "-M" ? $5 : $4
	printf "# %-24s %-12s %9s %9s\n", $1, p, c, wk }
BEGIN { printf "# %-24s %-12s %9s %9s\n", "build", "process", "syscalls",
    "wake-ups" }' "$res"
say ""
say "vm.start to first serial byte, $starts starts a round (times inflated"
say "by the emulation: compare the builds with each other only)"
awk '$1 == "lat" {
	min = $0; sub(/.*min /, "", min); sub(/ ms.*/, "", min)
	med = $0; sub(/.*median /, "", med); sub(/ ms.*/, "", med)
	max = $0; sub(/.*max /, "", max); sub(/ ms.*/, "", max)
	printf "# %-24s round %s: min %8s  median %8s  max %8s ms\n",
	    $2, $3, min, med, max }' "$res"
[ $ok = 1 ] && echo "ok 1 - every build and QEMU ran" ||
    echo "not ok 1 - something did not run (see above)"
echo "1..1"
