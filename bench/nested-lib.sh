# Sourced by the inner scripts that bench/nested-host.sh runs inside the
# nested test host (display-inner.sh, idle-kvm-inner.sh): busybox sh,
# strace, QEMU.  Figures come out as TAP comments.

say() { echo "# $*"; }

# VNC servers and viewers talk over loopback, which the test host's
# init leaves down.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null

# wait_for FILE TEXT SECONDS: until FILE holds TEXT; false on timeout.
wait_for() {
	i=0
	while [ $i -lt "$3" ]; do
		tr -d '\r' 2>/dev/null <"$1" | grep -q "$2" && return 0
		sleep 1; i=$((i + 1))
	done
	return 1
}

# wait_socket PATH SECONDS
wait_socket() {
	i=0
	while [ ! -S "$1" ] && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1; i=$((i + 1))
	done
	[ -S "$1" ]
}

# stop_pid PID: TERM, then KILL if it is still there 10 s later; reaped.
stop_pid() {
	kill "$1" 2>/dev/null
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		say "pid $1 ($(tr '\0' ' ' </proc/$1/cmdline | cut -c1-60)):" \
		    "$(grep State: /proc/$1/status) after SIGTERM; SIGKILL"
		kill -9 "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
}

# wakeups PID...: voluntary context switches of all their threads.
wakeups() { wakeups_but "" "$@"; }

# wakeups_but ERE PID...: the same, but for the threads whose name
# matches the extended regular expression ERE (none when empty).
wakeups_but() {
	wb_skip=$1
	shift
	n=0
	for p in "$@"; do
		for t in /proc/"$p"/task/*; do
			[ -n "$wb_skip" ] && cat "$t"/comm 2>/dev/null |
			    grep -qE "$wb_skip" && continue
			v=$(awk '/^voluntary_ctxt_switches/ { print $2 }' \
			    "$t"/status 2>/dev/null)
			n=$((n + ${v:-0}))
		done
	done
	echo "$n"
}

# syscalls SECONDS OUT PID...: system calls of the processes (all
# threads, and children they start) over SECONDS under strace -c -f;
# the table stays in OUT (empty when there were none), strace's messages
# in OUT.err.
syscalls() {
	s=$1 out=$2
	shift 2
	args=
	for p in "$@"; do args="$args -p $p"; done
	rm -f "$out"
	timeout -s INT "$s" strace -c -f -o "$out" $args 2>"$out.err" || true
	# Columns: % time, seconds, usecs/call, calls, [errors], syscall.
	c=$(awk '$NF == "total" { print $4 }' "$out" 2>/dev/null)
	echo "${c:-0}"
}

# top_syscalls OUT N: the N most frequent, as comments.
top_syscalls() {
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" { print $4, $NF }' "$1" \
	    2>/dev/null | sort -rn | head -n "$2" |
	    while read -r c n; do say "      $n $c"; done
}

# json_num KEY <JSON: the number under KEY (its last occurrence).
json_num() {
	tr -d ' \n' | sed -n "s/.*\"$1\":\([0-9-]*\).*/\1/p"
}
