#!/bin/sh
# What serving an RBD disk costs a process: the system calls (by name,
# and per MiB) and the threads and memory of one connected image, from
# rbd-io's client under strace -c -f against a one-node memstore cluster
# that rbd-io starts beside it (not traced).  The names are what a
# worker's system call filter must allow for librbd.
#   rbd.sh RBD_IO
set -eu
prog=$1
mib=64
dir=$(mktemp -d "${TMPDIR:-/tmp}/vmmd-bench-rbd.XXXXXX")
mkdir "$dir/ceph"
mkfifo "$dir/hold"
"$prog" cluster "$dir/ceph" <"$dir/hold" >"$dir/conf" &
cluster=$!
exec 3>"$dir/hold"
trap 'exec 3>&-; wait $cluster; rm -rf "$dir"' EXIT
while [ ! -s "$dir/conf" ]; do
	kill -0 $cluster 2>/dev/null || { echo "no cluster" >&2; exit 1; }
	sleep 1
done
conf=$(cat "$dir/conf")
for req in 65536 1048576; do
	strace -c -f -o "$dir/trace" "$prog" client "$conf" $mib $req
	total=$(awk '$NF == "total" { print $4 }' "$dir/trace")
	echo "$req-byte requests, $mib MiB written, flushed and read:" \
	    "$total system calls, $(echo "scale=1; $total / ($mib * 2)" | bc)" \
	    "per MiB moved"
done
echo "system calls made (the last run):"
awk '/^------/ { n++; next } n == 1 { print $NF }' "$dir/trace" | sort |
    tr '\n' ' '
echo
