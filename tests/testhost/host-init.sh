#!/bin/busybox sh
# /init of the nested test host that boot.sh boots (see build-host.sh for
# what the initramfs holds).  Loads KVM, runs the program boot.sh was given
# (VMMD_LINUX_SCENARIOS: the linux suite's scenarios, the kvm suite's
# tests/kvm/kvm-nested-inner.sh, a benchmark) with the steps given on the
# kernel command line (vmmd_steps=a,b,...), copies its TAP output to the
# second serial port (ttyS1), which boot.sh reads, and powers off.
/bin/busybox --install -s
# The initramfs is the rootfs mount, which pivot_root(2) cannot leave:
# passt (the usernet step) pivots into a root of its own.  A bind mount
# of it moved onto / and entered is a root that can be left; it holds
# the same files.  Before anything is mounted below it.
if [ "${VMMD_ROOT_MOVED:-}" != 1 ]; then
	mkdir -p /.root
	mount -o bind / /.root && cd /.root && mount -o move . / &&
	    exec chroot . /bin/busybox env VMMD_ROOT_MOVED=1 /init "$@"
	echo "host-init: cannot leave the rootfs mount; passt will not run"
fi
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec 0</dev/null 1>/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
hostname testhost
# Loopback, for the VNC viewers of the display scenarios.
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up

stty -F /dev/ttyS1 raw -echo
# All SysRq functions: boot.sh asks a hung test host for its CPUs'
# backtraces (SysRq-L) before it kills it.
echo 1 >/proc/sys/kernel/sysrq

# Every 30 s, where the test host stands, on its console (ttyS0) through
# the kernel's log: the kernel writes its console by polling, so these
# lines come out even when the TAP's port (ttyS1, interrupt-driven, like
# the guest's serial console) stalls.  When the TAP goes silent, boot.sh
# shows them: still beating means the test host runs; its ttyS1 "tx"
# count says whether the TAP's port moves; each process's state and
# wait channel says where the scenarios (and the tee behind them) wait.
# Few lines: the kernel rate-limits writes to /dev/kmsg.
heartbeat() {
	while sleep 30; do
		echo "<2>vmmd-heartbeat: up $(cut -d' ' -f1 /proc/uptime) s," \
		    "load $(cut -d' ' -f1-3 /proc/loadavg)," \
		    "ttyS1 $(grep '^1:' /proc/tty/driver/serial |
		    grep -o 'tx:[0-9]* rx:[0-9]*')," \
		    "irq3 $(awk '$1 == "3:" { print $2 + $3 }' \
		    /proc/interrupts)," \
		    "clock $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
		    >/dev/kmsg
		ps=
		for d in /proc/[0-9]*; do
			read -r pid comm st ppid _ 2>/dev/null <"$d/stat" ||
			    continue
			# Not the kernel's threads (kthreadd's children).
			[ "$pid" = 2 ] || [ "$ppid" = 2 ] && continue
			ps="$ps $pid$comm$st:$(cat "$d/wchan" 2>/dev/null)"
		done
		echo "<2>vmmd-heartbeat: processes:$ps" >/dev/kmsg
	done
}
say() { echo "# test host: $*" | tee /dev/ttyS1; }

say "Linux $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs," \
    "$(awk '/^MemTotal/ { print $2 }' /proc/meminfo) KiB," \
    "init at $(cut -d' ' -f1 /proc/uptime) s"
intel=no
grep -qw vmx /proc/cpuinfo && intel=yes
while read -r m; do
	case $m in
	kvm-intel|kvm_intel)	[ $intel = yes ] || continue ;;
	kvm-amd|kvm_amd)	[ $intel = no ] || continue ;;
	esac
	insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done </lib/modules/order
dmesg | grep -i -e kvm -e svm | while read -r line; do say "$line"; done
[ -c /dev/kvm ] || say "no /dev/kvm"

. /vmmd/env
set -- $(echo "${vmmd_steps:-}" | tr , ' ')
cd /tmp
heartbeat &
beat=$!
"$VMMD_LINUX_SCENARIOS" "$@" 2>&1 | tee /dev/ttyS1
kill "$beat"
say "done at $(cut -d' ' -f1 /proc/uptime) s"
sync
poweroff -f
