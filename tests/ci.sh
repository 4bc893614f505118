#!/usr/bin/env bash
# Every test stage, timed: what `./dev.sh test` and CI (.ci/run) run.
#
# Each stage prints a banner with the time since the start when it starts
# and when it ends; a table of every stage (seconds, result) closes the run,
# and the run fails if any stage failed. A stage that fails does not stop
# the others (the table shows them all), except that a stage whose build
# failed is not run.
#
# Trees (all from the same sources):
#   build/       gcc, RelWithDebInfo: the shipped programs (jemalloc)
#   build-asan/  gcc, ASan+UBSan (-DRESCTRLFS_SANITIZE=ON), no benchmarks
#   build-tsan/  gcc, TSan (-DRESCTRLFS_TSAN=ON): the threaded programs only
#   build-fuzz/  clang-14, the libFuzzer targets only
#
# Stages, in the order they start ("||" = at the same time as the stages
# beside it; the background builds run under `nice -n 19` and the fuzzers
# under `nice -n 10`, so the tests of the foreground stage get the CPU
# whenever they want it):
#   deps         ./dev.sh deps (the Debian packages of dev.sh's lists)
#   build        build/, every target
#   format       clang-format-14 --dry-run --Werror on every tracked C++ file
#   ctest        ctest -j2 in build/: see "What runs where" below
#     || build-asan, build-tsan, build-fuzz (one after the other), then fuzz
#   asan         ctest -j2 in build-asan/ (leak checking on), once build-asan
#                is done
#   tsan         ctest -j2 in build-tsan/ for the threaded programs
#   install      (not by default: CI_STAGES="... install") in the
#                background from the end of the build stage, nice 19, the
#                install tests, ctest label install: the Debian packages and
#                the release archive built and installed in fresh Debian
#                11/12/13 chroots (tests/README.md). Left out of the default
#                run for time: its two builds of the programs (dpkg-buildpackage
#                took 546 s and the portable build as long, in the background
#                of a fresh-clone run) compete with the sanitizer builds on
#                two CPUs and put the run past its 40-minute budget.
#   trixie       after ctest, while the sanitizer trees build (the asan
#                stage would wait for its tree): ctest label trixie in
#                build/, Debian 13's packaged clients (crun, podman,
#                containerd, runc, pqos) from a Debian 13 root built with
#                mmdebstrap and cached in /var/cache/resctrlfs-tests: 26 s
#                with the cache, 143 s without (mmdebstrap 70-120 s, mostly
#                waiting on the network, so little CPU taken from the
#                background builds; tests/README.md). Skipped, saying why,
#                when the Debian archive cannot be reached.
#   fuzz         (in the background, once build-fuzz is done) every fuzz
#                target: replays its checked-in corpus (a regression fails
#                every run), then explores for FUZZ_SECONDS (60 s for
#                fuzz_schemata, 20 s for the others)
#
# What runs where. Every test runs at least once; the mounted suites (the
# slow part) run once per backend, not once per tree:
#   - unit tests (Catch2: base, schemata, hw, fs, daemon, exporter,
#     sandbox, reliability.journal/restore) and build.*, packaging.*, hw.*:
#     in build/ and under ASan (seconds; a sanitizer report there is a
#     finding of its own);
#   - the simulated backend's mounted suites (integration.*, reliability.*
#     through the daemon, client_*): under ASan+UBSan only. The plain tree
#     ran them too, before this script: the same tests over the same code,
#     a pass that could only find what the sanitized pass also finds, for
#     7 minutes of CI;
#   - the real-hardware path's mounted suites (ctest label msr:
#     integration_msr.*, reliability_msr.*, client_msr.*, and
#     integration.test_msr_path/test_msr_self_check): in build/, the shipped
#     programs with jemalloc, so the release build is still what the
#     integration, reliability and client suites drive, end to end. Under
#     ASan only test_msr_path and test_msr_self_check of these run (the
#     broker, its client and the x86 backend are also under ASan in
#     hw_tests); the msr second passes would add a quarter of an hour;
#   - the shipped unit under a real systemd (label systemd:
#     systemd.restart, Debian 12's systemd booted as a container's PID 1
#     from a cached mmdebstrap root): in build/ only, in the ctest stage
#     (18 s with the root cached, about a minute more to build it): the
#     root has the package's dependencies, not a sanitizer's runtime;
#   - under TSan: hw_tests, daemon.*, integration.* and the reliability
#     tests that kill, race or fault the daemon;
#   - the chaos test (reliability.test_chaos: concurrent writers, kill -9
#     and restart on the journal, a model check after every step) runs
#     under ASan+UBSan only, as every simulated mounted suite does. Not
#     under TSan: its races are the daemon's command serialisation, which
#     test_concurrency already drives there, and its kills are
#     test_crash_restore's; a TSan daemon is several times slower, and the
#     chaos test's value is in its count of kills. Not on the msr path
#     (tests/reliability/CMakeLists.txt): what it adds is above the backend.
#     Its counts (RESCTRLFS_CHAOS_STEPS, RESCTRLFS_CHAOS_KILLS) bound it:
#     15-35 s on the plain build (idle to both CPUs busy); lower them
#     here, as RELIABILITY_KILLS is, if the ASan stage needs it.
#
# Environment: FUZZ_SECONDS (exploration per fuzz target; default 20, and 60
# for fuzz_schemata), CI_STAGES (default "format ctest trixie asan fuzz tsan";
# deps and build always run; install: the install tests; trixie: Debian
# 13's clients), BUILD_DIR, ASAN_BUILD_DIR, TSAN_BUILD_DIR,
# FUZZ_BUILD_DIR, JOBS (default: the number of CPUs).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

