#!/usr/bin/env bash
# The whole test suite: unit, property, integration and stress tests of every
# crate, then the loom model checks (which need their own cfg).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
# Every loom check of mm (loom.rs, loom_merge.rs): without --cfg loom they
# compile to nothing, so each must be named here to run at all.
loom_tests=()
for f in crates/mm/tests/loom*.rs; do
  [ -f "$f" ] && loom_tests+=(--test "$(basename "$f" .rs)")
done
if [ ${#loom_tests[@]} -gt 0 ]; then
  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p mm --release "${loom_tests[@]}"
fi
