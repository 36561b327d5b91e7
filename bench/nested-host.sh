# Sourced by the benchmarks that need a hardware-style /dev/kvm
# (display.sh, idle-kvm.sh): one boot of the linux suite's nested test
# host (tests/testhost/boot.sh, build-host.sh) runs an inner script with
# QEMU, strace and whatever else the benchmark packs.  Counts are
# meaningful in the test host; times are those of an emulated machine.
#
#   . bench/nested-host.sh
#   nested_init BUILDDIR WORKNAME     checks tools, picks the reference guest
#   nested_var NAME VALUE             passed to the inner script
#   nested_file PATH...               packed at the same absolute path
#   nested_run INNER                  boots the test host, prints its TAP
#
# The test host boots the reference guest's kernel (VMMD_LINUX_GUEST,
# default .cache/linux-guest: tests/linux/build-guest.sh).

nested_top=$(cd "$(dirname "$0")/.." && pwd)

nested_init() {
	nested_build=$(cd "$1" && pwd)
	nested_work=$nested_build/bench/$2
	nested_guest=${VMMD_LINUX_GUEST:-$nested_top/.cache/linux-guest}
	[ -f "$nested_guest/vmlinuz" ] || {
		echo "no reference guest in $nested_guest (set VMMD_LINUX_GUEST" \
		    "or run tests/linux/build-guest.sh)" >&2
		exit 1
	}
	nested_qemu=$(command -v qemu-system-x86_64) ||
	    { echo "needs qemu-system-x86_64" >&2; exit 1; }
	nested_strace=$(command -v strace) ||
	    { echo "needs strace" >&2; exit 1; }
	mkdir -p "$nested_work"
	nested_vars=$nested_work/inner-env
	: >"$nested_vars"
	nested_extra="$nested_qemu $nested_strace"
	# QEMU's firmware goes to the same paths, where QEMU looks for it.
	# pvh.bin boots the PVH test guests, vgabios-stdvga.bin is -device
	# VGA's ROM, -vnc needs a keymap.
	for f in /usr/share/seabios/bios-256k.bin \
	    /usr/share/seabios/vgabios-stdvga.bin \
	    /usr/share/qemu/linuxboot_dma.bin /usr/share/qemu/kvmvapic.bin \
	    /usr/share/qemu/pvh.bin /usr/share/qemu/keymaps/en-us; do
		[ -f "$f" ] && nested_file "$f"
	done
	return 0
}

# nested_guest_begin FILE...: a guest of the benchmark's own in
# $nested_work/guest, with the reference guest's host-modules and FILEs
# (vmlinuz, vmlinux, busybox, cmdline...), and an empty stage directory
# for what its initramfs gets on top ($stage, with usr/bin and etc).
nested_guest_begin() {
	g=$nested_work/guest
	stage=$nested_work/guest-stage
	rm -rf "$g" "$stage"
	mkdir -p "$g" "$stage/usr/bin" "$stage/etc"
	cp -R "$nested_guest/host-modules" "$g/"
	for f in "$@"; do
		cp "$nested_guest/$f" "$g/$f"
	done
}

# nested_guest_end INITTAB_LINE: the reference guest's initramfs with an
# archive of $stage after it (the kernel unpacks both, later files
# replacing earlier ones), its inittab with INITTAB_LINE added; the
# guest made by nested_guest_begin becomes the one the test host runs.
nested_guest_end() {
	gzip -dc "$nested_guest/initramfs.cpio.gz" |
	    (cd "$stage" && cpio -i --quiet etc/inittab)
	[ -s "$stage/etc/inittab" ] ||
	    { echo "no etc/inittab in $nested_guest/initramfs.cpio.gz" >&2
	      exit 1; }
	echo "$1" >>"$stage/etc/inittab"
	{
		cat "$nested_guest/initramfs.cpio.gz"
		(cd "$stage" && find . | LC_ALL=C sort |
		    cpio -o -H newc -R 0:0 --quiet) | gzip -9n
	} >"$g/initramfs.cpio.gz"
	nested_guest=$g
}

nested_var() {
	printf "%s='%s'; export %s\n" "$1" \
	    "$(printf '%s' "$2" | sed "s/'/'\\\\''/g")" "$1" >>"$nested_vars"
}

nested_file() {
	for f in "$@"; do
		[ -e "$f" ] || { echo "missing: $f" >&2; exit 1; }
		nested_extra="$nested_extra $f"
	done
}

nested_run() {
	inner=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
	nested_file "$inner" "$nested_top/bench/nested-lib.sh"
	wrapper=$nested_work/inner.sh
	{
		echo "#!/bin/sh"
		cat "$nested_vars"
		echo "exec sh '$inner' \"\$@\""
	} >"$wrapper"
	chmod +x "$wrapper"
	VMMD_LINUX_MODE=nested \
	VMMD_LINUX_GUEST=$nested_guest \
	VMMD_LINUX_WORKDIR=$nested_work \
	VMMD_LINUX_SCENARIOS=$wrapper \
	VMMD_LINUX_TIMEOUT=${VMMD_LINUX_TIMEOUT:-900} \
	VMMD_BIN=$nested_build/daemon/vmmd \
	VMMD_WORKER_BIN=$nested_build/daemon/vmmd-worker \
	VMCTL_BIN=$nested_build/ctl/vmctl \
	VMMD_GUEST_DEMO=$nested_build/daemon/guest/demo.elf \
	VMMD_HOST_EXTRA="$nested_extra" \
	    sh "$nested_top/tests/testhost/boot.sh"
}
