#!/bin/sh
# systemd-analyze verify on vmmd.service and vmmd.socket (the copies
# that name the vmmd just built), and their sandboxing score: any
# complaint fails, and so does an exposure above 2.5.
#   verify-units.sh SERVICE SOCKET
set -u
command -v systemd-analyze >/dev/null 2>&1 || {
	echo '1..0 # SKIP systemd-analyze is not installed'; exit 0; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
cp "$1" "$dir/vmmd.service" && cp "$2" "$dir/vmmd.socket" || exit 1

out=$(systemd-analyze verify --man=no "$dir/vmmd.service" \
    "$dir/vmmd.socket" 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ -z "$out" ]; then
	echo 'ok 1 - systemd-analyze verify: clean'
else
	echo "not ok 1 - systemd-analyze verify: status $rc"
	printf '%s\n' "$out" | sed 's/^/# /'
fi

score=$(systemd-analyze security --offline=true "$dir/vmmd.service" \
    2>/dev/null | sed -n 's/.*Overall exposure level for vmmd.service: \([0-9.]*\).*/\1/p')
if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.5) }'; then
	echo "ok 2 - systemd-analyze security: $score"
else
	echo "not ok 2 - systemd-analyze security: '$score', above 2.5"
fi
echo '1..2'
