#!/usr/bin/env bash
# Replay speed of two ptlab builds on the three programs of
# scripts/bench-trace.sh (sort of 200,000 lines, gzip of 10 MB, a Python
# dict of 500,000 entries), for an A/B of a change to the replay.
#
#   scripts/bench-replay-ab.sh OLD_PTLAB [ROUNDS]
#
# OLD_PTLAB: a copy of an older release binary (e.g. main's). The traces
# are made once by this tree's `ptlab trace` (its wall time gives the rate
# it produces accesses), in a temporary directory removed at the end; then
# ROUNDS rounds (default 3) replay each trace with the old and the new
# binary in turn (`ptlab replay --json`, default configuration; a binary
# that reads only trace format 1 (a build older than the trace's index) is given
# the trace's version-1 form: the same chunks, without the index). Printed
# per program: median wall and CPU seconds (user + system) of each, the
# ratio old/new of the CPU medians, the replay's accesses per second of
# wall time and its ratio to the rate `trace` produced them; and whether
# the two binaries' counters (all but ptlab's own wall time) are equal.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
rounds=${2:-3}
export CARGO_INCREMENTAL=0
./scripts/install-qemu-user.sh
cargo build --release -q -p ptlab
new=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts/bench-inputs.py "$work" traced
py=$(python3 -c 'import sys, os; print(os.path.realpath(sys.executable))')
programs=(
  "sort:sort -o $work/sorted.txt $work/lines.txt"
  "gzip:gzip -c $work/zip.in"
  "python-dict:$py $work/dict.py"
)
# timed OUT CMD...: "wall cpu" seconds of CMD (CPU: user + system of the
# child, from getrusage), its stdout to OUT.
timed() {
  local out=$1; shift
  python3 -c '
import resource, subprocess, sys, time
t = time.time()
with open(sys.argv[1], "wb") as o:
    subprocess.run(sys.argv[2:], stdout=o, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %.3f" % (time.time() - t, r.ru_utime + r.ru_stime))
' "$out" "$@"
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| program | accesses | trace wall s (M acc/s) | old replay wall / CPU s | new replay wall / CPU s | old/new CPU | new replay M acc/s (wall) | new replay / trace's rate | counters equal |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for p in "${programs[@]}"; do
  name=${p%%:*}; cmd=${p#*:}
  read -r tw _ < <(timed /dev/null "$new" trace -o "$work/$name.ptl" -- $cmd)
  oldtrace=$work/$name.ptl
  if ! "$old" replay "$work/$name.ptl" --json >/dev/null 2>&1; then
    python3 scripts/trace-to-v1.py "$work/$name.ptl" "$work/$name.v1.ptl"
    oldtrace=$work/$name.v1.ptl
  fi
  ow=(); oc=(); nw=(); nc=()
  for _ in $(seq "$rounds"); do
    read -r w c < <(timed "$work/old.json" "$old" replay "$oldtrace" --json); ow+=("$w"); oc+=("$c")
    read -r w c < <(timed "$work/new.json" "$new" replay "$work/$name.ptl" --json); nw+=("$w"); nc+=("$c")
  done
  python3 - "$name" "$tw" "${ow[*]}" "${oc[*]}" "${nw[*]}" "${nc[*]}" "$work/old.json" "$work/new.json" "$work/$name.ptl" "$new" <<'PY'
import json, statistics, subprocess, sys
name, tw, ow, oc, nw, nc, oj, nj, trace, new = sys.argv[1:11]
med = lambda s: statistics.median(map(float, s.split()))
def counters(f):
    out = []
    for m in json.load(open(f))["marks"]:
        c = dict(m["counters"]); c.pop("model_wall_ns", None); out.append((m["name"], c))
    return out
c = counters(nj)[-1][1]
acc = c["accesses"] - c["minor_faults"] - c.get("major_faults", 0)

tw = float(tw)
print("| %s | {:,} | %.2f (%.0f) | %.2f / %.2f | %.2f / %.2f | %.2fx | %.0f | %.2fx | %s |".format(acc) % (
    name, tw, acc / tw / 1e6, med(ow), med(oc), med(nw), med(nc), med(oc) / med(nc),
    acc / med(nw) / 1e6, (acc / med(nw)) / (acc / tw), counters(oj) == counters(nj)))
PY
  rm -f "$work/$name.ptl" "$work/$name.v1.ptl"
done
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
