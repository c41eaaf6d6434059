#!/usr/bin/env bash
# `ptlab trace` overhead and replay speed on three real programs, and their
# replays under four configurations, for BENCHMARKS.md and docs/trace.md.
#
#   scripts/bench-trace.sh [ROUNDS]
#
# First table (the overhead, CPU time): each program natively and under
# `ptlab trace` (the plugin, filtered), alternating, ROUNDS times (default
# 3); CPU time is user + system, children included (QEMU and the plugin's
# writer thread count). Printed: the medians, their ratio, and the spread of
# the per-round ratios (min-max). Then one sitting per program of: natively,
# QEMU alone (no plugin), `ptlab trace`, `ptlab replay` (accesses per second
# against the rate the trace produced them); then each trace replayed on
# x86-64-4l, x86-64-5l, riscv-sv39-64k and with THP always. Inputs are made
# in a temporary directory removed at the end. Wall times are noisy on a
# shared machine; counts are exact.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
./scripts/install-qemu-user.sh
cargo build --release -q
ptlab=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

scripts/bench-inputs.py "$work" traced
python3_bin=$(python3 -c 'import sys, os; print(os.path.realpath(sys.executable))')

programs=(
  "sort:sort -o $work/sorted.txt $work/lines.txt"
  "gzip:gzip -c $work/zip.in"
  "python-dict:$python3_bin $work/dict.py"
)

now() { date +%s.%N; }
# timed OUT ERR CMD...: wall and CPU (user + system, every waited-for
# descendant included, to the microsecond from getrusage) seconds of CMD,
# its stdout to OUT and its stderr to ERR.
timed() {
  local out=$1 err=$2; shift 2
  python3 -c '
import resource, subprocess, sys, time
t = time.time()
with open(sys.argv[1], "wb") as o, open(sys.argv[2], "wb") as e:
    subprocess.run(sys.argv[3:], stdout=o, stderr=e, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f %.3f" % (time.time() - t, r.ru_utime + r.ru_stime))
' "$out" "$err" "$@"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| program | native CPU s (median of $rounds) | traced CPU s | overhead (ratio of medians) | spread of the rounds' ratios |"
echo "| --- | --- | --- | --- | --- |"
for p in "${programs[@]}"; do
  name=${p%%:*}; cmd=${p#*:}
  : > "$work/nat"; : > "$work/tr"; : > "$work/ratio"
  for _ in $(seq "$rounds"); do
    read -r _ nc < <(timed /dev/null /dev/null $cmd)
    read -r _ tc < <(timed /dev/null /dev/null "$ptlab" trace -o "$work/$name.ptl" -- $cmd)
    echo "$nc" >> "$work/nat"; echo "$tc" >> "$work/tr"
    echo "$tc / $nc" | bc -l >> "$work/ratio"
  done
  rm -f "$work/$name.ptl"
  n=$(median < "$work/nat"); t=$(median < "$work/tr")
  lo=$(sort -g "$work/ratio" | head -1); hi=$(sort -g "$work/ratio" | tail -1)
  printf '| %s | %.3f | %.2f | %.0fx | %.0f-%.0fx |\n' "$name" "$n" "$t" "$(echo "$t / $n" | bc -l)" "$lo" "$hi"
done
echo "load average after the overhead table: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| program | native s wall / CPU | QEMU alone wall / CPU | ptlab trace wall / CPU | overhead wall | overhead CPU | QEMU alone / native CPU | accesses | written | trace size | trace produces M acc/s (wall) | replay s | replay M acc/s | replay / production |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for p in "${programs[@]}"; do
  name=${p%%:*}; cmd=${p#*:}
  read -r n nc < <(timed /dev/null /dev/null $cmd)
  # QEMU does not search PATH.
  read -r q qc < <(timed /dev/null /dev/null qemu-x86_64 "$(command -v "${cmd%% *}")" ${cmd#* })
  read -r t tc < <(timed /dev/null "$work/$name.summary" "$ptlab" trace -o "$work/$name.ptl" -- $cmd)
  read -r r rc < <(timed "$work/$name.json" /dev/null "$ptlab" replay "$work/$name.ptl" --json)
  acc=$(sed -nE 's/.*: ([0-9]+) accesses \(([0-9]+) written.*/\1/p' "$work/$name.summary")
  wr=$(sed -nE 's/.*: ([0-9]+) accesses \(([0-9]+) written.*/\2/p' "$work/$name.summary")
  size=$(du -h "$work/$name.ptl" | cut -f1)
  printf '| %s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.0fx | %.0fx | %.1fx | %s | %s | %s | %.1f | %.2f | %.1f | %.1fx |\n' \
    "$name" "$n" "$nc" "$q" "$qc" "$t" "$tc" "$(echo "$t / $n" | bc -l)" "$(echo "$tc / $nc" | bc -l)" "$(echo "$qc / $nc" | bc -l)" \
    "$acc" "$wr" "$size" "$(echo "$acc / $t / 1000000" | bc -l)" "$r" "$(echo "$acc / $r / 1000000" | bc -l)" "$(echo "$t / $r" | bc -l)"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

echo
echo "| program | configuration | minor faults | TLB misses | walk refs | VmPTE kB at end | page-table pages (PGD/P4D/PUD/PMD/PTE) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for p in "${programs[@]}"; do
  name=${p%%:*}
  for cfg in "geometry=x86-64-4l" "geometry=x86-64-5l" "geometry=riscv-sv39-64k" "thp=always"; do
    "$ptlab" replay "$work/$name.ptl" --config "$cfg" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = d["marks"][-1]["counters"]
pt = c.get("pt_pages", {})
pages = "/".join(str(pt.get(k, "-")) for k in ["PGD", "P4D", "PUD", "PMD", "PTE"])
print("| %s | %s | %d | %d | %d | %d | %s |" % (sys.argv[1], sys.argv[2], c["minor_faults"],
      c.get("tlb_misses", 0), c.get("walk_refs", 0), c.get("vmpte_kb", 0), pages))
' "$name" "$cfg"
  done
done
