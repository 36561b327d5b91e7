#!/bin/sh
# Runs inside the nested test host (see fs.sh): the benchmark's guest
# under vmmd, then under QEMU, each with a share of its own tagged
# "bench" served by virtiofsd.  For each of the guest's phases
# (fs-guest.sh): the guest's exits (the "exits" of the VM's directory in
# KVM's debugfs), the system calls of the VMM's processes and those of
# the virtiofsd processes (strace -c -f each, attached before the go,
# detached once the guest is done).  Prints TAP comments, the table and
# one test point (every phase ran), for run.sh.
set -u
. "$(dirname "$0")/nested-lib.sh"

g=$VMMD_LINUX_GUEST
cmdline=$(cat "$g/cmdline")
mib=$(echo "$cmdline" | sed -n 's/.*fsbench_mib=\([0-9]*\).*/\1/p')
files=$(echo "$cmdline" | sed -n 's/.*fsbench_files=\([0-9]*\).*/\1/p')
virtiofsd=/usr/lib/qemu/virtiofsd
phases="seqwrite seqread smallfiles"
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
res=/tmp/fsbench.res
: >"$res"
ok=1

# exits KVMPID: the guest's exits so far, all vCPUs.
exits() {
	cat /sys/kernel/debug/kvm/"$1"-*/exits 2>/dev/null | head -n 1
}

# children PID: the processes whose parent is PID, and theirs.
children() {
	awk -v root="$1" '
	    { sub(/.*\) /, ""); split(FILENAME, f, "/"); parent[f[3]] = $2 }
	    END {
		want[root] = 1
		do {
			more = 0
			for (p in parent)
				if ((parent[p] in want) && !(p in want)) {
					want[p] = 1; more = 1
				}
		} while (more)
		for (p in want) if (p != root) print p
	    }' /proc/[0-9]*/stat 2>/dev/null
}

# strace_on OUT PID...: strace -c -f of the processes, in the background
# ($! its pid); nothing when there are none.
strace_on() {
	out=$1
	shift
	args=
	for x in "$@"; do args="$args -p $x"; done
	strace -c -f -o "$out" $args 2>"$out.err" &
}

calls() {
	c=$(awk '$NF == "total" { print $4 }' "$1" 2>/dev/null)
	echo "${c:-0}"
}

# kvm_pid: the process that made the test host's only VM (its directory
# in KVM's debugfs is PID-FD).
kvm_pid() {
	ls /sys/kernel/debug/kvm 2>/dev/null | sed -n 's/^\([0-9]*\)-.*/\1/p' |
	    head -n 1
}

# phase VMM NAME CONSOLE KVMPID SHARE "VMM PIDS" "SERVER PIDS": one
# phase, counted; a line "VMM NAME EXITS VMM_CALLS SERVER_CALLS" in $res.
phase() {
	vmm=$1 p=$2 con=$3 kpid=$4 share=$5
	e0=$(exits "$kpid")
	strace_on /tmp/st.$vmm.$p $6
	s1=$!
	strace_on /tmp/sv.$vmm.$p $7
	s2=$!
	sleep 3		# strace attaches to every thread
	: >"$share/go-$p"
	i=0
	until [ -e "$share/done-$p" ]; do
		i=$((i + 1))
		[ $i -lt 2400 ] || { ok=0; say "$vmm $p: not done after" \
		    "1200 s; console: $(tail -c 300 "$con")"; break; }
		sleep 0.5
	done
	kill -INT "$s1" "$s2" 2>/dev/null
	wait "$s1" "$s2"
	e1=$(exits "$kpid")
	c=$(calls /tmp/st.$vmm.$p)
	v=$(calls /tmp/sv.$vmm.$p)
	for f in /tmp/st.$vmm.$p /tmp/sv.$vmm.$p; do
		[ -s "$f" ] || say "strace -o $f: $(head -c 300 "$f.err")"
	done
	echo "$vmm $p $((${e1:-0} - ${e0:-0})) $c $v" >>"$res"
	line=$(tr -d '\r' <"$con" | grep "fsbench: $p " | tail -n 1)
	say "$vmm $p: $((${e1:-0} - ${e0:-0})) exits, $c system calls of" \
	    "the VMM, $v of virtiofsd; guest: ${line:-nothing}"
	case $line in *"status 0:"*) ;; *) ok=0 ;; esac
	say "    the VMM's system calls:"
	top_syscalls /tmp/st.$vmm.$p 4
	say "    virtiofsd's:"
	top_syscalls /tmp/sv.$vmm.$p 4
}

# ready VMM CONSOLE: the guest mounted its share.
ready() {
	wait_for "$2" "fsbench: mounted" 900 ||
	    { ok=0; say "$1: the guest did not mount its share;" \
	    "console: $(tail -c 300 "$2")"; }
	say "$1: the guest mounted its share"
}

