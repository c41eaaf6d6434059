#!/usr/bin/env bash
# One write per 2 MiB over a fresh 1 TiB noreserve mapping (524,288 faults,
# each a new PTE table: 2 GiB of VmPTE), on the kernel and on the model in
# one `ptlab compare`: the kernel's time to the mark
# (elapsed_ns - mark_read_ns), the model's (model_wall_ns, ptlab's own
# time), their ratio, and the model process's peak RSS (a model-only run
# under /usr/bin/time) against the kernel's VmPTE. ROUNDS (default 3)
# alternating rounds after one warm-up each.
#
# Usage: scripts/bench-sparse-kernel.sh [PTLAB]   (default target/release/ptlab)
set -euo pipefail
cd "$(dirname "$0")/.."
ptlab="${1:-target/release/ptlab}"
rounds="${ROUNDS:-3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/w.toml" <<'EOF'
name = "sparse-2m-1t"
[[thread]]
op = [
  { mmap = "m", size = "1TiB", noreserve = true },
  { touch = "m", access = "write", stride = "2MiB" },
  { mark = "touched" },
  { munmap = "m" },
]
EOF
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$ptlab" compare "$tmp/w.toml" --config backend=kernel --config backend=model,reclaim=on \
  --repeat "$rounds" --warmup 1 --timeout 600 --json 2>/dev/null > "$tmp/c.json"
/usr/bin/time -o "$tmp/time" -f "%M" "$ptlab" run "$tmp/w.toml" --reclaim on > /dev/null 2>&1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/c.json" "$(cat "$tmp/time")" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rss_kb = int(sys.argv[2])
by = {}
for c in d["configs"]:
    m = next(m for m in c["marks"] if m["name"] == "touched")
    s = m.get("samples") or {k: [v] for k, v in m["counters"].items()}
    by[c["backend"]] = s
k, m = by["kernel"], by["model"]
kt = [e - r for e, r in zip(k["elapsed_ns"], k["mark_read_ns"])]
mt = m["model_wall_ns"]
print(f"faults: kernel {k['minor_faults'][0]:,}, model {m['minor_faults'][0]:,}")
print("kernel to the mark (s):", ", ".join(f"{x / 1e9:.2f}" for x in kt),
      f"(kernel CPU: {', '.join(f'{x / 1e9:.2f}' for x in k['cpu_ns'])})")
print("model to the mark (s): ", ", ".join(f"{x / 1e9:.3f}" for x in mt))
print(f"kernel / model, medians: {sorted(kt)[len(kt) // 2] / sorted(mt)[len(mt) // 2]:.1f}x")
vmpte = k["vmpte_kb"][0]
print(f"kernel VmPTE {vmpte / 1024:,.0f} MiB; model peak RSS {rss_kb / 1024:,.0f} MiB "
      f"({100 * rss_kb / vmpte:.1f}% of it)")
EOF
