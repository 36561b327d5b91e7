#!/bin/sh
# The display's cost, vmmd against QEMU in one run: the fb test guest
# (tests/guests/fb.c) with a 1024x768 screen under vmmd (vnc auto) and
# under QEMU (-vnc, the std VGA's framebuffer), (a) with no VNC client,
# (b) with one client and a static screen, (c) with one client and a
# bar the guest moves every 20 ms.  System calls (strace -c -f) and
# wake-ups (voluntary context switches) of every process of each VMM
# over 10 s, the updates and bytes the client (vnc-watch.c) received,
# the ratios vmmd/QEMU, and the worker's memory beyond guest RAM and the
# framebuffer.  Where /dev/kvm opens here it runs directly (times are
# this host's, on a software KVM backend where that is what opens);
# elsewhere (or with VMMD_BENCH_NESTED=1) in one boot of the linux
# suite's nested test host (a hardware-style /dev/kvm under QEMU's
# emulation, see tests/linux/README.md), where counts are meaningful
# and times are not.  Prints figures; asserts nothing.
#
#   bench/display.sh BUILDDIR
#
# The test host boots the reference guest's kernel (VMMD_LINUX_GUEST,
# default .cache/linux-guest).  Needs qemu-system-x86 and strace.
set -eu

build=$(cd "${1:?usage: bench/display.sh BUILDDIR}" && pwd)
if [ -z "${VMMD_BENCH_NESTED:-}" ] && [ -c /dev/kvm ] &&
    (: <>/dev/kvm) 2>/dev/null; then
	command -v qemu-system-x86_64 strace >/dev/null ||
	    { echo "needs qemu-system-x86_64 and strace" >&2; exit 1; }
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	VMMD_BIN=$build/daemon/vmmd VMMD_WORKER_BIN=$build/daemon/vmmd-worker \
	VMCTL_BIN=$build/ctl/vmctl VMMD_GUEST_DEMO=$build/tests/guests/demo.elf \
	BENCH_FB=$build/tests/guests/fb.elf BENCH_WATCH=$build/bench/vnc-watch \
	BENCH_DIR=$work BENCH_WHERE="this host's /dev/kvm" \
	    sh "$(dirname "$0")/display-inner.sh"
	exit
fi
. "$(dirname "$0")/nested-host.sh"
nested_init "$build" display
b=$nested_build
nested_file "$b/tests/guests/fb.elf" "$b/bench/vnc-watch"
nested_var BENCH_FB "$b/tests/guests/fb.elf"
nested_var BENCH_WATCH "$b/bench/vnc-watch"
[ -n "${VMMD_BENCH_SECONDS:-}" ] &&
    nested_var VMMD_BENCH_SECONDS "$VMMD_BENCH_SECONDS"
nested_run "$nested_top/bench/display-inner.sh"
