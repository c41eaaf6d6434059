#!/bin/sh
# Where the kernel's time goes in file faults (BENCHMARKS.md, "Time model
# accuracy"): runs each workload on the kernel backend
# under `perf record -a` with the kernel's tracepoints (block requests issued
# and completed, folios added to the page cache and their order, file faults,
# sleeps and wake-ups, system calls of ptlab's threads) and prints, per file
# fault that read or slept, its span split into CPU before the sleep, the
# wait for the device, the wait for a CPU after the wake-up and CPU after,
# with the folios and block requests it made (scripts/trace-file-faults.py).
#
#   scripts/trace-file-faults.sh [RUNS] [WORKLOAD...]
#
# Default workloads: a cold 4 MiB file's first page read without advice and
# with MADV_HUGEPAGE (written here, not validation workloads), then the
# held-out file-thp-private-write and vma-merge-file-fault-around. Needs
# root (perf's tracepoints). The load is printed: on a busy host the wait
# for a CPU grows.
set -eu
cd "$(dirname "$0")/.."
runs="${1:-3}"
[ $# -gt 0 ] && shift
cargo build --release --bin ptlab
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for advice in none hugepage; do
  {
    echo "name = \"cold-4mib-$advice\""
    echo "description = \"A cold 4 MiB file's first page read (advice $advice); the read-ahead's reads done during the sleep.\""
    echo '[[thread]]'
    echo 'op = ['
    echo '  { mmap = "f", size = "4MiB", kind = "file", file = "cold" },'
    [ "$advice" = hugepage ] && echo '  { madvise = "f", advice = "hugepage" },'
    echo '  { touch = "f", access = "read", len = "4KiB" },'
    echo '  { mark = "read" },'
    echo '  { sleep = "20ms" },'
    echo '  { munmap = "f" },'
    echo ']'
  } >"$tmp/cold-4mib-$advice.toml"
done
if [ $# -eq 0 ]; then
  set -- "$tmp/cold-4mib-none.toml" "$tmp/cold-4mib-hugepage.toml" file-thp-private-write vma-merge-file-fault-around
fi
events=block:block_rq_issue,block:block_rq_complete,filemap:mm_filemap_add_to_page_cache,filemap:mm_filemap_fault,exceptions:page_fault_user,sched:sched_switch,sched:sched_wakeup
for w in "$@"; do
  i=1
  while [ "$i" -le "$runs" ]; do
    echo "== $(basename "$w" .toml), run $i, load $(cut -d' ' -f1-3 /proc/loadavg)"
    perf record -q -o "$tmp/perf.data" -a -e "$events" \
      -e raw_syscalls:sys_enter --filter 'comm == "ptlab"' \
      -- target/release/ptlab run --backend kernel "$w" >/dev/null 2>"$tmp/err" ||
      { cat "$tmp/err" >&2; exit 1; }
    perf script -i "$tmp/perf.data" 2>/dev/null | python3 scripts/trace-file-faults.py
    i=$((i + 1))
  done
done
