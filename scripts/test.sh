#!/usr/bin/env bash
# The whole test suite: unit, property, integration and stress tests of every
# crate, then the loom model checks (which need their own cfg), then the Python
# package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
if [ -f crates/mm/tests/loom.rs ]; then
  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p mm --release --test loom
fi
# The Python package: a virtualenv in target/pyenv (ignored), the package
# built into it, then its tests against the command line (docs/python.md).
./scripts/install-python.sh
./scripts/test-python.sh
