#!/bin/sh
# Runs inside the nested test host (see virtio.sh): the benchmark's guest
# under vmmd, then under QEMU, each with a raw image of 64 MiB and the
# TAP device vbtap0 (10.0.9.1 here, 10.0.9.2 in the guest).  For each of
# the guest's six phases (virtio-guest.sh): the guest's exits (the
# "exits" of the VM's directory in KVM's debugfs) and the system calls of
# the VMM's processes (strace -c -f, attached before the go, detached
# after the guest's done).  Prints TAP comments, the table and one test
# point, for run.sh.
set -u
. "$(dirname "$0")/nested-lib.sh"

g=$VMMD_LINUX_GUEST
cmdline=$(cat "$g/cmdline")
mib=$(echo "$cmdline" | sed -n 's/.*vbench_mib=\([0-9]*\).*/\1/p')
guest_ip=10.0.9.2
tap=vbtap0
settle=${VMMD_BENCH_SETTLE:-10}
phases=$(echo "$cmdline" | sed -n 's/.*vbench_phases=\([a-z,]*\).*/\1/p' |
    tr , ' ')
phases=${phases:-seqwrite seqread randwrite randread netin netout}
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
res=/tmp/vbench.res
: >"$res"
ok=1
mkfifo /tmp/hold
exec 3<>/tmp/hold

# exits KVMPID: the guest's exits so far, all vCPUs.
exits() {
	cat /sys/kernel/debug/kvm/"$1"-*/exits 2>/dev/null | head -n 1
}

# kvm_stats KVMPID: KVM's counters of the VM, "name value" lines.
kvm_stats() {
	for f in /sys/kernel/debug/kvm/"$1"-*/*; do
		[ -f "$f" ] || continue
		v=$(cat "$f" 2>/dev/null) || continue
		case $v in *[!0-9]*|"") continue ;; esac
		echo "${f##*/} $v"
	done
}

# kvm_top BEFORE AFTER N: the N counters that grew most (exit reasons,
# interrupts, page faults), as comments.
kvm_top() {
	awk 'NR == FNR { a[$1] = $2; next }
	    $1 != "exits" && $2 - a[$1] > 0 &&
	    $1 ~ /exits|halt_wakeup|irq_inj|pf_|insn_emul|signal/ {
		print $2 - a[$1], $1 }' "$1" "$2" |
	    sort -rn | head -n "$3" | while read -r c n; do say "      $n $c"; done
}

# net_stats: vmmd's virtio-net counters, "name value" lines.
net_stats() {
	"$VMCTL_BIN" -s /tmp/vb.sock info --stats vb 2>/dev/null |
	    sed -n 's/^stats\.devices\.virtio-net\.\([a-z_]*\): \([0-9]*\)$/\1 \2/p'
}

# net_delta BEFORE AFTER: how the device's transmit and receive counters
# grew in a phase, and the size of the frames it sent.
net_delta() {
	awk 'NR == FNR { a[$1] = $2; next }
	    { d[$1] = $2 - a[$1] }
	    END {
		k = d["kicks"]; i = d["interrupts"]
		printf "#       kicks %d (doorbell %d), interrupts %d,", k,
		    d["doorbell_kicks"], i
		printf " tx %d frames %d bytes in %d bursts (%d deferred," \
		    " %d held),", d["tx_frames"], d["tx_bytes"],
		    d["tx_bursts"], d["tx_deferred"], d["tx_held"]
		printf " rx %d frames %d bytes\n", d["rx_frames"],
		    d["rx_bytes"]
		t = d["tx_frames"]
		if (t > 0 && d["tx_bursts"] > 0)
			printf "#       tx: %.0f bytes a frame, %.1f frames a burst\n", d["tx_bytes"] / t, t / d["tx_bursts"]
	    }' "$1" "$2"
}

# tap_up: the VMM made vbtap0; give it our address.
tap_up() {
	i=0
	while ! ip link show "$tap" >/dev/null 2>&1 && [ $i -lt 60 ]; do
		sleep 1; i=$((i + 1))
	done
	ip addr flush dev "$tap" 2>/dev/null
	ip addr add 10.0.9.1/24 dev "$tap" && ip link set "$tap" up ||
	    { ok=0; say "$tap: cannot bring it up"; }
}

# ready VMM CONSOLE: the guest's first connection to port 6001 (its
# network is up), then a while for the rest of its boot to quiet down.
ready() {
	timeout 600 nc -l -p 6001 </dev/null >/dev/null 2>&1 ||
	    { ok=0; say "$1: the guest did not say it was ready;" \
	    "console: $(tail -c 300 "$2")"; }
	say "$1: the guest is ready; $settle s to settle"
	sleep "$settle"
}

