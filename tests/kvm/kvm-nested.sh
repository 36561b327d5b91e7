#!/bin/sh
# The kvm suite where this host has no usable /dev/kvm (meson test
# "nested", suite kvm): every kvm test program, in one boot of the nested
# test host that every suite uses (QEMU's emulation with emulated SVM,
# where /dev/kvm exists; see tests/testhost/README.md), as one TAP stream.
#
#   kvm-nested.sh [TEST...]  (meson test --suite kvm sets the environment)
#
# Where /dev/kvm opens, the programs run directly as meson tests of their
# own and this one skips; where it does not, they skip and this one runs
# them.  tests/testhost/boot.sh builds the test host's initramfs
# (build-host.sh: vmmd, the test programs, the test guests, their
# libraries) and boots it; kvm-nested-inner.sh runs the programs inside.
# Its kernel, busybox and KVM modules come from the reference guest
# directory (tests/linux/build-guest.sh): without it this test skips.
#
# Environment, besides the kvm suite's (VMMD_BIN, VMMD_WORKER_BIN,
# VMCTL_BIN, VMMD_GUEST_*):
#   VMMD_KVM_PROGRAMS      the test programs (kvm-test-NAME)
#   VMMD_KVM_TESTS         "name=timeout ..." in meson's order
#   VMMD_KVM_MODE          auto (default), or nested: run nested even
#                          where /dev/kvm opens
#   VMMD_TEST_TIME_SCALE   multiplies each program's meson timeout
#                          inside (default 2: see "Time inside the test
#                          host" in tests/testhost/README.md)
#   VMMD_LINUX_MAX_SILENCE seconds without TAP after which the test host
#                          counts as hung (default here 120: every program
#                          prints within seconds, or times out)
#   VMMD_LINUX_TCG_THREADS QEMU's TCG threading (default here single)
#   VMMD_LINUX_GUEST, VMMD_LINUX_WORKDIR, VMMD_LINUX_TIMEOUT, ...: as
#                          for tests/testhost/boot.sh
set -u

here=$(cd "$(dirname "$0")" && pwd)

# A skip is the plan "1..0 # SKIP", with status 0 (meson counts a TAP
# test's non-zero status as an error).
skip() { echo "1..0 # SKIP $*"; exit 0; }

case ${VMMD_KVM_MODE:-auto} in
auto)	# What the harness's h_init() does: open it read-write (only a
	# character device: "<>" would create a missing file).
	if [ -c /dev/kvm ] && (: <>/dev/kvm) 2>/dev/null; then
		skip "/dev/kvm opens: the kvm tests run directly"
	fi ;;
nested)	;;
*)	echo "Bail out! VMMD_KVM_MODE=$VMMD_KVM_MODE: auto or nested"
	exit 1 ;;
esac

: "${VMMD_KVM_PROGRAMS:?VMMD_KVM_PROGRAMS is not set}"
: "${VMMD_KVM_TESTS:?VMMD_KVM_TESTS is not set}"
VMMD_TEST_TIME_SCALE=${VMMD_TEST_TIME_SCALE:-2}
# A test may wait for one event up to 300 s (a firmware boot), twice that
# scaled here, without printing: only longer silence means the test host
# itself hung, and boot.sh then boots it once more.  (At 120 s a failed
# wait looked like a hung host, and each boot failed the same way.)
VMMD_LINUX_MAX_SILENCE=${VMMD_LINUX_MAX_SILENCE:-700}
# One TCG thread for both of the test host's CPUs: with one thread per
# CPU, the ASan build's test host hung (both CPUs busy in its kernel with
# interrupts off) in four of five runs; with one, in none of five (three
# of them ASan), and no slower on our two cores.
VMMD_LINUX_TCG_THREADS=${VMMD_LINUX_TCG_THREADS:-single}
VMMD_LINUX_MODE=nested
VMMD_LINUX_SCENARIOS=$here/kvm-nested-inner.sh
VMMD_HOST_PROGRAMS=$VMMD_KVM_PROGRAMS
VMMD_HOST_GUEST=no
# qemu-img makes and checks the disk images of the qcow2 and disk-format
# tests, inside as outside.
if qemu_img=$(command -v qemu-img); then
	VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} $qemu_img"
	export VMMD_HOST_EXTRA
fi
# qemu-storage-daemon serves the nbd test's disks, inside as outside.
if qsd=$(command -v qemu-storage-daemon); then
	VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} $qsd"
	export VMMD_HOST_EXTRA
fi
# virtiofsd serves the fs test's shares, inside as outside.
if [ -x /usr/lib/qemu/virtiofsd ]; then
	VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} /usr/lib/qemu/virtiofsd"
	export VMMD_HOST_EXTRA
fi
# promtool checks the metrics test's exposition inside as outside; the
# test fails, not skips, when the one named here is missing inside.
if promtool=$(command -v promtool); then
	VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} $promtool"
	VMMD_TEST_PROMTOOL=$promtool
	export VMMD_HOST_EXTRA VMMD_TEST_PROMTOOL
fi
# Debian's SeaBIOS and the VGA BIOS of its bochs-display for the
# firmware tests, and OVMF for the UEFI test, at the same paths inside.
for fw in /usr/share/seabios/bios-256k.bin \
    /usr/share/seabios/vgabios-bochs-display.bin \
    /usr/share/OVMF/OVMF_CODE_4M.fd /usr/share/OVMF/OVMF_VARS_4M.fd; do
	if [ -f "$fw" ]; then
		VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} $fw"
		export VMMD_HOST_EXTRA
	fi
done
# The cloud test's disks, made at build time, at the same paths inside.
for disk in ${VMMD_BOOT_DISK_GRUB:-} ${VMMD_BOOT_DISK_EMPTY:-}; do
	VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} $disk"
	export VMMD_HOST_EXTRA
done
# The firmware tests' boot media, made at build time, at the same paths
# inside.
for medium in ${VMMD_MEDIA_ELTORITO:-} ${VMMD_MEDIA_HYBRID:-} \
    ${VMMD_MEDIA_BIOSDISK:-} ${VMMD_MEDIA_ELTORITO_PROMPT:-} \
    ${VMMD_MEDIA_HYBRID_PROMPT:-}; do
	VMMD_HOST_EXTRA="${VMMD_HOST_EXTRA:-} $medium"
	export VMMD_HOST_EXTRA
done
# The sanitizers' settings (meson's or the caller's) hold inside too, and
# whether this is a sanitizer build (tests leave out what such a build
# cannot bound: kvm cloud's reader without an address space limit was
# killed by the test host's OOM killer instead).
VMMD_HOST_PASS="VMMD_KVM_TESTS VMMD_TEST_TIME_SCALE VMMD_TEST_HOOKS
    VMMD_TEST_SANITIZED ASAN_OPTIONS
    UBSAN_OPTIONS LSAN_OPTIONS MALLOC_PERTURB_ VMMD_BOOT_DISK_GRUB
    VMMD_BOOT_DISK_EMPTY VMMD_TEST_PROMTOOL VMMD_MEDIA_ELTORITO
    VMMD_MEDIA_HYBRID VMMD_MEDIA_BIOSDISK VMMD_MEDIA_ELTORITO_PROMPT
    VMMD_MEDIA_HYBRID_PROMPT"
export VMMD_TEST_TIME_SCALE VMMD_LINUX_MAX_SILENCE VMMD_LINUX_TCG_THREADS
export VMMD_LINUX_MODE VMMD_LINUX_SCENARIOS
export VMMD_HOST_PROGRAMS VMMD_HOST_GUEST VMMD_HOST_PASS
exec sh "$here/../testhost/boot.sh" "$@"
