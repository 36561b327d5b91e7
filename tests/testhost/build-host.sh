#!/bin/sh
# Builds the nested test host's initramfs (an uncompressed cpio archive:
# the test host runs under emulation, where decompressing would cost more
# than reading) for boot.sh:
#
#   build-host.sh OUT.cpio
#
# It holds busybox and the KVM modules from the reference guest directory
# (VMMD_LINUX_GUEST, see tests/linux/build-guest.sh), the built programs (VMMD_BIN,
# VMMD_WORKER_BIN, VMCTL_BIN, VMMD_LINUX_SCENARIOS: what the test host
# runs, and VMMD_HOST_PROGRAMS: more programs, each in /vmmd by its name)
# with every shared library ldd lists (sanitizer runtimes included) and
# the dynamic loader (and the worker's VNC and cloud modules, vmmd-vnc.so
# and vmmd-cloud.so beside it, with their libraries), /etc/passwd and
# /etc/group naming root, every test guest named by a VMMD_GUEST_<NAME>
# variable, the reference guest (left out with VMMD_HOST_GUEST=no: the
# kvm suite does not need it), and host-init.sh as /init.  /vmmd/env
# gives the programs their environment inside: the paths there, and the
# variables VMMD_HOST_PASS names, with their values here.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build-host.sh OUT.cpio}

die() { printf 'build-host: %s\n' "$*" >&2; exit 1; }

for v in VMMD_LINUX_GUEST VMMD_BIN VMMD_WORKER_BIN VMCTL_BIN \
    VMMD_LINUX_SCENARIOS VMMD_GUEST_DEMO; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || die "$v is not set"
done
guest=$VMMD_LINUX_GUEST
with_guest=${VMMD_HOST_GUEST:-yes}
need="vmlinuz busybox host-modules/order"
[ "$with_guest" = no ] || need="$need vmlinux initramfs.cpio.gz cmdline"
for f in $need; do
	[ -f "$guest/$f" ] || die "$guest/$f is missing (run tests/linux/build-guest.sh)"
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT INT TERM HUP
mkdir -p "$stage/bin" "$stage/sbin" "$stage/usr/bin" "$stage/usr/sbin" \
    "$stage/proc" "$stage/sys" "$stage/dev" "$stage/tmp" "$stage/run" \
    "$stage/lib/modules" "$stage/vmmd" "$stage/vmmd/guests"
# The modes of a root file system (mktemp made the root 0700): the kvm
# suite's access tests connect as an unprivileged user.
chmod 755 "$stage"
chmod 1777 "$stage/tmp"

# Symbolic links to the real files: cpio -L archives what they point to.
link() { ln -sf "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" "$2"; }

link "$guest/busybox" "$stage/bin/busybox"
link "$here/host-init.sh" "$stage/init"
for f in "$guest"/host-modules/*; do
	link "$f" "$stage/lib/modules/$(basename "$f")"
done
if [ "$with_guest" != no ]; then
	mkdir -p "$stage/guest"
	for f in vmlinuz vmlinux initramfs.cpio.gz cmdline; do
		link "$guest/$f" "$stage/guest/$f"
	done
fi
link "$VMMD_BIN" "$stage/vmmd/vmmd"
link "$VMMD_WORKER_BIN" "$stage/vmmd/vmmd-worker"
# The worker loads its VNC module from its own directory.
vnc_module=$(dirname "$VMMD_WORKER_BIN")/vmmd-vnc.so
[ -f "$vnc_module" ] || die "$vnc_module is missing"
link "$vnc_module" "$stage/vmmd/vmmd-vnc.so"
# And its cloud module (booting from a disk, cloud-init's seed).
cloud_module=$(dirname "$VMMD_WORKER_BIN")/vmmd-cloud.so
[ -f "$cloud_module" ] || die "$cloud_module is missing"
link "$cloud_module" "$stage/vmmd/vmmd-cloud.so"
# Users by name, for programs that want one (ssh refuses a uid without;
# sshd's privilege separation runs as sshd: the linux suite's migrate step).
mkdir -p "$stage/etc" "$stage/root"
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' \
    'sshd:x:100:65534:sshd:/run/sshd:/bin/false' \
    'nobody:x:65534:65534:nobody:/:/bin/false' >"$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage/etc/group"
link "$VMCTL_BIN" "$stage/vmmd/vmctl"
link "$VMMD_LINUX_SCENARIOS" "$stage/vmmd/linux-scenarios"
# The host's end of the vsock checks, where the suite has one.
if [ -n "${VMMD_VSOCK_ECHO:-}" ]; then
	[ -f "$VMMD_VSOCK_ECHO" ] || die "$VMMD_VSOCK_ECHO is missing"
	link "$VMMD_VSOCK_ECHO" "$stage/vmmd/vsock-echo"
fi
for f in ${VMMD_HOST_PROGRAMS:-}; do
	[ -f "$f" ] || die "VMMD_HOST_PROGRAMS: $f is missing"
	link "$f" "$stage/vmmd/$(basename "$f")"
done
# The test guests: VMMD_GUEST_HELLO=.../hello.elf -> /vmmd/guests/hello.elf.
guests=$(env | sed -n 's/^\(VMMD_GUEST_[A-Z0-9_]*\)=.*/\1/p' | sort)
for v in $guests; do
	eval "f=\$$v"
	[ -f "$f" ] || die "$v: $f is missing"
	link "$f" "$stage/vmmd/guests/$(basename "$f")"
