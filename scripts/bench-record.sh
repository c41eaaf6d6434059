#!/usr/bin/env bash
# Recording overhead and replays of three real programs, for BENCHMARKS.md.
#
#   scripts/bench-record.sh [ROUNDS]
#
# Each program runs natively and under `ptlab record`, alternating, ROUNDS
# times (default 5); the overhead is the ratio of the medians of the two in
# the same sitting. Then each recording is replayed on x86-64-4l,
# x86-64-5l, riscv-sv39-64k and with THP always, and the replay's counters
# printed. Inputs are made in a temporary directory that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cargo build --release -q
ptlab=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Inputs that take a second or more natively here.
scripts/bench-inputs.py "$work" native
python3_bin=$(python3 -c 'import sys; print(sys.executable)')

programs=(
  "sort:sort -o $work/sorted.txt $work/lines.txt"
  "gzip:gzip -c $work/zip.in"
  "python-dict:$python3_bin $work/dict.py"
)

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "| program | native s (median of $rounds) | recorded s | overhead | records | faults recorded / kernel's | trace size |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for p in "${programs[@]}"; do
  name=${p%%:*}; cmd=${p#*:}
  : > "$work/native"; : > "$work/rec"
  for _ in $(seq "$rounds"); do
    t0=$(now); $cmd > /dev/null; t1=$(now)
    echo "$t1 - $t0" | bc >> "$work/native"
    t0=$(now); "$ptlab" record -o "$work/$name.ptl" -- $cmd > /dev/null 2> "$work/$name.summary"; t1=$(now)
    echo "$t1 - $t0" | bc >> "$work/rec"
  done
  n=$(median < "$work/native"); r=$(median < "$work/rec")
  summary=$(head -1 "$work/$name.summary")
  records=$(echo "$summary" | sed -E 's/.*: ([0-9]+) records.*/\1/')
  faults=$(echo "$summary" | sed -E 's/.* ([0-9]+) faults recorded of ([0-9]+) minor.*/\1 \/ \2/')
  size=$(du -h "$work/$name.ptl" | cut -f1)
  printf '| %s | %.3f | %.3f | %+.1f%% | %s | %s | %s |\n' "$name" "$n" "$r" \
    "$(echo "($r / $n - 1) * 100" | bc -l)" "$records" "$faults" "$size"
done

echo
echo "| program | configuration | minor faults | VmPTE at exit | page-table pages (PGD/P4D/PUD/PMD/PTE) at exit | replay s |"
echo "| --- | --- | --- | --- | --- | --- |"
for p in "${programs[@]}"; do
  name=${p%%:*}
  for cfg in "geometry=x86-64-4l" "geometry=x86-64-5l" "geometry=riscv-sv39-64k" "thp=always"; do
    t0=$(now)
    json=$("$ptlab" run "$work/$name.ptl" --config "$cfg" --json)
    t1=$(now)
    echo "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
marks = d["marks"]
end = marks[-1]["counters"]
exitm = [m for m in marks if m["name"] == "exit"][0]["counters"]
pt = exitm.get("pt_pages", {})
pages = "/".join(str(pt.get(k, "-")) for k in ["PGD", "P4D", "PUD", "PMD", "PTE"])
print("| %s | %s | %d | %d kB | %s | %.2f |" % (sys.argv[1], sys.argv[2], end["minor_faults"],
      exitm.get("vmpte_kb", 0), pages, float(sys.argv[3])))
' "$name" "$cfg" "$(echo "$t1 - $t0" | bc)"
  done
done
