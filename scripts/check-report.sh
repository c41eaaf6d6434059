#!/usr/bin/env bash
# A separate check (not part of the test command): renders the quick study's
# report in headless Chromium and saves a screenshot, so a person can look at
# every chart. Installs Debian's chromium if it is missing (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/report-check}
mkdir -p "$out"
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
cargo run --release -q -- study --quick --out "$out/study" >/dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1200,9000 \
  --screenshot="$out/study.png" "file://$(realpath "$out/study/index.html")" 2>/dev/null
svgs=$(grep -o "<svg" "$out/study/index.html" | wc -l)
echo "report: $out/study/index.html ($svgs charts), screenshot: $out/study.png"
