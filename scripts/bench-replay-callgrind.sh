#!/usr/bin/env bash
# Instructions a replay costs, old build against this one, on the same
# trace (valgrind --tool=callgrind: exact counts, unaffected by load), for
# BENCHMARKS.md, "Replay".
#
#   scripts/bench-replay-callgrind.sh OLD_PTLAB [LINES]
#
# Traces `sort` of LINES random lines (default 8,000: about 11 M accesses)
# with this tree's `ptlab trace`; the old binary, if it reads only trace
# format 1, is given the trace's version-1 form (the index cut out). Prints
# each replay's instructions in all, those of the chunk reader
# (`TraceReader::next_raw_chunk`, inclusive: on the reader thread in this
# build, on the replay's own thread in an old one), the difference (the
# replay's own thread in this build), per access, and whether every
# counter but ptlab's own wall time is equal. Temporary files are removed.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
lines=${2:-8000}
export CARGO_INCREMENTAL=0
./scripts/install-qemu-user.sh
cargo build --release -q -p ptlab
new=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts/bench-inputs.py "$work" lines "$lines"
"$new" trace -o "$work/sort.ptl" -- sort -o "$work/sorted.txt" "$work/lines.txt" 2>&1 | head -1
oldtrace=$work/sort.ptl
if ! "$old" replay "$work/sort.ptl" --json >/dev/null 2>&1; then
  python3 scripts/trace-to-v1.py "$work/sort.ptl" "$work/sort.v1.ptl"
  oldtrace=$work/sort.v1.ptl
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (counts do not depend on it)"
for who in old new; do
  bin=$old; t=$oldtrace
  [ "$who" = new ] && { bin=$new; t=$work/sort.ptl; }
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$who" "$bin" replay "$t" \
    --json --timeout 100000 >"$work/$who.json" 2>/dev/null
done
python3 - "$work" <<'PY'
import json, re, subprocess, sys
w = sys.argv[1]
def total_and_reader(f):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", f],
                         capture_output=True, text=True, check=True).stdout
    num = lambda line: int(line.split()[0].replace(",", ""))
    total = next(num(l) for l in out.splitlines() if "PROGRAM TOTALS" in l)
    reader = max([num(l) for l in out.splitlines()
                  if re.search(r"next_raw_chunk \[", l)] or [0])
    return total, reader
def counters(f):
    m = json.load(open(f))["marks"]
    out = []
    for x in m:
        c = dict(x["counters"]); c.pop("model_wall_ns", None); out.append((x["name"], c))
    return out
acc = counters(f"{w}/new.json")[-1][1]["accesses"]
print("| build | instructions | chunk reader | replay thread | per access (all / replay thread) |")
print("| --- | --- | --- | --- | --- |")
res = {}
for who in ["old", "new"]:
    t, r = total_and_reader(f"{w}/cg.{who}")
    own = t if who == "old" else t - r
    res[who] = (t, own)
    print("| %s | {:,} | {:,} | {:,} | %.0f / %.0f |".format(t, r, own) % (who, t / acc, own / acc))
print("accesses: {:,}; old/new instructions: all %.3fx, replay thread %.3fx; counters equal: %s".format(acc)
      % (res["old"][0] / res["new"][0], res["old"][1] / res["new"][1],
         counters(f"{w}/old.json") == counters(f"{w}/new.json")))
PY
