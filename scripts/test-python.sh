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
# pytest's tmp_path folders and Ray's session files go to one temporary
# directory, removed at the end (pytest would keep its last three runs in
# /tmp/pytest-of-$USER, Ray its sessions in /tmp/ray).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export RAY_TMPDIR="$scratch/ray"
export RAY_USAGE_STATS_ENABLED=0
set +e
"$env/bin/pytest" -q -p no:cacheprovider --basetemp="$scratch/pytest" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: python/tests must hold the suite" >&2
  exit 1
fi
exit "$rc"
