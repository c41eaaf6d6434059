#!/usr/bin/env bash
# What bounds `ptlab record` on a fault-heavy program (issue 18): the cost
# of having the kernel sample every page fault, apart from anything ptlab
# does with the samples.
#
#   scripts/bench-record-faults.sh [ROUNDS]
#
# CPython building a dict of 3,000,000 entries (about 150,000 faults),
# ROUNDS times (default 5) each, alternating, CPU time (user + system of
# every waited-for descendant, from getrusage):
#   native                     the program alone
#   perf stat page-faults      the software event counting (no samples)
#   perf record -c 1000        the event sampled every 1,000th fault
#   perf record -c 1           every fault, address only (-d, no callchain)
#   perf record tracepoint     exceptions:page_fault_user, every fault
#   ptlab record               every fault (tracepoints) and the calls
# Printed: medians, overhead over native, and the extra CPU per fault
# (extra CPU / the program's minor faults): a per-sample kernel cost shows
# as a constant there, whatever the consumer does.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cargo build --release -q
ptlab=$PWD/target/release/ptlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo 'd = {i: str(i) for i in range(3_000_000)}' > "$work/dict.py"
py=$(python3 -c 'import sys, os; print(os.path.realpath(sys.executable))')
prog=("$py" "$work/dict.py")

cpu() {
  python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (r.ru_utime + r.ru_stime))
' "$@"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
faults=$(python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt)' "${prog[@]}")

declare -A how=(
  [native]=""
  [stat]="perf stat -e page-faults -o $work/stat.txt --"
  [sample1000]="perf record -q -e page-faults -c 1000 -d -o $work/p.data --"
  [sample1]="perf record -q -e page-faults -c 1 -d -o $work/p.data --"
  [tracepoint]="perf record -q -e exceptions:page_fault_user -c 1 -o $work/p.data --"
  [record]="$ptlab record -o $work/r.ptl --"
)
order=(native stat sample1000 sample1 tracepoint record)
for k in "${order[@]}"; do : > "$work/$k"; done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); the program's minor faults: $faults"
for _ in $(seq "$rounds"); do
  for k in "${order[@]}"; do
    # shellcheck disable=SC2086
    cpu ${how[$k]} "${prog[@]}" >> "$work/$k"
  done
done
n=$(median < "$work/native")
echo
echo "| how | CPU s (median of $rounds) | over native | extra CPU per fault |"
echo "| --- | --- | --- | --- |"
for k in "${order[@]}"; do
  t=$(median < "$work/$k")
  printf '| %s | %.3f | %+.0f%% | %.2f us |\n' "$k" "$t" "$(echo "($t / $n - 1) * 100" | bc -l)" \
    "$(echo "($t - $n) / $faults * 1000000" | bc -l)"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
