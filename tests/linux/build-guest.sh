#!/bin/sh
# Builds the reference guest of the linux test suite from Debian packages
# only, into OUTDIR (default .cache/linux-guest):
#
#   vmlinuz             Debian's current linux-image-amd64 kernel (bzImage)
#   vmlinux             the same kernel as a PVH ELF (the bzImage's payload,
#                       decompressed: it carries the Xen PVH entry note)
#   initramfs.cpio.gz   busybox-static, an /init that mounts proc/sys/dev,
#                       loads the virtio and ext4 (and crc32c) modules,
#                       prints the banner "vmmd reference guest ready"
#                       and hands over to
#                       busybox init: shells on ttyS0 and tty0,
#                       Ctrl-Alt-Del reboots, and busybox acpid powers
#                       off on the ACPI power button; and /usr/bin/rtc-ticks
#                       (rtc-ticks.c here, built static with cc), which
#                       counts the RTC's interrupts for the linux suite,
#                       and /usr/bin/vsock-echo (vsock-echo.c), the
#                       guest's end of its vsock checks, and
#                       /usr/bin/memhog (memhog.c), which takes memory
#                       and gives it back for the balloon step
#   cmdline             the guest's default kernel command line
#   release             the kernel release (uname -r)
#   busybox             busybox-static, for the nested test host
#   sshd                /usr/sbin/sshd of openssh-server, downloaded
#                       and unpacked, never installed: the migrate step
#                       runs it in the test host as the far end of
#                       vmctl migrate --to ssh:// (a listening sshd is
#                       not this machine's to install)
#   host-modules/       the test host's KVM, TAP, vhost-vsock and veth modules
#                       (*.ko, decompressed)
#                       and "order", the order to insmod them in
#
# Packages are downloaded with apt-get download and unpacked with dpkg-deb
# into .cache/debian/PACKAGE (shared with quickstart.sh): a second run
# downloads nothing, and rebuilds nothing unless an input changed (the
# packages, this script, the guest's programs' sources).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cache=${VMMD_CACHE:-$top/.cache}
out=${1:-$cache/linux-guest}

# The modules the guest loads at boot (with their dependencies) and the
# ones the test host needs for /dev/kvm (and tun: vmmd's TAP devices;
# veth: the migrate step's link between two network namespaces).
# button and evdev: the ACPI power button as an input device acpid reads;
# virtiofs (and fuse, its dependency): the fs step's shared directory.
guest_modules="virtio_pci virtio_mmio virtio_blk virtio_net virtio_console
    virtio_rng virtio_balloon virtio_input crc32c_generic ext4 button evdev
    vmw_vsock_virtio_transport virtiofs"
host_modules="kvm_amd kvm_intel tun vhost_vsock veth"
banner="vmmd reference guest ready"
cmdline="console=ttyS0 panic=-1"

say() { printf 'build-guest: %s\n' "$*" >&2; }
die() { printf 'build-guest: %s\n' "$*" >&2; exit 1; }

cc=${CC:-cc}
for t in apt-cache apt-get dpkg-deb cpio gzip xz zstd awk "$cc"; do
	command -v "$t" >/dev/null 2>&1 ||
	    die "$t is missing (apt-get install apt dpkg cpio gzip" \
	    "xz-utils zstd gcc libc6-dev)"
done
# The guest's own programs: C sources here, each built static.
guest_programs="rtc-ticks vsock-echo memhog"

# The versioned package a package depends on (linux-image-amd64 ->
# linux-image-6.1.0-NN-amd64), resolved at run time.
resolve_kernel() {
	apt-cache depends linux-image-amd64 2>/dev/null |
	    awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
}

# The candidate version of a package, as a file name ("1:1.35" -> "1%3a1.35").
candidate() {
	apt-cache policy "$1" 2>/dev/null |
	    awk '/Candidate:/ { v = $2; gsub(/:/, "%3a", v); print v; exit }'
}