BUILD_DIR="${BUILD_DIR:-build}"
ASAN_BUILD_DIR="${ASAN_BUILD_DIR:-build-asan}"
TSAN_BUILD_DIR="${TSAN_BUILD_DIR:-build-tsan}"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-build-fuzz}"
JOBS="${JOBS:-$(nproc)}"
CI_STAGES=" ${CI_STAGES:-format ctest trixie asan fuzz tsan} "
# Background chains run as `tests/ci.sh --bg FUNCTION` (under nice), with
# the log directory and the start time of the run in the environment.
LOGS="${CI_LOGS:-$(mktemp -d /tmp/resctrlfs-ci.XXXXXX)}"
T0="${CI_T0:-$(date +%s)}"
export CI_LOGS="$LOGS" CI_T0="$T0"

# The fuzz targets and their corpora; the exploration time of each.
FUZZ_TARGETS=(
  "fuzz_schemata:tests/schemata/corpus:60"
  "fuzz_fs_files:tests/reliability/fuzz/corpus/fuzz_fs_files:20"
  "fuzz_control:tests/reliability/fuzz/corpus/fuzz_control:20"
  "fuzz_journal:tests/reliability/fuzz/corpus/fuzz_journal:20"
  "fuzz_boot_state:tests/reliability/fuzz/corpus/fuzz_boot_state:20"
  "fuzz_profile:tests/reliability/fuzz/corpus/fuzz_profile:20"
  "fuzz_lwp:tests/reliability/fuzz/corpus/fuzz_lwp:20"
  "fuzz_irdt:tests/reliability/fuzz/corpus/fuzz_irdt:20"
)
# The threaded programs and the tests that drive them, for TSan.
TSAN_TARGETS=(resctrlfsd resctrlfsctl resctrlfs-exporter resctrl-msrd resctrl-msrd-sim
              resctrl-fakehw floor_fs hw_tests daemon_unit_tests)
TSAN_TESTS='^(hw_tests|daemon\.|integration\.|reliability\.(test_crash|test_conc|test_hw))'
# The plain tree leaves out what ASan runs: the simulated backend's mounted
# suites (see the header).
PLAIN_EXCLUDE='^((integration|reliability)\.test_|client_)'
ASAN_EXCLUDE='^([a-z_]+_msr|systemd)\.'
# The ctest labels that have a stage of their own (install, trixie).
OWN_STAGE_LABELS='^(install|trixie)$'

# shellcheck source=tests/fuzz-lib.sh
. tests/fuzz-lib.sh

clock() {
  local s=$(($(date +%s) - T0))
  printf '%02d:%02d' $((s / 60)) $((s % 60))
}
banner() { printf '\n==== [%s] %s\n' "$(clock)" "$*"; }

