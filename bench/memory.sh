#!/bin/sh
# Memory a worker costs beyond its guest's RAM: proportional set size of
# each vmmd process, with the guest RAM mapping's share taken out.
# Prints figures; asserts nothing.
#
#   bench/memory.sh BUILDDIR [GUEST] [MEMORY_MIB]
set -eu

build=${1:?usage: bench/memory.sh BUILDDIR [GUEST] [MEMORY_MIB]}
guest=${2:-demo}
mib=${3:-32}
build=$(cd "$build" && pwd)
elf=$build/tests/guests/$guest.elf
[ -f "$elf" ] || { echo "no guest $elf" >&2; exit 1; }

tmp=$(mktemp -d)
vmmd_pid=
cleanup() {
	[ -n "$vmmd_pid" ] && kill "$vmmd_pid" 2>/dev/null
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
$ctl create m --kernel "$elf" --memory "$mib" >/dev/null
$ctl start m >/dev/null
sleep 2
worker=$($ctl -j info m | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')

# PSS of the whole process, and of the one mapping exactly MEMORY_MIB
# long (guest RAM below the PCI hole).
pss() {
	awk -v want=$((mib * 1024)) '
	    /^Size:/ { ram = ($2 == want) }
	    /^Pss:/ { total += $2; if (ram) guest += $2 }
	    END { printf "%d %d\n", total, guest }' "/proc/$1/smaps"
}

echo "guest $guest, $mib MiB of guest RAM"
printf '%-20s %12s %12s %12s\n' process "PSS (KiB)" "guest RAM" "beyond RAM"
set -- $(pss "$vmmd_pid")
printf '%-20s %12s %12s %12s\n' "vmmd (supervisor)" "$1" - "$1"
set -- $(pss "$worker")
printf '%-20s %12s %12s %12s\n' vmmd-worker "$1" "$2" "$(($1 - $2))"
