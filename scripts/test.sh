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
# The command line prices predicted time with this host's own cost file and
# calibrates it the first time (a minute, figures that differ by host): every
# test prices with the shipped reference file instead (each integration test
# also sets this for the ptlab it runs; the first-run test unsets it).
export PTLAB_COSTS=xeon-kvm-2026
# ptlab trace's tests run programs under QEMU user mode (Debian's qemu-user).
./scripts/install-qemu-user.sh
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
# The Python package: a virtualenv in target/pyenv (ignored), the package
# built into it, then its tests against the command line (docs/python.md).
./scripts/install-python.sh
./scripts/test-python.sh
