#!/bin/sh
# vmmd quick start for a fresh Debian 12 machine (run as root).
#
#   ./quickstart.sh          install what is needed, build, start vmmd and
#                            boot the default guest on this terminal
#   ./quickstart.sh test     the same set-up, then the unit and kvm suites,
#                            plain and with AddressSanitizer and UBSan, a
#                            short run of every fuzzer (tests/fuzz), the
#                            linux suite, the Debian packages (built,
#                            lintian) and the systemd suite (they are
#                            installed, upgraded and purged under systemd
#                            as PID 1; what CI runs); where this
#                            host has no /dev/kvm, the kvm suite runs in
#                            the linux suite's nested test host, and where
#                            it has one, there as well, once
#   ./quickstart.sh linux    the same set-up, the reference Debian guest,
#                            then the linux suite only (minutes)
#   ./quickstart.sh cloud    install, build, start vmmd, build a Debian
#                            cloud image (tests/linux/build-cloud-image.sh)
#                            and run it as a cloud image is run: from its
#                            own disk, cloud-init's seed with your SSH key,
#                            user-mode networking; then ssh into it (where
#                            KVM can run a stock kernel)
#
# Environment: BUILDDIR (default ./build), VMMD_SOCKET, VMMD_STATEDIR,
# VMMD_LOG (the daemon's log where systemd does not run it; default
# /var/log/vmmd-quickstart.log).
set -eu

top=$(cd "$(dirname "$0")" && pwd)
builddir=${BUILDDIR:-$top/build}
cache=$top/.cache
mode=${1:-demo}

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and uses /dev/kvm)"
case $mode in demo|test|linux|cloud) ;; *) die "usage: $0 [test|linux|cloud]" ;; esac

# passt: the user-mode network a guest gets with "net": {"user": true};
# libblkid, libext2fs and libisofs: the cloud module (reading a cloud
# image's boot configuration, making cloud-init's seed).
# librbd-dev and librados-dev: Ceph RBD disks (daemon/disk/blk-rbd.c;
# meson's "rbd" feature, built when they are found).
build_deps="meson ninja-build pkg-config gcc libc6-dev libevent-dev libjson-c-dev libvncserver-dev libpng-dev libsystemd-dev libseccomp-dev zlib1g-dev libzstd-dev passt libblkid-dev libext2fs-dev libisofs-dev librbd-dev librados-dev"
# qemu-system-x86 boots the linux suite's nested test host; cpio, xz-utils
# and zstd build the reference guest (tests/linux/build-guest.sh).
# chromium and novnc: the browser test of the display (tests/unit/test-novnc.c);
# mandoc, bash-completion and zsh: the manuals and completion tests;
# acpica-tools: iasl round-trips the generated AML (tests/unit/test-boot-acpi.c);
# clang and libclang-rt-14-dev: the libFuzzer harnesses (tests/fuzz);
# qemu-utils: qemu-img makes and checks the qcow2 image a disk test refuses.
# qemu-system-common: qemu-storage-daemon, the NBD server of the NBD disk
# test (tests/kvm/kvm-test-nbd.c).
# prometheus: promtool and a server the metrics test runs itself
# (tests/kvm/kvm-test-metrics.c); the package's own service is not wanted.
# fdisk, e2fsprogs, dosfstools, mtools and genisoimage: the disks the
# cloud-image reader's test makes, and isoinfo to read its seed back.
# seabios: the firmware test's BIOS (tests/kvm/kvm-test-firmware.c).
# ovmf: the UEFI test's firmware and variables (tests/kvm/kvm-test-uefi.c).
# xorriso, grub-pc-bin, fdisk and mtools: the boot media the firmware
# tests boot, made at build time (tests/kvm/make-firmware-media.sh);
# grub-efi-amd64-bin: GRUB's UEFI modules, for UEFI media.
# resource-agents: ocf-tester and ocf-shellfuncs, which the resource
# agent's test runs it with (tests/kvm/kvm-test-cluster.c), and
# libxml2-utils: xmllint, which ocf-tester checks the meta-data with; the
# logd service cluster-glue brings is not wanted.
# ceph-mon, ceph-osd and ceph-common (ceph, rbd, monmaptool): the
# one-node memory-backed cluster the RBD tests start themselves
# (tests/ceph-cluster.c, tests/unit/test-blk-rbd.c); the packages' own
# services start nothing: no daemon of theirs is configured.
test_deps="strace chromium novnc mandoc bash-completion zsh acpica-tools clang libclang-rt-14-dev qemu-utils qemu-system-common prometheus fdisk e2fsprogs dosfstools mtools genisoimage seabios ovmf xorriso grub-pc-bin grub-efi-amd64-bin resource-agents libxml2-utils ceph-mon ceph-osd ceph-common"
# mmdebstrap makes the Debian system the systemd suite boots and the
# cloud image of the linux suite's cloud step (with fdisk, e2fsprogs,
# dosfstools and qemu-utils); openssh-client reaches that guest, and
# carries the migrate step's stream to an sshd that is openssh-server's
# binary, which build-guest.sh downloads and unpacks but never installs.
# debian-installer-12-netboot-amd64: the installer's kernel and initrd,
# which the installer step boots from an ISO made around them.
# debhelper builds the Debian packages (debian/), lintian checks them;
# the rest of what debian/control names is in build_deps and test_deps.
deb_deps="debhelper lintian"
linux_deps="qemu-system-x86 cpio xz-utils zstd mmdebstrap fdisk e2fsprogs dosfstools qemu-utils openssh-client debian-installer-12-netboot-amd64"

