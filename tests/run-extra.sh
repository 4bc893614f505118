#!/usr/bin/env bash
# Test stages that are not ctest entries: each tests/*/run-extra.sh, in order.
set -euo pipefail
cd "$(dirname "$0")/.."
for s in tests/*/run-extra.sh; do
  [ -x "$s" ] || continue
  echo "== $s"
  "$s"
done
