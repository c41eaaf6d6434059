#!/bin/sh
# How much the calibration itself moves: N fresh `ptlab calibrate` takes in a
# row (the default, quick mode; nothing else alternated between them), then a
# Markdown table of every figure over the takes: median, min, max, max/min,
# the first take's own 95% interval, and each figure's stability as the takes
# wrote it (`[costs."NAME".stability]`, docs/costs.md: rounds, the interval's
# relative half-width and the rounds' relative spread, each as its range over
# the takes, and in how many takes it was marked unstable or the host moved
# under it), on stdout. A figure whose max/min
# is above 1.3 moves by more than the 30% held-out target between takes a
# minute apart: it bounds the error of the workloads it dominates.
#
#   scripts/calibrate-spread.sh [N] [CALIBRATE OPTIONS...]
#
# N defaults to 3. Options after N go to every `ptlab calibrate` (e.g.
# `--allow-busy` on a busy host, which calibrate otherwise refuses with exit
# 2; `--long` for the long takes). Each quick take runs about a minute on the
# quiet 2-vCPU development machine (2-3 minutes with the host busy), so the
# default is 3-4 minutes after the build. Progress, each take's wall time and
# the load average go to stderr; the takes' files are removed at the end.
set -eu
cd "$(dirname "$0")/.."
n="${1:-3}"
[ $# -gt 0 ] && shift
case "$n" in
'' | *[!0-9]*)
	echo "calibrate-spread.sh: N must be a whole number, not '$n'" >&2
	exit 2
	;;
esac
if [ "$n" -lt 2 ]; then
	echo "calibrate-spread.sh: N must be at least 2 (a spread needs two takes)" >&2
	exit 2
fi
# PTLAB names a built binary to use instead of building the release one
# (a check of the script itself; figures to publish come from the release
# build).
if [ -n "${PTLAB:-}" ]; then
	ptlab="$PTLAB"
else
	cargo build --release --bin ptlab >&2
	ptlab=target/release/ptlab
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
i=1
while [ "$i" -le "$n" ]; do
	echo "take $i of $n: load before $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	start=$(date +%s)
	status=0
	"$ptlab" calibrate --out "$tmp/take$i.toml" "$@" >"$tmp/take$i.log" 2>&1 || status=$?
	# Exit 1: written without a figure this host could not give (named in
	# the log); anything else is a failure.
	if [ "$status" -ne 0 ] && { [ "$status" -ne 1 ] || [ ! -f "$tmp/take$i.toml" ]; }; then
		cat "$tmp/take$i.log" >&2
		echo "calibrate-spread.sh: take $i failed (exit $status)" >&2
		exit 1
	fi
	grep -E '^(warning|error):' "$tmp/take$i.log" >&2 || true
	echo "take $i: $(($(date +%s) - start)) s, load after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	i=$((i + 1))
done
python3 - "$tmp" "$n" <<'EOF'
import statistics
import sys
import tomllib

tmp, n = sys.argv[1], int(sys.argv[2])
n_takes = n
takes = []
for i in range(1, n + 1):
    with open(f"{tmp}/take{i}.toml", "rb") as f:
        takes.append(tomllib.load(f))
first = takes[0]
names = list(first.get("costs", {}))
for t in takes[1:]:
    names += [k for k in t.get("costs", {}) if k not in names]


def fmt(x):
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


print(f"Calibration's spread over {n} takes ({first['host'].get('mode', '?')} mode), in the catalog's units (ns per event, page, table or KiB)")
print()
print("| figure | takes | median | min | max | max/min | first take's interval | rounds | half-width | spread | unstable | drift |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def span(xs, f):
    if not xs:
        return "-"
    lo, hi = min(xs), max(xs)
    return f(lo) if lo == hi else f"{f(lo)}-{f(hi)}"


def pct(x):
    return f"{x * 100:.0f}%" if x < 10 else ">999%"


unstable_names = []
moved = []
for name in names:
    vals = [t["costs"][name]["ns"] for t in takes if name in t.get("costs", {})]
    prov = first["costs"].get(name, {}).get("provenance", "")
    lo, hi = min(vals), max(vals)
    ratio = hi / lo if lo > 0 else float("inf") if hi > 0 else 1.0
    ratio_s = "-" if lo == 0 else f"{ratio:.2f}"
    c = first["costs"].get(name)
    interval = f"[{fmt(c['lo'])}, {fmt(c['hi'])}]" if c else "-"
    tag = " (derived)" if prov == "derived" else " (assumed)" if prov == "assumed" else ""
    stab = [t["costs"][name].get("stability") for t in takes if name in t.get("costs", {})]
    stab = [x for x in stab if x]
    rounds = span([x["rounds"] for x in stab], str)
    halfw = span([x["rel_halfwidth"] for x in stab], pct)
    spread = span([x["rel_spread"] for x in stab], pct)
    unst = sum(1 for x in stab if x.get("unstable"))
    drift = sum(1 for x in stab if x.get("drift"))
    unst_s = f"{unst}/{len(vals)}" if stab else "-"
    drift_s = f"{drift}/{len(vals)}" if stab else "-"
    if unst:
        unstable_names.append(f"`{name}` ({unst} of {len(vals)})")
    print(f"| `{name}`{tag} | {len(vals)} | {fmt(statistics.median(vals))} | {fmt(lo)} | {fmt(hi)} | {ratio_s} | {interval} | {rounds} | {halfw} | {spread} | {unst_s} | {drift_s} |")
    if prov == "measured" and ratio > 1.3:
        moved.append(f"`{name}` {ratio_s}" if lo > 0 else f"`{name}` (0 in a take)")
print()
print(f"Measured figures whose max/min over the takes is above 1.3 (more than the 30% target): {len(moved)}" + (": " + ", ".join(moved) if moved else ""))
missing = [n for n in names if sum(1 for t in takes if n in t.get("costs", {})) < n_takes]
print(f"Figures missing from a take: {len(missing)}" + (": " + ", ".join(f"`{m}`" for m in missing) if missing else ""))
print(f"Figures marked unstable in a take: {len(unstable_names)}" + (": " + ", ".join(unstable_names) if unstable_names else ""))
def load(t):
    parts = t["host"].get("description", "").split(";")
    return next((p.strip() for p in parts if "load average" in p), "load not recorded")


print("Takes: " + "; ".join(f"{i + 1} at {t['host'].get('taken', '?')}, {load(t)}" for i, t in enumerate(takes)))
EOF
