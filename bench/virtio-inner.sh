#!/bin/sh
# Runs inside the nested test host (see virtio.sh): the benchmark's guest
# under vmmd, then under QEMU, each with a raw image of 64 MiB (vda), a
# fresh qcow2 image of 64 MiB (vdb, made by qemu-img) and the TAP device
# vbtap0 (10.0.9.1 here, 10.0.9.2 in the guest).  For each of the
# guest's phases (virtio-guest.sh): the guest's exits (the
# "exits" of the VM's directory in KVM's debugfs) and the system calls of
# the VMM's processes (strace -c -f, attached before the go, detached
# after the guest's done).  Prints TAP comments, the tables and two test
# points (every phase ran; qemu-img check finds both VMMs' qcow2 images
# clean), for run.sh.
set -u
. "$(dirname "$0")/nested-lib.sh"

g=$VMMD_LINUX_GUEST
cmdline=$(cat "$g/cmdline")
mib=$(echo "$cmdline" | sed -n 's/.*vbench_mib=\([0-9]*\).*/\1/p')
guest_ip=10.0.9.2
tap=vbtap0
settle=${VMMD_BENCH_SETTLE:-10}
phases=$(echo "$cmdline" | sed -n 's/.*vbench_phases=\([a-z,-]*\).*/\1/p' |
    tr , ' ')
disk_ops="seqwrite seqread randwrite randread"
if [ -z "$phases" ]; then
	for d in raw qnew qagain; do
		for o in $disk_ops; do phases="$phases $d-$o"; done
	done
	phases="$phases netin netout"
fi
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
	"$VMCTL_BIN" -s $sock info --stats vb 2>/dev/null |
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

# qcow2_check VMM: qemu-img check of the VMM's qcow2 image, once the
# VMM has stopped.
qcow2_ok=1
qcow2_check() {
	if qemu-img check -q /tmp/vb-$1.qcow2 >/tmp/qimg.out 2>&1; then
		say "$1: qemu-img check finds its qcow2 image clean;" \
		    "$(qemu-img info /tmp/vb-$1.qcow2 | grep '^disk size')"
	else
		qcow2_ok=0
		say "$1: qemu-img check: $(head -c 600 /tmp/qimg.out | tr '\n' ' ')"
	fi
}

rm -f /tmp/vb-vmmd.raw /tmp/vb-qemu.raw /tmp/vb-vmmd.qcow2 /tmp/vb-qemu.qcow2
dd if=/dev/zero of=/tmp/vb-vmmd.raw bs=1M count=0 seek=64 2>/dev/null
dd if=/dev/zero of=/tmp/vb-qemu.raw bs=1M count=0 seek=64 2>/dev/null
for v in vmmd qemu; do
	qemu-img create -q -f qcow2 /tmp/vb-$v.qcow2 64M ||
	    { ok=0; say "qemu-img create failed"; }
done
say "virtio I/O: $mib MiB per phase, 4 KiB blocks, 64 MiB raw image (vda)" \
    "and 64 MiB qcow2 image (vdb, 64 KiB clusters), 1 vCPU, 256 MiB"

# vmmd trusts only directories that no one else may write: its socket
# goes into its own state directory, not into /tmp.
sock=/tmp/vb/control.sock
mkdir -p -m 700 /tmp/vb
"$VMMD_BIN" -s $sock -d /tmp/vb -g "$VMMD_GUEST_DEMO"
wait_socket $sock 30
"$VMCTL_BIN" -s $sock create vb --kernel "$g/vmlinuz" \
    --initrd "$g/initramfs.cpio.gz" --cmdline "$cmdline" --memory 256M \
    --vcpus 1 --disk /tmp/vb-vmmd.raw,format=raw \
    --disk /tmp/vb-vmmd.qcow2,format=qcow2 --net "tap=$tap" >/dev/null ||
    { ok=0; say "vmctl create failed"; }
"$VMCTL_BIN" -s $sock start vb >/dev/null
con=/tmp/vb/console/vb.log
tap_up
ready vmmd "$con"
worker=$("$VMCTL_BIN" -s $sock -j info vb |
    sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -n 1)
for p in $phases; do
	phase vmmd "$p" "$con" "$worker" \
	    "$(pidof "$(basename "$VMMD_BIN")")" "$worker"
done
# vm.info's "disks": the definition's, then the statistics (format,
# allocated bytes, metadata cache hits and misses).
"$VMCTL_BIN" -s $sock -j info vb 2>/dev/null | tr -d '\n' |
    grep -o '"disks": *\[[^]]*\]' | while read -r l; do say "vmmd: $l"; done
"$VMCTL_BIN" -s $sock stop --force vb >/dev/null
ip link del "$tap" 2>/dev/null
qcow2_check vmmd

