#!/bin/sh
# Runs inside the nested test host, or directly where /dev/kvm opens
# (see rtc.sh): the rtc test guest
# (tests/guests/rtc-guest.c, test=periodic, its handler reading register C as
# real guests do) under vmmd and under QEMU -M pc with -rtc
# driftfix=slew.
#   steady:     the periodic interrupt for BENCH_SECONDS of the guest's
#               clock, no stall: wake-ups (voluntary context switches) of
#               every thread and of the main loop's thread over one run,
#               system calls (strace -c -f) over a second run; each per
#               tick the guest counted in that run.
#   coalescing: 3 s with interrupts masked for 0.5 s: ticks lost (3 s of
#               ticks due by the guest's clock, less those it counted),
#               the catch-up after the stall (the guest's clock, from the
#               unmasking to the last reinjected tick), the ticks in the
#               20 ms after it; vmmd with 32 slices, 8 slices and
#               discard, QEMU with driftfix=slew and none.
#   timers:     how late vmmd's device timers fired in the steady run
#               (vm.info's late_hist: p50 and p99 as the bucket they fall
#               in, and the worst).
# Prints TAP comments and one test point, for run.sh.
set -u
. "$(dirname "$0")/nested-lib.sh"

hz=${VMMD_BENCH_HZ:-32}
secs=${VMMD_BENCH_SECONDS:-10}
guest=${BENCH_RTC:?}
dir=${BENCH_DIR:-/tmp}
where=${BENCH_WHERE:-the nested test host}
res=$dir/rtc-results
# QEMU's -cpu host on a software KVM backend needs this one off.
qemu_cpu=host
grep -qwE 'vmx|svm' /proc/cpuinfo || qemu_cpu=host,-arch-capabilities
: >"$res"
ok=1

# wait_line FILE TEXT SECONDS: polls every 0.1 s (the windows start and
# end on the guest's lines: a coarser poll would blur them).
wait_line() {
	i=0
	while [ $i -lt $(($3 * 10)) ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1; i=$((i + 1))
	done
	say "no '$2' in $1 within $3 s: $(tail -c 300 "$1" 2>/dev/null)"
	ok=0
	return 1
}

# loop_wakeups PID: the main thread's voluntary context switches (the
# event loop of vmmd's worker and of QEMU).
loop_wakeups() {
	awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$1/status" \
	    2>/dev/null || echo 0
}

# guest_num LOG TEXT: the number before TEXT on the guest's lines.
guest_num() {
	tr -d '\r' <"$1" | sed -n "s/.*Hz: \([0-9][0-9]*\) $2.*/\1/p" |
	    tail -n 1
}

# --- the VMMs ------------------------------------------------------------

sock=$dir/rtc.sock state=$dir/rtc-state
"$VMMD_BIN" -f -s "$sock" -d "$state" -g "$VMMD_GUEST_DEMO" \
    2>"$dir/vmmd.log" &
sup=$!
wait_socket "$sock" 20 || { ok=0; say "vmmd: no socket"; }
ctl="$VMCTL_BIN -s $sock"
n=0

# vmmd_boot [vmctl create options]: boots the guest with the command line
# $c; sets log, pids (every process of the VMM), main (the one with the
# event loop) and stop.
vmmd_boot() {
	n=$((n + 1))
	$ctl create "r$n" --kernel "$guest" --memory 32 --cmdline "$c" \
	    "$@" >/dev/null && $ctl start "r$n" >/dev/null ||
	    { ok=0; say "vmmd: r$n did not start"; }
	log=$state/console/r$n.log
	main=$($ctl -j info "r$n" | json_num pid)
	pids="$sup $main"
	stop="$ctl stop --force r$n"
}

# qemu_boot DRIFTFIX: the same, for QEMU.
qemu_boot() {
	n=$((n + 1))
	log=$dir/qemu$n.log
	: >"$log"
	qemu-system-x86_64 -enable-kvm -M pc -cpu "$qemu_cpu" -m 32 \
	    -nodefaults -display none -monitor none -serial "file:$log" \
	    -rtc "driftfix=$1" -kernel "$guest" -append "$c" \
	    2>"$dir/qemu$n.err" &
	main=$!
	pids=$main
	stop="stop_pid $main"
}

# --- steady: the periodic interrupt without a stall ---------------------

# steady LABEL BOOT...: two runs, one result line
#   steady LABEL ticks wakeups loop_wakeups ticks2 syscalls
steady() {
	label=$1
	shift
	c="test=periodic hz=$hz secs=$secs stall=0"
	"$@"
	wait_line "$log" "Hz: start" 180 || { $stop; return; }
	w0=$(wakeups $pids) l0=$(loop_wakeups "$main")
	wait_line "$log" "ticks in" $((secs * 3 + 30))
	w1=$(wakeups $pids) l1=$(loop_wakeups "$main")
	t1=$(guest_num "$log" "ticks in")
	case $label in
	vmmd)	$ctl -j info "r$n" | tr -d ' \n' |
		    sed -n 's/.*"late_max_ns":\([0-9]*\),"late_hist":\[\([0-9,]*\)\].*/\1 \2/p' |
		    tr ',' ' ' >"$dir/late" ;;
	esac
	$stop

	"$@"
	wait_line "$log" "Hz: start" 180 || { $stop; return; }
	args=
	for p in $pids; do args="$args -p $p"; done
	strace -c -f -o $dir/st $args 2>$dir/st.err &
	spid=$!
	wait_line "$log" "ticks in" $((secs * 3 + 30))
	kill -INT "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	calls=$(awk '$NF == "total" { print $4 }' $dir/st 2>/dev/null)
	t2=$(guest_num "$log" "ticks in")
	$stop
	echo "steady $label ${t1:-0} $((w1 - w0)) $((l1 - l0)) ${t2:-0}" \
	    "${calls:-0}" >>"$res"
	say "$label: ${t1:-?} ticks, $((w1 - w0)) wake-ups" \
	    "($((l1 - l0)) of the main loop); under strace ${t2:-?} ticks," \
	    "${calls:-?} system calls:"
	top_syscalls $dir/st 6
}