install_packages() {
	missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	say "installing:$missing"
	# The package lists may be missing or stale on a fresh machine.
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $missing >/dev/null 2>&1 ||
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -qq --no-install-recommends $missing >/dev/null; }
}

# Debian's current kernel, for the boot tests: resolved at run time, cached.
fetch_debian_kernel() {
	mkdir -p "$cache/debian"
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	    awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	[ -n "$pkg" ] || { apt-get update -qq; pkg=$(apt-cache depends \
	    linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }'); }
	[ -n "$pkg" ] || die "cannot resolve linux-image-amd64"
	dir=$cache/debian/$pkg
	if [ ! -d "$dir/boot" ]; then
		say "fetching $pkg"
		tmp=$(mktemp -d)
		chmod 755 "$tmp"	# apt downloads as _apt where it can
		(cd "$tmp" && apt-get download -qq "$pkg" >/dev/null) ||
		    die "cannot download $pkg"
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		dpkg-deb -x "$tmp"/*.deb "$dir.tmp"
		rm -rf "$tmp"
		mv "$dir.tmp" "$dir"
	fi
	ls "$dir"/boot/vmlinuz-* | head -n 1
}

configure() {
	dir=$1; shift
	if [ -d "$dir/meson-private" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$top" "$@" >/dev/null
	fi
	ninja -C "$dir"
}

# vmmd from the build, unless one answers already: under systemd a
# transient service logging to the journal, elsewhere in the background
# logging to a file.  Sets sock.
start_vmmd() {
	sock=${VMMD_SOCKET:-/run/vmmd/control.sock}
	state=${VMMD_STATEDIR:-/var/lib/vmmd}
	"$builddir/ctl/vmctl" -s "$sock" list >/dev/null 2>&1 && return 0
	set -- "$builddir/daemon/vmmd" -f -s "$sock" -d "$state" \
	    -g "$builddir/daemon/guest/demo.elf"
	if [ -d /run/systemd/system ] &&
	    systemd-run --unit=vmmd-quickstart --collect \
	    -p Type=notify -p KillMode=process --quiet "$@"; then
		say "vmmd runs as the service vmmd-quickstart" \
		    "(socket $sock, state $state)"
		say "its log: journalctl -u vmmd-quickstart;" \
		    "stop it: systemctl stop vmmd-quickstart"
		return 0
	fi
	log=${VMMD_LOG:-/var/log/vmmd-quickstart.log}
	"$@" </dev/null >>"$log" 2>&1 &
	pid=$!
	# Ready once it answers (it may also have failed).
	n=0
	until "$builddir/ctl/vmctl" -s "$sock" list >/dev/null 2>&1; do
		kill -0 "$pid" 2>/dev/null || die "vmmd did not start: see $log"
		n=$((n + 1))
		[ $n -lt 50 ] || die "vmmd does not answer: see $log"
		sleep 0.1
	done
	say "vmmd runs in the background, pid $pid (socket $sock, state" \
	    "$state)"
	say "its log: $log; stop it: kill $pid"
}

# A stock kernel needs hardware virtualization under KVM; without it (a
# software KVM backend, say) only small purpose-built guests run.
stock_kernels() { grep -qwE 'vmx|svm' /proc/cpuinfo; }

if [ "$mode" = cloud ]; then
	install_packages $build_deps mmdebstrap fdisk e2fsprogs dosfstools \
	    qemu-utils openssh-client
	say "building in $builddir"
	configure "$builddir"
	stock_kernels || die "no vmx or svm in /proc/cpuinfo: this host's" \
	    "KVM cannot run a stock kernel"
	start_vmmd
	say "building a Debian cloud image (cached in $cache/cloud-image)"
	image=$(sh "$top/tests/linux/build-cloud-image.sh" \
	    "$cache/cloud-image")/debian-cloud.qcow2 ||
	    die "cannot build the cloud image"
	key=$HOME/.ssh/id_ed25519
	if [ ! -f "$key.pub" ]; then
		key=$cache/cloud-image/id_ed25519
		[ -f "$key" ] || ssh-keygen -q -t ed25519 -N "" -f "$key"
	fi
	vmctl() { "$builddir/ctl/vmctl" -s "$sock" "$@"; }
	vmctl delete --remove-data web >/dev/null 2>&1 || true
	say "vmctl create web --disk $image,overlay --ssh-key $key.pub \\"
	say "    --net user,forward=tcp:127.0.0.1:2222:22 --memory 1G"
	vmctl create web --disk "$image,overlay" --ssh-key "$key.pub" \
	    --net user,forward=tcp:127.0.0.1:2222:22 --memory 1G >/dev/null
	say "vmctl start web"
	vmctl start web
	say "ssh -p 2222 debian@127.0.0.1 (once cloud-init has run)"
	n=0
	until ssh -q -i "$key" -p 2222 -o StrictHostKeyChecking=no \
	    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
	    -o BatchMode=yes debian@127.0.0.1 true 2>/dev/null; do
		n=$((n + 1))
		[ $n -lt 120 ] || die "no ssh after 10 minutes: see" \
		    "vmctl info web, and its console log"
		sleep 5
	done
	exec ssh -i "$key" -p 2222 -o StrictHostKeyChecking=no \
	    -o UserKnownHostsFile=/dev/null debian@127.0.0.1
fi

if [ "$mode" = demo ]; then
	install_packages $build_deps
	say "building in $builddir"
	configure "$builddir"
	start_vmmd
	say "detach with Ctrl-]; the transient guest stops when you detach"
	if stock_kernels; then
		install_packages cpio xz-utils zstd
		guest=$(sh "$top/tests/linux/build-guest.sh" "$cache/linux-guest") ||
		    die "cannot build the reference Debian guest"
		say "booting the reference Debian guest (2 vCPUs, 256 MiB)"
		exec "$builddir/ctl/vmctl" -s "$sock" run \
		    --kernel "$guest/vmlinuz" --initrd "$guest/initramfs.cpio.gz" \
		    --cmdline "$(cat "$guest/cmdline")" --memory 256M --vcpus 2 \
		    debian
	fi
	say "no vmx or svm in /proc/cpuinfo: this host's KVM cannot run a" \
	    "stock kernel, booting the demo guest instead"
	exec "$builddir/ctl/vmctl" -s "$sock" run demo
fi

install_packages $build_deps $test_deps
for unit in prometheus logd; do
	if command -v systemctl >/dev/null && systemctl is-enabled $unit \
	    >/dev/null 2>&1; then
		systemctl disable --now $unit >/dev/null 2>&1 || true
	fi
done
vmlinuz=$(fetch_debian_kernel)

# The reference Debian guest, and the nested test host's kernel, busybox
# and KVM modules: the linux suite's, and the kvm suite's where this host
# has no /dev/kvm (cached: a second run downloads and builds nothing).
reference_guest() {
	install_packages $linux_deps
	say "building the linux suite's reference guest (cached in $cache)"
	guestdir=$(sh "$top/tests/linux/build-guest.sh" "$cache/linux-guest") ||
	    die "cannot build the reference guest"
	say "building the linux suite's cloud image (cached in $cache)"
	cloudimage=$(sh "$top/tests/linux/build-cloud-image.sh" \
	    "$cache/cloud-image")/debian-cloud.qcow2 ||
	    die "cannot build the cloud image"
}

# The linux suite: the reference Debian guest, in a nested test host where
# this host's KVM cannot run a stock kernel (minutes).
linux_suite() {
	reference_guest
	configure "$builddir" -Dwerror=true -Dtest_vmlinuz="$vmlinuz" \
	    -Dlinux_guest_dir="$guestdir" -Dcloud_image="$cloudimage"
	say "running the linux suite"
	meson test -C "$builddir" --suite linux --print-errorlogs
}

if [ "$mode" = linux ]; then
	linux_suite
	say "linux suite passed"
	exit 0
fi

reference_guest
say "building in $builddir (warnings are errors)"
configure "$builddir" -Dwerror=true -Dtest_vmlinuz="$vmlinuz" \
    -Dlinux_guest_dir="$guestdir" -Dcloud_image="$cloudimage" \
    -Dtest_hooks=true
say "running the unit and kvm suites"
meson test -C "$builddir" --suite unit --suite kvm --print-errorlogs \
    --num-processes 2
# Where /dev/kvm opens here the kvm suite ran directly: run it once more
# in the nested test host, the path of hosts without one, so that both
# stay green wherever CI lands.
if [ -c /dev/kvm ] && (: <>/dev/kvm) 2>/dev/null; then
	say "running the kvm suite in the nested test host as well"
	VMMD_KVM_MODE=nested meson test -C "$builddir" --suite kvm nested \
	    --print-errorlogs
fi
say "building with AddressSanitizer and UBSan in $builddir-asan"
configure "$builddir-asan" -Dwerror=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dtest_vmlinuz="$vmlinuz" -Dlinux_guest_dir="$guestdir" \
    -Dtest_hooks=true
say "running the unit and kvm suites under the sanitizers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C "$builddir-asan" --suite unit --suite kvm \
    --print-errorlogs --num-processes 2
# The fuzz suite: a short run of every libFuzzer harness over its
# checked-in corpus, in a clang build of its own; only the fuzzers are
# built there.
say "building the fuzzers with clang in $builddir-fuzz"
(CC=clang; export CC; configure "$builddir-fuzz" -Dwerror=true \
    -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false)
ninja -C "$builddir-fuzz" fuzzers
say "running the fuzz suite"
meson test -C "$builddir-fuzz" --suite fuzz --no-rebuild --print-errorlogs
linux_suite
# The Debian packages, built as from a clean checkout, then rebuilt at a
# newer version in the same tree (build-deb.sh); lintian checks the
# first (no error, no warning), the systemd suite installs it and
# upgrades to the rebuild.  nocheck: the unit suite ran above in this
# same run (a plain "dpkg-buildpackage -us -uc -b" runs it).
install_packages $deb_deps
(cd "$top" && dpkg-checkbuilddeps >/dev/null 2>&1) ||
    (cd "$top" && DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq \
    ./ >/dev/null)
say "building the Debian packages in $builddir-deb"
t0=$(date +%s)
DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
    sh "$top/tests/systemd/build-deb.sh" "$builddir-deb" >/dev/null
say "built in $(($(date +%s) - t0)) s (the rebuild: $(sed -n \
    's/^build-deb.sh: built in //p' "$builddir-deb/rebuild.log")); lintian"
lintian --fail-on error,warning "$builddir-deb"/*.changes
# vmmd's packages installed into Debian booted with systemd as PID 1,
# in the same kind of nested test host (its root file system is cached
# in $cache).
say "running the systemd suite"
VMMD_SYSTEMD_DEBS=$builddir-deb meson test -C "$builddir" --suite systemd \
    --print-errorlogs
say "all tests passed"
