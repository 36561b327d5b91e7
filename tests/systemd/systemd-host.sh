#!/bin/sh
# vmmd under a real systemd as PID 1: Debian (made with mmdebstrap from
# Debian's archive, cached in .cache/systemd-root and made again only
# when its package list changes) boots as the nested test host (QEMU's
# TCG with emulated SVM, as the linux suite's) and runs check.sh, which
# installs vmmd's Debian packages with apt as an administrator does,
# runs the package's autopkgtests on them with autopkgtest's null
# runner, upgrades them under a running guest to a rebuild at a newer
# version (VERSION+rebuild1, which build-deb.sh makes with
# dpkg-buildpackage after the first build), then removes and purges
# them.
#
#   systemd-host.sh BUILDDIR
#
# Environment: VMMD_SYSTEMD_DEBS (a directory with the vmmd and vmctl
# packages and their rebuild in rebuild/, from tests/systemd/build-deb.sh;
# without one they are built here, without the unit suite),
# VMMD_LINUX_GUEST (the reference guest directory: the kernel and its
# KVM modules), VMMD_SYSTEMD_CACHE, VMMD_SYSTEMD_WORKDIR (where the logs
# stay), VMMD_SYSTEMD_TIMEOUT (seconds, default 900), VMMD_LINUX_QEMU.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: systemd-host.sh BUILDDIR}" && pwd)
top=$(cd "$here/../.." && pwd)
guest=${VMMD_LINUX_GUEST:-$top/.cache/linux-guest}
cache=${VMMD_SYSTEMD_CACHE:-$top/.cache/systemd-root}
qemu=${VMMD_LINUX_QEMU:-qemu-system-x86_64}
limit=${VMMD_SYSTEMD_TIMEOUT:-900}

skip() { echo "1..0 # SKIP $*"; exit 0; }
fail() { echo "not ok 1 - $*"; echo "1..1"; exit 1; }

[ "$(id -u)" = 0 ] || skip "not root (the root file system needs it)"
command -v "$qemu" >/dev/null 2>&1 || skip "$qemu is not installed"
command -v mmdebstrap >/dev/null 2>&1 || skip "mmdebstrap is not installed"
[ -f "$guest/vmlinuz" ] && [ -f "$guest/host-modules/order" ] ||
    skip "no reference guest in $guest (tests/linux/build-guest.sh)"
debs=${VMMD_SYSTEMD_DEBS:-}
if [ -z "$debs" ] || ! ls "$debs"/vmmd_*.deb "$debs"/rebuild/vmmd_*.deb \
    >/dev/null 2>&1; then
	command -v dpkg-buildpackage >/dev/null 2>&1 && command -v dh \
	    >/dev/null 2>&1 || skip "no debhelper to build the packages" \
	    "(or VMMD_SYSTEMD_DEBS)"
	debs=
fi

# What vmmd's package depends on (libblkid, libext2fs and libisofs: the
# cloud module's), and systemd; apt installs the package from these with
# no package list.  resource-agents for
# ocf-tester and ocf-shellfuncs, which the resource agent is tested with,
# and libxml2-utils: xmllint, which ocf-tester checks the meta-data with.
# autopkgtest runs the package's tests (debian/tests) there; it brings
# apt-utils, whose apt-ftparchive makes its repository of the packages.
packages="systemd systemd-sysv udev libevent-2.1-7 libevent-core-2.1-7
    libevent-extra-2.1-7 libevent-pthreads-2.1-7 libjson-c5 libvncserver1
    libpng16-16 libsystemd0 libseccomp2 zlib1g libzstd1 libblkid1 libext2fs2
    libisofs6 kmod passt iproute2
    resource-agents libxml2-utils autopkgtest"
packages=$(echo $packages | tr ' ' ,)
key=$(printf '%s bookworm minbase\n' "$packages" | sha256sum | cut -c 1-16)
tar=$cache/root-$key.tar
mkdir -p "$cache"
if [ ! -f "$tar" ]; then
	echo "# making the root file system ($packages)"
	# --format: the name "$tar.tmp" does not end in .tar, and mmdebstrap
	# would make a directory of it.
	rm -rf "$tar" "$tar.tmp"
	mmdebstrap --quiet --variant=minbase --format=tar \
	    --include="$packages" bookworm \
	    "$tar.tmp" >"$cache/mmdebstrap.log" 2>&1 ||
	    fail "mmdebstrap: $(tail -n 3 "$cache/mmdebstrap.log" | tr '\n' ' ')"
	mv "$tar.tmp" "$tar"
