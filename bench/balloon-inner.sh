#!/bin/sh
# Runs inside the nested test host (see balloon.sh): the guest under
# vmmd, then under QEMU, each VMM's resident memory followed by
# balloon-watch while the guest takes 400 MiB and frees them.  Prints
# TAP comments, a table and one test point.
set -u
. "$(dirname "$0")/nested-lib.sh"

g=$VMMD_LINUX_GUEST
cmdline="$(cat "$g/cmdline") quiet"
mib=768
back=300
res=/tmp/balloon.res
: >"$res"
ok=1

# watch LABEL PID LOG: balloon-watch's timeline, its result line kept.
watch() {
	"$BENCH_WATCH" "$1" "$2" "$3" "$back" >/tmp/watch.out 2>&1 ||
	    { ok=0; say "$1: the run did not complete"; }
	grep -v '^result ' /tmp/watch.out
	grep '^result ' /tmp/watch.out | cut -d' ' -f2- >>"$res"
}

# vmmd.
sock=/tmp/bb/control.sock
"$VMMD_BIN" -f -s $sock -d /tmp/bb -g "$VMMD_GUEST_DEMO" 2>/tmp/vmmd.log &
vmmd=$!
wait_socket $sock 30 || { say "vmmd did not start"; ok=0; }
if "$VMCTL_BIN" -s $sock create bb --kernel "$g/vmlinuz" \
    --initrd "$g/initramfs.cpio.gz" --cmdline "$cmdline" \
    --memory ${mib}M --vcpus 2 --balloon >/dev/null &&
    "$VMCTL_BIN" -s $sock start bb >/dev/null; then
	worker=$("$VMCTL_BIN" -s $sock -j info bb |
	    sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
	watch vmmd "$worker" /tmp/bb/console/bb.log
	"$VMCTL_BIN" -s $sock -j info bb | tr -d ' \n' |
	    grep -o '"virtio-balloon":{[^}]*}' | tr ',' '\n' |
	    grep -e reported_bytes -e '"reports"' -e discard_errors |
	    while read -r l; do say "vmmd: $l"; done
else
	say "vmmd: the VM did not start: $(tail -n 3 /tmp/vmmd.log)"; ok=0
fi
"$VMCTL_BIN" -s $sock stop --force bb >/dev/null 2>&1
stop_pid "$vmmd"

# QEMU.
qemu-system-x86_64 -enable-kvm -M pc -cpu host -m $mib -smp 2 \
    -nodefaults -display none -serial file:/tmp/q.log \
    -kernel "$g/vmlinuz" -initrd "$g/initramfs.cpio.gz" \
    -append "$cmdline" \
    -device virtio-balloon-pci,free-page-reporting=on 2>/tmp/q.err &
qemu=$!
watch qemu "$qemu" /tmp/q.log
[ -s /tmp/q.err ] && say "qemu: $(head -c 300 /tmp/q.err)"
stop_pid "$qemu"

say ""
say "The guest ($mib MiB, 2 vCPUs) takes 400 MiB, holds them 15 s, frees"
say "them; the VMM's VmRSS (MiB), the time from memhog's \"freed\" to"
say "$back MiB given back and to the last fall of 2 MiB (s), and memhog's"
say "own time to touch its 400 MiB (s, the guest's clock)"
awk '
	BEGIN {
		printf "# %-6s %7s %7s %7s %7s %10s %10s %7s\n", "VMM",
		    "before", "peak", "after", "back", "300 MiB in",
		    "settled in", "touch"
	}
	{
		printf "# %-6s %7.1f %7.1f %7.1f %7.1f %10s %10s %7s\n", $1,
		    $2 / 1024, $3 / 1024, $4 / 1024, ($3 - $4) / 1024,
		    $5 < 0 ? "never" : sprintf("%.1f", $5 / 1000),
		    $6 < 0 ? "never" : sprintf("%.1f", $6 / 1000),
		    $7 < 0 ? "?" : sprintf("%.1f", $7 / 1000)
	}' "$res"
[ $ok = 1 ] && echo "ok 1 - both VMMs ran the workload to its end" ||
    echo "not ok 1 - both VMMs ran the workload to its end"
echo "1..1"
