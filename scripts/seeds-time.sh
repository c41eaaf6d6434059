#!/usr/bin/env bash
# The seeds' time questions ((a)-(d) of the study) on the model in virtual
# time: runs the four study sections twice (the second time beside a busy
# loop on every CPU) and checks that every model figure of study.json is
# identical, then prints the findings. Usage: scripts/seeds-time.sh [--quick]
# (builds ptlab in release first). Leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_INCREMENTAL=0
cargo build --release -q -p ptlab
bin=target/release/ptlab
only=five-level,split-pmd,multi-fault,munmap-shootdown
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${busy:-}" ] && kill $busy 2>/dev/null || true' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" study "$@" --only "$only" --out "$tmp/a" >"$tmp/a.txt" 2>/dev/null
busy=""
for _ in $(seq "$(nproc)"); do (while :; do :; done) & busy="$busy $!"; done
"$bin" study "$@" --only "$only" --out "$tmp/b" >"$tmp/b.txt" 2>/dev/null
kill $busy; busy=""
# Model figures only: the kernel's measurements and the host differ run to run.
python3 - "$tmp/a/study.json" "$tmp/b/study.json" <<'PY'
import json, sys
def model_figs(path):
    s = json.load(open(path))
    out = {}
    for sec in s["sections"]:
        for k, v in sec.get("figures", {}).items():
            if "kernel" in k or k.startswith("host"):
                continue
            out[(sec["id"], k)] = v
    return out
a, b = model_figs(sys.argv[1]), model_figs(sys.argv[2])
diff = [k for k in a if a[k] != b.get(k)]
print(f"model figures compared: {len(a)}; differing between the quiet and the busy run: {len(diff)}")
for k in diff:
    print("  differs:", k)
sys.exit(1 if diff else 0)
PY
cat "$tmp/a.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
