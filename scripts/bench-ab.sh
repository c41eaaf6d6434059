#!/usr/bin/env bash
# Two builds of ptlab side by side on the model core's four speed paths
# (issue 31), alternating, and each path's speed ratio B / A with its spread.
# Every later change to pt, mmu, mm, machine or the executors runs it
# against the build it started from before landing.
#
#   scripts/bench-ab.sh A B [ROUNDS]      (A, B: paths to ptlab binaries)
#
# The paths, one workload file each (written here, in the workload format
# both the 2026-11-23 build (589e38e) and today's accept):
#   miss64   random TLB misses: 20 M random writes over a populated 64 GiB
#            of 4 KiB pages (MAP_POPULATE, then the random touch);
#   hits16   first-level TLB hits: 16 M random reads within 16 pages;
#   dense1g  dense anonymous faults end to end: one write per 4 KiB over a
#            fresh 1 GiB (262,144 faults);
#   sparse1t one write per 2 MiB over a fresh 1 TiB noreserve mapping
#            (524,288 faults, each a new PTE table).
# Each measurement is one `ptlab run FILE --json` process with the builds'
# default options (virtual time and predicted_ns on where the build has
# them), timed between two marks by ptlab's own wall clock
# (`model_wall_ns`; builds before it was named report it as `elapsed_ns`).
# A round runs every path on both builds, A then B on odd rounds and B
# then A on even ones, so that neither build always goes first on a host
# whose speed drifts. The ratio of a path is taken per round (B's rate over
# A's, > 1: B is faster) and given as the median, min and max over rounds.
#
# Environment: BENCH_PATHS (default "miss64 hits16 dense1g sparse1t") picks
# paths; BENCH_ARGS adds options to every run of both builds (e.g.
# "--tlb zen4"). Prints `uptime` before and after every round: wall times on
# a loaded machine are inflated, and the ratios are the figure to read then.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    echo "usage: $0 A B [ROUNDS]   (A, B: ptlab binaries)" >&2
    exit 2
fi
a=$1
b=$2
rounds=${3:-3}
for bin in "$a" "$b"; do
    if [[ ! -x "$bin" ]]; then
        echo "$0: $bin: not an executable" >&2
        exit 2
    fi
done
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: ROUNDS: expected a positive integer, got '$rounds'" >&2
    exit 2
fi
paths=${BENCH_PATHS:-miss64 hits16 dense1g sparse1t}
read -r -a extra <<<"${BENCH_ARGS:-}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

cat >"$dir/miss64.toml" <<'EOF'
name = "ab-miss64"
description = "20 M random writes over a populated 64 GiB of 4 KiB pages: TLB misses and walks."
[[thread]]
op = [
  { mmap = "m", size = "64GiB", noreserve = true, populate = true },
  { mark = "start" },
  { touch = "m", access = "write", pattern = "random", count = 20000000 },
  { mark = "stop" },
  { munmap = "m" },
]
EOF
cat >"$dir/hits16.toml" <<'EOF'
name = "ab-hits16"
description = "16 M random reads within 16 pages: first-level TLB hits."
[[thread]]
op = [
  { mmap = "m", size = "64KiB" },
  { touch = "m", access = "write" },
  { mark = "start" },
  { touch = "m", access = "read", pattern = "random", count = 16000000 },
  { mark = "stop" },
  { munmap = "m" },
]
EOF
cat >"$dir/dense1g.toml" <<'EOF'
name = "ab-dense1g"
description = "One write per 4 KiB page of a fresh 1 GiB anonymous mapping: 262,144 faults."
[[thread]]
op = [
  { mmap = "m", size = "1GiB" },
  { mark = "start" },
  { touch = "m", access = "write", stride = "4KiB" },
  { mark = "stop" },
  { munmap = "m" },
]
EOF
cat >"$dir/sparse1t.toml" <<'EOF'
name = "ab-sparse1t"
description = "One write per 2 MiB of a fresh 1 TiB noreserve mapping: 524,288 faults, a PTE table each."
[[thread]]
op = [
  { mmap = "m", size = "1TiB", noreserve = true },
  { mark = "start" },
  { touch = "m", access = "write", stride = "2MiB" },
  { mark = "stop" },
  { munmap = "m" },
]
EOF

echo "A: $a"
echo "B: $b"
echo "rounds: $rounds; paths: $paths; options: ${BENCH_ARGS:-(defaults)}"
for r in $(seq 1 "$rounds"); do
    echo "round $r, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    if ((r % 2)); then order="A B"; else order="B A"; fi
    for p in $paths; do
        if [[ ! -e "$dir/$p.toml" ]]; then
            echo "$0: BENCH_PATHS: unknown path '$p' (miss64, hits16, dense1g, sparse1t)" >&2
            exit 2
        fi
        for who in $order; do
            if [[ $who == A ]]; then bin=$a; else bin=$b; fi
            if ! "$bin" run "$dir/$p.toml" --json "${extra[@]}" >"$dir/$p-$who-$r.json" \
                2>"$dir/err"; then
                echo "$0: $bin failed on $p:" >&2
                tail -3 "$dir/err" >&2
                exit 1
            fi
        done
    done
    echo "round $r, load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
done

python3 - "$dir" "$rounds" "$paths" <<'EOF'
import json, statistics, sys

d, rounds, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def mark(doc, name):
    m = next(m for m in doc["marks"] if m["name"] == name)
    s = m.get("samples")
    return {k: v[0] for k, v in s.items()} if s else m["counters"]

def measure(path, who, r):
    """(rate per second, unit label, value shown) of one run."""
    doc = json.load(open(f"{d}/{path}-{who}-{r}.json"))
    a, b = mark(doc, "start"), mark(doc, "stop")
    clock = "model_wall_ns" if "model_wall_ns" in b else "elapsed_ns"
    ns = b[clock] - a[clock]
    if path in ("miss64", "hits16"):
        n = b["accesses"] - a["accesses"]
        return n / ns * 1e3, "M accesses/s", n / ns * 1e3
    n = b["minor_faults"] - a["minor_faults"]
    return n / ns * 1e9, "ns a fault", ns / n

def spread(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"

print()
print("| path | unit | A: median (min-max) | B: median (min-max) | B / A speed: median (min-max) |")
print("| --- | --- | ---: | ---: | ---: |")
for p in paths:
    ra, rb, va, vb, ratios = [], [], [], [], []
    unit = ""
    for r in range(1, rounds + 1):
        (xa, unit, sa), (xb, _, sb) = measure(p, "A", r), measure(p, "B", r)
        va.append(sa)
        vb.append(sb)
        ratios.append(xb / xa)
    print(f"| {p} | {unit} | {spread(va)} | {spread(vb)} | {spread(ratios)}x |")
print()
print(f"{rounds} rounds, alternating; speed ratio > 1: B is faster. Per round:")
for p in paths:
    per = [measure(p, "B", r)[0] / measure(p, "A", r)[0] for r in range(1, rounds + 1)]
    print(f"  {p}: " + ", ".join(f"{x:.2f}x" for x in per))
EOF
