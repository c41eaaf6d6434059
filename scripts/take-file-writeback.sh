#!/bin/sh
# The four file-write workloads of issue 16 (BENCHMARKS.md, "File writes and
# writeback in the time model"): predicted against measured, runs
# alternating, on a QUIET host, with the load before and after.
#
#   scripts/take-file-writeback.sh [COSTS]   (default target/this-host-costs.toml)
#
# To re-take the three cost figures these depend on first (fault.file_mkwrite,
# msync.call, msync.page), re-take the whole file: scripts/take-time-accuracy.sh.
set -eu
cd "$(dirname "$0")/.."
costs="${1:-target/this-host-costs.toml}"
cargo build --release --bin ptlab
echo "load before: $(cat /proc/loadavg)" >&2
status=0
target/release/ptlab validate --time --repeat 5 --costs "$costs" --markdown \
  file-shared mprotect-locked-populate-file vma-merge-file-fault-around writeback || status=$?
echo "load after: $(cat /proc/loadavg)" >&2
exit "$status"
