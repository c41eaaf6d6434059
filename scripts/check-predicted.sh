#!/usr/bin/env bash
# Holds a change to the model's speed to the virtual clock: runs every
# built-in workload (`ptlab workloads list`; with CHECK_VALIDATION=1 the
# validation suite too) on the model with two builds and the same cost
# file, and compares every mark's predicted time (predicted_ns, its low and
# high ends, each CPU's clock, lock_wait_ns, virtual_contended) and the
# counters the model reports (faults, RSS, tables, TLB and walk counts),
# value by value. ptlab's own wall time (model_wall_ns) is left out: it is
# the host's speed, the one thing such a change is meant to alter.
#
#   scripts/check-predicted.sh A B [COSTS]   (A, B: ptlab binaries;
#                                             COSTS: default this-host)
#
# Prints one line per workload (same, or the first differences) and exits
# 1 if any differs. A counter only B reports (one added since A) is named
# on the workload's line but is not a difference.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    echo "usage: $0 A B [COSTS]   (A, B: ptlab binaries)" >&2
    exit 2
fi
a=$1
b=$2
costs=${3:-this-host}
for bin in "$a" "$b"; do
    if [[ ! -x "$bin" ]]; then
        echo "$0: $bin: not an executable" >&2
        exit 2
    fi
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
names=$("$a" workloads list --json | python3 -c 'import json,sys; print(" ".join(w["name"] for w in json.load(sys.stdin)))')
if [[ "${CHECK_VALIDATION:-0}" == 1 ]]; then
    names="$names $("$a" workloads list --validation --json |
        python3 -c 'import json,sys; print(" ".join(w["name"] for w in json.load(sys.stdin)))')"
fi
status=0
for w in $names; do
    for who in A B; do
        if [[ $who == A ]]; then bin=$a; else bin=$b; fi
        if ! "$bin" run "$w" --costs "$costs" --json >"$dir/$who.json" 2>"$dir/err"; then
            echo "$w: $who failed: $(tail -1 "$dir/err")"
            status=1
            continue 2
        fi
    done
    if ! python3 - "$dir/A.json" "$dir/B.json" "$w" <<'EOF'; then
import json, sys

def marks(path):
    text = open(path).read()
    # A workload whose `requires` the model does not meet is skipped: a
    # JSON document saying so (an older build: its one line).
    try:
        doc = json.loads(text)
    except ValueError:
        return None if "skipped:" in text else json.loads(text)
    if doc.get("skipped"):
        return None
    out = {}
    for m in doc["marks"]:
        s = m.get("samples")
        c = {k: v[0] for k, v in s.items()} if s else m["counters"]
        out[m["name"]] = {k: v for k, v in c.items() if k != "model_wall_ns"}
    return out

a, b, name = marks(sys.argv[1]), marks(sys.argv[2]), sys.argv[3]
if a is None or b is None:
    if a is None and b is None:
        print(f"{name}: skipped by both")
        sys.exit(0)
    print(f"{name}: skipped by {'A' if a is None else 'B'} only")
    sys.exit(1)
diffs = []
new = set()
if list(a) != list(b):
    diffs.append(f"marks {list(a)} vs {list(b)}")
for m in a:
    for k in sorted(set(a[m]) | set(b.get(m, {}))):
        x, y = a[m].get(k), b.get(m, {}).get(k)
        if x is None and y is not None:
            # A counter the older build A does not have: B's addition,
            # not a change of behaviour.
            new.add(k)
        elif x != y:
            diffs.append(f"{m}.{k}: {x} vs {y}")
pred = sum(1 for m in a for k in a[m] if k.startswith("predicted"))
if diffs:
    print(f"{name}: {len(diffs)} differ: " + "; ".join(diffs[:6]))
    sys.exit(1)
extra = f"; B's new counters, not compared: {', '.join(sorted(new))}" if new else ""
print(f"{name}: same ({len(a)} marks, {pred} predicted figures, every counter A has){extra}")
EOF
        status=1
    fi
done
exit $status
