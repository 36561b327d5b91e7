#!/bin/sh
# The Debian packages (debian/), built as from a clean checkout, and the
# same tree rebuilt at a newer version for the systemd suite's upgrade.
#
# The tree's files (git's tracked and untracked ones, without what
# .gitignore names: no build directory, cache or earlier package build)
# are copied to OUTDIR/src, "dpkg-buildpackage -us -uc -b" runs there,
# and the packages, .changes and .buildinfo land in OUTDIR; the build's
# output goes to OUTDIR/build.log.  DEB_BUILD_OPTIONS passes through
# (nocheck leaves the unit suite out).
#
# Then a changelog entry VERSION+rebuild1 is put on top of OUTDIR/src's
# and "dpkg-buildpackage -us -uc -b -nc" runs again in that tree, with
# nocheck: OUTDIR/rebuild gets its packages, .changes and .buildinfo,
# OUTDIR/rebuild.log its output.  That is what an administrator's
# "apt install ./new.deb" meets: a package dpkg-buildpackage made, at a
# newer version, whose maintainer scripts run against the installed one.
# Both logs end with the build's time in seconds.  Prints
# OUTDIR/*.changes (the first build's).
#
#   build-deb.sh OUTDIR
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: build-deb.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/src" "$out/rebuild" "$out"/*.deb "$out"/*.ddeb \
    "$out"/*.changes "$out"/*.buildinfo
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

# build LOG [dpkg-buildpackage options]: in OUTDIR/src, timed.
build() {
	log=$1
	shift
	t0=$(date +%s)
	(cd "$out/src" && dpkg-buildpackage -us -uc -b "$@") >"$log" 2>&1 || {
		tail -n 30 "$log" >&2
		echo "build-deb.sh: dpkg-buildpackage failed: see $log" >&2
		exit 1
	}
	echo "build-deb.sh: built in $(($(date +%s) - t0)) s" >>"$log"
}
build "$out/build.log"

# The rebuild: the first build's tree, not cleaned (-nc).  dh finds its
# build done (debian/debhelper-build-stamp) and runs the binary
# sequence, whose "ninja install" in the first build's meson directory
# makes again only what changed (here nothing: the changelog is not
# compiled in); the packages are dpkg-buildpackage's, at the new
# version.  Seconds, not minutes.  nocheck: the sources are the first
# build's, whose unit suite ran already (in that build, or where it had
# nocheck, in CI before it).
ver=$(cd "$out/src" && dpkg-parsechangelog -S Version)
new=$ver+rebuild1
cl=$out/src/debian/changelog
{
	cat <<ENTRY
$(cd "$out/src" && dpkg-parsechangelog -S Source) ($new) $(cd "$out/src" &&
    dpkg-parsechangelog -S Distribution); urgency=medium

  * Rebuilt from the same sources, for the package upgrade test.

 -- $(cd "$out/src" && dpkg-parsechangelog -S Maintainer)  $(LC_ALL=C date -R)

ENTRY
	cat "$cl"
} >"$cl.new"
mv "$cl.new" "$cl"
[ "$(cd "$out/src" && dpkg-parsechangelog -S Version)" = "$new" ] || {
	echo "build-deb.sh: the changelog entry for $new does not parse" >&2
	exit 1
}
DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}"
export DEB_BUILD_OPTIONS
build "$out/rebuild.log" -nc
mkdir "$out/rebuild"
mv "$out"/*_"$new"_* "$out/rebuild/"
ls "$out"/*.changes