# One row per stage: "name|started at|seconds|result".
ROWS=()
FAILED=()
record() {
  ROWS+=("$1|$2|$3|$4")
  [ "$4" = passed ] || FAILED+=("$1")
}

# run_stage NAME FUNCTION: runs it in the foreground.
run_stage() {
  local name="$1" fn="$2" start at rc=0
  start=$(date +%s)
  at=$(clock)
  banner "stage $name: started"
  "$fn" || rc=$?
  local secs=$(($(date +%s) - start)) result=passed
  [ "$rc" = 0 ] || result="FAILED"
  banner "stage $name: $result after ${secs} s"
  record "$name" "$at" "$secs" "$result"
  return "$rc"
}

# In the background, a chain of stages: their output goes to $LOGS/NAME.log
# and each leaves "rc seconds started-at" in $LOGS/NAME.rc.
bg_stage() {
  local name="$1" fn="$2" start at rc=0
  start=$(date +%s)
  at=$(clock)
  "$fn" >"$LOGS/$name.log" 2>&1 || rc=$?
  echo "$rc $(($(date +%s) - start)) $at" >"$LOGS/$name.rc"
  return "$rc"
}
# bg_report NAME: after the chain ended, prints the stage's log (all of it
# when it failed, its end otherwise) and records it.
bg_report() {
  local name="$1" rc secs at
  if [ ! -f "$LOGS/$name.rc" ]; then
    banner "stage $name: not run (an earlier stage of its chain failed)"
    record "$name" "-" 0 "NOT RUN"
    return 1
  fi
  read -r rc secs at <"$LOGS/$name.rc"
  local result=passed
  [ "$rc" = 0 ] || result=FAILED
  banner "stage $name (ran in the background from $at): $result after ${secs} s; its output:"
  if [ "$rc" = 0 ]; then
    tail -n 25 "$LOGS/$name.log"
  else
    cat "$LOGS/$name.log"
  fi
  record "$name" "$at" "$secs" "$result"
  [ "$rc" = 0 ]
}

wants() { [[ "$CI_STAGES" == *" $1 "* ]]; }

# ---- the stages ----

stage_deps() { ./dev.sh deps; }
stage_build() { ./dev.sh build-all; }

stage_format() {
  git ls-files '*.h' '*.cc' | xargs -r clang-format-14 --dry-run --Werror
}

# The failed tests of the last ctest run in build dir $1, each with the end
# of its output again: the next stage's output would otherwise bury it.
failed_tests() {
  local list="$1/Testing/Temporary/LastTestsFailed.log" log="$1/Testing/Temporary/LastTest.log"
  local name  # not the caller's: run_stage keeps the stage's name in one
  [ -f "$list" ] || return 0
  while IFS=: read -r _ name; do
    echo "---- $name: the end of its output ($log)"
    awk -v n="$name" '
      index($0, "Testing: " n) && substr($0, length($0) - length(n) + 1) == n { on = 1; next }
      on && index($0, "\"" n "\" end time") == 1 { on = 0 }
      on { print }' "$log" | tail -n 40
  done <"$list"
}

