#!/bin/sh
# Issue 16, major faults: re-takes fault.major and fault.major_page alone
# (`ptlab calibrate --long --only major-faults`) into
# target/this-host-costs.toml (scripts/take-time-accuracy.sh writes it),
# keeping its other figures, then measures the held-out workloads whose time
# a major fault sets, on a QUIET host (calibrate refuses a busy one, exit 2).
# Prints the Markdown table (predicted against measured), with the load
# before and after.
#
#   scripts/take-major-accuracy.sh
set -eu
cd "$(dirname "$0")/.."
cargo build --release --bin ptlab
set -- file-thp-private-write file-thp-private-write-read \
  file-readaround-window file-readaround-middle file-faultaround-major \
  file-faultaround-major-shared file-thp-hugepage-read
echo "load before calibrate: $(cat /proc/loadavg)" >&2
target/release/ptlab calibrate --long --only major-faults --out target/this-host-costs.toml
echo "load before validate: $(cat /proc/loadavg)" >&2
status=0
target/release/ptlab validate --time --repeat 5 --costs target/this-host-costs.toml --markdown "$@" || status=$?
echo "load after: $(cat /proc/loadavg)" >&2
exit "$status"
