#!/bin/sh
# System calls per MiB of rewrite, raw against qcow2 (the design's
# figure: qcow2 at most 1.2x raw), counted with strace -c -f over
# blk-rewrite on fully allocated 256 MiB images.
#   blk-rewrite.sh BLK_REWRITE
set -eu
prog=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/vmmd-bench-rewrite.XXXXXX")
trap 'rm -rf "$dir"' EXIT
head -c 256M /dev/urandom > "$dir/disk.raw"
qemu-img convert -f raw -O qcow2 "$dir/disk.raw" "$dir/disk.qcow2"
for req in 65536 1048576; do
	for fmt in raw qcow2; do
		strace -c -f -o "$dir/trace" "$prog" $fmt "$dir/disk.$fmt" $req \
		    >/dev/null
		total=$(awk '$NF == "total" { print $4 }' "$dir/trace")
		writes=$(awk '$NF == "pwritev" { print $4 }' "$dir/trace")
		echo "$fmt, $req-byte requests: $total system calls" \
		    "($writes pwritev), $(echo "scale=3; $total / 256" | bc)" \
		    "per MiB"
	done
done
