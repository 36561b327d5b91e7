#!/bin/sh
# Runs inside the nested test host (see cloud-boot.sh): the cloud image
# under vmmd, then under QEMU, each to its first working ssh.  Prints TAP
# comments and one test point.
set -u
. "$(dirname "$0")/nested-lib.sh"

ok=1
limit=1500		# seconds each VMM may take to a working ssh

# passt's uplink: an interface with a default route (none here).
tunctl -t vmmdup0 >/dev/null && ip link set vmmdup0 up &&
    ip addr add 192.168.77.2/24 dev vmmdup0 &&
    ip route add default via 192.168.77.1 || { say "no uplink"; ok=0; }
rm -f /tmp/id /tmp/id.pub
ssh-keygen -q -t ed25519 -N "" -f /tmp/id

now() { cut -d' ' -f1 /proc/uptime; }
# ssh_until PORT START: the seconds from START to the first ssh that
# runs a command, or "-" after the limit.
ssh_until() {
	while :; do
		t=$(now)
		if ssh -q -i /tmp/id -p "$1" -o StrictHostKeyChecking=no \
		    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 \
		    -o BatchMode=yes debian@127.0.0.1 true 2>/dev/null; then
			awk -v a="$2" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'
			return 0
		fi
		awk -v a="$2" -v b="$t" -v l="$limit" \
		    'BEGIN { exit !(b - a > l) }' && { echo -; return 1; }
		sleep 3
	done
}

# vmmd: the README's three commands.
mkdir -p /run/cb && chmod 755 /run/cb
sock=/run/cb/vmmd.sock
"$VMMD_BIN" -f -s $sock -d /tmp/cb -g "$VMMD_GUEST_DEMO" 2>/tmp/vmmd.log &
vmmd=$!
wait_socket $sock 30 || { say "vmmd did not start"; ok=0; }
t0=$(now)
"$VMCTL_BIN" -s $sock create web --disk "$BENCH_IMAGE,overlay" \
    --ssh-key /tmp/id.pub --net user,forward=tcp:127.0.0.1:2222:22 \
    --memory 512M >/dev/null &&
    "$VMCTL_BIN" -s $sock start web >/dev/null ||
    { say "vmmd: no start: $(tail -n 3 /tmp/vmmd.log)"; ok=0; }
vmmd_s=$(ssh_until 2222 "$t0") || ok=0
info=$("$VMCTL_BIN" -s $sock info web)
cmdline=$(echo "$info" | sed -n 's/^cmdline: //p')
say "vmmd: $(echo "$info" | sed -n 's/^kernel: //p')"
say "vmmd: cmdline $cmdline"
# QEMU gets the same seed content: what vmmd made, read from its disk
# would do, but the files are simple enough to write again.
mkdir -p /tmp/seed
printf 'instance-id: iid-qemu-1\nlocal-hostname: web\n' >/tmp/seed/meta-data
{ printf '#cloud-config\nssh_authorized_keys:\n'
  printf "  - '%s'\n" "$(cat /tmp/id.pub)"; } >/tmp/seed/user-data
"$VMCTL_BIN" -s $sock stop --force web >/dev/null 2>&1
stop_pid "$vmmd"
genisoimage -quiet -V cidata -r -J -o /tmp/seed.iso /tmp/seed/meta-data \
    /tmp/seed/user-data

# QEMU: the same kernel, initrd and command line, an overlay of the same
# image, the seed, passt on its stream netdev.
qemu-img create -q -f qcow2 -b "$BENCH_IMAGE" -F qcow2 /tmp/q.qcow2
rm -f /tmp/passt.sock
passt --foreground -q -s /tmp/passt.sock -t 127.0.0.1/2224:22 \
    2>/tmp/passt.log &
passt=$!
wait_socket /tmp/passt.sock 30 || { say "passt did not start"; ok=0; }
t0=$(now)
qemu-system-x86_64 -enable-kvm -M pc -cpu host -m 512 -smp 1 \
    -nodefaults -display none -serial file:/tmp/q.log \
    -kernel "$BENCH_KERNEL" -initrd "$BENCH_INITRD" -append "$cmdline" \
    -drive file=/tmp/q.qcow2,if=virtio \
    -drive file=/tmp/seed.iso,if=virtio,format=raw,readonly=on \
    -netdev stream,id=n0,server=off,addr.type=unix,addr.path=/tmp/passt.sock \
    -device virtio-net-pci,netdev=n0,romfile= 2>/tmp/q.err &
qemu=$!
qemu_s=$(ssh_until 2224 "$t0") ||
    { ok=0; say "qemu: $(tail -n 3 /tmp/q.err) $(tail -n 5 /tmp/q.log)"; }
stop_pid "$qemu"
stop_pid "$passt"

say ""
say "Debian's cloud image, start to a working ssh (seconds, emulated):"
say "  vmmd (disk boot, seed, passt)        $vmmd_s"
say "  QEMU (-kernel/-initrd, seed, passt)  $qemu_s"
case $vmmd_s$qemu_s in
*-*) ;;
*) say "  ratio vmmd/QEMU                      $(awk -v a="$vmmd_s" \
    -v b="$qemu_s" 'BEGIN { printf "%.2f", a / b }')" ;;
esac
[ $ok = 1 ] && echo "ok 1 - both VMMs booted the image to a working ssh" ||
    echo "not ok 1 - both VMMs booted the image to a working ssh"
echo "1..1"
