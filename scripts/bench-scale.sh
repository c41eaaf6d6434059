#!/usr/bin/env bash
# Growth of the model with the address space: time and peak host
# memory of `ptlab run` for 1 GiB, 64 GiB, 1 TiB, 16 TiB and the reclaim
# slides' 50 TiB (55 TB), under three patterns:
#   dense   one write per 4 KiB (every PTE table full);
#   2m      one write per 2 MiB (one entry per PTE table);
#   slides  the slides' allocator pattern, 5.5 pages per 2 MiB (the
#           built-in study case: VmPTE 107 GB at 50 TiB), then DONTNEED.
# Each run: mmap (noreserve), the writes, a mark, [DONTNEED,] munmap, on the
# model with reclaim=on. Prints a Markdown table on stdout.
#
# Dense stops at 64 GiB unless SCALE_DENSE_MAX=1TiB (1 TiB dense is 268 M
# faults and 2 GiB of PTE tables; 16 TiB dense would need 32 GiB of PTE
# tables, more than this machine has, on any page-table implementation).
# SCALE_SIZES overrides the sizes (e.g. "1GiB 64GiB" for a quick check).
# A run whose RSS passes SCALE_LIMIT_KB (default 17 GiB) is killed by pid.
#
# Usage: scripts/bench-scale.sh [PTLAB]   (default target/release/ptlab)
set -euo pipefail
cd "$(dirname "$0")/.."
ptlab="${1:-target/release/ptlab}"
sizes="${SCALE_SIZES:-1GiB 64GiB 1TiB 16TiB 50TiB}"
dense_max="${SCALE_DENSE_MAX:-64GiB}"
limit="${SCALE_LIMIT_KB:-17825792}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bytes() {
  local n=${1%[KMGT]iB} u=${1: -3}
  case $u in KiB) echo $((n << 10)) ;; MiB) echo $((n << 20)) ;; GiB) echo $((n << 30)) ;; TiB) echo $((n << 40)) ;; esac
}

workload() { # pattern size
  local p=$1 s=$2
  echo "name = \"scale-$p-$s\""
  echo "[[thread]]"
  echo "op = ["
  echo "  { mmap = \"m\", size = \"$s\", noreserve = true },"
  case $p in
    dense) echo "  { touch = \"m\", access = \"write\", stride = \"4KiB\" }," ;;
    2m) echo "  { touch = \"m\", access = \"write\", stride = \"2MiB\" }," ;;
    slides)
      for kib in 0 388 844 1228 1604; do
        echo "  { touch = \"m\", access = \"write\", stride = \"2MiB\", offset = \"${kib}KiB\" },"
      done
      echo "  { touch = \"m\", access = \"write\", stride = \"4MiB\", offset = \"1852KiB\" }," ;;
  esac
  echo "  { mark = \"touched\" },"
  [ "$p" = slides ] && echo "  { madvise = \"m\", advice = \"dontneed\" }, { mark = \"dontneed\" },"
  echo "  { munmap = \"m\" },"
  echo "]"
}

# Runs CMD, killing it (by its pid) should its RSS pass $limit kB.
guarded() {
  "$@" &
  local pid=$! rss
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    if [ "${rss:-0}" -gt "$limit" ]; then
      echo "bench-scale: RSS $rss kB over $limit kB, stopped" >&2
      kill -9 "$pid"
    fi
    sleep 0.2
  done
  wait "$pid"
}

echo "| pattern | size | faults | VmPTE touched | model to the mark (s) | ns per fault | process wall (s) | CPU (s) | peak RSS (MB) | load |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for p in dense 2m slides; do
  for s in $sizes; do
    if [ "$p" = dense ] && [ "$(bytes "$s")" -gt "$(bytes "$dense_max")" ]; then
      echo "| $p | $s | | | | | | | | not run: over SCALE_DENSE_MAX |"
      continue
    fi
    workload "$p" "$s" > "$tmp/w.toml"
    load=$(cut -d' ' -f1 /proc/loadavg)
    if ! guarded /usr/bin/time -o "$tmp/time" -f "%e %U %S %M" \
      "$ptlab" run "$tmp/w.toml" --reclaim on --timeout 1800 --json > "$tmp/out.json" 2> "$tmp/err"; then
      echo "| $p | $s | | | | | | | | failed: $(tail -1 "$tmp/err") |"
      continue
    fi
    read -r wall user sys rss < <(tail -1 "$tmp/time")
    python3 - "$tmp/out.json" "$p" "$s" "$wall" "$user" "$sys" "$rss" "$load" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p, s, wall, user, sys_, rss, load = sys.argv[2:]
m = next(m for m in d["marks"] if m["name"] == "touched")["samples"]
faults, vmpte, model_ns = m["minor_faults"][0], m["vmpte_kb"][0], m["model_wall_ns"][0]
print(f"| {p} | {s} | {faults:,} | {vmpte / 1e6:,.3f} GB | {model_ns / 1e9:.2f} | "
      f"{model_ns / max(faults, 1):,.0f} | {float(wall):.2f} | {float(user) + float(sys_):.2f} | "
      f"{int(rss) / 1024:,.0f} | {load} |")
EOF
  done
done
