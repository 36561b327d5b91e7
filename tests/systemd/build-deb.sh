#!/bin/sh
# The Debian packages (debian/), built as from a clean checkout: the
# tree's files (git's tracked and untracked ones, without what
# .gitignore names: no build directory, cache or earlier package build)
# are copied to OUTDIR/src, "dpkg-buildpackage -us -uc -b" runs there,
# and the packages, .changes and .buildinfo land in OUTDIR; the build's
# output goes to OUTDIR/build.log.  DEB_BUILD_OPTIONS passes through
# (nocheck leaves the unit suite out).  Prints OUTDIR/*.changes.
#
#   build-deb.sh OUTDIR
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: build-deb.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/src" "$out"/*.deb "$out"/*.ddeb "$out"/*.changes \
    "$out"/*.buildinfo
mkdir "$out/src"
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	# --ignore-failed-read: a tracked file deleted in the tree stays out.
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) |
	    tar -C "$out/src" -xf -
else
	(cd "$top" && tar --exclude='./build*' --exclude=./.cache \
	    --exclude='./obj-*' -cf - .) | tar -C "$out/src" -xf -
fi
(cd "$out/src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb.sh: dpkg-buildpackage failed: see $out/build.log" >&2
	exit 1
}
ls "$out"/*.changes
