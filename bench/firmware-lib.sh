# Sourced by the firmware benchmarks (firmware-boot.sh, firmware-idle.sh):
# vmmd and QEMU -M pc started on the same SeaBIOS image and the same boot
# medium, and a wait for a text on a serial console.  POSIX sh.
#
# Before sourcing: build (the build directory), tmp (a scratch directory
# the caller removes).  fw_cleanup stops what fw_vmmd and fw_qemu started.

fw_bios=${VMMD_BENCH_BIOS:-/usr/share/seabios/bios-256k.bin}
fw_vmmd_pid= fw_qemu_pid= fw_vms=
fw_ctl="$build/ctl/vmctl -s $tmp/sock"

for t in strace qemu-system-x86_64; do
	command -v $t >/dev/null || { echo "needs $t" >&2; exit 1; }
done
[ -f "$fw_bios" ] || { echo "no SeaBIOS at $fw_bios (seabios)" >&2; exit 1; }
[ -c /dev/kvm ] && (: <>/dev/kvm) 2>/dev/null ||
    { echo "/dev/kvm does not open here" >&2; exit 1; }

# SeaBIOS's console on COM1 for QEMU too, as vmmd sets it (etc/sercon-port,
# a little-endian 0x3f8), so both firmwares print the same.
printf '\370\003' >"$tmp/sercon"

# Milliseconds since the epoch.
fw_now() { echo $(($(date +%s%N) / 1000000)); }

# fw_wait FILE TEXT MS: 0 once FILE holds TEXT, 1 after MS milliseconds
# (looked at ten times a second: the figures are good to 0.1 s).
fw_wait() {
	fw_end=$(($(fw_now) + $3))
	while ! grep -qaF -- "$2" "$1" 2>/dev/null; do
		[ "$(fw_now)" -lt "$fw_end" ] || return 1
		sleep 0.1	# a tenth of a second: the boots take seconds
	done
}

# The VMs are stopped first: a guest in its firmware or boot loader does
# not answer the power button vmmd presses when it is stopped.
fw_cleanup() {
	[ -z "$fw_qemu_pid" ] || kill "$fw_qemu_pid" 2>/dev/null || true
	if [ -n "$fw_vmmd_pid" ]; then
		for vm in $fw_vms; do
			$fw_ctl stop "$vm" --force >/dev/null 2>&1 || true
		done
		kill "$fw_vmmd_pid" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
}

# A private vmmd on $tmp/sock, state in $tmp/state.
fw_vmmd_start() {
	"$build/daemon/vmmd" -f -s "$tmp/sock" -d "$tmp/state" \
	    2>"$tmp/vmmd.log" &
	fw_vmmd_pid=$!
	i=0
	while [ ! -S "$tmp/sock" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# fw_vmmd_create NAME MEDIUM-OPTIONS...: a 32 MiB VM on SeaBIOS.
fw_vmmd_create() {
	fw_vms="$fw_vms $1"
	$fw_ctl create "$@" --firmware bios --memory 32 >/dev/null
}

# The worker's pid of VM NAME.
fw_worker() {
	$fw_ctl -j info "$1" | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' |
	    head -n 1
}

# fw_qemu LOG QEMU-OPTIONS...: QEMU -M pc on the same SeaBIOS, its serial
# port into LOG, no display, with the boot menu as vmmd sets it (shown,
# no wait).
fw_qemu() {
	fw_log=$1
	shift
	qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities -M pc \
	    -m 32 -nodefaults -display none -monitor none \
	    -serial "file:$fw_log" -bios "$fw_bios" \
	    -fw_cfg name=etc/sercon-port,file="$tmp/sercon" \
	    -boot menu=on,splash-time=0 "$@" 2>>"$tmp/qemu.err" &
	fw_qemu_pid=$!
}

fw_qemu_stop() {
	[ -z "$fw_qemu_pid" ] || { kill "$fw_qemu_pid"; wait "$fw_qemu_pid"; }
	fw_qemu_pid=
}
