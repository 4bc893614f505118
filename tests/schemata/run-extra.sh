#!/usr/bin/env bash
# Fuzzing stage of the schemata tests (run after ctest by tests/run-extra.sh):
# builds each libFuzzer target listed in FUZZ_TARGETS with clang-14 in
# build-fuzz/, replays every checked-in corpus file once (deterministic: a
# regression fails every run), then runs it for FUZZ_SECONDS (default 60) on
# a scratch copy of its corpus (see tests/fuzz-lib.sh). Any crash, sanitizer
# report, leak or timeout fails the stage; the reproducer is kept, its path
# and its bytes (hex) printed.
#
# To fuzz another parser, add "<target>:<corpus dir relative to the repo>"
# to FUZZ_TARGETS.
set -euo pipefail
cd "$(dirname "$0")/../.."

FUZZ_TARGETS=(
  "fuzz_schemata:tests/schemata/corpus"
)
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
# shellcheck source=tests/fuzz-lib.sh
. tests/fuzz-lib.sh
BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"

for tool in clang-14 clang++-14 cmake ninja; do
  command -v "$tool" >/dev/null || { echo "run-extra (schemata): $tool not found (see dev.sh)" >&2; exit 1; }
done

# Configuring is idempotent; CC/CXX only matter for a fresh build directory.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DRESCTRLFS_FUZZ=ON >/dev/null
if ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' "$BUILD_DIR/CMakeCache.txt"; then
  echo "run-extra (schemata): $BUILD_DIR was configured without clang; remove it and rerun" >&2
  exit 1
fi

scratch="$(mktemp -d /tmp/resctrlfs-fuzz.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT

status=0
for entry in "${FUZZ_TARGETS[@]}"; do
  target="${entry%%:*}"
  corpus="${entry#*:}"
  echo "== building $target"
  cmake --build "$BUILD_DIR" -j2 --target "$target"
  bin="$(find "$BUILD_DIR" -type f -name "$target" -perm -u+x | head -n 1)"
  [ -n "$bin" ] || { echo "run-extra (schemata): $target was not built (is clang the compiler?)" >&2; exit 1; }

  if ! fuzz_replay "$target" "$bin" "$corpus" "$scratch/$target.replay.log"; then
    status=1
    continue
  fi
  fuzz_explore "$target" "$bin" "$corpus" "$scratch/$target" \
    "$PWD/$BUILD_DIR/fuzz-artifacts/$target" "$FUZZ_SECONDS" "$scratch/$target.log" || status=1
done
exit "$status"
