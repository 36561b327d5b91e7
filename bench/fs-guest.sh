#!/bin/sh
# Runs once in the reference guest of bench/fs.sh (its inittab's ::once:
# entry): the guest's side of the phases, on the share tagged "bench"
# mounted at /mnt/bench.  Before each phase it waits for the test host's
# go (the file go-PHASE in the share: a lookup a second, the same under
# either VMM); after it, it says so on the console and leaves done-PHASE
# in the share.  The sizes come from the kernel command line
# (fsbench_mib=, fsbench_files=).
mib=$(sed -n 's/.*fsbench_mib=\([0-9]*\).*/\1/p' /proc/cmdline)
files=$(sed -n 's/.*fsbench_files=\([0-9]*\).*/\1/p' /proc/cmdline)
m=/mnt/bench
mkdir -p $m
mount -t virtiofs bench $m || { echo "fsbench: cannot mount the share"; exit 1; }
echo "fsbench: mounted"
for p in seqwrite seqread smallfiles; do
	until [ -e $m/go-$p ]; do sleep 1; done
	case $p in
	seqwrite)
		dd if=/dev/zero of=$m/seq bs=1M count="$mib" conv=fsync ;;
	seqread)
		echo 3 >/proc/sys/vm/drop_caches
		dd if=$m/seq of=/dev/null bs=1M ;;
	smallfiles)
		mkdir $m/small && head -c 4096 /dev/zero >/tmp/four &&
		i=0 && while [ $i -lt "$files" ]; do
			cp /tmp/four $m/small/f$i || exit 1
			i=$((i + 1))
		done && sync && echo 3 >/proc/sys/vm/drop_caches &&
		cat $m/small/* | wc -c && rm -r $m/small ;;
	esac >/tmp/fsbench.out 2>&1
	st=$?
	echo "fsbench: $p status $st: $(tail -n 1 /tmp/fsbench.out)"
	: >$m/done-$p
done
umount $m
echo "fsbench: all phases done"
