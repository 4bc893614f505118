#!/usr/bin/env bash
# Extra stages of the reliability tests (run after ctest by tests/run-extra.sh):
#
#   fuzz  builds the libFuzzer targets of tests/reliability/fuzz (fs/ file
#         parsers and state restore, control socket, state journal decoder,
#         boot-state file, platform profiles, LWP records and LWPCB, the
#         ACPI IRDT table) with clang-14 in $FUZZ_BUILD_DIR (build-fuzz, the
#         tree the schemata fuzz stage uses too); for each, first replays
#         every checked-in corpus
#         file once (a regression fails every run), then fuzzes for
#         FUZZ_SECONDS (default 20) on a scratch copy of the corpus (see
#         tests/fuzz-lib.sh). Any crash, sanitizer report, leak or timeout
#         fails the stage and prints the input as hex.
#   asan  builds the whole project with -DRESCTRLFS_SANITIZE=ON (ASan+UBSan)
#         in $ASAN_BUILD_DIR and runs the ctest suite there but the msr
#         label's second passes (<suite>_msr.*), leak
#         checking on (a process that exits normally must free what it
#         allocated; a kill -9 in the crash test is not an exit).
#   tsan  builds the threaded programs with -DRESCTRLFS_TSAN=ON in
#         $TSAN_BUILD_DIR and runs their tests: the daemon (its Asio loop,
#         the FUSE invalidation thread) through the integration and
#         reliability suites, the exporter (which the integration suite
#         starts), the MSR broker's tests.
#
# RELIABILITY_STAGES="fuzz asan tsan" (default: all) chooses stages. The
# mount-based tests skip (exit 77) without root and /dev/fuse. Time on two
# cores: fuzz ~2 min + builds, asan ~1 build + the suite, tsan ~1 build.
set -euo pipefail
cd "$(dirname "$0")/../.."

STAGES="${RELIABILITY_STAGES:-fuzz asan tsan}"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
ASAN_BUILD_DIR="${ASAN_BUILD_DIR:-build-rel-asan}"
TSAN_BUILD_DIR="${TSAN_BUILD_DIR:-build-rel-tsan}"
JOBS="${JOBS:-2}"
FUZZ_TARGETS=(
  "fuzz_fs_files:tests/reliability/fuzz/corpus/fuzz_fs_files"
  "fuzz_control:tests/reliability/fuzz/corpus/fuzz_control"
  "fuzz_journal:tests/reliability/fuzz/corpus/fuzz_journal"
  "fuzz_boot_state:tests/reliability/fuzz/corpus/fuzz_boot_state"
  "fuzz_profile:tests/reliability/fuzz/corpus/fuzz_profile"
  "fuzz_lwp:tests/reliability/fuzz/corpus/fuzz_lwp"
  "fuzz_irdt:tests/reliability/fuzz/corpus/fuzz_irdt"
)
# shellcheck source=tests/fuzz-lib.sh
. tests/fuzz-lib.sh

say() { echo "== reliability: $*"; }
fail() { echo "run-extra (reliability): $*" >&2; exit 1; }
for tool in cmake ninja ctest; do command -v "$tool" >/dev/null || fail "$tool not found (see dev.sh)"; done

stage_fuzz() {
  for tool in clang-14 clang++-14; do command -v "$tool" >/dev/null || fail "$tool not found"; done
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja -DRESCTRLFS_FUZZ=ON >/dev/null
  grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' "$FUZZ_BUILD_DIR/CMakeCache.txt" ||
    fail "$FUZZ_BUILD_DIR was configured without clang; remove it and rerun"
  local scratch status=0
  scratch="$(mktemp -d /tmp/resctrlfs-relfuzz.XXXXXX)"
  trap 'rm -rf "$scratch"' RETURN
  local names=()
  for entry in "${FUZZ_TARGETS[@]}"; do names+=("${entry%%:*}"); done
  say "building ${names[*]}"
  cmake --build "$FUZZ_BUILD_DIR" -j"$JOBS" --target "${names[@]}"
  for entry in "${FUZZ_TARGETS[@]}"; do
    local target="${entry%%:*}" corpus="${entry#*:}" bin
    bin="$(find "$FUZZ_BUILD_DIR" -type f -name "$target" -perm -u+x | head -n 1)"
    [ -n "$bin" ] || fail "$target was not built"
    if ! fuzz_replay "reliability: $target" "$bin" "$corpus" "$scratch/$target.replay.log"; then
      status=1
      continue
    fi
    fuzz_explore "reliability: $target" "$bin" "$corpus" "$scratch/$target" \
      "$PWD/$FUZZ_BUILD_DIR/fuzz-artifacts/$target" "$FUZZ_SECONDS" "$scratch/$target.log" ||
      status=1
  done
  return "$status"
}

