# Sourced by the benchmarks that run directly where /dev/kvm opens here
# and in the linux suite's nested test host elsewhere (display.sh,
# rtc.sh).  POSIX sh.
#
# direct_run BUILDDIR INNER [VAR=VALUE...]: where /dev/kvm opens here
# and VMMD_BENCH_NESTED is not set, run the inner script INNER (which
# also runs inside the test host) with the build's vmmd, vmmd-worker,
# vmctl and demo guest, a scratch BENCH_DIR removed at the end,
# BENCH_WHERE saying where it runs, and the VAR=VALUE given, then exit
# with its status.  Elsewhere return, for the nested path.
direct_run() {
	direct_build=$1 direct_inner=$2
	shift 2
	if [ -n "${VMMD_BENCH_NESTED:-}" ] || [ ! -c /dev/kvm ] ||
	    ! (: <>/dev/kvm) 2>/dev/null; then
		return 0
	fi
	command -v qemu-system-x86_64 strace >/dev/null ||
	    { echo "needs qemu-system-x86_64 and strace" >&2; exit 1; }
	direct_work=$(mktemp -d)
	trap 'rm -rf "$direct_work"' EXIT
	env VMMD_BIN="$direct_build/daemon/vmmd" \
	    VMMD_WORKER_BIN="$direct_build/daemon/vmmd-worker" \
	    VMCTL_BIN="$direct_build/ctl/vmctl" \
	    VMMD_GUEST_DEMO="$direct_build/daemon/guest/demo.elf" \
	    BENCH_DIR="$direct_work" BENCH_WHERE="this host's /dev/kvm" \
	    "$@" sh "$direct_inner"
	exit
}