# fetch PACKAGE DIR: unpacks PACKAGE into DIR unless it is already there.
fetch() {
	[ -f "$2/.unpacked" ] && return 0
	# quickstart.sh unpacks the kernel the same way (without the stamp).
	[ -d "$2/boot" ] && { : >"$2/.unpacked"; return 0; }
	say "downloading $1"
	tmp=$(mktemp -d)
	if ! (cd "$tmp" && apt-get download -qq "$1" >/dev/null 2>&1); then
		rm -rf "$tmp"
		die "cannot download $1"
	fi
	rm -rf "$2.tmp"
	mkdir -p "$2.tmp"
	dpkg-deb -x "$tmp"/*.deb "$2.tmp"
	rm -rf "$tmp"
	: >"$2.tmp/.unpacked"
	rm -rf "$2"
	mv "$2.tmp" "$2"
}

kpkg=$(resolve_kernel)
bbver=$(candidate busybox-static)
sshver=$(candidate openssh-server)
if [ -z "$kpkg" ] || [ -z "$bbver" ] || [ -z "$sshver" ]; then
	say "package lists missing: apt-get update"
	apt-get update -qq >/dev/null 2>&1 || true
	kpkg=$(resolve_kernel)
	bbver=$(candidate busybox-static)
	sshver=$(candidate openssh-server)
fi
[ -n "$kpkg" ] || die "cannot resolve linux-image-amd64 (apt-cache depends)"
[ -n "$bbver" ] || die "no candidate for busybox-static"
[ -n "$sshver" ] || die "no candidate for openssh-server"
kdir=$cache/debian/$kpkg
bdir=$cache/debian/busybox-static_$bbver
sdir=$cache/debian/openssh-server_$sshver
mkdir -p "$cache/debian"
fetch "$kpkg" "$kdir"
fetch busybox-static "$bdir"
fetch openssh-server "$sdir"
[ -x "$sdir/usr/sbin/sshd" ] || die "$sdir/usr/sbin/sshd is missing"

release=$(ls "$kdir/lib/modules" | head -n 1)
vmlinuz=$kdir/boot/vmlinuz-$release
busybox=$bdir/bin/busybox
[ -f "$vmlinuz" ] || die "$vmlinuz is missing"
[ -x "$busybox" ] || die "$busybox is missing"

# Nothing to do when the inputs (packages and this script) did not change.
stamp="$kpkg $bbver $sshver $(cksum <"$0")"
for p in $guest_programs; do
	stamp="$stamp $(cksum <"$here/$p.c")"
done
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$stamp" ]; then
	echo "$out"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM HUP

# ---------------------------------------------------------------------
# Kernel modules: files by name, dependencies from their .modinfo
# ("depends=a,b"), since the package ships no modules.dep.

find "$kdir/lib/modules/$release" -name '*.ko' -o -name '*.ko.xz' \
    -o -name '*.ko.zst' >"$tmp/modindex"

mod_file() {
	awk -v n="$(echo "$1" | tr - _)" '{
		b = $0; sub(/.*\//, "", b); sub(/\.ko(\.xz|\.zst)?$/, "", b)
		gsub(/-/, "_", b)
		if (b == n) { print; exit }
	}' "$tmp/modindex"
}

mod_cat() {
	case $1 in
	*.xz)	xz -dc "$1" ;;
	*.zst)	zstd -qdc "$1" ;;
	*)	cat "$1" ;;
	esac
}

mod_deps() {
	mod_cat "$1" | tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1 |
	    tr ',' ' '
}

# Module files, dependencies first (with repeats); a subshell per call so
# that the recursion has variables of its own.  Missing names are skipped.
mod_order() (
	for m in "$@"; do
		f=$(mod_file "$m")
		if [ -z "$f" ]; then
			say "note: module $m is not in $kpkg"
			continue
		fi
		mod_order $(mod_deps "$f")
		echo "$f"
	done
)

# mod_stage DIR NAME...: decompressed modules in DIR, their order in DIR/order.
mod_stage() {
	dir=$1
	shift
	mkdir -p "$dir"
	: >"$dir/order"
	mod_order "$@" | awk '!seen[$0]++' >"$tmp/files"
	while read -r f; do
		n=$(basename "$f")
		n=${n%.xz}
		n=${n%.zst}
		n=${n%.ko}
		mod_cat "$f" >"$dir/$n.ko"
		echo "$n" >>"$dir/order"
	done <"$tmp/files"
}

# ---------------------------------------------------------------------
# The PVH vmlinux: the bzImage's compressed payload, decompressed.  The
# setup header gives setup_sects at 0x1f1, and payload_offset and
# payload_length at 0x248/0x24c, relative to the protected-mode code that
# starts at (setup_sects + 1) * 512.  The kernel build appends the
# uncompressed size (4 bytes) to the compressed stream: left out here.

u8() { od -An -t u1 -j "$2" -N 1 "$1" | tr -d ' '; }
u32() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }

extract_vmlinux() {
	sects=$(u8 "$1" $((0x1f1)))
	[ "$sects" -eq 0 ] && sects=4
	start=$(( (sects + 1) * 512 + $(u32 "$1" $((0x248))) ))
	len=$(u32 "$1" $((0x24c)))
	[ "$len" -gt 4 ] || die "$1: no payload in the setup header"
	magic=$(od -An -t x1 -j "$start" -N 6 "$1" | tr -d ' ')
	case $magic in
	fd377a585a00)	dec="xz -dc --single-stream" ;;
	28b52ffd*)	dec="zstd -qdc" ;;
	1f8b*)		dec="gzip -dc" ;;
	*)		die "$1: payload format $magic not handled" ;;
	esac
	tail -c +$((start + 1)) "$1" | head -c $((len - 4)) | $dec >"$2" ||
	    die "$1: cannot decompress the payload"
	[ "$(od -An -t x1 -N 4 "$2" | tr -d ' ')" = 7f454c46 ] ||
	    die "$1: the payload is not an ELF file"
	# The PVH entry is an ELF note named "Xen" of type 18.
	if command -v readelf >/dev/null 2>&1; then
		readelf -n "$2" | grep -q 'Xen.*0x00000012' ||
		    die "$1: the kernel has no PVH entry note"
	fi
}

# ---------------------------------------------------------------------
# The guest's initramfs.

stage=$tmp/root
mkdir -p "$stage/bin" "$stage/sbin" "$stage/usr/bin" "$stage/usr/sbin" \
    "$stage/etc" "$stage/proc" "$stage/sys" "$stage/dev" "$stage/tmp" \
    "$stage/root" "$stage/mnt" "$stage/lib/modules" "$stage/etc/acpi/PWRF" \
    "$stage/var/run"
cp "$busybox" "$stage/bin/busybox"
"$busybox" --list-full | while read -r p; do
	[ "$p" = bin/busybox ] || ln -sf /bin/busybox "$stage/$p"
done
mod_stage "$stage/lib/modules" $guest_modules
for p in $guest_programs; do
	"$cc" -static -Os -s -std=gnu17 -Wall -Wextra -Wmissing-prototypes \
	    -Wstrict-prototypes -Werror -o "$stage/usr/bin/$p" "$here/$p.c" ||
	    die "cannot build $p.c (static: needs libc6-dev)"
done
if [ "$(id -u)" = 0 ]; then
	mknod -m 600 "$stage/dev/console" c 5 1
	mknod -m 666 "$stage/dev/null" c 1 3
fi

cat >"$stage/init" <<EOF
#!/bin/sh
# vmmd reference guest: mounts, modules, banner, then busybox init.
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec 0<>/dev/console 1>&0 2>&0
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
hostname guest
while read -r m; do
	insmod /lib/modules/\$m.ko || echo "init: cannot load \$m"
done </lib/modules/order
echo "$banner (\$(uname -r), \$(grep -c ^processor /proc/cpuinfo) CPUs)"
exec /sbin/init
EOF
chmod 755 "$stage/init"

# busybox init does nothing on the power button by itself: acpid turns
# its key press (event PWRF/00000080) into a run of that file.
cat >"$stage/etc/inittab" <<'EOF'
ttyS0::respawn:-/bin/sh
tty0::respawn:-/bin/sh
::respawn:/sbin/acpid -f -l /dev/null
::ctrlaltdel:/sbin/reboot
::shutdown:/bin/umount -a -r
EOF
cat >"$stage/etc/acpi/PWRF/00000080" <<'EOF'
#!/bin/sh
echo "acpid: power button, powering off" >/dev/console
exec /sbin/poweroff
EOF
chmod 755 "$stage/etc/acpi/PWRF/00000080"

cat >"$stage/etc/profile" <<'EOF'
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root
PS1='guest:\w# '
cd
EOF
echo 'root:x:0:0:root:/root:/bin/sh' >"$stage/etc/passwd"
echo 'root:x:0:' >"$stage/etc/group"

# Everything is made in OUTDIR/.new, then moved in file by file (OUTDIR
# may hold other things: nothing else in it is touched).
new=$out/.new
rm -rf "$new"
mkdir -p "$new"
rm -f "$out/stamp"
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
    gzip -9n >"$new/initramfs.cpio.gz"
cp "$vmlinuz" "$new/vmlinuz"
extract_vmlinux "$vmlinuz" "$new/vmlinux"
cp "$busybox" "$new/busybox"
cp "$sdir/usr/sbin/sshd" "$new/sshd"
mod_stage "$new/host-modules" $host_modules
echo "$cmdline" >"$new/cmdline"
echo "$release" >"$new/release"
rm -rf "$out/host-modules"
for f in initramfs.cpio.gz vmlinuz vmlinux busybox sshd host-modules \
    cmdline release; do
	mv "$new/$f" "$out/$f"
done
rmdir "$new"
echo "$stamp" >"$out/stamp"
say "built $out ($kpkg, busybox-static $bbver)"
echo "$out"
