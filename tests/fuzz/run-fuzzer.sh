#!/bin/sh
# One short libFuzzer run for the fuzz suite:
#   run-fuzzer.sh FUZZER CORPUS RUNS [libFuzzer options...]
# Every input of the checked-in CORPUS is replayed first (regressions
# included), then FUZZER mutates from a fixed seed until RUNS inputs in
# all have run: the same inputs on every machine, however busy, so a
# pass or a failure is the code's (random seeds are for long local runs,
# README.md).  New inputs go to a scratch
# directory, never into the source tree; an input that fails is kept
# next to the fuzzer as FUZZER-findings/crash-* (or leak-, timeout-) and
# the run fails (exit 1: libFuzzer's own default, 77, would read as a
# skip).  Exits 77 only where the fuzzer was not built.
set -eu

[ $# -ge 3 ] || { echo "usage: $0 fuzzer corpus runs [options]" >&2; exit 2; }
fuzzer=$1 corpus=$2 runs=$3
shift 3
[ -x "$fuzzer" ] || { echo "1..0 # SKIP $fuzzer not built"; exit 77; }

findings=$fuzzer-findings
scratch=$(mktemp -d "${TMPDIR:-/tmp}/vmmd-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
trap 'exit 1' INT TERM
mkdir -p "$findings"

ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS

nice -n 10 "$fuzzer" -seed=1 -runs="$runs" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -error_exitcode=1 \
    -timeout_exitcode=1 \
    -artifact_prefix="$findings/" "$@" "$scratch" "$corpus"
