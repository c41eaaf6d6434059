#!/usr/bin/env bash
# Importer speed against decompression alone, for BENCHMARKS.md ("Importer
# speed", issue 34): a synthetic ChampSim trace of RECORDS instructions
# (scripts/champsim-gen.py; default 33,554,432: 2.1 GB uncompressed),
# compressed with `xz -1`, then ROUNDS rounds (default 3) of `xz -dc FILE
# >/dev/null` and `ptlab import champsim FILE`, alternating, timed wall and
# CPU (user + system). Printed: each time, the medians and the ratio of the
# medians. The inputs are made in a temporary directory removed at the end
# (or in DIR, kept, when given: the trace takes minutes to make).
#
#   scripts/bench-import.sh [ROUNDS] [RECORDS] [DIR]
#
# The binary is built (release) into $CARGO_TARGET_DIR (default target/),
# or taken from $PTLAB when set (then nothing is built).
#
# Times are noisy on a shared machine: the load average is printed at both
# ends.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
records=${2:-33554432}
export CARGO_INCREMENTAL=0
if [ -n "${PTLAB:-}" ]; then
    ptlab=$(realpath "$PTLAB")
else
    cargo build --release -q -p ptlab
    ptlab=$(realpath "${CARGO_TARGET_DIR:-target}")/release/ptlab
fi
echo "ptlab: $ptlab"
if [ -n "${3:-}" ]; then
    dir=$3
    mkdir -p "$dir"
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
trace=$dir/synthetic-$records.champsimtrace.xz
if [ ! -s "$trace" ]; then
    echo "making $trace ..." >&2
    python3 scripts/champsim-gen.py --records "$records" | xz -1 -T1 >"$trace.tmp"
    mv "$trace.tmp" "$trace"
fi
echo "input: $trace, $(stat -c %s "$trace") bytes compressed, $((records * 64)) uncompressed"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# Prints "wall cpu" in seconds for the command.
# (time writes to a file of its own, one per call: the command's stderr is
# discarded, and a call's clean-up may still run beside the next call.)
timed() {
    local f
    f=$(mktemp -p "$dir" time.XXXXXX)
    /usr/bin/time -f '%e %U %S' -o "$f" "$@" >/dev/null 2>/dev/null
    awk '{printf "%.2f %.2f\n", $1, $2 + $3}' "$f"
    rm -f "$f"
}

xzs=() imps=()
for r in $(seq 1 "$rounds"); do
    read -r w c < <(timed sh -c "xz -dc '$trace' >/dev/null")
    echo "round $r: xz -dc       wall $w s, cpu $c s"
    xzs+=("$w")
    read -r w c < <(timed "$ptlab" import champsim "$trace" -o "$dir/out.ptl")
    echo "round $r: ptlab import wall $w s, cpu $c s"
    imps+=("$w")
    rm -f "$dir/out.ptl"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mx=$(median "${xzs[@]}")
mi=$(median "${imps[@]}")
echo "median wall: xz -dc $mx s, import $mi s, ratio $(awk -v a="$mi" -v b="$mx" 'BEGIN {printf "%.2f", a / b}')"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
