#!/usr/bin/env bash
# Growth of the model's memory and time with the address space, by write
# order: peak host memory (RSS), the model's own time to the mark, and
# bytes of peak memory per written page, for sizes from 1 GiB to the reclaim
# slides' 50 TiB (55 TB), under three patterns:
#   dense    one write per 4 KiB (every PTE table full);
#   strided  the study's production pattern (`study --production`): 5.5
#            pages per 2 MiB at the same six offsets, in address order;
#   random   an allocator's placement: 5.76 writes per 2 MiB of the mapping
#            at uniformly random pages (151 M at 50 TiB, the slides' RES).
# Each run: mmap (noreserve), the writes, a mark "touched", MADV_DONTNEED
# over all of it, munmap, on the model with reclaim=on. Beside it, where the
# host can hold the pages (GROWTH_KERNEL_MAX, default 1 GiB of them), the
# kernel's VmPTE at the same mark (`--backend kernel`).
#
# Every model run is watched: past GROWTH_LIMIT_KB of RSS (default 10 GiB,
# the most a shared host should give one run) it is killed by its pid and
# its row says so. Dense stops at GROWTH_DENSE_MAX (default 1 TiB: dense 8
# TiB holds 16 GiB of full PTE tables on any page-table implementation).
# GROWTH_SIZES overrides the sizes, GROWTH_PATTERNS the patterns.
#
# Usage: scripts/bench-growth.sh [PTLAB]   (default target/release/ptlab)
# Prints a Markdown table on stdout (the BENCHMARKS.md "Growth by write
# order" table).
set -euo pipefail
cd "$(dirname "$0")/.."
ptlab="${1:-target/release/ptlab}"
sizes="${GROWTH_SIZES:-1GiB 64GiB 1TiB 8TiB 50TiB}"
patterns="${GROWTH_PATTERNS:-dense strided random}"
dense_max="${GROWTH_DENSE_MAX:-1TiB}"
limit="${GROWTH_LIMIT_KB:-10485760}"
kernel_max="${GROWTH_KERNEL_MAX:-1GiB}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bytes() {
  local n=${1%[KMGT]iB} u=${1: -3}
  case $u in KiB) echo $((n << 10)) ;; MiB) echo $((n << 20)) ;; GiB) echo $((n << 30)) ;; TiB) echo $((n << 40)) ;; esac
}

# Bytes of pages a pattern writes over SIZE (what the kernel must hold).
written() { # pattern size
  local b
  b=$(bytes "$2")
  case $1 in
    dense) echo "$b" ;;
    strided) echo $((b / 2097152 * 11 / 2 * 4096)) ;;
    random) echo $((b / 2097152 * 576 / 100 * 4096)) ;;
  esac
}

workload() { # pattern size
  local p=$1 s=$2
  echo "name = \"growth-$p-$s\""
  echo "[[thread]]"
  echo "op = ["
  echo "  { mmap = \"m\", size = \"$s\", noreserve = true },"
  case $p in
    dense) echo "  { touch = \"m\", access = \"write\", stride = \"4KiB\" }," ;;
    strided)
      # The study's pages 0, 97, 211, 307, 401 of every 2 MiB, 463 of every 4 MiB.
      for page in 0 97 211 307 401; do
        echo "  { touch = \"m\", access = \"write\", stride = \"2MiB\", offset = \"$((page * 4))KiB\" },"
      done
      echo "  { touch = \"m\", access = \"write\", stride = \"4MiB\", offset = \"$((463 * 4))KiB\" }," ;;
    random)
      echo "  { touch = \"m\", access = \"write\", pattern = \"random\", count = $(($(bytes "$s") / 2097152 * 576 / 100)) }," ;;
  esac
  echo "  { mark = \"touched\" },"
  echo "  { madvise = \"m\", advice = \"dontneed\" },"
  echo "  { mark = \"dontneed\" },"
  echo "  { munmap = \"m\" },"
  echo "]"
}

# Runs CMD, killing it (by its pid) should its RSS pass $limit kB.
guarded() {
  "$@" &
  local pid=$! rss c
  while kill -0 "$pid" 2>/dev/null; do
    for c in $(pgrep -P "$pid" || true) "$pid"; do
      rss=$(awk '/VmRSS/{print $2}' "/proc/$c/status" 2>/dev/null || echo 0)
      if [ "${rss:-0}" -gt "$limit" ]; then
        echo "bench-growth: RSS $rss kB over $limit kB, stopped" >&2
        kill -9 "$c"
      fi
    done
    sleep 0.2
  done
  wait "$pid"
}

# The kernel's VmPTE at "touched", in GB, or "" when not run.
kernel_vmpte() { # pattern size
  [ "$(written "$1" "$2")" -le "$(bytes "$kernel_max")" ] || return 0
  "$ptlab" run "$tmp/w.toml" --backend kernel --timeout 1800 --json > "$tmp/k.json" 2> /dev/null || return 0
  python3 -c '
import json, sys
m = next(m for m in json.load(open(sys.argv[1]))["marks"] if m["name"] == "touched")["samples"]
kb = m["vmpte_kb"][0]
print(f"{kb * 1024 / 1e9:,.3f} GB")' "$tmp/k.json" || true
}

echo "| pattern | size | pages written | VmPTE touched, model | VmPTE touched, kernel | model to the mark (s) | process wall (s) | peak RSS (MB) | bytes per written page | load |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for p in $patterns; do
  for s in $sizes; do
    if [ "$p" = dense ] && [ "$(bytes "$s")" -gt "$(bytes "$dense_max")" ]; then
      echo "| $p | $s | | | | | | | | not run: over GROWTH_DENSE_MAX |"
      continue
    fi
    workload "$p" "$s" > "$tmp/w.toml"
    load=$(cut -d' ' -f1 /proc/loadavg)
    if ! guarded /usr/bin/time -o "$tmp/time" -f "%e %M" \
      "$ptlab" run "$tmp/w.toml" --reclaim on --timeout 3600 --json > "$tmp/out.json" 2> "$tmp/err"; then
      echo "| $p | $s | | | | | | | | failed: $(tail -1 "$tmp/err") |"
      continue
    fi
    read -r wall rss < <(tail -1 "$tmp/time")
    kvmpte=$(kernel_vmpte "$p" "$s")
    python3 - "$tmp/out.json" "$p" "$s" "$wall" "$rss" "$load" "$kvmpte" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p, s, wall, rss, load, kvmpte = sys.argv[2:]
m = next(m for m in d["marks"] if m["name"] == "touched")["samples"]
faults, vmpte, model_ns = m["minor_faults"][0], m["vmpte_kb"][0], m["model_wall_ns"][0]
print(f"| {p} | {s} | {faults:,} | {vmpte * 1024 / 1e9:,.3f} GB | {kvmpte} | {model_ns / 1e9:,.2f} | "
      f"{float(wall):,.1f} | {int(rss) / 1024:,.0f} | {int(rss) * 1024 / max(faults, 1):,.0f} | {load} |")
EOF
  done
done
