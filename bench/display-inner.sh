#!/bin/sh
# Runs directly or inside the nested test host (see display.sh): the fb test guest
# with a display under vmmd, then under QEMU (-vnc, the standard VGA,
# which the guest finds through fbaddr=), in three cases:
#   (a) no VNC client, static screen
#   (b) one client (vnc-watch), static screen
#   (c) one client, the guest redrawing a moving bar every 20 ms (anim)
# For each: wake-ups of all the VMM's processes over one window, then
# their system calls over a second one under strace -c -f; the client's
# updates and bytes over each window.  Then the worker's memory.
# Prints TAP comments and one test point, for run.sh.
set -u
. "$(dirname "$0")/nested-lib.sh"

dir=${BENCH_DIR:-/tmp}
where=${BENCH_WHERE:-the nested test host}
# QEMU's -cpu host on a software KVM backend needs this one off.
qemu_cpu=host
grep -qwE 'vmx|svm' /proc/cpuinfo || qemu_cpu=host,-arch-capabilities
secs=${VMMD_BENCH_SECONDS:-10}
settle=${VMMD_BENCH_SETTLE:-3}
w=1024 h=768
mib=64
fb=${BENCH_FB:?}
watch=${BENCH_WATCH:?}
res=$dir/display-results
: >"$res"
: >$dir/memory.txt
ok=1

say "display: fb guest ${w}x${h}, $mib MiB, ${secs} s windows, $(nproc) CPUs, on $where"

# The client's counters at each mark: vnc-watch prints a line on SIGUSR1.
# watch_start PORT [PASSWORD-FILE]
watch_pid=
watch_start() {
	: >$dir/watch.out
	"$watch" ${2:+-p "$2"} 127.0.0.1 "$1" $((settle + 2 * secs + 60)) \
	    >$dir/watch.out 2>$dir/watch.err &
	watch_pid=$!
	sleep "$settle"
	kill -0 "$watch_pid" 2>/dev/null ||
	    { ok=0; say "vnc-watch: $(cat $dir/watch.err)"; }
}
watch_mark() {
	[ -n "$watch_pid" ] && kill -USR1 "$watch_pid" 2>/dev/null
	return 0
}
watch_stop() {
	[ -n "$watch_pid" ] || return 0
	sleep 0.5
	kill "$watch_pid" 2>/dev/null
	wait "$watch_pid" 2>/dev/null
	watch_pid=
}
# watch_field N KEY: KEY of the Nth mark's line.
watch_field() {
	sed -n "$1p" $dir/watch.out | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# The display's counters in vm.info (vmmd only).
dstats() {
	[ -n "${ctl:-}" ] || return 0
	$ctl -j info "$1" 2>/dev/null | tr -d ' \n' |
	    grep -o '"display":{[^}]*}' >"$2"
}

# window VMM CASE VMNAME PID...: one case, both windows, one result line:
#   VMM CASE syscalls wakeups updates bytes updates_straced
window() {
	vmm=$1 case=$2 vm=$3 client=$watch_pid
	shift 3
	rm -f $dir/ds0 $dir/ds1
	dstats "$vm" $dir/ds0
	watch_mark
	w0=$(wakeups "$@")
	sleep "$secs"
	w1=$(wakeups "$@")
	watch_mark
	dstats "$vm" $dir/ds1
	calls=$(syscalls "$secs" $dir/st "$@")
	watch_mark
	watch_stop
	upd=- bytes=- upd2=-
	if [ -n "$client" ] && [ -s $dir/watch.out ]; then
		u0=$(watch_field 1 updates) u1=$(watch_field 2 updates)
		u2=$(watch_field 3 updates)
		b0=$(watch_field 1 bytes) b1=$(watch_field 2 bytes)
		[ -n "$u1" ] && upd=$((u1 - u0)) && bytes=$((b1 - b0))
		[ -n "$u2" ] && upd2=$((u2 - u1))
	fi
	echo "$vmm $case $calls $((w1 - w0)) $upd $bytes $upd2" >>"$res"
	say "$vmm $case: $calls system calls, $((w1 - w0)) wake-ups," \
	    "client: $upd updates, $bytes bytes"
	top_syscalls $dir/st 5
	if [ -s $dir/ds1 ]; then
		say "      display counters over the first window:"
		for k in refreshes loop_wakeups bytes_sent dirty_tiles updates; do
			a=$(json_num "$k" <$dir/ds0) b=$(json_num "$k" <$dir/ds1)
			say "        $k $((${b:-0} - ${a:-0}))"
		done
		say "        $(sed 's/.*"refresh_timer"/refresh_timer/;
		    s/}$//' $dir/ds1)"
	fi
}

