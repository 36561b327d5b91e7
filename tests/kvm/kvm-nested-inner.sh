#!/bin/sh
# Runs inside the nested test host that kvm-nested.sh boots (through
# tests/testhost/boot.sh): every program of the kvm suite, one after the
# other, as one TAP stream on stdout.
#
#   kvm-nested-inner.sh [TEST...]     (none: all of VMMD_KVM_TESTS)
#
# Environment (from /vmmd/env, see tests/testhost/build-host.sh):
#   VMMD_KVM_TESTS         "name=timeout ...": the programs
#                          (/vmmd/kvm-test-NAME) in meson's order, with
#                          meson's timeout in seconds
#   VMMD_TEST_TIME_SCALE   each program's timeout is meson's times this
#                          (the harness's own waits are not scaled: no
#                          check needed it, see tests/testhost/README.md)
#   VMMD_BIN, VMMD_WORKER_BIN, VMCTL_BIN, VMMD_GUEST_*: for the programs
#
# Each program's test points are renumbered and prefixed with its name
# ("ok 12 - console: ..."), its comments kept; a program that skips as a
# whole ("1..0 # SKIP", exit 0 or 77) is one skipped point; one that
# bails out, crashes, times out, or ends with fewer points than it
# planned adds a failing point.  Times printed here are emulated times: only counts compare
# with the native suite.
set -u

scale=${VMMD_TEST_TIME_SCALE:-1}
case $scale in
''|*[!0-9]*|0) echo "Bail out! VMMD_TEST_TIME_SCALE=$scale: a whole number" \
	"of at least 1"
	exit 1 ;;
esac
# The programs learn from it that they run emulated (test-rtc.c).
VMMD_TEST_TIME_SCALE=$scale
export VMMD_TEST_TIME_SCALE
tests=${VMMD_KVM_TESTS:?VMMD_KVM_TESTS is not set}
[ $# -gt 0 ] && only=" $* " || only=
work=$(mktemp -d /tmp/kvm-nested-XXXXXX)
n=0
failed=0

echo "# kvm suite in the nested test host: time scale $scale"
for t in $tests; do
	name=${t%%=*}
	limit=${t#*=}
	case $only in
	""|*" $name "*) ;;
	*)	continue ;;
	esac
	prog=/vmmd/kvm-test-$name
	limit=$((limit * scale))
	start=$(cut -d' ' -f1 /proc/uptime)
	echo "# ---- $name (timeout $limit s) ----"
	# The program's status through a file: the pipe's status is awk's.
	{
		timeout -s TERM "$limit" "$prog" 2>&1
		echo $? >"$work/status"
	} | awk -v n="$n" -v name="$name" -v out="$work/count" '
	# TAP points renumbered and prefixed; the plan counted, not passed
	# on; whatever else (stderr, a sanitizer report) as a comment.
	function put(s) { print s; fflush() }
	/^(not )?ok( |$)/ {
		not = ($0 ~ /^not /)
		rest = $0
		sub(/^(not )?ok *[0-9]* *-? */, "", rest)
		n++; seen++
		if (not) failed++
		if (rest ~ /^#/)
			put((not ? "not ok " : "ok ") n " - " name " " rest)
		else
			put((not ? "not ok " : "ok ") n " - " name ": " rest)
		next
	}
	/^1\.\.[0-9]+/ {
		plan = $0
		sub(/^1\.\./, "", plan)
		skipall = $0
		if (plan + 0 == 0) { sub(/^1\.\.0 *#? *([Ss][Kk][Ii][Pp])? */, "", skipall) }
		else skipall = ""
		plan = plan + 0	# "0 # SKIP why": the count alone
		next
	}
	/^Bail out!/ { bail = $0; put("# " $0); next }
	/^#/ { put($0); next }
	{ put("# " name "| " $0) }
	END {
		printf "%d %d %d %s\037%s\037%s\n", n, seen, failed, \
		    (plan == "" ? "-" : plan), bail, skipall >out
	}'
	status=$(cat "$work/status" 2>/dev/null || echo lost)
	# Fields apart by US (\037), not a tab: IFS white space would fold
	# an empty bail into the skip reason that follows it.
	IFS=$(printf '\037') read -r counts bail skipall <"$work/count"
	set -- $counts
	n=$1 seen=$2 bad=$3 plan=$4
	end=$(cut -d' ' -f1 /proc/uptime)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
	why=
	if [ "$seen" = 0 ] && [ -z "$bail" ] && { [ "$status" = 77 ] ||
	    { [ "$status" = 0 ] && [ "$plan" = 0 ]; }; }; then
		n=$((n + 1))
		echo "ok $n - $name # SKIP ${skipall:-exit 77}"
		echo "# $name: skipped in the test host ($secs s)"
		continue
	fi
	case $status in
	0)	;;
	124|143) why="timed out after $limit s" ;;
	lost)	why="no exit status" ;;
	*)	if [ "$status" -gt 128 ]; then
			why="killed by signal $((status - 128))"
		elif [ "$bad" = 0 ]; then
			why="exit status $status"
		fi ;;
	esac
	[ -n "$bail" ] && why="${why:+$why, }$bail"
	if [ -z "$why" ] && [ "$plan" != "$seen" ]; then
		why="$seen test points of the $plan planned"
	fi
	if [ -n "$why" ]; then
		n=$((n + 1))
		bad=$((bad + 1))
		echo "not ok $n - $name: $why"
	fi
	[ "$bad" = 0 ] || failed=$((failed + 1))
	echo "# $name: $seen test points, $bad failed, $secs s (emulated)"
done
rm -rf "$work"
echo "1..$n"
[ "$failed" = 0 ]
