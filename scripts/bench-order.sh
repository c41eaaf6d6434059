#!/usr/bin/env bash
# The order effect: two identical model configurations compared
# in one `ptlab compare` must show the same time per fault, whichever runs
# first. Runs a fresh 1 GiB dense (one write per 4 KiB) and 1 TiB sparse
# (one write per 2 MiB) workload as `--config reclaim=on --config
# reclaim=on`, alternating, REPEAT rounds (default 5), no warm-up, and
# prints ptlab's own time to the mark (`model_wall_ns`) with its 95%
# interval and the ratio of the second to the first.
#
# Usage: scripts/bench-order.sh [PTLAB]   (default target/release/ptlab)
set -euo pipefail
cd "$(dirname "$0")/.."
ptlab="${1:-target/release/ptlab}"
repeat="${REPEAT:-5}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for w in "dense-1g 1GiB 4KiB" "sparse-1t 1TiB 2MiB"; do
  set -- $w
  cat > "$tmp/$1.toml" <<EOF
name = "$1"
[[thread]]
op = [
  { mmap = "m", size = "$2", noreserve = true },
  { touch = "m", access = "write", stride = "$3" },
  { mark = "touched" },
  { munmap = "m" },
]
EOF
  echo "== $1 ($2, one write per $3), load $(cut -d' ' -f1 /proc/loadavg)"
  "$ptlab" compare "$tmp/$1.toml" --config reclaim=on --config reclaim=on \
    --repeat "$repeat" --warmup 0 --all 2>/dev/null |
    awk '/^mark "touched"/{m=1} /^mark "end"/{m=0} m && /^(counter|minor_faults|model_wall_ns)/'
done