done
if [ "$(id -u)" = 0 ]; then
	mknod -m 600 "$stage/dev/console" c 5 1
fi

# Anything else a caller needs inside (bench/idle-linux.sh: strace, QEMU
# and its firmware): VMMD_HOST_EXTRA lists absolute paths, each placed at
# the same path; programs among them get their libraries below.
for f in ${VMMD_HOST_EXTRA:-}; do
	[ -f "$f" ] || die "VMMD_HOST_EXTRA: $f is missing"
	mkdir -p "$stage$(dirname "$f")"
	[ -e "$stage$f" ] || link "$f" "$stage$f"
done

# Shared libraries at the paths the loader will look for them.
for bin in "$VMMD_BIN" "$VMMD_WORKER_BIN" "$vnc_module" "$cloud_module" "$VMCTL_BIN" \
    "$VMMD_LINUX_SCENARIOS" ${VMMD_VSOCK_ECHO:-} ${VMMD_HOST_PROGRAMS:-} ${VMMD_HOST_EXTRA:-}; do
	ldd "$bin" 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//)
	    print $i }'
done | sort -u | while read -r lib; do
	[ -f "$lib" ] || continue
	mkdir -p "$stage$(dirname "$lib")"
	[ -e "$stage$lib" ] || link "$lib" "$stage$lib"
done

# A variable's value as a word the shell reads back unchanged.
quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }

# What boot.sh passes on: the scenarios' environment inside the test host.
{
	echo "VMMD_BIN=/vmmd/vmmd"
	echo "VMMD_WORKER_BIN=/vmmd/vmmd-worker"
	echo "VMCTL_BIN=/vmmd/vmctl"
	echo "VMMD_LINUX_SCENARIOS=/vmmd/linux-scenarios"
	[ -z "${VMMD_VSOCK_ECHO:-}" ] ||
	    printf '%s\n' "VMMD_VSOCK_ECHO=/vmmd/vsock-echo" \
	    "export VMMD_VSOCK_ECHO"
	[ "$with_guest" = no ] || echo "VMMD_LINUX_GUEST=/guest"
	for v in $guests; do
		eval "f=\$$v"
		echo "$v=/vmmd/guests/$(basename "$f")"
		echo "export $v"
	done
	if [ -n "${VMMD_LINUX_CMDLINE:-}" ]; then
		echo "VMMD_LINUX_CMDLINE=$(quote "$VMMD_LINUX_CMDLINE")"
	fi
	for v in ${VMMD_HOST_PASS:-}; do
		case $v in
		*[!A-Za-z0-9_]*|[0-9]*|"") die "VMMD_HOST_PASS: bad name '$v'" ;;
		esac
		eval "set=\${$v+y}"
		[ -n "$set" ] || continue
		eval "val=\$$v"
		echo "$v=$(quote "$val")"
		echo "export $v"
	done
	case ${VMMD_LINUX_STREAM_KIB:-} in
	*[!0-9]*|"") ;;
	*)	echo "VMMD_LINUX_STREAM_KIB=$VMMD_LINUX_STREAM_KIB"
		echo "export VMMD_LINUX_STREAM_KIB" ;;
	esac
	echo "export VMMD_BIN VMMD_WORKER_BIN VMCTL_BIN"
	echo "export VMMD_LINUX_SCENARIOS VMMD_LINUX_GUEST VMMD_LINUX_CMDLINE"
} >"$stage/vmmd/env"

(cd "$stage" && find . | LC_ALL=C sort | cpio -o -L -H newc -R 0:0 \
    --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
