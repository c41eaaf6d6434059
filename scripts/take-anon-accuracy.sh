#!/bin/sh
# The time-accuracy table of the anonymous-memory workloads of issue 16
# (BENCHMARKS.md, "Eleventh session: anonymous memory"), on a QUIET host:
# the held-out suite's anonymous cases, then ebizzy and multi-fault at 1 and
# 2 threads (the built-ins with their thread count changed, in a temporary
# directory that is removed). Run after scripts/take-time-accuracy.sh has
# written this host's target/this-host-costs.toml.
#
#   scripts/take-anon-accuracy.sh [REPEAT]
set -eu
cd "$(dirname "$0")/.."
repeat="${1:-5}"
cargo build --release --bin ptlab
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for w in ebizzy multi-fault; do
  for t in 1 2; do
    sed "s/^count = [0-9]*/count = $t/" "crates/workload/builtin/$w.toml" >"$tmp/$w-$t.toml"
  done
done
echo "load before: $(cat /proc/loadavg)" >&2
status=0
target/release/ptlab validate --time --repeat "$repeat" --costs target/this-host-costs.toml --markdown \
  populate-read populate-write anon-write-after-read anon-read-zero-page \
  vma-merge-anon-vma-conflict vma-merge-anon-vma-shared thp-split-by-mlock \
  dontneed-reclaim pt-reclaim-whole pt-reclaim-partial mremap-move-dontneed-reclaim \
  "$tmp/ebizzy-1.toml" "$tmp/ebizzy-2.toml" "$tmp/multi-fault-1.toml" "$tmp/multi-fault-2.toml" \
  || status=$?
echo "load after: $(cat /proc/loadavg)" >&2
exit "$status"