say "virtio-fs: seqwrite and seqread of $mib MiB in 1 MiB blocks," \
    "smallfiles of $files files of 4 KiB; 1 vCPU, 512 MiB"

# vmmd trusts only directories that no one else may write.
sock=/tmp/fb/control.sock
mkdir -p -m 700 /tmp/fb
mkdir -p /tmp/fb-share-vmmd /tmp/fb-share-qemu
"$VMMD_BIN" -s $sock -d /tmp/fb -g "$VMMD_GUEST_DEMO"
wait_socket $sock 30
"$VMCTL_BIN" -s $sock create fb --kernel "$g/vmlinuz" \
    --initrd "$g/initramfs.cpio.gz" --cmdline "$cmdline" --memory 512M \
    --vcpus 1 --fs bench=/tmp/fb-share-vmmd >/dev/null ||
    { ok=0; say "vmctl create failed"; }
"$VMCTL_BIN" -s $sock start fb >/dev/null
con=/tmp/fb/console/fb.log
ready vmmd "$con"
worker=$(kvm_pid)
servers=$(children "$worker")
say "vmmd: worker $worker, virtiofsd $(echo $servers)"
for p in $phases; do
	phase vmmd "$p" "$con" "$worker" /tmp/fb-share-vmmd \
	    "$(pidof "$(basename "$VMMD_BIN")") $worker" "$servers"
done
"$VMCTL_BIN" -s $sock info --stats fb 2>/dev/null | grep -E \
    '^stats\.(fs\.(state|messages)|devices\.virtio-fs\.(kicks|interrupts|starts|kicks_passed|failed)):' |
    while read -r l; do
	say "vmmd: $l"
done
"$VMCTL_BIN" -s $sock stop --force fb >/dev/null

con=/tmp/qemu-fb.log
"$virtiofsd" --socket-path=/tmp/fb-vfsd.sock -o source=/tmp/fb-share-qemu \
    -o sandbox=namespace -o cache=auto 2>/tmp/fb-vfsd.err &
vfsd=$!
wait_socket /tmp/fb-vfsd.sock 30
qemu-system-x86_64 -enable-kvm -cpu host -M pc -m 512 -smp 1 \
    -object memory-backend-memfd,id=mem,size=512M,share=on \
    -numa node,memdev=mem \
    -nodefaults -display none -monitor none -serial "file:$con" \
    -kernel "$g/vmlinuz" -initrd "$g/initramfs.cpio.gz" -append "$cmdline" \
    -chardev socket,id=vfs,path=/tmp/fb-vfsd.sock \
    -device vhost-user-fs-pci,chardev=vfs,tag=bench &
qemu=$!
ready qemu "$con"
servers="$vfsd $(children "$vfsd")"
say "qemu: pid $qemu, virtiofsd $(echo $servers)"
for p in $phases; do
	phase qemu "$p" "$con" "$qemu" /tmp/fb-share-qemu "$qemu" "$servers"
done
kill "$qemu"
wait "$qemu" 2>/dev/null
stop_pid "$vfsd"

say ""
say "per MiB (seqwrite, seqread: $mib MiB) and per file (smallfiles: $files):"
say "the guest's exits (KVM debugfs), the VMM's system calls and"
say "virtiofsd's (strace -c -f), vmmd / QEMU -M pc vhost-user-fs-pci"
say "times in the test host are emulated: the counts are what matter"
say ""
awk -v mib="$mib" -v files="$files" '
	{ e[$1, $2] = $3; s[$1, $2] = $4; v[$1, $2] = $5
	  if (!seen[$2]++) order[n++] = $2 }
	function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "-" }
	END {
		printf "# %-11s %-22s %-22s %-22s\n", "phase",
		    "exits", "VMM system calls", "virtiofsd system calls"
		printf "# %-11s %7s %7s %6s %7s %7s %6s %7s %7s %6s\n", "",
		    "vmmd", "qemu", "ratio", "vmmd", "qemu", "ratio",
		    "vmmd", "qemu", "ratio"
		for (i = 0; i < n; i++) {
			p = order[i]
			u = p == "smallfiles" ? files : mib
			printf "# %-11s %7.1f %7.1f %6s %7.2f %7.2f %6s %7.1f %7.1f %6s\n",
			    p, e["vmmd", p] / u, e["qemu", p] / u,
			    r(e["vmmd", p], e["qemu", p]),
			    s["vmmd", p] / u, s["qemu", p] / u,
			    r(s["vmmd", p], s["qemu", p]),
			    v["vmmd", p] / u, v["qemu", p] / u,
			    r(v["vmmd", p], v["qemu", p])
		}
	}' "$res"
[ $ok = 1 ] && echo "ok 1 - both guests ran every phase" ||
    echo "not ok 1 - a phase did not run (see above)"
echo "1..1"
