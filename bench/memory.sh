#!/bin/sh
# Memory the VMM costs beyond its guests' RAM: proportional set size of
# the supervisor and of each worker, with the guest RAM mapping's share
# taken out.  Prints figures; asserts nothing.
#
#   bench/memory.sh BUILDDIR [GUEST] [MEMORY_MIB] [GUESTS] [DISPLAY]
#
# GUESTS idle guests (default 1) of MEMORY_MIB each (default 32) run the
# test guest GUEST (default demo); DISPLAY (WxH, say 1024x768) gives
# each a screen and a VNC server with no viewer.  PSS splits a shared
# page among the processes that map it, so the figures depend on what
# else runs: the supervisor's libraries (libsystemd and what it pulls)
# are shared with other services on a systemd host, not here.
set -eu

build=${1:?usage: bench/memory.sh BUILDDIR [GUEST] [MEMORY_MIB] [GUESTS] [DISPLAY]}
guest=${2:-demo}
mib=${3:-32}
count=${4:-1}
display=${5:-}
build=$(cd "$build" && pwd)
elf=$build/tests/guests/$guest.elf
# The demo guest is shipped: built in daemon/guest/.
[ "$guest" != demo ] || elf=$build/daemon/guest/demo.elf
[ -f "$elf" ] || { echo "no guest $elf" >&2; exit 1; }

tmp=$(mktemp -d)
vmmd_pid=
cleanup() {
	[ -n "$vmmd_pid" ] && kill -9 "$vmmd_pid" 2>/dev/null
	for p in $(cat "$tmp/worker-pids" 2>/dev/null); do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$build/daemon/vmmd" -f -s "$tmp/sock" -d "$tmp/state" -g "$elf" \
    2>"$tmp/vmmd.log" &
vmmd_pid=$!
i=0
while [ ! -S "$tmp/sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
ctl="$build/ctl/vmctl -s $tmp/sock"
set --
[ -z "$display" ] || set -- --vnc auto --display "$display"
: >"$tmp/worker-pids"
i=0
while [ $i -lt "$count" ]; do
	$ctl create "m$i" --kernel "$elf" --memory "$mib" "$@" >/dev/null
	$ctl start "m$i" >/dev/null
	$ctl -j info "m$i" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' \
	    >>"$tmp/worker-pids"
	i=$((i + 1))
done
sleep 2

# PSS of the whole process, and of the one mapping exactly MEMORY_MIB
# long (guest RAM below the PCI hole).
pss() {
	awk -v want=$((mib * 1024)) '
	    /^Size:/ { ram = ($2 == want) }
	    /^Pss:/ { total += $2; if (ram) guest += $2 }
	    END { printf "%d %d\n", total, guest }' "/proc/$1/smaps"
}

echo "# guest $guest, $count of them, $mib MiB of guest RAM each${display:+, display $display}"
printf '# %-20s %12s %12s %12s\n' process "PSS (KiB)" "guest RAM" "beyond RAM"
set -- $(pss "$vmmd_pid")
sup=$1
printf '# %-20s %12s %12s %12s\n' "vmmd (supervisor)" "$1" - "$1"
sum=0
for p in $(cat "$tmp/worker-pids"); do
	set -- $(pss "$p")
	sum=$((sum + $1 - $2))
	[ "$count" -gt 1 ] ||
	    printf '# %-20s %12s %12s %12s\n' vmmd-worker "$1" "$2" "$(($1 - $2))"
done
[ "$count" -eq 1 ] ||
    printf '# %-20s %12s %12s %12s\n' "each worker (mean)" - - "$((sum / count))"
printf '# %-20s %12s %12s %12s\n' "all, per guest" - - \
    "$(((sup + sum) / count))"