con=/tmp/qemu-vb.log
qemu-system-x86_64 -enable-kvm -cpu host -M pc -m 256 -smp 1 \
    -nodefaults -display none -monitor none -serial "file:$con" \
    -kernel "$g/vmlinuz" -initrd "$g/initramfs.cpio.gz" -append "$cmdline" \
    -drive file=/tmp/vb-qemu.raw,if=none,id=d0,format=raw \
    -device virtio-blk-pci,drive=d0 \
    -drive file=/tmp/vb-qemu.qcow2,if=none,id=d1,format=qcow2 \
    -device virtio-blk-pci,drive=d1 \
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
qcow2_check qemu

say ""
say "per MiB moved ($mib MiB a phase): the guest's exits (KVM debugfs) and"
say "the VMM's system calls (strace -c -f), vmmd / QEMU -M pc"
say "times in the test host are emulated: the counts are what matter"
say ""
awk -v mib="$mib" '
	{ e[$1, $2] = $3; s[$1, $2] = $4; if (!seen[$2]++) order[n++] = $2 }
	function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
	END {
		printf "# %-16s %9s %9s %6s   %9s %9s %6s\n", "phase",
		    "exits", "", "", "syscalls", "", ""
		printf "# %-16s %9s %9s %6s   %9s %9s %6s\n", "", "vmmd",
		    "qemu", "ratio", "vmmd", "qemu", "ratio"
		for (i = 0; i < n; i++) {
			p = order[i]
			printf "# %-16s %9.1f %9.1f %6s   %9.1f %9.1f %6s\n", p,
			    e["vmmd", p] / mib, e["qemu", p] / mib,
			    r(e["vmmd", p], e["qemu", p]),
			    s["vmmd", p] / mib, s["qemu", p] / mib,
			    r(s["vmmd", p], s["qemu", p])
		}
	}' "$res"
say ""
say "qcow2 against raw, per MiB: qnew allocates the clusters it writes"
say "(and reads unallocated ones), qagain rewrites and reads allocated ones;"
say "v/q is vmmd/QEMU, vmmd/r and qemu/r that VMM's qcow2 phase over its raw one"
say ""
awk -v mib="$mib" -v ops="$disk_ops" '
	{ e[$1, $2] = $3; s[$1, $2] = $4; have[$2] = 1 }
	function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
	END {
		printf "# %-16s %-37s   %s\n", "", "system calls per MiB",
		    "exits per MiB"
		printf "# %-16s %8s %8s %5s %6s %6s   %8s %8s %5s %6s %6s\n",
		    "phase", "vmmd", "qemu", "v/q", "vmmd/r", "qemu/r", "vmmd",
		    "qemu", "v/q", "vmmd/r", "qemu/r"
		n = split(ops, op, " ")
		for (i = 1; i <= n; i++) {
			raw = "raw-" op[i]
			split("raw qnew qagain", kind, " ")
			for (k = 1; k <= 3; k++) {
				p = kind[k] "-" op[i]
				if (!have[p])
					continue
				q = k == 1 ? "-" : ""
				printf "# %-16s %8.1f %8.1f %5s %6s %6s   %8.1f %8.1f %5s %6s %6s\n",
				    p, s["vmmd", p] / mib, s["qemu", p] / mib,
				    r(s["vmmd", p], s["qemu", p]),
				    q != "" ? q : r(s["vmmd", p], s["vmmd", raw]),
				    q != "" ? q : r(s["qemu", p], s["qemu", raw]),
				    e["vmmd", p] / mib, e["qemu", p] / mib,
				    r(e["vmmd", p], e["qemu", p]),
				    q != "" ? q : r(e["vmmd", p], e["vmmd", raw]),
				    q != "" ? q : r(e["qemu", p], e["qemu", raw])
			}
		}
		# The targets: on rewrite, vmmd qcow2 at most 1.2x its raw
		# system calls, and at or under QEMU qcow2.
		for (i = 1; i <= n; i++) {
			p = "qagain-" op[i]; raw = "raw-" op[i]
			if (!have[p] || !have[raw] || s["vmmd", raw] == 0 ||
			    s["qemu", p] == 0)
				continue
			a = s["vmmd", p] / s["vmmd", raw]
			b = s["vmmd", p] / s["qemu", p]
			printf "# target %-16s vmmd qcow2/raw %.2f (<= 1.2: %s), vmmd/qemu %.2f (<= 1: %s)\n",
			    p, a, a <= 1.2 ? "met" : "missed", b,
			    b <= 1 ? "met" : "missed"
		}
	}' "$res"
[ $ok = 1 ] && echo "ok 1 - both guests ran every phase" ||
    echo "not ok 1 - a phase did not run (see above)"
[ $qcow2_ok = 1 ] && echo "ok 2 - qemu-img check finds both qcow2 images clean" ||
    echo "not ok 2 - qemu-img check found a qcow2 image damaged (see above)"
echo "1..2"
