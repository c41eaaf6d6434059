#!/usr/bin/env bash
# `ptlab trace` overhead and replay speed on three real programs, and their
# replays under four configurations, for BENCHMARKS.md and docs/trace.md.
#
#   scripts/bench-trace.sh
#
# One sitting, each program in turn: native, QEMU alone (no plugin), then
# `ptlab trace` (the plugin, filtered), alternating program by program; the
# overhead is traced / native of that sitting. Then each trace is replayed
# (`ptlab replay`, timed: accesses per second against the rate the trace
# produced them) and replayed on x86-64-4l, x86-64-5l, riscv-sv39-64k and
# with THP always. Inputs are made in a temporary directory removed at the
# end. Times are wall-clock and noisy on a shared machine; counts are exact.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-qemu-user.sh
cargo build --release -q
ptlab=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import random, sys
d = sys.argv[1]
random.seed(1)
with open(f"{d}/lines.txt", "w") as f:
    for _ in range(200_000):
        f.write("%016x %s\n" % (random.getrandbits(64), "x" * random.randint(0, 40)))
with open(f"{d}/dict.py", "w") as f:
    f.write("d = {i: str(i) for i in range(500_000)}\nprint(len(d))\n")
PY
head -c 10000000 "$work/lines.txt" > "$work/zip.in"
python3_bin=$(python3 -c 'import sys, os; print(os.path.realpath(sys.executable))')

programs=(
  "sort:sort -o $work/sorted.txt $work/lines.txt"
  "gzip:gzip -c $work/zip.in"
  "python-dict:$python3_bin $work/dict.py"
)

now() { date +%s.%N; }
# timed OUT ERR CMD...: wall and CPU (user + system, children included)
# seconds of CMD, its stdout to OUT and its stderr to ERR.
timed() {
  local out=$1 err=$2; shift 2
  /usr/bin/time -o "$work/time" -f "%e %U %S" "$@" > "$out" 2> "$err"
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$work/time"
}
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
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