# memory LABEL PID: PSS (smaps_rollup) and private memory of the worker,
# and what of each the guest RAM and the framebuffer (their mappings, of
# exactly their sizes, in smaps) take.  PSS counts a share of the shared
# libraries, so it moves with who else maps them (the client); private
# memory does not.
memory() {
	label=$1
	set -- $(awk -v ram=$((mib * 1024)) -v fbk=$((w * h * 4 / 1024)) '
	    FILENAME ~ /rollup/ {
		if ($1 == "Pss:") pss = $2
		if ($1 ~ /^Private_(Clean|Dirty):/) priv += $2
		next
	    }
	    /^Size:/ { r = ($2 == ram); f = ($2 == fbk) }
	    /^Pss:/ { if (r) gp += $2; if (f) fp += $2 }
	    /^Private_(Clean|Dirty):/ { if (r) gv += $2; if (f) fv += $2 }
	    END { printf "%d %d %d %d %d %d\n", pss, gp, fp, priv, gv, fv }' \
	    "/proc/$2/smaps_rollup" "/proc/$2/smaps")
	say "$label: worker PSS $1 KiB = guest RAM $2 + framebuffer $3 +" \
	    "$(($1 - $2 - $3)) KiB beyond; private $4 KiB = $5 + $6 +" \
	    "$(($4 - $5 - $6)) KiB beyond" | tee -a $dir/memory.txt
}

# ---- vmmd ----
"$VMMD_BIN" -f -s $dir/d/control.sock -d $dir/d -g "$VMMD_GUEST_DEMO" \
    2>$dir/vmmd.log &
sup=$!
wait_socket $dir/d/control.sock 20 || { ok=0; say "vmmd: no socket"; }
ctl="$VMCTL_BIN -s $dir/d/control.sock"

# vmmd_guest NAME CMDLINE-EXTRA WAIT-TEXT: sets worker, port.
vmmd_guest() {
	$ctl create "$1" --kernel "$fb" --cmdline "fb=${w}x$h $2" \
	    --memory "$mib" --vnc auto --display "${w}x$h" >/dev/null
	$ctl start "$1" >/dev/null
	wait_for "$dir/d/console/$1.log" "$3" 60 ||
	    { ok=0; say "vmmd $1: $(tail -c 300 $dir/d/console/$1.log)"; }
	worker=$($ctl -j info "$1" | json_num pid)
	port=$($ctl -j display "$1" | json_num port)
	# The password made at the start, which vmctl display prints.
	$ctl display "$1" | sed -n 's/^password: //p' >$dir/vnc-pw
	sleep "$settle"
}

vmmd_guest still "" "fb: drawn"
window vmmd a still "$sup" "$worker"
memory "vmmd, no client" "$worker"
watch_start "$port" $dir/vnc-pw
window vmmd b still "$sup" "$worker"
watch_start "$port" $dir/vnc-pw
sleep 1
memory "vmmd, one client" "$worker"
watch_stop
$ctl stop --force still >/dev/null

vmmd_guest anim anim "fb: anim every"
watch_start "$port" $dir/vnc-pw
window vmmd c anim "$sup" "$worker"
$ctl stop --force anim >/dev/null
stop_pid "$sup"
ctl=

# ---- QEMU ----
# qemu_guest CMDLINE-EXTRA WAIT-TEXT: sets qemu.
qemu_guest() {
	: >$dir/qemu.log
	qemu-system-x86_64 -enable-kvm -M pc -cpu "$qemu_cpu" -m "$mib" -nodefaults \
	    -device VGA -display none -monitor none -vnc 127.0.0.1:1 \
	    -serial file:$dir/qemu.log -kernel "$fb" \
	    -append "fb=${w}x$h fbaddr=0xfd000000 $1" 2>$dir/qemu.err &
	qemu=$!
	wait_for $dir/qemu.log "$2" 90 ||
	    { ok=0; say "qemu: $(tail -c 300 $dir/qemu.log) $(cat $dir/qemu.err)"; }
	sleep "$settle"
}

qemu_guest "" "fb: drawn"
window qemu a - "$qemu"
watch_start 5901
window qemu b - "$qemu"
stop_pid "$qemu"

qemu_guest anim "fb: anim every"
watch_start 5901
window qemu c - "$qemu"
stop_pid "$qemu"

# ---- the table ----
say ""
say "display, ${secs} s windows: wake-ups, updates and bytes over an"
say "unstraced window; system calls over the next one under strace -c -f;"
say "sys/upd: system calls per update received in the straced window."
awk -v secs="$secs" '
function ratio(x, y) {
	if (x == "-" || y == "-") return "-"
	if (y == 0) return x == 0 ? "0/0" : x "/0"
	return sprintf("%.2f", x / y)
}
function per(c, u) { return (u == "-" || u == 0) ? "-" : sprintf("%.1f", c / u) }
{ k = $1 " " $2; sc[k] = $3; wk[k] = $4; up[k] = $5; by[k] = $6
  spu[k] = per($3, $7) }
END {
	name["a"] = "(a) no client"
	name["b"] = "(b) client, static"
	name["c"] = "(c) client, moving bar"
	printf "# %-6s %-24s %9s %9s %8s %11s %8s\n", "VMM", "case",
	    "syscalls", "wake-ups", "updates", "bytes", "sys/upd"
	n = split("a b c", cs, " ")
	for (i = 1; i <= n; i++) {
		c = cs[i]
		for (j = 1; j <= 2; j++) {
			v = j == 1 ? "vmmd" : "qemu"; k = v " " c
			printf "# %-6s %-24s %9s %9s %8s %11s %8s\n", v,
			    name[c], sc[k], wk[k], up[k], by[k], spu[k]
		}
		a = "vmmd " c; b = "qemu " c
		printf "# %-6s %-24s %9s %9s %8s %11s %8s\n", "ratio",
		    "vmmd/qemu", ratio(sc[a], sc[b]), ratio(wk[a], wk[b]),
		    ratio(up[a], up[b]), ratio(by[a], by[b]),
		    ratio(spu[a], spu[b])
	}
}' "$res"
say "memory (PSS, smaps_rollup; $mib MiB guest RAM, ${w}x$h framebuffer):"
cat $dir/memory.txt
[ $ok = 1 ] && echo "ok 1 - both VMMs ran the three cases" ||
    echo "not ok 1 - something did not run (see above)"
echo "1..1"
