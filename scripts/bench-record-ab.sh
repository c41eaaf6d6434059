#!/usr/bin/env bash
# `ptlab record` of another build against this one, whole command wall time
# (what a user waits for, and what bench-record.sh times), alternating.
#
#   scripts/bench-record-ab.sh OLD_PTLAB_BINARY [ROUNDS]
#
# Build the old binary first, e.g.
#   git worktree add /tmp/old REV && (cd /tmp/old && cargo build --release)
# Programs: /bin/true (the recorder's fixed cost: start, events opened
# and closed, trace written) and the Python dict of bench-record.sh; each
# recorded by OLD and by this build, ROUNDS times (default 7), alternating;
# medians, min-max, and the ratio NEW/OLD of the medians. The load average
# is printed at the start and the end.
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench-record-ab.sh OLD_PTLAB_BINARY [ROUNDS]}
rounds=${2:-7}
export CARGO_INCREMENTAL=0
cargo build --release -q -p ptlab
new=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'd = {i: str(i) for i in range(3_000_000)}\nprint(len(d))\n' > "$work/dict.py"
py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
python3 - "$old" "$new" "$work" "$rounds" "$py" <<'PY'
import statistics, subprocess, sys, time
old, new, work, rounds, py = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
load = lambda: " ".join(open("/proc/loadavg").read().split()[:3])
print(f"load average at start {load()}\n")
print(f"| program | old s (median of {rounds}, min-max) | new s | new / old |")
print("| --- | --- | --- | --- |")
for name, cmd in [("true", ["true"]), ("python-dict", [py, f"{work}/dict.py"])]:
    t = {old: [], new: []}
    for _ in range(rounds):
        for b in (old, new):
            t0 = time.monotonic()
            subprocess.run([b, "record", "-o", f"{work}/x.ptl", "--"] + cmd,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            t[b].append(time.monotonic() - t0)
    mo, mn = statistics.median(t[old]), statistics.median(t[new])
    print("| %s | %.3f (%.3f-%.3f) | %.3f (%.3f-%.3f) | %.2f |" % (
        name, mo, min(t[old]), max(t[old]), mn, min(t[new]), max(t[new]), mn / mo))
print(f"\nload average at end {load()}")
PY