# run_ctest DIR ARGS...: ctest there; on failure, repeats the failures' ends.
# Its output is kept for ctest_counts under the tree's name, or CTEST_TAG
# (two stages in one tree).
run_ctest() {
  local dir="$1"
  shift
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
  if ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$LOGS/ctest.${CTEST_TAG:-${dir//\//_}}.out"; then
    return 0
  fi
  failed_tests "$dir"
  return 1
}
# The counts of every ctest stage together, from ctest's own summaries
# ("N% tests passed, F tests failed out of T", and a "(Skipped)" line for
# each skipped test, which ctest counts as passed).
ctest_counts() {
  local total=0 failed=0 skipped=0 f t x
  for f in "$LOGS"/ctest.*.out; do
    [ -f "$f" ] || continue
    t=$(sed -n 's/.* tests failed out of \([0-9]*\)$/\1/p' "$f" | tail -n 1)
    x=$(sed -n 's/.*, \([0-9]*\) tests failed out of .*/\1/p' "$f" | tail -n 1)
    total=$((total + ${t:-0}))
    failed=$((failed + ${x:-0}))
    skipped=$((skipped + $(grep -c '(Skipped)$' "$f" || true)))
  done
  [ "$total" -gt 0 ] || return 0
  echo "ctest: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
}

stage_ctest() { run_ctest "$BUILD_DIR" -j"$JOBS" -E "$PLAIN_EXCLUDE" -LE "$OWN_STAGE_LABELS"; }
# Debian 13's clients (label trixie) against the shipped programs.
stage_trixie() { CTEST_TAG=trixie RESCTRLFS_TRIXIE_TESTS=1 run_ctest "$BUILD_DIR" -j"$JOBS" -L trixie; }
# The install tests (label install): they build their own trees.
stage_install() {
  RESCTRLFS_INSTALL_TESTS=1 JOBS="$JOBS" ctest --test-dir "$BUILD_DIR" --output-on-failure -L install
}
install_chain() {
  bg_stage install stage_install
  return 0
}

# configure DIR OPTIONS...: a tree of the same sources with other options.
configure() {
  local dir="$1"
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
}
# Sanitizer trees compile with -O1 (what the sanitizers' documentation
# advises for readable reports at a reasonable speed) and line tables only
# (-g1: enough for symbolised stack traces): most of a file's compile time
# here is the optimiser and debug information (daemon/ctl.cc: 73 % in "opt
# and generate"), and -O2 -g made these two trees the longest builds of CI.
SAN_FLAGS=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DRESCTRLFS_FUZZ=OFF -DRESCTRLFS_BENCH=OFF)

stage_build_asan() {
  configure "$ASAN_BUILD_DIR" -DRESCTRLFS_SANITIZE=ON "${SAN_FLAGS[@]}" &&
    cmake --build "$ASAN_BUILD_DIR" -j"$JOBS"
}
stage_build_tsan() {
  configure "$TSAN_BUILD_DIR" -DRESCTRLFS_TSAN=ON "${SAN_FLAGS[@]}" &&
    cmake --build "$TSAN_BUILD_DIR" -j"$JOBS" --target "${TSAN_TARGETS[@]}"
}
stage_build_fuzz() {
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRESCTRLFS_FUZZ=ON -DRESCTRLFS_BENCH=OFF >/dev/null || return 1
  if ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang' "$FUZZ_BUILD_DIR/CMakeCache.txt"; then
    echo "$FUZZ_BUILD_DIR was configured without clang; remove it and rerun" >&2
    return 1
  fi
  local names=()
  for entry in "${FUZZ_TARGETS[@]}"; do names+=("${entry%%:*}"); done
  cmake --build "$FUZZ_BUILD_DIR" -j"$JOBS" --target "${names[@]}"
}
# The sanitizer and fuzz builds the chosen stages need, one after the
# other, in the background: each foreground stage waits only for its own
# tree, so the ASan suite runs while the TSan and fuzz trees build.
build_chain() {
  if wants asan; then bg_stage build-asan stage_build_asan; fi
  if wants tsan; then bg_stage build-tsan stage_build_tsan; fi
  if wants fuzz; then bg_stage build-fuzz stage_build_fuzz; fi
  return 0
}
# The fuzzers, once their tree is built (a second background process, at
# nice 10: the fuzzers are time-bounded, so a share of the CPU is a share of
# their executions, not a longer run).
fuzz_chain() {
  wait_for build-fuzz || return 0
  built build-fuzz && bg_stage fuzz stage_fuzz
  return 0
}

stage_asan() {
  # Leak checking on: a process that exits normally must free what it
  # allocated (a kill -9 in the crash test is not an exit). Fewer kills
  # than the plain run: the sanitized daemon starts slower.
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:${ASAN_OPTIONS:-}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}" \
  RELIABILITY_KILLS="${RELIABILITY_KILLS:-20}" \
    run_ctest "$ASAN_BUILD_DIR" -j"$JOBS" --timeout 1200 -E "$ASAN_EXCLUDE" -LE "$OWN_STAGE_LABELS"
}

stage_tsan() {
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:${TSAN_OPTIONS:-}" \
  RELIABILITY_KILLS="${RELIABILITY_KILLS:-10}" \
    run_ctest "$TSAN_BUILD_DIR" -j"$JOBS" --timeout 1200 -R "$TSAN_TESTS"
}

