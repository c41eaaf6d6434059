#!/usr/bin/env bash
# Linux's TLB flushes over one big MADV_DONTNEED (against mm::gather), counted
# by the tlb:tlb_flush tracepoint ("local MM shootdown" events of the
# process between two trace markers, in a tracefs instance of its own), next
# to what the model's gather gives (mm::gather's bounds: a flush per 9,678
# page entries, per 509 freed tables, and one at the end). Needs root and
# tracefs; THP off for the range (MADV_NOHUGEPAGE).
#
# Each case: MiB mapped (2 MiB-aligned), one write per STRIDE KiB, DONTNEED
# of all of it (PT reclaim frees each emptied table on a 6.14+ kernel).
#
# The model's column is `ptlab run` of the same workload with reclaim on
# (its `shootdowns` counter between the marks); the last column is Linux's
# batches counted by hand (the arithmetic of mm::gather's module doc).
#
# Usage: scripts/kernel-gather-flushes.sh ["MiB:strideKiB ..." [PTLAB]]
#   MiB even (whole 2 MiB tables); PTLAB default target/release/ptlab
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-36:4 38:4 64:4 1024:4 2048:2048 4096:2048}"
ptlab="${2:-target/release/ptlab}"
T=/sys/kernel/tracing
I=$T/instances/ptlab-gather-$$
tmp=$(mktemp -d)
cleanup() { echo 0 > "$I/events/tlb/tlb_flush/enable" 2>/dev/null || true; rmdir "$I" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir "$I"
cat > "$tmp/k.c" <<C
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
static void mark(const char *s) {
  int fd = open("$I/trace_marker", O_WRONLY);
  if (fd >= 0) { write(fd, s, strlen(s)); close(fd); }
}
int main(int argc, char **argv) {
  size_t len = (size_t)atol(argv[1]) << 20, stride = (size_t)atol(argv[2]) << 10;
  char *p = mmap(0, len + (2 << 20), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 1;
  p = (char *)(((unsigned long)p + (2 << 20) - 1) & ~((2UL << 20) - 1));
  madvise(p, len, MADV_NOHUGEPAGE);
  for (size_t o = 0; o < len; o += stride) p[o] = 1;
  mark("BEGIN\n");
  madvise(p, len, MADV_DONTNEED);
  mark("END\n");
  return 0;
}
C
cc -O2 -o "$tmp/k" "$tmp/k.c"
echo 1 > "$I/events/tlb/tlb_flush/enable"
echo "| MiB | write every | pages | tables | kernel flushes (tlb:tlb_flush, local MM) | model (ptlab run, shootdowns) | Linux's batches by hand |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for c in $cases; do
  mib=${c%%:*} st=${c##*:}
  echo > "$I/trace"
  "$tmp/k" "$mib" "$st" & pid=$!
  wait "$pid"
  cat > "$tmp/w.toml" <<W
name = "gather-flushes"
[[thread]]
op = [
  { mmap = "m", size = "${mib}MiB" },
  { touch = "m", access = "write", stride = "${st}KiB" },
  { mark = "touched" },
  { madvise = "m", advice = "dontneed" },
  { mark = "dontneed" },
  { munmap = "m" },
]
W
  "$ptlab" run "$tmp/w.toml" --reclaim on --thp never --json > "$tmp/out.json"
  python3 - "$I/trace" "$pid" "$mib" "$st" "$tmp/out.json" <<'PY'
import json, re, sys
trace, pid, mib, st = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
marks = {m["name"]: m["samples"] for m in json.load(open(sys.argv[5]))["marks"]}
model = marks["dontneed"]["shootdowns"][0] - marks["touched"]["shootdowns"][0]
on, n = False, 0
for l in open(trace):
    if "tracing_mark_write: BEGIN" in l: on = True; continue
    if "tracing_mark_write: END" in l: on = False; continue
    if on and "local MM shootdown" in l and re.search(r"-%s\s" % pid, l): n += 1
tables = mib // 2
per = max(1, 2048 // st)  # pages written per 2 MiB table
# The model's count (mm::gather): page batch 9,678 entries (tlb_flush_mmu),
# table batch 509 (tlb_table_flush), and the final flush if anything is left.
pages = tabs = flushes = 0; rng = False
for _ in range(tables):
    for _ in range(per):
        pages += 1; rng = True
        if pages == 9678: flushes += 1; pages = tabs = 0; rng = False
    tabs += 1; rng = True
    if tabs == 509: flushes += 1; tabs = 0; rng = False
flushes += rng
print(f"| {mib} | {st} KiB | {tables * per:,} | {tables:,} | {n} | {model} | {flushes} |")
PY
done
