#!/usr/bin/env bash
# Test stages that are not ctest entries: each tests/*/run-extra.sh, in order.
set -euo pipefail
cd "$(dirname "$0")/.."
for s in tests/*/run-extra.sh; do
  if [ ! -x "$s" ]; then echo "$s is not executable: a stage would be skipped silently" >&2; exit 1; fi
  echo "== $s"
  "$s"
done