# --- coalescing: 0.5 s with interrupts masked --------------------------

# stall LABEL BOOT...: one run, one result line
#   stall LABEL total caught_us in20 coalesced reinjected dropped
stall() {
	label=$1
	shift
	c="test=periodic hz=$hz"
	"$@"
	wait_line "$log" "ticks in" 180
	total=$(guest_num "$log" "ticks in")
	at=$(guest_num "$log" "ticks at the end")
	a20=$(guest_num "$log" "ticks 20 ms after")
	caught=$(tr -d '\r' <"$log" |
	    sed -n 's/.*caught up \([0-9][0-9]*\) us.*/\1/p' | tail -n 1)
	co=- re=- dr=-
	case $label in
	vmmd*)	$ctl -j info "r$n" >$dir/info.json
		co=$(json_num ticks_coalesced <$dir/info.json)
		re=$(json_num ticks_reinjected <$dir/info.json)
		dr=$(json_num ticks_dropped <$dir/info.json) ;;
	esac
	$stop
	in20=$(( ${a20:-0} - ${at:-0} ))
	echo "stall $label ${total:-0} ${caught:--} $in20 $co $re $dr" >>"$res"
	say "$label: ${total:-?} ticks of $((3 * hz)), caught up after" \
	    "${caught:-?} us, $in20 ticks in the 20 ms" \
	    "after the stall; device: coalesced $co reinjected $re dropped $dr"
}

say "rtc: the rtc test guest, periodic interrupt at $hz Hz, $(nproc) CPUs," \
    "in $where"
say "steady: $secs s of the guest's clock, no stall"
steady vmmd vmmd_boot
steady qemu qemu_boot slew
say "coalescing: 3 s, interrupts masked from 1.25 s to 1.75 s"
stall vmmd-slew-32 vmmd_boot --lost-ticks slew
stall vmmd-slew-8 vmmd_boot --lost-ticks slew --rtc-slices 8
stall vmmd-discard vmmd_boot --lost-ticks discard
stall qemu-slew qemu_boot slew
stall qemu-none qemu_boot none
stop_pid "$sup"

