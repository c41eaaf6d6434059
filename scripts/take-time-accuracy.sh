#!/bin/sh
# Re-takes this host's cost file and the held-out time-accuracy table
# (BENCHMARKS.md, "Time model accuracy"), on a QUIET host: calibrate refuses
# a busy one (exit 2). Writes target/this-host-costs.toml (to ship it as a
# reference machine, copy it to costs/<machine>.toml and name it in
# crates/timing: the shipped files are compiled in) and prints the table,
# with the load before and after.
#
#   scripts/take-time-accuracy.sh [OUT.md] [CALIBRATE OPTIONS...]
#
# Options after OUT.md go to `ptlab calibrate` (`--allow-busy` to take a
# labelled busy figure anyway; such a cost file is not one to ship).
set -eu
cd "$(dirname "$0")/.."
out="${1:-/dev/stdout}"
[ $# -gt 0 ] && shift
cargo build --release --bin ptlab
echo "load before calibrate: $(cat /proc/loadavg)" >&2
cal=0
target/release/ptlab calibrate --long --out target/this-host-costs.toml "$@" || cal=$?
# Exit 1: the file was written without a figure this host could not give
# (named above; a busy host's shootdown or bandwidth figure): the model
# prices it with the built-in one. Anything else stops here.
[ "$cal" -le 1 ] || exit "$cal"
echo "load before validate: $(cat /proc/loadavg)" >&2
status=0
target/release/ptlab validate --time --repeat 5 --costs target/this-host-costs.toml --markdown >"$out" || status=$?
echo "load after: $(cat /proc/loadavg)" >&2
exit "$status"
