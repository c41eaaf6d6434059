#!/usr/bin/env bash
# The whole test suite: unit, property, integration and stress tests of every
# crate, then the loom model checks (which need their own cfg).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
if [ -f crates/mm/tests/loom.rs ]; then
  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p mm --release --test loom
fi
