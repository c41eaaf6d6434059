#!/bin/sh
# Where msync(MS_SYNC)'s time goes on the kernel (BENCHMARKS.md, "Time
# model accuracy"): runs a workload (default the
# built-in writeback) on the kernel backend under `perf record -a` with
# ext4's fsync, jbd2's commit, the block layer's write requests and the
# waits on writeback, and prints per msync its span, the writes it issued
# and waited for, and the journal commits inside it (scripts/trace-msync.py).
# Needs root. The load is printed: others' I/O shares the device.
#
#   scripts/trace-msync.sh [RUNS] [WORKLOAD]
set -eu
cd "$(dirname "$0")/.."
runs="${1:-2}"
w="${2:-writeback}"
cargo build --release --bin ptlab
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
events=ext4:ext4_sync_file_enter,ext4:ext4_sync_file_exit,jbd2:jbd2_start_commit,jbd2:jbd2_end_commit,block:block_rq_issue,block:block_rq_complete,writeback:folio_wait_writeback
i=1
while [ "$i" -le "$runs" ]; do
  echo "== $w, run $i, load $(cut -d' ' -f1-3 /proc/loadavg)"
  perf record -q -o "$tmp/perf.data" -a -e "$events" \
    -- target/release/ptlab run --backend kernel "$w" >"$tmp/out" 2>&1 ||
    { cat "$tmp/out" >&2; exit 1; }
  grep -E "elapsed_ns" "$tmp/out" | tail -1
  perf script -i "$tmp/perf.data" 2>/dev/null | python3 scripts/trace-msync.py
  i=$((i + 1))
done