say ""
say "RTC periodic interrupt, $hz Hz, in $where.  In the nested test host"
say "counts are meaningful; times (the catch-up) are an emulated machine's."
say "Wake-ups: voluntary context switches of every thread of the VMM's"
say "processes (main: the event loop's thread), system calls under"
say "strace -c -f in a second run; each per tick the guest counted."
awk -v secs="$secs" '
function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
$1 == "steady" {
	t[$2] = $3; w[$2] = $4; l[$2] = $5; t2[$2] = $6; c[$2] = $7
}
END {
	printf "# %-22s %7s %9s %7s %9s %7s %9s %7s\n", "steady " secs " s",
	    "ticks", "wake-ups", "/tick", "main", "/tick", "syscalls", "/tick"
	for (k = 0; k < 2; k++) {
		v = k == 0 ? "vmmd" : "qemu"
		printf "# %-22s %7d %9d %7s %9d %7s %9d %7s\n", v, t[v], w[v],
		    r(w[v], t[v]), l[v], r(l[v], t[v]), c[v], r(c[v], t2[v])
	}
	printf "# %-22s %7s %9s %7s %9s %7s %9s %7s\n", "ratio vmmd/qemu",
	    r(t["vmmd"], t["qemu"]), "",
	    r(w["vmmd"] * t["qemu"], w["qemu"] * t["vmmd"]), "",
	    r(l["vmmd"] * t["qemu"], l["qemu"] * t["vmmd"]), "",
	    r(c["vmmd"] * t2["qemu"], c["qemu"] * t2["vmmd"])
}' "$res"
if [ -s "$dir/late" ]; then
	# max b0 .. b4: fires under 10 us, 100 us, 1 ms, 10 ms, more.
	read -r lmax b0 b1 b2 b3 b4 <"$dir/late"
	awk -v m="$lmax" -v b="$b0 $b1 $b2 $b3 $b4" 'BEGIN {
		split(b, h, " "); split("10 us|100 us|1 ms|10 ms|more", lim, "|")
		for (i = 1; i <= 5; i++) n += h[i]
		for (i = 1; i <= 5; i++) {
			c += h[i]
			if (!p50 && c >= n * 0.5) p50 = lim[i]
			if (!p99 && c >= n * 0.99) p99 = lim[i]
		}
		printf "# vmmd device timers, steady run: %d fires; p50 under %s, " \
		    "p99 under %s, worst %.0f us; late_hist %s\n", n, p50, p99,
		    m / 1000, b
	}'
fi
say ""
say "coalescing: 3 s at $hz Hz ($((3 * hz)) due by the guest's clock),"
say "0.5 s masked ($((hz / 2)) ticks); catch-up: from the unmasking to"
say "the last reinjected tick (the guest's clock)"
awk -v due=$((3 * hz)) '
$1 == "stall" {
	n++; lab[n] = $2; tot[n] = $3; cu[n] = $4; a20[n] = $5
	co[n] = $6; re[n] = $7; dr[n] = $8
	if ($2 == "vmmd-slew-32") ref = n
	if ($2 == "qemu-slew") qref = n
}
END {
	printf "# %-14s %6s %5s %11s %8s %9s %10s %7s\n", "VMM, policy",
	    "ticks", "lost", "catch-up us", "in 20ms", "coalesced",
	    "reinjected", "dropped"
	for (i = 1; i <= n; i++)
		printf "# %-14s %6d %5d %11s %8d %9s %10s %7s\n", lab[i],
		    tot[i], due - tot[i], cu[i], a20[i], co[i], re[i], dr[i]
	if (ref && qref && cu[qref] + 0 > 0)
		printf "# catch-up vmmd (32 slices) / qemu (slew): %.2f\n",
		    cu[ref] / cu[qref]
	for (i = 1; i <= n; i++)
		if (lab[i] == "vmmd-slew-8" && ref && cu[i] + 0 > 0)
			printf "# catch-up 32 slices / 8 slices: %.2f\n",
			    cu[ref] / cu[i]
}' "$res"
[ $ok = 1 ] && echo "ok 1 - every run of vmmd and QEMU finished" ||
    echo "not ok 1 - something did not run (see above)"
echo "1..1"
