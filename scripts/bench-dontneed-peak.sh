#!/usr/bin/env bash
# Peak host memory of the model over MADV_DONTNEED of a huge sparse range:
# the reclaim slides' allocator pattern (5.5 pages written per
# 2 MiB, the `study --production` case) at a reduced size, then DONTNEED over
# all of it and munmap, once per reclaim mode. Prints, per mode, the peak RSS
# of the whole run and of a run that stops at the "touched" mark (the
# difference is what the DONTNEED and munmap steps add), and the model's
# shootdown count over the DONTNEED.
#
# Usage: scripts/bench-dontneed-peak.sh [SIZE] [PTLAB]
#   SIZE  default 2TiB (the production case is 50TiB)
#   PTLAB default target/release/ptlab
set -euo pipefail
cd "$(dirname "$0")/.."
size="${1:-2TiB}"
ptlab="${2:-target/release/ptlab}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

workload() { # size dontneed(yes/no)
  echo "name = \"dontneed-peak-$1\""
  echo "[[thread]]"
  echo "op = ["
  echo "  { mmap = \"heap\", size = \"$1\", noreserve = true },"
  # Pages 0, 97, 211, 307, 401 of every 2 MiB and 463 of every other.
  for kib in 0 388 844 1228 1604; do
    echo "  { touch = \"heap\", access = \"write\", stride = \"2MiB\", offset = \"${kib}KiB\" },"
  done
  echo "  { touch = \"heap\", access = \"write\", stride = \"4MiB\", offset = \"1852KiB\" },"
  echo "  { mark = \"touched\" },"
  if [ "$2" = yes ]; then
    echo "  { madvise = \"heap\", advice = \"dontneed\" },"
    echo "  { mark = \"dontneed\" },"
    echo "  { munmap = \"heap\" },"
  fi
  echo "]"
}

workload "$size" no > "$tmp/touch.toml"
workload "$size" yes > "$tmp/full.toml"
echo "| size | reclaim | peak RSS to touched (MB) | peak RSS whole run (MB) | added by DONTNEED+munmap (MB) | shootdowns over DONTNEED | CPU s | load |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
for mode in off on eager; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -o "$tmp/t1" -f "%M" "$ptlab" run "$tmp/touch.toml" --reclaim "$mode" --timeout 1800 --json > /dev/null
  /usr/bin/time -o "$tmp/t2" -f "%M %U %S" "$ptlab" run "$tmp/full.toml" --reclaim "$mode" --timeout 1800 --json > "$tmp/out.json"
  read -r rss1 < <(tail -1 "$tmp/t1")
  read -r rss2 user sys < <(tail -1 "$tmp/t2")
  shoot=$(python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = {m["name"]: m["samples"] for m in d["marks"]}
def g(mark):
    s = m[mark].get("shootdowns")
    return s[0] if s else None
a, b = g("touched"), g("dontneed")
print("n/a" if a is None or b is None else f"{b - a:,}")
PY
)
  echo "| $size | $mode | $((rss1 / 1024)) | $((rss2 / 1024)) | $(((rss2 - rss1) / 1024)) | $shoot | $(python3 -c "print(f'{$user + $sys:.1f}')") | $load |"
done
