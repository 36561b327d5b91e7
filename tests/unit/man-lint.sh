#!/bin/sh
# Every manual is mandoc -Tlint clean at warning level and above (the
# "referenced manual not found" style notes depend on what the machine
# has installed, so they do not count).
#   man-lint.sh MANUAL...
set -u
command -v mandoc >/dev/null 2>&1 || {
	echo '1..0 # SKIP mandoc is not installed'; exit 0; }
n=0
for page; do
	n=$((n + 1))
	out=$(mandoc -Tlint -Wwarning "$page" 2>&1)
	if [ $? -eq 0 ] && [ -z "$out" ]; then
		echo "ok $n - $(basename "$page")"
	else
		echo "not ok $n - $(basename "$page")"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
done
echo "1..$n"
