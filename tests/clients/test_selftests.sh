#!/usr/bin/env bash
# The kernel's own resctrl selftests (tools/testing/selftests/resctrl,
# `resctrl_tests`), built from Debian's linux-source-6.12 package and run
# unmodified inside resctrlfs-sandbox on intel-2s, amd-2s and intel-l2
# (each fitted to the host's CPUs). resctrl_tests unmounts any resctrl
# mount, then mounts and unmounts /sys/fs/resctrl itself for every test:
# the sandbox's supervisor answers those calls as the kernel does.
#
# usage: test_selftests.sh interface|perf
#   interface  the tests that check the interface and need no performance
#              counters: L3_NONCONT_CAT and L2_NONCONT_CAT (skipped by the
#              selftest itself where the platform has no such cache
#              allocation, which is checked too); they must pass.
#   perf       the measurement tests (MBM, MBA, CMT, L3_CAT). CMT compares
#              a real thread's cache footprint (fill_buf's buffer) with
#              llc_occupancy: the daemon's task model makes the simulated
#              counter follow it, so CMT must pass. MBM, MBA and L3_CAT
#              count with the core PMU (perf_event_open) or the memory
#              controller's uncore counters, which this VM does not have:
#              each failure with one of those causes counts as a skip (the
#              test exits 77, ctest Skipped, saying which and why); any
#              other failure fails it.
#
# The sources are unpacked (only that directory and kselftest's headers)
# and built once into $CLIENT_SELFTEST_CACHE, keyed by the package's
# tarball; the kernel's code is never copied into this repository.
set -u
MODE=${1:-interface}
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
TEST_NAME="test_selftests_$MODE"
require_root
require_fuse
require_sandbox
require_daemon
TARBALL=/usr/src/linux-source-6.12.tar.xz
[ -r "$TARBALL" ] || skip "$TARBALL not found (Debian package linux-source-6.12; ./dev.sh deps installs it)"
require_cmd gcc gcc

CACHE=${CLIENT_SELFTEST_CACHE:-/tmp/resctrlfs-selftests}
KEY=$(stat -c '%s-%Y' "$TARBALL")
BIN=$CACHE/$KEY/resctrl_tests
if [ ! -x "$BIN" ]; then
  echo "== unpacking tools/testing/selftests/resctrl from $TARBALL (once)"
  rm -rf "$CACHE/$KEY.tmp"
  mkdir -p "$CACHE/$KEY.tmp"
  tar -xJf "$TARBALL" -C "$CACHE/$KEY.tmp" --strip-components=1 --wildcards \
    '*/tools/testing/selftests/resctrl/*' '*/tools/testing/selftests/kselftest*.h' ||
    { fail "unpacking $TARBALL"; finish; }
  src=$CACHE/$KEY.tmp/tools/testing/selftests/resctrl
  # The selftest's own Makefile flags (it includes ../kselftest.h).
  (cd "$src" && gcc -g -Wall -O2 -D_FORTIFY_SOURCE=2 -D_GNU_SOURCE -I.. -o resctrl_tests ./*.c) ||
    { fail "building resctrl_tests"; finish; }
  mkdir -p "$CACHE/$KEY"
  mv "$src/resctrl_tests" "$BIN"
  rm -rf "$CACHE/$KEY.tmp"
fi

WORK=$(mktemp -d /tmp/client-selftests.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
PERF_SKIPS=()

# run PLATFORM TESTS: resctrl_tests -t TESTS in a sandbox on PLATFORM; its
# KTAP output in $WORK/out.
run() {
  echo "== resctrl_tests -t $2 on $1"
  "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform "$1" -- "$BIN" -t "$2" \
    >"$WORK/out" 2>"$WORK/err"
  echo "(status $?)"
  grep -v '^resctrlfsd\[' "$WORK/err" | grep -v 'differs from this CPU' >&2
  cat "$WORK/out"
}

# The KTAP result line of test NAME in $WORK/out.
result() { grep -E "^(not )?ok [0-9]+ (# SKIP .*$1|$1: test)" "$WORK/out" | head -1; }

if [ "$MODE" = interface ]; then
  for p in intel-2s amd-2s intel-l2; do
    run $p L3_NONCONT_CAT,L2_NONCONT_CAT
    check_match "$p: resctrl_tests found resctrl and mounted it" "$(cat "$WORK/out")" \
      '^# Pass: Check kernel supports resctrl filesystem$'
    check_match "$p: L3_NONCONT_CAT passes" "$(result L3_NONCONT_CAT)" '^ok [0-9]+ L3_NONCONT_CAT: test$'
    if [ $p = intel-l2 ]; then
      check_match "$p: L2_NONCONT_CAT passes" "$(result L2_NONCONT_CAT)" '^ok [0-9]+ L2_NONCONT_CAT: test$'
    else
      # No L2 CAT on this platform: the selftest skips it, as on such a CPU.
      check_match "$p: L2_NONCONT_CAT skipped (no L2 CAT)" "$(result L2_NONCONT_CAT)" \
        '^ok [0-9]+ # SKIP Hardware does not support L2_NONCONT_CAT'
    fi
    check_match "$p: no test failed" "$(grep -E '^# Totals:' "$WORK/out")" ' fail:0 '
  done
  finish
fi

[ "$MODE" = perf ] || { echo "usage: $0 interface|perf" >&2; exit 2; }
for p in intel-2s amd-2s intel-l2; do
  run $p MBM,MBA,CMT,L3_CAT
  for t in MBM MBA CMT L3_CAT; do
    r=$(result $t)
    if [ "$t" = CMT ] && [ $p != intel-l2 ]; then
      # The task model: fill_buf's buffer in group c1 is what llc_occupancy
      # shows (within the selftest's 15 %).
      check_match "$p: CMT passes" "$r" '^ok [0-9]+ CMT: test$'
      grep -E '^# (Pass|Fail|Percent diff|Average LLC|Cache span)' "$WORK/out" | sed 's/^/    /'
      continue
    fi
    case "$r" in
      "ok "*" # SKIP"*)
        pass "$p: $t skipped by resctrl_tests (${r#*# SKIP })" ;;
      "ok "*)
        pass "$p: $t passes" ;;
      "not ok"*)
        # The cause, from the lines the selftest printed before its result.
        block=$(awk -v t="$t" '/^# Starting /{buf=""} {buf=buf"\n"$0} $0 ~ "^not ok [0-9]+ "t": test"{print buf; exit}' "$WORK/out")
        if grep -q 'Error opening leader' <<<"$block"; then
          PERF_SKIPS+=("$p $t: perf_event_open of a core PMU event fails (no PMU here; a simulation has no cache-miss counts)")
        elif grep -q 'Unable to find iMC counters' <<<"$block"; then
          PERF_SKIPS+=("$p $t: needs the memory controller's uncore (iMC) PMU to compare bandwidth")
        elif [ "$t" != CMT ] && grep -q 'Average LLC val: 0' <<<"$block"; then
          PERF_SKIPS+=("$p $t: compares a real thread's cache footprint with llc_occupancy")
        else
          fail "$p: $t failed for a reason other than missing counters"
          printf '%s\n' "$block" | sed 's/^/    /' >&2
        fi ;;
      *)
        fail "$p: no result line for $t" ;;
    esac
  done
done
if [ "$FAILED" = 0 ] && [ ${#PERF_SKIPS[@]} -gt 0 ]; then
  echo "$TEST_NAME: $PASSED passed"
  printf '  %s\n' "${PERF_SKIPS[@]}" >&2
  skip "${#PERF_SKIPS[@]} measurement tests need performance counters no simulation has (listed above)"
fi
finish
