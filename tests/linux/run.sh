#!/bin/sh
# The linux suite: runs the scenarios (scenarios.c) on the reference guest
# and prints their TAP.
#
#   run.sh [STEP...]          (meson test --suite linux sets the environment)
#
# Where /dev/kvm is hardware virtualization (vmx or svm in /proc/cpuinfo),
# the scenarios run directly on this host.  Elsewhere (the PVM /dev/kvm of
# our machines cannot run a stock kernel) they run inside the nested test
# host that every suite uses (tests/testhost/boot.sh and its README.md).
#
# Environment:
#   VMMD_LINUX_GUEST      the reference guest directory (build-guest.sh);
#                         the suite is skipped when it was not built
#   VMMD_LINUX_MODE       auto (default), direct or nested
#   VMMD_LINUX_CMDLINE    the guest's kernel command line, to experiment
#   VMMD_LINUX_SCENARIOS  the scenarios' program
#   and, nested, those of tests/testhost/boot.sh
set -u

here=$(cd "$(dirname "$0")" && pwd)

# A skip is the plan "1..0 # SKIP": meson counts a TAP test's non-zero
# exit status, 77 included, as an error.
skip() { echo "1..0 # SKIP $*"; exit 0; }

guest=${VMMD_LINUX_GUEST:-}
if [ -z "$guest" ] || [ ! -f "$guest/vmlinuz" ] ||
    [ ! -f "$guest/initramfs.cpio.gz" ]; then
	skip "no reference guest in '$guest': tests/linux/build-guest.sh" \
	    "makes it (quickstart.sh test runs it)"
fi

mode=${VMMD_LINUX_MODE:-auto}
if [ "$mode" = auto ]; then
	if [ -c /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		mode=direct
	else
		mode=nested
	fi
fi
case $mode in
direct)	exec "${VMMD_LINUX_SCENARIOS:?VMMD_LINUX_SCENARIOS is not set}" "$@" ;;
nested)	exec sh "$here/../testhost/boot.sh" "$@" ;;
*)	echo "Bail out! VMMD_LINUX_MODE=$mode: auto, direct or nested"
	exit 1 ;;
esac
