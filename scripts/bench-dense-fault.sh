#!/usr/bin/env bash
# Dense faults end to end: one write per 4 KiB page of a fresh
# 1 GiB anonymous mapping, run through a workload on the model and on this
# machine's kernel, alternating (model, kernel, model, kernel ...), and the
# per-fault wall time of each with the ratio kernel / model.
#
#   scripts/bench-dense-fault.sh [ROUNDS] [REPEAT]
#
# ROUNDS (default 5) pairs of processes; each process makes one warm-up run
# and REPEAT (default 3) measured runs (`ptlab run --repeat`), so the kernel
# is warm: its child's memory was backed by the host in the warm-up run
# before any measured one. Per fault = (the `touched` mark's time less the
# `mapped` mark's) / the faults between them: `model_wall_ns` for the model
# (ptlab's own speed), `elapsed_ns` for the kernel (its `cpu_ns`, the
# child's CPU time, is printed beside it). The ratio is taken per round
# (the kernel's median over the model's median of that round), and the
# rounds' ratios are given with their median, min and max.
#
# Set PTLAB to a built binary to skip the build. Prints `uptime` before and
# after: wall times on a loaded machine are inflated, the kernel's more so.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
repeat=${2:-3}
if [[ -z "${PTLAB:-}" ]]; then
    CARGO_INCREMENTAL=0 cargo build --release -q -p ptlab
    PTLAB=target/release/ptlab
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/dense-fault.toml" <<'EOF'
name = "dense-fault"
description = "One write per 4 KiB page of a fresh 1 GiB anonymous mapping: 262,144 faults."

[[thread]]
op = [
  { mmap = "buf", size = "1GiB" },
  { mark = "mapped" },
  { touch = "buf", access = "write", stride = "4KiB" },
  { mark = "touched" },
  { munmap = "buf" },
]
EOF
echo "load before: $(uptime)"
for r in $(seq 1 "$rounds"); do
    "$PTLAB" run "$dir/dense-fault.toml" --all --csv --repeat "$repeat" --warmup 1 \
        >"$dir/model-$r.csv"
    "$PTLAB" run "$dir/dense-fault.toml" --backend kernel --csv --repeat "$repeat" --warmup 1 \
        >"$dir/kernel-$r.csv"
done
echo "load after:  $(uptime)"
python3 - "$dir" "$rounds" <<'EOF'
import csv, statistics, sys
from collections import defaultdict

d, rounds = sys.argv[1], int(sys.argv[2])

def per_fault(path, counter):
    """Per-fault ns of each measured run of one process."""
    v = defaultdict(dict)
    with open(path) as f:
        for row in csv.DictReader(f):
            v[(row["mark"], row["counter"])][int(row["run"])] = int(row["value"])
    out = []
    for run in sorted(v[("touched", counter)]):
        ns = v[("touched", counter)][run] - v[("mapped", counter)][run]
        faults = v[("touched", "minor_faults")][run] - v[("mapped", "minor_faults")][run]
        out.append(ns / faults)
    return out

ratios = []
print(f"{'round':>5}  {'model ns/fault':>16}  {'kernel ns/fault':>16}  {'kernel cpu ns/fault':>20}  {'kernel/model':>12}")
allm, allk = [], []
for r in range(1, rounds + 1):
    m = per_fault(f"{d}/model-{r}.csv", "model_wall_ns")
    k = per_fault(f"{d}/kernel-{r}.csv", "elapsed_ns")
    kc = per_fault(f"{d}/kernel-{r}.csv", "cpu_ns")
    allm += m
    allk += k
    ratio = statistics.median(k) / statistics.median(m)
    ratios.append(ratio)
    print(f"{r:>5}  {statistics.median(m):>16.1f}  {statistics.median(k):>16.1f}  {statistics.median(kc):>20.1f}  {ratio:>11.1f}x")
print(f"model  ns/fault over {len(allm)} runs: median {statistics.median(allm):.1f}, min {min(allm):.1f}, max {max(allm):.1f}")
print(f"kernel ns/fault over {len(allk)} runs: median {statistics.median(allk):.1f}, min {min(allk):.1f}, max {max(allk):.1f}")
print(f"kernel/model over {rounds} rounds: median {statistics.median(ratios):.1f}x, min {min(ratios):.1f}x, max {max(ratios):.1f}x")
EOF
