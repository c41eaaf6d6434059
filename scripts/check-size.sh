#!/usr/bin/env bash
# How large the commits since BASE (default: the first parent line's
# origin, or HEAD~N given as $1) are when packed as git sends them, and the
# largest blobs among them. A submission may be at most 512 MiB packed and
# 256 MiB of diffs; run this before pushing a long series of commits.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: scripts/check-size.sh BASE-COMMIT}"
bytes=$(git rev-list --objects "$base"..HEAD | git pack-objects --stdout -q | wc -c)
diff_bytes=$(git log -p --format= "$base"..HEAD | wc -c)
echo "packed: $((bytes / 1024)) KiB; diffs: $((diff_bytes / 1024)) KiB"
echo "largest blobs added:"
git rev-list --objects "$base"..HEAD |
  git cat-file --batch-check='%(objecttype) %(objectsize) %(rest)' |
  awk '$1 == "blob"' | sort -k2 -n -r | head -10
