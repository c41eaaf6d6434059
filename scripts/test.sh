#!/usr/bin/env bash
# The whole test suite: unit, property, integration and stress tests of every
# crate, then the loom model checks (which need their own cfg), then the Python
# package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# ptlab record reads fault kinds from the exceptions tracepoints, which live in
# tracefs; a minimal machine may not have it mounted. As root, mount it (as
# systemd does at boot); otherwise the record tests see what a user without
# tracepoint access sees.
if [ "$(id -u)" = 0 ] && [ ! -d /sys/kernel/tracing/events ] && [ -d /sys/kernel/tracing ]; then
  mount -t tracefs nodev /sys/kernel/tracing || echo "test.sh: could not mount tracefs" >&2
fi
cargo test --workspace
if [ -f crates/mm/tests/loom.rs ]; then
  RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p mm --release --test loom
fi
# The Python package: a virtualenv in target/pyenv (ignored), the package
# built into it, then its tests against the command line (docs/python.md).
./scripts/install-python.sh
./scripts/test-python.sh
