#!/usr/bin/env bash
# Installs Debian's QEMU user-mode emulators, which `ptlab trace` runs programs
# under (with the project's own TCG plugin, built on first use). Idempotent:
# does nothing when qemu-x86_64 is already on PATH.
set -euo pipefail
if command -v qemu-x86_64 >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-qemu-user.sh: qemu-x86_64 is missing and installing it needs root (apt-get install qemu-user)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq qemu-user >/dev/null
command -v qemu-x86_64 >/dev/null
