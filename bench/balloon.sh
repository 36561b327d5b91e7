#!/bin/sh
# The balloon's free page reporting, vmmd against QEMU, in one boot of
# the linux suite's nested test host: the reference guest (768 MiB, a
# balloon with free page reporting) settles for 30 s after its boot,
# then memhog (tests/linux/memhog.c, in its initramfs) takes 400 MiB,
# holds them 15 s and frees them.  balloon-watch.c follows the VMM's
# resident memory meanwhile: before, at the peak, after the free, and how
# long the VMM took to give 300 MiB back and to settle, counted from
# memhog's "freed" on the guest's console.  Once under vmmd
# (--balloon), once under QEMU (-M pc -enable-kvm, -device
# virtio-balloon-pci,free-page-reporting=on), same kernel, initramfs and
# command line.  The guest's kernel reports free blocks of its pageblock
# order and up, about 2 s after they came free, in batches 2 s apart:
# most of the time to give back is the guest's.  Times are those of an
# emulated machine; compare them with each other only.  Prints figures;
# asserts nothing but that both runs completed.
#
#   bench/balloon.sh BUILDDIR
#
# Needs qemu-system-x86, strace (packed by nested-host.sh), cpio, and
# the reference guest with memhog (tests/linux/build-guest.sh).
set -eu

. "$(dirname "$0")/nested-host.sh"
nested_init "${1:?usage: bench/balloon.sh BUILDDIR}" balloon

gzip -dc "$nested_guest/initramfs.cpio.gz" | cpio -t --quiet 2>/dev/null |
    grep -qx usr/bin/memhog || {
	echo "no memhog in $nested_guest: run tests/linux/build-guest.sh" >&2
	exit 1
}
watch=$nested_build/bench/balloon-watch
[ -x "$watch" ] || { echo "no $watch: build first" >&2; exit 1; }

# The guest: the reference guest and the benchmark's part, run once by
# its init; the kernel's messages kept off the console it prints on.
nested_guest_begin vmlinuz vmlinux busybox cmdline
cat >"$stage/etc/balloon-bench" <<'GUEST'
#!/bin/sh
dmesg -n 1
sleep 30
echo "balloon-bench: start"
memhog 400 15
echo "balloon-bench: done"
GUEST
chmod 755 "$stage/etc/balloon-bench"
nested_guest_end "::once:/etc/balloon-bench"

nested_file "$watch"
nested_var BENCH_WATCH "$watch"
nested_run "$nested_top/bench/balloon-inner.sh"
