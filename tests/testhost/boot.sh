#!/bin/sh
# Boots the nested test host that every suite uses where this host has no
# /dev/kvm able to run what it needs, runs a program inside and prints its
# TAP (see README.md here).
#
#   boot.sh [STEP...]         (the linux suite's run.sh, the kvm suite's
#                             tests/kvm/kvm-nested.sh, bench/ call it)
#
# The test host runs under QEMU's emulation with emulated SVM (no nested
# paging); its initramfs (build-host.sh) holds what it runs, its /init
# (host-init.sh) runs VMMD_LINUX_SCENARIOS there with the STEPs, and the
# TAP comes back on the test host's second serial port.  One boot serves
# all the steps; should the test host itself fail (its kernel
# triple-faulting, or it hanging), another boot runs them again (up to
# three in all) and the last boot's TAP is the verdict.
#
# Environment:
#   VMMD_LINUX_GUEST      the reference guest directory (build-guest.sh of
#                         the linux suite): the test host's kernel,
#                         busybox and KVM modules come from it; skipped
#                         when it was not built
#   VMMD_LINUX_TIMEOUT    seconds the test host may run (default 1380)
#   VMMD_LINUX_WORKDIR    where the test host's initramfs and logs go
#                         (default: a new directory under /tmp)
#   VMMD_LINUX_QEMU       default qemu-system-x86_64
#   VMMD_LINUX_HOST_MIB   the test host's memory (default 2048)
#   VMMD_LINUX_STREAM_KIB size of the console stream (default 1024)
#   VMMD_LINUX_HOST_CPU   the test host's CPU (default EPYC,+svm,-npt: see
#                         README.md here)
#   VMMD_LINUX_HOST_APPEND  more of the test host kernel's command line
#   VMMD_LINUX_TCG_THREADS  QEMU's TCG threading, multi (default) or single
#   VMMD_LINUX_MAX_SILENCE  seconds without TAP after which the test host
#                         counts as hung (default 300)
#   VMMD_LINUX_BOOTS      boots of the test host at most, each after the
#                         one before it hung or crashed (default 3)
#   VMMD_BIN, VMMD_WORKER_BIN, VMCTL_BIN, VMMD_GUEST_*,
#   VMMD_LINUX_SCENARIOS  the programs under test, the last one what the
#                         test host runs (see build-host.sh, which also
#                         reads VMMD_HOST_PROGRAMS, VMMD_HOST_GUEST,
#                         VMMD_HOST_PASS and VMMD_HOST_EXTRA)
set -u

# What the test host's own kernel prints when it dies.
host_oops='BUG: |Oops:|Kernel panic|stack guard page'

here=$(cd "$(dirname "$0")" && pwd)

# A skip is the plan "1..0 # SKIP": meson counts a TAP test's non-zero
# exit status, 77 included, as an error.
skip() { echo "1..0 # SKIP $*"; exit 0; }

guest=${VMMD_LINUX_GUEST:-}
if [ -z "$guest" ] || [ ! -f "$guest/vmlinuz" ] ||
    [ ! -f "$guest/initramfs.cpio.gz" ]; then
	skip "no reference guest in '$guest': tests/linux/build-guest.sh" \
	    "makes it (quickstart.sh test runs it)"
fi

qemu=${VMMD_LINUX_QEMU:-qemu-system-x86_64}
limit=${VMMD_LINUX_TIMEOUT:-1380}
tcg_threads=${VMMD_LINUX_TCG_THREADS:-multi}
max_silence=${VMMD_LINUX_MAX_SILENCE:-300}
boots=${VMMD_LINUX_BOOTS:-3}
host_cpu=${VMMD_LINUX_HOST_CPU:-EPYC,+svm,-npt}
command -v "$qemu" >/dev/null 2>&1 ||
    skip "$qemu is not installed (apt-get install qemu-system-x86)"
command -v timeout >/dev/null 2>&1 || skip "timeout(1) is missing"