# phase VMM NAME CONSOLE KVMPID PID...: one phase, counted; a line of
# "VMM NAME EXITS SYSCALLS" in $res.
phase() {
	vmm=$1 p=$2 con=$3 kpid=$4
	shift 4
	args=
	for x in "$@"; do args="$args -p $x"; done
	e0=$(exits "$kpid")
	kvm_stats "$kpid" >/tmp/k0
	[ "$vmm" = vmmd ] && net_stats >/tmp/n0
	strace -c -f -o /tmp/st.$vmm.$p $args 2>/tmp/st.err &
	spid=$!
	sleep 3		# strace attaches to every thread
	case $p in
	netin)	dd if=/dev/zero bs=64k count=$((mib * 16)) 2>/dev/null |
		    nc -l -p 5001 >/dev/null 2>&1 & ;;
	netout)	nc -l -p 5002 <&3 >/dev/null 2>&1 & ;;
	esac
	nc -l -p 6001 </dev/null >/dev/null 2>&1 &
	dpid=$!
	i=0
	until nc "$guest_ip" 6000 </dev/null >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] || { ok=0; say "$vmm $p: no go after 300 s;" \
		    "console: $(tail -c 300 "$con")"
		    kill "$dpid" 2>/dev/null; break; }
		sleep 1
	done
	wait "$dpid"
	kill -INT "$spid" 2>/dev/null
	wait "$spid"
	e1=$(exits "$kpid")
	kvm_stats "$kpid" >/tmp/k1
	[ "$vmm" = vmmd ] && net_stats >/tmp/n1
	c=$(awk '$NF == "total" { print $4 }' /tmp/st.$vmm.$p 2>/dev/null)
	[ -n "$c" ] || say "strace: $(head -c 300 /tmp/st.err)"
	echo "$vmm $p $((${e1:-0} - ${e0:-0})) ${c:-0}" >>"$res"
	line=$(console_line "$con" "vbench: $p ")
	say "$vmm $p: $((${e1:-0} - ${e0:-0})) exits, ${c:-0} system calls;" \
	    "guest: ${line:-nothing}"
	case $line in *"status 0:"*) ;; *) ok=0 ;; esac
	say "    system calls:"
	top_syscalls /tmp/st.$vmm.$p 4
	say "    KVM counters:"
	kvm_top /tmp/k0 /tmp/k1 5
	case $vmm.$p in
	vmmd.net*)
		say "    virtio-net:"
		net_delta /tmp/n0 /tmp/n1 ;;
	esac
}

# console_line FILE TEXT: the last console line holding TEXT.
console_line() {
	tr -d '\r' <"$1" 2>/dev/null | grep "$2" | tail -n 1 |
	    sed 's/.*\(vbench: \)/\1/; s/\[ *[0-9]*\.[0-9]*\].*//'
}

rm -f /tmp/vb-vmmd.raw /tmp/vb-qemu.raw
dd if=/dev/zero of=/tmp/vb-vmmd.raw bs=1M count=0 seek=64 2>/dev/null
dd if=/dev/zero of=/tmp/vb-qemu.raw bs=1M count=0 seek=64 2>/dev/null
say "virtio I/O: $mib MiB per phase, 4 KiB blocks, 64 MiB raw image," \
    "1 vCPU, 256 MiB"

"$VMMD_BIN" -s /tmp/vb.sock -d /tmp/vb -g "$VMMD_GUEST_DEMO"
wait_socket /tmp/vb.sock 30
"$VMCTL_BIN" -s /tmp/vb.sock create vb --kernel "$g/vmlinuz" \
    --initrd "$g/initramfs.cpio.gz" --cmdline "$cmdline" --memory 256M \
    --vcpus 1 --disk /tmp/vb-vmmd.raw --net "tap=$tap" >/dev/null ||
    { ok=0; say "vmctl create failed"; }
"$VMCTL_BIN" -s /tmp/vb.sock start vb >/dev/null
con=/tmp/vb/console/vb.log
tap_up
ready vmmd "$con"
worker=$("$VMCTL_BIN" -s /tmp/vb.sock -j info vb |
    sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -n 1)
for p in $phases; do
	phase vmmd "$p" "$con" "$worker" \
	    "$(pidof "$(basename "$VMMD_BIN")")" "$worker"
done
"$VMCTL_BIN" -s /tmp/vb.sock stop --force vb >/dev/null
ip link del "$tap" 2>/dev/null

con=/tmp/qemu-vb.log
qemu-system-x86_64 -enable-kvm -cpu host -M pc -m 256 -smp 1 \
    -nodefaults -display none -monitor none -serial "file:$con" \
    -kernel "$g/vmlinuz" -initrd "$g/initramfs.cpio.gz" -append "$cmdline" \
    -drive file=/tmp/vb-qemu.raw,if=none,id=d0,format=raw \
    -device virtio-blk-pci,drive=d0 \
    -netdev "tap,id=n0,ifname=$tap,script=no,downscript=no,vnet_hdr=on" \
    -device virtio-net-pci,netdev=n0,romfile= &
qemu=$!
tap_up
ready qemu "$con"
for p in $phases; do
	phase qemu "$p" "$con" "$qemu" "$qemu"
done
kill "$qemu"
wait "$qemu" 2>/dev/null

say ""
say "per MiB moved ($mib MiB a phase): the guest's exits (KVM debugfs) and"
say "the VMM's system calls (strace -c -f), vmmd / QEMU -M pc"
say "times in the test host are emulated: the counts are what matter"
say ""
awk -v mib="$mib" '
	{ e[$1, $2] = $3; s[$1, $2] = $4; if (!seen[$2]++) order[n++] = $2 }
	function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
	END {
		printf "# %-10s %9s %9s %6s   %9s %9s %6s\n", "phase",
		    "exits", "", "", "syscalls", "", ""
		printf "# %-10s %9s %9s %6s   %9s %9s %6s\n", "", "vmmd",
		    "qemu", "ratio", "vmmd", "qemu", "ratio"
		for (i = 0; i < n; i++) {
			p = order[i]
			printf "# %-10s %9.1f %9.1f %6s   %9.1f %9.1f %6s\n", p,
			    e["vmmd", p] / mib, e["qemu", p] / mib,
			    r(e["vmmd", p], e["qemu", p]),
			    s["vmmd", p] / mib, s["qemu", p] / mib,
			    r(s["vmmd", p], s["qemu", p])
		}
	}' "$res"
[ $ok = 1 ] && echo "ok 1 - both guests ran every phase" ||
    echo "not ok 1 - a phase did not run (see above)"
echo "1..1"
