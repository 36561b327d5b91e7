#!/bin/sh
# Runs inside the nested test host (see vsock.sh): the guest under vmmd,
# then under QEMU, MIB MiB each way over vsock, counted.  Prints TAP
# comments and one test point.
set -u
. "$(dirname "$0")/nested-lib.sh"

g=$VMMD_LINUX_GUEST
mib=$BENCH_MIB
bytes=$((mib * 1048576))
cmdline=$(cat "$g/cmdline")
res=/tmp/vsock.res
: >"$res"
ok=1

# vmm_wakeups PID...: the voluntary context switches of the processes'
# threads but their vCPUs (vmmd's vcpuN, QEMU's "CPU N/KVM"), whose
# switches are the guest halting inside KVM_RUN: what the VMM itself
# was woken for.
vmm_wakeups() { wakeups_but "^(vcpu|CPU)" "$@"; }

# transfer VMM CID PID...: the transfer under strace, with the
# wake-ups around it; one result line.
transfer() {
	vmm=$1 cid=$2
	shift 2
	args=
	for p in "$@"; do args="$args -p $p"; done
	w0=$(wakeups "$@") v0=$(vmm_wakeups "$@")
	strace -c -f -o /tmp/st $args 2>/tmp/st.err &
	sp=$!
	sleep 2
	out=$("$BENCH_ECHO" send "$cid" 1234 "$bytes" 2>&1)
	kill -INT "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	w1=$(wakeups "$@") v1=$(vmm_wakeups "$@")
	calls=$(awk '$NF == "total" { print $4 }' /tmp/st 2>/dev/null)
	say "$vmm: $out"
	case $out in
	*"received $bytes, crc"*) ;;
	*) ok=0 ;;
	esac
	echo "$vmm ${calls:-0} $((w1 - w0)) $((v1 - v0))" >>"$res"
	top_syscalls /tmp/st 5
}

# vmmd.
mkdir -p /run/vsbench && chmod 755 /run/vsbench
sock=/run/vsbench/vs.sock
"$VMMD_BIN" -f -s $sock -d /tmp/vs -g "$VMMD_GUEST_DEMO" 2>/tmp/vmmd.log &
vmmd=$!
wait_socket $sock 30 || { say "vmmd did not start"; ok=0; }
"$VMCTL_BIN" -s $sock create vs --kernel "$g/vmlinuz" \
    --initrd "$g/initramfs.cpio.gz" --cmdline "$cmdline" --memory 256M \
    --vcpus 2 --vsock 3 >/dev/null &&
    "$VMCTL_BIN" -s $sock start vs >/dev/null ||
    { say "vmmd: the VM did not start: $(tail -n 3 /tmp/vmmd.log)"; ok=0; }
if wait_for /tmp/vs/console/vs.log "listening on 1234" 600; then
	worker=$("$VMCTL_BIN" -s $sock -j info vs |
	    sed -n 's/.*"pid": *\([0-9]*\).*/\1/p')
	sleep 5
	transfer vmmd 3 "$vmmd" "$worker"
else
	say "vmmd: the guest never listened"; ok=0
fi
"$VMCTL_BIN" -s $sock stop --force vs >/dev/null 2>&1
stop_pid "$vmmd"

# QEMU.
qemu-system-x86_64 -enable-kvm -M pc -cpu host -m 256 -smp 2 \
    -name vs,debug-threads=on \
    -nodefaults -display none -serial file:/tmp/q.log \
    -kernel "$g/vmlinuz" -initrd "$g/initramfs.cpio.gz" \
    -append "$cmdline" -device vhost-vsock-pci,guest-cid=4 \
    2>/tmp/q.err &
qemu=$!
if wait_for /tmp/q.log "listening on 1234" 600; then
	sleep 5
	transfer qemu 4 "$qemu"
else
	say "qemu: the guest never listened: $(tail -n 3 /tmp/q.err)"; ok=0
fi
stop_pid "$qemu"

say ""
say "vsock, $mib MiB each way (vsock-echo: the test host sends, the guest echoes)"
say "wake-ups: every thread's voluntary switches; not vCPUs: those of"
say "the threads that are not vCPUs (a vCPU's are the guest halting)"
awk -v mib="$mib" '
	{ c[$1] = $2; w[$1] = $3; v[$1] = $4 }
	END {
		printf "# %-6s %10s %10s %10s %10s %14s\n", "VMM", "syscalls",
		    "wake-ups", "not vCPUs", "sys/MiB", "not vCPU/MiB"
		for (m in c)
			printf "# %-6s %10d %10d %10d %10.3f %14.3f\n", m, c[m],
			    w[m], v[m], c[m] / mib / 2, v[m] / mib / 2
		if (c["qemu"] > 0 && w["qemu"] > 0)
			printf "# ratio vmmd/qemu: syscalls %.2f, wake-ups " \
			    "%.2f\n", c["vmmd"] / c["qemu"],
			    w["vmmd"] / w["qemu"]
	}' "$res"
[ $ok = 1 ] && echo "ok 1 - both VMMs carried the bytes back whole" ||
    echo "not ok 1 - both VMMs carried the bytes back whole"
echo "1..1"