fi

work=${VMMD_SYSTEMD_WORKDIR:-}
[ -n "$work" ] || work=$(mktemp -d /tmp/vmmd-systemd-XXXXXX)
mkdir -p "$work"
root=$work/root
rm -rf "$root" "$work"/*.log "$work/tap.raw"
trap 'rm -rf "$root" "$work/root.cpio"' EXIT INT TERM HUP
mkdir "$root"
tar -C "$root" -xf "$tar"
# What nobody reads here only lengthens the boot (the kernel unpacks
# every byte of the archive, under emulation).
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale" \
    "$root/usr/share/info" "$root/var/cache/apt" "$root/var/lib/apt/lists"
if [ -z "$debs" ]; then
	echo "# building the packages (tests/systemd/build-deb.sh)"
	DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
	    sh "$here/build-deb.sh" "$work/deb" >/dev/null 2>&1 ||
	    fail "build-deb.sh: see $work/deb/build.log"
	debs=$work/deb
fi
# apt installs local packages with no package list, but wants its
# directories.  The test system has no network: Debian's archive in its
# sources.list would only be a source apt cannot reach (autopkgtest runs
# "apt-get update" when it is done), so apt has none there.
mkdir -p "$root/var/lib/apt/lists/partial" \
    "$root/var/cache/apt/archives/partial"
: >"$root/etc/apt/sources.list"
rm -f "$root"/etc/apt/sources.list.d/*
# debs/old: the packages; debs/new: their rebuild, the upgrade.
pkgs=$root/usr/lib/vmmd-test/debs
mkdir -p "$pkgs/old" "$pkgs/new"
for p in vmmd vmctl; do
	cp "$(ls "$debs/${p}"_*.deb | head -n 1)" "$pkgs/old/$p.deb"
	cp "$(ls "$debs/rebuild/${p}"_*.deb | head -n 1)" "$pkgs/new/$p.deb"
done

mkdir -p "$root/usr/lib/vmmd-test/modules"
cp "$guest"/host-modules/* "$root/usr/lib/vmmd-test/modules/"
cp "$here/check.sh" "$root/usr/lib/vmmd-test/check.sh"
# The package's autopkgtests, which check.sh runs with autopkgtest: a
# source tree of debian/tests and the changelog is all it reads.  With
# no debian/control autopkgtest takes it as a built tree: nothing to
# build or unpack (no dpkg-dev there), the tests run against the .debs.
mkdir -p "$root/usr/lib/vmmd-test/source/debian"
cp -r "$top/debian/tests" "$top/debian/changelog" \
    "$root/usr/lib/vmmd-test/source/debian/"
cat >"$root/etc/systemd/system/vmmd-test.target" <<'UNIT'
[Unit]
Description=vmmd under systemd: the test
Requires=multi-user.target vmmd-test.service
After=multi-user.target
UNIT
cat >"$root/etc/systemd/system/vmmd-test.service" <<'UNIT'
[Unit]
Description=vmmd under systemd: the checks
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/lib/vmmd-test/check.sh
StandardOutput=tty
StandardError=journal
TTYPath=/dev/ttyS1
UNIT
echo vmmd-test >"$root/etc/hostname"
# cluster-glue's log daemon (with resource-agents) has nothing to do here.
ln -sf /dev/null "$root/etc/systemd/system/logd.service"

(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/root.cpio"
echo "# booting Debian with systemd ($(du -sm "$work/root.cpio" |
    cut -f 1) MiB), logs in $work"
console=$work/console.log
raw=$work/tap.raw
units="systemd.unit=vmmd-test.target systemd.show_status=0"
timeout -k 10 "$limit" "$qemu" -accel tcg,thread=single \
    -cpu EPYC,+svm,-npt -smp 2 -m 3072 -M q35 \
    -nodefaults -display none -monitor none -no-reboot \
    -serial "file:$console" -serial "file:$raw" \
    -kernel "$guest/vmlinuz" -initrd "$work/root.cpio" \
    -append "console=ttyS0 panic=-1 quiet rdinit=/sbin/init $units" \
    </dev/null >"$work/qemu.log" 2>&1 || true

tr -d '\r' <"$raw" >"$work/tap.log"
if ! grep -q '^1\.\.' "$work/tap.log"; then
	cat "$work/tap.log"
	echo "not ok 999 - the test system did not finish (see $console)"
	tail -n 20 "$console" | tr -d '\r' | sed 's/^/# /'
	exit 1
fi
cat "$work/tap.log"
! grep -q '^not ok' "$work/tap.log"
