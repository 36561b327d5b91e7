#!/bin/sh
# Runs inside the nested test host (see exit-stats.sh): bench/exit-cost
# with QEMU as (d).  Its TAP comes out as it is.
set -u
. "$(dirname "$0")/nested-lib.sh"

VMMD_BENCH_EMULATED=1 VMMD_BENCH_QEMU=qemu-system-x86_64 "$BENCH_PROG" \
    "$BENCH_ROUNDS" "$BENCH_N"
