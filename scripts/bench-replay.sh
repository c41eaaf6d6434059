#!/usr/bin/env bash
# Replay speed (accesses per second) on traces whose accesses mostly hit the
# first-level TLB, unfiltered and filtered, against the rate `ptlab trace`
# produces accesses; for BENCHMARKS.md, "Replay".
#
#   scripts/bench-replay.sh [ROUNDS] [MILLIONS]
#
# Traces (made here, in a temporary directory removed at the end):
# - seq: `seq_trace MILLIONS` (crates/backend/examples): one 64 MiB region
#   written once a page, then MILLIONS million sequential 8-byte reads
#   (default 200): unfiltered (a record per access) and filtered (the first
#   read of each page, then one Hits record for the other 511, as `ptlab
#   trace`'s plugin writes them);
# - sort: `sort` of 200,000 random lines traced by `ptlab trace`, with its
#   filter and with --no-filter; the trace's own wall time gives the rate it
#   produces accesses.
# Then ROUNDS rounds (default 5), each replaying every trace once in turn
# (`ptlab replay --json`, virtual time on: every access priced), timed wall
# and CPU (user + system). Printed: median, min and max per trace, accesses
# per second of the median, and the ratio to the production rate. Times are
# noisy on a shared machine (the load average is printed at both ends);
# counts are exact.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
millions=${2:-200}
export CARGO_INCREMENTAL=0
cargo build --release -q -p ptlab -p backend --example seq_trace
ptlab=$PWD/target/release/ptlab
seq_trace=$PWD/target/release/examples/seq_trace
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
"$seq_trace" "$millions" "$work/seq.ptl" 2>/dev/null
"$seq_trace" "$millions" "$work/seq-filtered.ptl" filtered 2>/dev/null

# timed OUT CMD...: "wall cpu" seconds of CMD, its stdout to OUT.
timed() {
  local out=$1; shift
  /usr/bin/time -o "$work/time" -f "%e %U %S" "$@" > "$out" 2> "$work/err" || {
    cat "$work/err" >&2; exit 1; }
  awk '{printf "%s %.3f\n", $1, $2 + $3}' "$work/time"
}

traces=(seq seq-filtered)
declare -A produced=()
if ./scripts/install-qemu-user.sh 2>/dev/null; then
  scripts/bench-inputs.py "$work" lines 200000
  for form in filtered unfiltered; do
    flag=(); [ "$form" = unfiltered ] && flag=(--no-filter)
    read -r t tc < <(timed /dev/null "$ptlab" trace "${flag[@]}" -o "$work/sort-$form.ptl" -- \
      sort -o "$work/sorted.txt" "$work/lines.txt")
    produced[sort-$form]="$t $tc"
    traces+=("sort-$form")
  done
  rm -f "$work/lines.txt" "$work/sorted.txt"
else
  echo "qemu-x86_64 missing: the sort traces (trace's production rate) are left out" >&2
fi

declare -A wall=() cpu=() accesses=()
for ((i = 1; i <= rounds; i++)); do
  for t in "${traces[@]}"; do
    read -r w c < <(timed "$work/$t.json" "$ptlab" replay "$work/$t.ptl" --json)
    wall[$t]+="$w "; cpu[$t]+="$c "
    accesses[$t]=$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["marks"][-1]["counters"]
# The replay counts a faulting access again when it retries it.
print(c["accesses"] - c["minor_faults"] - c.get("major_faults", 0))' "$work/$t.json")
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| trace | accesses | trace size | replay wall s, median [min, max] of $rounds | CPU s, median [min, max] | M accesses/s (wall, median) | M accesses/s (CPU) | ptlab trace made it (wall s / M accesses/s) | replay rate / trace's rate |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
# The rate `ptlab trace` produced sort's accesses (M/s, wall), per form: the
# seq traces, which no tracer made, are compared with sort's of the same form.
declare -A prate=()
for form in filtered unfiltered; do
  if [ -n "${produced[sort-$form]:-}" ]; then
    prate[$form]=$(echo "${produced[sort-$form]%% *}" | awk -v a="${accesses[sort-$form]}" '{printf "%.3f", a / $1 / 1e6}')
  fi
done
for t in "${traces[@]}"; do
  case $t in *filtered*) form=filtered ;; *) form=unfiltered ;; esac
  case $t in *unfiltered*) form=unfiltered ;; esac
  python3 - "$t" "${accesses[$t]}" "$(du -h "$work/$t.ptl" | cut -f1)" "${wall[$t]}" "${cpu[$t]}" \
    "${produced[$t]:-}" "${prate[$form]:-}" <<'PY'
import statistics, sys
name, acc, size, wall, cpu, prod, prate = sys.argv[1:8]
acc = int(acc)
w = sorted(map(float, wall.split()))
c = sorted(map(float, cpu.split()))
mw, mc = statistics.median(w), statistics.median(c)
rate = lambda s: acc / s / 1e6 if s > 0 else float("inf")
p = "%.2f s / %.1f" % (float(prod.split()[0]), rate(float(prod.split()[0]))) if prod else "-"
ratio = "%.0fx%s" % (rate(mw) / float(prate), "" if prod else " (sort's)") if prate else "-"
print("| %s | {:,} | %s | %.3f [%.3f, %.3f] | %.3f [%.3f, %.3f] | %.0f | %.0f | %s | %s |".format(acc)
      % (name, size, mw, w[0], w[-1], mc, c[0], c[-1], rate(mw), rate(mc), p, ratio))
PY
done