stage_fuzz() {
  local scratch status=0
  scratch="$(mktemp -d /tmp/resctrlfs-fuzz.XXXXXX)"
  for entry in "${FUZZ_TARGETS[@]}"; do
    local target="${entry%%:*}" rest="${entry#*:}"
    local corpus="${rest%%:*}" seconds="${FUZZ_SECONDS:-${rest##*:}}" bin
    bin="$(find "$FUZZ_BUILD_DIR" -type f -name "$target" -perm -u+x | head -n 1)"
    if [ -z "$bin" ]; then
      echo "$target was not built" >&2
      status=1
      continue
    fi
    if ! fuzz_replay "$target" "$bin" "$corpus" "$scratch/$target.replay.log"; then
      status=1
      continue
    fi
    fuzz_explore "$target" "$bin" "$corpus" "$scratch/$target" \
      "$ROOT/$FUZZ_BUILD_DIR/fuzz-artifacts/$target" "$seconds" "$scratch/$target.log" || status=1
  done
  rm -rf "$scratch"
  [ "$status" = 0 ] || echo "fuzz: reproducers are in $FUZZ_BUILD_DIR/fuzz-artifacts/" >&2
  return "$status"
}

# ---- the run ----

built() { [ "$(cut -d' ' -f1 "$LOGS/$1.rc" 2>/dev/null)" = 0 ]; }
# wait_for STAGE: until the background STAGE has ended (its .rc exists), or
# fails if the chain that runs it has exited without running it.
wait_for() {
  while [ ! -f "$LOGS/$1.rc" ]; do
    if [ ! -f "$LOGS/chain.running" ]; then
      [ -f "$LOGS/$1.rc" ]
      return
    fi
    sleep 1
  done
}

if [ "${1:-}" = --bg ]; then
  case "${2:-}" in
    build_chain)
      build_chain
      rm -f "$LOGS/chain.running"
      exit 0
      ;;
    fuzz_chain) fuzz_chain; exit 0 ;;
    install_chain) install_chain; exit 0 ;;
    *) echo "tests/ci.sh --bg: unknown chain ${2:-}" >&2; exit 2 ;;
  esac
fi
banner "resctrlfs CI: stages${CI_STAGES}on $(nproc) CPUs; background logs in $LOGS"
run_stage deps stage_deps || { banner "deps failed: nothing else can run"; exit 1; }
build_ok=1
run_stage build stage_build || build_ok=0
wants format && run_stage format stage_format

if [ "$build_ok" = 1 ]; then
  bg=()
  if wants asan || wants tsan || wants fuzz; then
    touch "$LOGS/chain.running"
    nice -n 19 "$0" --bg build_chain &
    bg+=($!)
    banner "the sanitizer and fuzz trees build in the background (nice 19): the stages below wait for their own"
    if wants fuzz; then
      nice -n 10 "$0" --bg fuzz_chain &
      bg+=($!)
    fi
  fi
  if wants install; then
    nice -n 19 "$0" --bg install_chain &
    bg+=($!)
    banner "the install tests run in the background (nice 19), reported at the end"
  fi
  wants ctest && run_stage ctest stage_ctest
  wants trixie && run_stage trixie stage_trixie
  if wants asan; then
    wait_for build-asan
    bg_report build-asan && run_stage asan stage_asan
  fi
  if wants tsan; then
    wait_for build-tsan
    bg_report build-tsan && run_stage tsan stage_tsan
  fi
  if ((${#bg[@]})); then wait "${bg[@]}"; fi
  if wants fuzz; then
    if bg_report build-fuzz; then
      bg_report fuzz
    else
      record fuzz - 0 "NOT RUN"
    fi
  fi
  if wants install; then bg_report install; fi
fi

total=$(($(date +%s) - T0))
banner "summary"
printf '%-12s %-10s %8s  %s\n' stage "started" seconds result
for row in "${ROWS[@]}"; do
  IFS='|' read -r name at secs result <<<"$row"
  printf '%-12s %-10s %8s  %s\n' "$name" "$at" "$secs" "$result"
done
printf '%-12s %-10s %8s  %s\n' total "" "$total" "$([ ${#FAILED[@]} = 0 ] && echo passed || echo "FAILED: ${FAILED[*]}")"
ctest_counts
rm -rf "$LOGS"
[ ${#FAILED[@]} = 0 ]