work=${VMMD_LINUX_WORKDIR:-}
[ -n "$work" ] || work=$(mktemp -d /tmp/vmmd-linux-XXXXXX)
mkdir -p "$work"
cpio=$work/test-host.cpio
console=$work/test-host-console.log
raw=$work/test-host-tap.raw
tap=$work/test-host-tap.log
rm -f "$cpio" "$console" "$raw" "$tap" "$work"/*.1.log

start=$(date +%s)
if ! sh "$here/build-host.sh" "$cpio" >"$work/build-host.log" 2>&1; then
	echo "not ok 1 - building the test host's initramfs"
	sed 's/^/# /' "$work/build-host.log"
	echo "1..1"
	exit 1
fi

# loglevel=5, not quiet: a soft lockup or an RCU stall of the test host's
# kernel comes with its registers and backtrace (KERN_DEFAULT) then.
# nokaslr: the RIPs QEMU's monitor shows of a hung test host are those of
# the kernel's System.map (Debian's linux-image-*-dbg package has it).
append="console=ttyS0 panic=-1 loglevel=5 nokaslr${VMMD_LINUX_HOST_APPEND:+ $VMMD_LINUX_HOST_APPEND}"
[ $# -gt 0 ] && append="$append vmmd_steps=$(echo "$*" | tr ' ' ',')"

# Complete lines of the TAP stream, as they come, on stderr: progress
# for whoever watches.  The verdict is the last boot's TAP, on stdout.
show_new() {
	[ -f "$raw" ] || return 0
	tr -d '\r' <"$raw" >"$tap"
	n=$(wc -l <"$tap")
	[ "$n" -gt "$shown" ] || return 0
	sed -n "$((shown + 1)),${n}p" "$tap" | sed 's/^/test host| /' >&2
	shown=$n
}

# A line per thread of QEMU: name, CPU time (user+system, in clock ticks).
qemu_threads() {
	for t in /proc/"$1"/task/*; do
		echo "$(cat "$t/comm" 2>/dev/null)" \
		    "$(sed 's/.*) //' "$t/stat" 2>/dev/null |
		    awk '{ print $12 + $13 }')"
	done
}

# Asks QEMU's monitor (-monitor pipe:) and prints its answer.
qemu_monitor() {
	timeout 5 cat "$work/monitor.out" >"$work/monitor.reply" 2>/dev/null &
	reader=$!
	timeout 5 sh -c 'echo "$1" >"$2"' _ "$1" "$work/monitor.in"
	wait "$reader"
	cat "$work/monitor.reply"
}

# The test host went silent: before QEMU is killed, what it was doing.
# Its threads' CPU time over 5 s tells a test host that spins (a TCG
# thread burning a core) from one that waits (no time at all); its
# monitor's registers, twice, say where each CPU of the test host is
# (RIP, flags: IF is interrupts on; HLT=1 is halted), and a monitor that
# does not answer means QEMU's own main loop is stuck.  The heartbeat the
# test host writes on its console (host-init.sh) says whether it still
# ran, whether its TAP port still transmitted, and where the scenarios'
# processes waited.
show_silence() {
	echo "---- the test host was silent for $silent s: QEMU beneath it ----"
	qemu_pid=$(cat "$work/qemu.pid" 2>/dev/null)
	if [ -z "$qemu_pid" ] || [ ! -d "/proc/$qemu_pid" ]; then
		echo "QEMU's process is gone"
	else
		qemu_threads "$qemu_pid" >"$work/threads.0"
		sleep 5
		qemu_threads "$qemu_pid" >"$work/threads.1"
		echo "QEMU's threads, CPU ticks used in 5 s" \
		    "(of $(getconf CLK_TCK) a second):"
		paste -d ' ' "$work/threads.0" "$work/threads.1" |
		    awk '{ n = NF / 2; name = $1;
			for (i = 2; i < n; i++) name = name " " $i;
			print "  " name ": " $NF - $n }'
		for k in 1 2; do
			echo "QEMU's monitor, info registers -a ($k):"
			qemu_monitor "info registers -a" |
			    grep -E '^CPU#|^RIP=' | sed 's/^/  /'
			[ $k = 2 ] || sleep 1
		done
		[ -s "$work/monitor.reply" ] ||
		    echo "  (no answer: QEMU's main loop is stuck)"
		# SysRq-L through the test host's keyboard: every CPU's
		# backtrace, by NMI, even with its interrupts off.
		qemu_monitor "sendkey alt-sysrq-l" >/dev/null
		sleep 10
	fi
	echo "---- the test host's heartbeat, its last lines ----"
	grep 'vmmd-heartbeat' "$console" 2>/dev/null | tail -n 6 |
	    tr -d '\r'
	echo "---- the tail of the test host's console ----"
	grep -v 'vmmd-heartbeat' "$console" 2>/dev/null | tail -n 150 |
	    tr -d '\r'
}

# One boot of the test host: sets status, tests, plan and reason.
boot_host() {
	rm -f "$console" "$raw" "$tap" "$work/qemu-debug.log" \
	    "$work/silence.log" "$work/qemu.pid" "$work/monitor.in" \
	    "$work/monitor.out"
	# The monitor, for show_silence only: QEMU holds both ends open.
	mkfifo "$work/monitor.in" "$work/monitor.out"
	echo "# booting the test host: $qemu (TCG, emulated SVM), logs in $work"
	# ttyS0: the test host's console; ttyS1: the TAP stream, nothing else.
	timeout -k 10 "$limit" "$qemu" -accel "tcg,thread=$tcg_threads" \
	    -cpu "$host_cpu" -smp 2 -m "${VMMD_LINUX_HOST_MIB:-2048}" -M q35 \
	    -nodefaults -display none -no-reboot \
	    -monitor "pipe:$work/monitor" -pidfile "$work/qemu.pid" \
	    -name testhost,debug-threads=on \
	    -serial "file:$console" -serial "file:$raw" \
	    -d guest_errors,cpu_reset -D "$work/qemu-debug.log" \
	    -kernel "$guest/vmlinuz" -initrd "$cpio" -append "$append" \
	    </dev/null >"$work/qemu.log" 2>&1 &
	qpid=$!
	trap 'kill "$qpid" 2>/dev/null; exit 1' INT TERM HUP
	shown=0
	silent=0
	last_size=-1
	moved=$(date +%s)
	while kill -0 "$qpid" 2>/dev/null; do
		show_new
		sleep 2
		# The scenarios say something at least every 30 s; a test
		# host silent for much longer has stopped making progress.
		# Wall-clock seconds: on a loaded machine a turn of this
		# loop takes well over its 2 s of sleep.
		size=$(wc -c <"$raw" 2>/dev/null || echo 0)
		if [ "$size" != "$last_size" ]; then
			last_size=$size
			moved=$(date +%s)
		fi
		silent=$(($(date +%s) - moved))
		if [ "$silent" -ge "$max_silence" ]; then
			show_silence >"$work/silence.log" 2>&1
			kill "$qpid" 2>/dev/null
			break
		fi
	done
	wait "$qpid"
	status=$?
	show_new
	# A last line without its newline.
	[ -f "$tap" ] && [ -n "$(tail -c 1 "$tap")" ] && echo >>"$tap"
	echo "# test host: $(($(date +%s) - start)) s from its build to its" \
	    "power-off (QEMU status $status)" >>"$tap"
	[ -s "$work/silence.log" ] && sed 's/^/# /' "$work/silence.log" >>"$tap"
	rm -f "$work/monitor.in" "$work/monitor.out" "$work/monitor.reply" \
	    "$work/threads.0" "$work/threads.1"

	rm -f "$raw"
	tests=0
	[ -f "$tap" ] && tests=$(grep -cE '^(not )?ok( |$)' "$tap")
	plan=
	[ -f "$tap" ] && plan=$(grep -E '^1\.\.[0-9]+' "$tap" | tail -n 1)
	crashed=no
	reason=
	case $status in
	0)	;;
	124|137) reason="timed out after $limit s" ;;
	*)	reason="QEMU exited with status $status" ;;
	esac
	if [ "$silent" -ge "$max_silence" ]; then
		reason="no output for $max_silence s: the test host hung"
		crashed=yes
	fi
	case $plan in
	"")	if [ -z "$reason" ]; then
			reason="it reset or stopped before the scenarios ended"
			if grep -q 'Triple fault' "$work/qemu-debug.log" \
			    2>/dev/null; then
				reason="$reason (QEMU logged a triple fault)"
				crashed=yes
			elif grep -Eq "$host_oops" "$console" 2>/dev/null; then
				# Its own kernel died (an oops in KVM's
				# entry under the emulation, seen): the
				# host's failure, not a guest's.
				reason="$reason (its kernel oopsed)"
				crashed=yes
			fi
		fi
		reason="no TAP plan came back: $reason" ;;
	"1..0"*) reason="the scenarios skipped inside the test host: $plan"
		plan= ;;
	*)	# The scenarios finished: their TAP says it all.
		[ -n "$reason" ] && echo "# test host: $reason after the plan"
		reason= ;;
	esac
}

# Failures of the emulation beneath the test host, not of what runs in
# it: the test host's own kernel triple-faulting or going silent.  Then
# the test host boots once more, up to VMMD_LINUX_BOOTS boots in all, and
# the last boot's TAP is the verdict; the earlier ones' are shown as
# comments.  Anything else counts at once: a
# guest failing inside a healthy test host fails the suite.
boot_host
boot=1		# (show_new has n)
while [ "$crashed" = yes ] && [ "$boot" -lt "$boots" ]; do
	cp "$tap" "$work/test-host-tap.$boot.log" 2>/dev/null
	cp "$console" "$work/test-host-console.$boot.log" 2>/dev/null
	cp "$work/qemu-debug.log" "$work/qemu-debug.$boot.log" 2>/dev/null
	echo "# ---- boot $boot of the test host: $reason; its TAP ----"
	sed "s/^/# $boot| /" "$work/test-host-tap.$boot.log"
	boot=$((boot + 1))
	echo "# ---- booting the test host again ($boot of at most $boots):" \
	    "this boot's TAP counts ----"
	boot_host
done

# What failed, once more at the very end of stderr: a CI log that keeps
# only a test's last lines shows the failures and what came before each,
# not just the stream's tail.  At most 8 failures, 12 lines before each.
recap() {
	[ -f "$tap" ] || return 0
	grep -nE '^(not ok|Bail out!)' "$tap" | head -n 8 | cut -d: -f1 |
	    while read -r at; do
		echo "# ---- recap: line $at of the test host's TAP and the" \
		    "lines before it ----"
		sed -n "$((at > 12 ? at - 12 : 1)),${at}p" "$tap"
	done | sed 's/^/test host| /' >&2
	grep '^# test host: .*power-off' "$tap" | sed 's/^/test host| /' >&2
}
trap recap EXIT

# A skip plan from inside means the scenarios found nothing to run on.
grep -v '^1\.\.0' "$tap" 2>/dev/null
oops='BUG:|Oops:|Kernel panic|general protection fault|WARNING: CPU'
if [ -n "$reason" ]; then
	echo "not ok $((tests + 1)) - test host: $reason"
	# A crash of the test host's own kernel: its first report.
	if [ -f "$console" ] && grep -qE "$oops" "$console"; then
		echo "# ---- the test host's kernel reported ----"
		grep -m 1 -A 40 -E "$oops" "$console" | tr -d '\r' |
		    sed 's/^/# | /'
	fi
	echo "# ---- tail of the test host's console ($console) ----"
	[ -f "$console" ] && tail -n 80 "$console" | tr -d '\r' |
	    sed 's/^/# | /'
	sed 's/^/# qemu: /' "$work/qemu.log"
	echo "# QEMU's log of resets and guest errors: $work/qemu-debug.log"
	[ -n "$plan" ] || echo "1..$((tests + 1))"
	exit 1
fi
rm -f "$cpio"
[ "$status" = 0 ] || exit 1
if grep -qE '^(not ok|Bail out!)' "$tap"; then
	exit 1
fi
exit 0