stage_asan() {
  cmake -S . -B "$ASAN_BUILD_DIR" -G Ninja -DRESCTRLFS_SANITIZE=ON -DRESCTRLFS_FUZZ=OFF >/dev/null
  say "building everything with ASan+UBSan in $ASAN_BUILD_DIR"
  cmake --build "$ASAN_BUILD_DIR" -j"$JOBS"
  say "ctest under ASan+UBSan"
  rm -f "$ASAN_BUILD_DIR/Testing/Temporary/LastTestsFailed.log"
  # Fewer kills than the plain run: the sanitized daemon starts slower.
  # The msr label's second passes (integration_msr.*, reliability_msr.*, client_msr.*:
  # the suites again over the broker and resctrl-fakehw) are left out here:
  # the broker, its client and the x86 backend run under ASan in hw_tests,
  # integration.test_msr_path and integration.test_msr_self_check (labelled
  # msr too, so they are kept by name rather than dropped with the label),
  # and the second passes would add a quarter of an hour to CI.
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
  RELIABILITY_KILLS="${RELIABILITY_KILLS:-20}" \
    ctest --test-dir "$ASAN_BUILD_DIR" --output-on-failure -j1 --timeout 1200 -E '^[a-z_]+_msr\.'
}

stage_tsan() {
  cmake -S . -B "$TSAN_BUILD_DIR" -G Ninja -DRESCTRLFS_TSAN=ON -DRESCTRLFS_FUZZ=OFF >/dev/null
  say "building the threaded programs with TSan in $TSAN_BUILD_DIR"
  cmake --build "$TSAN_BUILD_DIR" -j"$JOBS" --target resctrlfsd resctrlfsctl resctrlfs-exporter resctrl-msrd resctrl-fakehw floor_fs \
    hw_tests daemon_unit_tests
  say "ctest (daemon, broker, integration, reliability) under TSan"
  rm -f "$TSAN_BUILD_DIR/Testing/Temporary/LastTestsFailed.log"
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}" \
  RELIABILITY_KILLS="${RELIABILITY_KILLS:-10}" \
    ctest --test-dir "$TSAN_BUILD_DIR" --output-on-failure -j1 --timeout 1200 \
      -R '^(hw_tests|daemon\.|integration\.|reliability\.(test_crash|test_conc|test_hw))'
}

# The failed tests of the last ctest run in build dir $1, each with the end
# of its output again: CI shows the end of the log, and the next stage's
# output would otherwise bury a failure.
failed_tests() {
  local list="$1/Testing/Temporary/LastTestsFailed.log" log="$1/Testing/Temporary/LastTest.log"
  [ -f "$list" ] || return 0
  while IFS=: read -r _ name; do
    echo "---- $name: the end of its output ($log)"
    awk -v n="$name" '
      index($0, "Testing: " n) && substr($0, length($0) - length(n) + 1) == n { on = 1; next }
      on && index($0, "\"" n "\" end time") == 1 { on = 0 }
      on { print }' "$log" | tail -n 40
  done <"$list"
}

rc=0
failed=()
for s in $STAGES; do
  case "$s" in
    fuzz | asan | tsan) say "stage $s"; "stage_$s" || { rc=1; failed+=("$s"); } ;;
    *) fail "unknown stage $s" ;;
  esac
done
if [ "$rc" != 0 ]; then
  say "FAILED stages: ${failed[*]}"
  for s in "${failed[@]}"; do
    case "$s" in
      fuzz) echo "---- fuzz: reproducers in $FUZZ_BUILD_DIR/fuzz-artifacts/" ;;
      asan) failed_tests "$ASAN_BUILD_DIR" ;;
      tsan) failed_tests "$TSAN_BUILD_DIR" ;;
    esac
  done
  say "FAILED stages: ${failed[*]}"
fi
exit "$rc"
