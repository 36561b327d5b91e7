#!/bin/sh
# Runs once in the reference guest of bench/virtio.sh (its inittab's
# ::once: entry): the guest's side of the phases.  Before each, it
# waits for the test host's go (a connection to port 6000, which the
# test host makes once it counts); after each, it says so on the
# console and connects to the test host's port 6001.  The size in MiB
# and the phases come from the kernel command line (vbench_mib=,
# vbench_phases= with commas).  A disk phase is DISK-OP: DISK raw is
# /dev/vda (a raw image), qnew and qagain are /dev/vdb (a qcow2 image,
# fresh when the test host starts the VMM: its first pass allocates,
# the second rewrites); OP is seqwrite, seqread, randwrite or randread.
host=10.0.9.1
mib=$(sed -n 's/.*vbench_mib=\([0-9]*\).*/\1/p' /proc/cmdline)
phases=$(sed -n 's/.*vbench_phases=\([a-z,-]*\).*/\1/p' /proc/cmdline |
    tr , ' ')
blocks=$((${mib:-8} * 256))
ip link set eth0 up && ip addr add 10.0.9.2/24 dev eth0 ||
    echo "vbench: no eth0"
# A pipe that never ends: nc leaves on the network's end, not on that of
# its input, when it only receives.
# Ready: the test host starts counting only after this, and a while later.
until nc $host 6001 </dev/null >/dev/null 2>&1; do sleep 1; done
mkfifo /tmp/hold
exec 3<>/tmp/hold
disk_ops="seqwrite seqread randwrite randread"
all=
for d in raw qnew qagain; do
	for o in $disk_ops; do all="$all $d-$o"; done
done
for p in ${phases:-$all netin netout}; do
	nc -l -p 6000 <&3 >/dev/null 2>&1
	case $p in
	raw-*)	dev=/dev/vda ;;
	q*-*)	dev=/dev/vdb ;;
	esac
	case $p in
	*-seqwrite) dd if=/dev/zero of=$dev bs=4k count=$blocks oflag=direct ;;
	*-seqread) dd if=$dev of=/dev/null bs=4k count=$blocks iflag=direct ;;
	*-randwrite) virtio-rand w $dev $blocks 12345 ;;
	*-randread) virtio-rand r $dev $blocks 54321 ;;
	netin) nc $host 5001 <&3 >/dev/null ;;
	netout) dd if=/dev/zero bs=64k count=$((blocks / 16)) | nc $host 5002 ;;
	esac >/tmp/vbench.out 2>&1
	st=$?
	echo "vbench: $p status $st: $(tail -n 1 /tmp/vbench.out)"
	until nc $host 6001 </dev/null >/dev/null 2>&1; do sleep 1; done
done
echo "vbench: all phases done"
