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
# emulation, see tests/testhost/README.md), where counts are meaningful
# and times are not.  Prints figures; asserts nothing.
#
#   bench/display.sh BUILDDIR
#
# The test host boots the reference guest's kernel (VMMD_LINUX_GUEST,
# default .cache/linux-guest).  Needs qemu-system-x86 and strace.
set -eu

build=$(cd "${1:?usage: bench/display.sh BUILDDIR}" && pwd)
. "$(dirname "$0")/direct-host.sh"
direct_run "$build" "$(dirname "$0")/display-inner.sh" \
    BENCH_FB="$build/tests/guests/fb.elf" BENCH_WATCH="$build/bench/vnc-watch"
. "$(dirname "$0")/nested-host.sh"
nested_init "$build" display
b=$nested_build
nested_file "$b/tests/guests/fb.elf" "$b/bench/vnc-watch"
nested_var BENCH_FB "$b/tests/guests/fb.elf"
nested_var BENCH_WATCH "$b/bench/vnc-watch"
[ -n "${VMMD_BENCH_SECONDS:-}" ] &&
    nested_var VMMD_BENCH_SECONDS "$VMMD_BENCH_SECONDS"
nested_run "$nested_top/bench/display-inner.sh"
