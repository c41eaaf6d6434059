#!/usr/bin/env bash
# The Python package's tests (python/tests) in the environment of
# scripts/install-python.sh, against the command line of this tree
# (target/debug/ptlab, built here if missing). pytest's exit status 5
# ("no tests collected") is a failure here: the suite must run.
set -euo pipefail
cd "$(dirname "$0")/.."
env="${PTLAB_PYENV:-target/pyenv}"
if [ ! -x "$env/bin/pytest" ]; then
  echo "no Python environment in $env: run scripts/install-python.sh first" >&2
  exit 1
fi
cargo build --quiet --bin ptlab
export PTLAB_BIN="$PWD/target/debug/ptlab"
# The command line prices predicted time with this host's own cost file,
# calibrated the first time (a minute, and figures that differ by host);
# the tests price with the shipped reference file instead.
export PTLAB_COSTS="${PTLAB_COSTS:-xeon-kvm-2026}"
# Ray writes its session files under /tmp/ray; nothing of it is in the tree.
export RAY_USAGE_STATS_ENABLED=0
set +e
"$env/bin/pytest" -q "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: python/tests must hold the suite" >&2
  exit 1
fi
exit "$rc"
