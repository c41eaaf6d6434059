#!/usr/bin/env bash
# What bounds `ptlab record`'s overhead: each part of the
# recorder run alone on the three programs of bench-record.sh.
#
#   scripts/bench-record-floor.sh [ROUNDS]
#
# Every run goes through `ptlab record --only PART` (a diagnostic, see
# docs/cli.md), so that all of them start the program the same way (fork,
# stop before exec, continue) and report the same figures: the program's
# wall time from its continue to its exit being reaped, and its own user and
# system CPU from wait4's rusage (the recorder's threads are not in it; their
# CPU is printed apart). The parts, alternating round by round, ROUNDS times
# (default 5):
#   native           nothing: the program untraced, no events
#   faults           the fault events the recorder opens (tracepoints
#                    exceptions:page_fault_user/kernel, period 1, the same
#                    rings), drained by the same thread, no ptrace: the floor
#   calls            the seccomp filter and the ptrace stops of the memory
#                    calls, no fault events
#   all              the full recording
#   faults-counting  the same tracepoints counting (no sample, no ring)
#   faults-software  the software event page-faults, period 1, sampled with
#                    PERF_SAMPLE_ADDR into the same rings
# Printed per program and part: medians and min-max of wall and user+sys,
# the overhead over native (ratio of medians), the extra per fault (ns, for
# the fault parts) or per traced call (us, for calls), the counts, and for
# `all` what the parts predict (faults' extra + calls' extra) against what
# it costs; "command wall" is the whole `ptlab record` invocation (start,
# rings, trace written), as bench-record.sh times it. PROGRAMS="sort gzip
# python-dict" (a space-separated subset) limits the programs. Counts are exact; times are as quiet as the machine is (the load
# average is printed at the start and end of each program).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
export CARGO_INCREMENTAL=0
cargo build --release -q -p ptlab
ptlab=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The inputs of bench-record.sh.
scripts/bench-inputs.py "$work" native
python3_bin=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')

python3 - "$ptlab" "$work" "$rounds" "$python3_bin" <<'PY'
import os, statistics, subprocess, sys, time

ptlab, work, rounds, py = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
programs = [
    ("sort", ["sort", "-o", f"{work}/sorted.txt", f"{work}/lines.txt"]),
    ("gzip", ["gzip", "-c", f"{work}/zip.in"]),
    ("python-dict", [py, f"{work}/dict.py"]),
]
parts = ["native", "faults", "calls", "all", "faults-counting", "faults-software"]

def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])

def run(part, cmd):
    t0 = time.monotonic()
    r = subprocess.run(
        [ptlab, "record", "--only", part, "-o", f"{work}/x.ptl", "--"] + cmd,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    command = time.monotonic() - t0
    line = [l for l in r.stderr.splitlines() if l.startswith("diagnostic ")][-1]
    kv = dict(f.split("=", 1) for f in line.split()[1:])
    if kv["status"] != "0":
        sys.exit(f"{part} {cmd}: the program failed (status {kv['status']})")
    return {
        "wall": float(kv["wall"]),
        "command": command,
        "cpu": float(kv["user"]) + float(kv["sys"]),
        "sys": float(kv["sys"]),
        "rec": float(kv["recorder_cpu"]),
        "minflt": int(kv["minflt"]),
        "events": int(kv["fault_events"]),
        "lost": int(kv["lost"]),
        "calls": int(kv["calls"]),
    }

def med(xs):
    return statistics.median(xs)

only = os.environ.get("PROGRAMS", "").split()
for name, cmd in programs:
    if only and name not in only:
        continue
    print(f"\n### {name}: load average at start {load()}")
    got = {p: [] for p in parts}
    for _ in range(rounds):
        for p in parts:
            got[p].append(run(p, cmd))
    print(f"load average at end {load()}\n")
    n = {k: med([r[k] for r in got["native"]]) for k in ("wall", "cpu")}
    faults = med([r["events"] for r in got["faults"]])
    calls = med([r["calls"] for r in got["calls"]])
    print(f"| part | wall s (median of {rounds}, min-max) | over native | user+sys s (median, min-max) | over native | extra per unit, wall / CPU | faults (events) | traced calls | lost | recorder CPU s | command wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    m = {}
    for p in parts:
        rs = got[p]
        w = [r["wall"] for r in rs]; c = [r["cpu"] for r in rs]
        m[p] = {"wall": med(w), "cpu": med(c)}
        if p.startswith("faults"):
            units, scale, unit = faults, 1e9, "ns/fault"
        elif p == "calls":
            units, scale, unit = calls, 1e6, "us/call"
        else:
            units = None
        if units:
            per = "%.0f / %.0f %s" % ((med(w) - n["wall"]) / units * scale,
                                      (med(c) - n["cpu"]) / units * scale, unit)
        elif p == "all":
            per = "%.0f / %.0f ns/fault, calls included" % (
                (med(w) - n["wall"]) / faults * 1e9, (med(c) - n["cpu"]) / faults * 1e9)
        else:
            per = "-"
        print("| %s | %.3f (%.3f-%.3f) | %+.1f%% | %.3f (%.3f-%.3f) | %+.1f%% | %s | %d | %d | %d | %.3f | %.3f |" % (
            p, med(w), min(w), max(w), (med(w) / n["wall"] - 1) * 100,
            med(c), min(c), max(c), (med(c) / n["cpu"] - 1) * 100, per,
            med([r["events"] for r in rs]), med([r["calls"] for r in rs]),
            max(r["lost"] for r in rs), med([r["rec"] for r in rs]),
            med([r["command"] for r in rs])))
    for k in ("wall", "cpu"):
        parts_sum = (m["faults"][k] - n[k]) + (m["calls"][k] - n[k])
        full = m["all"][k] - n[k]
        print(f"\n{k}: native {n[k]:.3f} s; the floor (faults alone) {m['faults'][k] - n[k]:+.3f} s "
              f"({(m['faults'][k] / n[k] - 1) * 100:+.1f}%); faults + calls apart {parts_sum:+.3f} s "
              f"({parts_sum / n[k] * 100:+.1f}%); all {full:+.3f} s ({full / n[k] * 100:+.1f}%); "
              f"all above the parts' sum {full - parts_sum:+.3f} s", end="")
    print()
PY
