#!/usr/bin/env bash
# Fuzzing stage of the schemata tests (run after ctest by tests/run-extra.sh):
# builds each libFuzzer target listed in FUZZ_TARGETS with clang-14 in
# build-fuzz/ and runs it for FUZZ_SECONDS (default 60) on a scratch copy of
# its checked-in seed corpus. Any crash, sanitizer report, leak or timeout
# fails the stage; the reproducer is kept and its path printed.
#
# To fuzz another parser, add "<target>:<corpus dir relative to the repo>"
# to FUZZ_TARGETS.
set -euo pipefail
cd "$(dirname "$0")/../.."

FUZZ_TARGETS=(
  "fuzz_schemata:tests/schemata/corpus"
)
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
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

  work="$scratch/$target"
  artifacts="$PWD/$BUILD_DIR/fuzz-artifacts/$target"
  mkdir -p "$work" "$artifacts"
  cp -r "$corpus"/. "$work"/
  echo "== fuzzing $target for ${FUZZ_SECONDS}s ($(ls "$work" | wc -l) seeds)"
  if "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" >"$scratch/$target.log" 2>&1; then
    tail -n 12 "$scratch/$target.log" | grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' || true
    echo "== $target: no crash"
  else
    tail -n 60 "$scratch/$target.log" >&2
    echo "== $target: FAILED; reproducers in $artifacts" >&2
    status=1
  fi
done
exit "$status"
