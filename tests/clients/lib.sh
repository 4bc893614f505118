# Shared helpers of the client test scripts (sourced, not run).
#   skip REASON           exit 77 after saying loudly why the test is skipped
#   require_root / require_fuse / require_cmd CMD PACKAGE / require_sandbox / require_daemon
#   check DESC CMD...     run CMD, count a pass if it succeeds
#   check_eq DESC GOT WANT
#   check_match DESC TEXT REGEX    (grep -E on TEXT)
#   finish                print "N passed, M failed" and exit accordingly
#   host_vendor           this CPU's vendor_id
#   make_platform_json OUT VENDOR SOCKETS [CAPS]  a profile with the host's CPU count
#   on_msr                true under the msr label (RESCTRLFS_BACKEND=msr)
#   msr_skip DESC REASON  under the msr label: says loudly that check DESC is
#                         not made there and why (true), else false
#   wait_for CMD...       run CMD until it succeeds (no deadline; see below)
#   wait_while_alive PID CMD...  the same, giving up once PID has exited
#   wait_output VAR PID CMD...   until CMD prints something, into VAR
#   hwctl ARGS...         resctrlfsctl to the machine's knobs (workloads): the
#                         daemon's control socket, or under the msr label
#                         resctrl-fakehw's (RESCTRLFS_HW_CONTROL)
# Environment (set by tests/clients/CMakeLists.txt): RESCTRLFS_SANDBOX_BIN,
# RESCTRLFSD_BIN, CLIENT_TEST_DIR; under the msr label RESCTRLFS_BACKEND=msr,
# RESCTRLFS_FAKEHW and RESCTRL_MSRD.
#
# The msr label: every sandbox started with --platform P runs the daemon on
# the real-hardware path (resctrlfsd --backend msr through resctrl-msrd, on
# resctrl-fakehw's emulation of P's /dev/cpu/N/{cpuid,msr} and sysfs), by
# msr_sandbox.sh standing in for RESCTRLFS_SANDBOX_BIN; the scripts are the
# same.

PASSED=0
FAILED=0
# Absolute, so that scripts may change directory.
[ -n "${RESCTRLFS_SANDBOX_BIN:-}" ] && RESCTRLFS_SANDBOX_BIN=$(readlink -f "$RESCTRLFS_SANDBOX_BIN")
[ -n "${RESCTRLFSD_BIN:-}" ] && RESCTRLFSD_BIN=$(readlink -f "$RESCTRLFSD_BIN")
TEST_NAME=$(basename "$0" .sh)
if [ "${RESCTRLFS_BACKEND:-}" = msr ] && [ -z "${RESCTRLFS_SANDBOX_REAL:-}" ] &&
  [ -n "${RESCTRLFS_SANDBOX_BIN:-}" ]; then
  export RESCTRLFS_SANDBOX_REAL=$RESCTRLFS_SANDBOX_BIN
  RESCTRLFS_SANDBOX_BIN=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/msr_sandbox.sh")
  export RESCTRLFS_SANDBOX_BIN
fi
on_msr() { [ "${RESCTRLFS_BACKEND:-}" = msr ]; }
msr_skip() {
  on_msr || return 1
  echo "SKIP (msr label): $1: $2" >&2
  return 0
}
hwctl() {
  "$(dirname "$RESCTRLFSD_BIN")/resctrlfsctl" \
    --socket "${RESCTRLFS_HW_CONTROL:-${RESCTRLFS_CONTROL:-}}" "$@"
}

skip() {
  echo "*** SKIPPED $TEST_NAME: $* ***" >&2
  exit 77
}

require_root() { [ "$(id -u)" = 0 ] || skip "needs root (mount namespaces and FUSE)"; }
require_fuse() { [ -c /dev/fuse ] && [ -r /dev/fuse ] || skip "no usable /dev/fuse"; }
require_cmd() {
  command -v "$1" >/dev/null 2>&1 || skip "$1 not found (Debian package $2; ./dev.sh deps installs it)"
}
require_sandbox() {
  if on_msr; then
    [ -x "${RESCTRLFS_SANDBOX_REAL:-}" ] || skip "resctrlfs-sandbox not built (RESCTRLFS_SANDBOX_BIN='${RESCTRLFS_SANDBOX_REAL:-}')"
    [ -x "${RESCTRLFS_FAKEHW:-}" ] && [ -x "${RESCTRL_MSRD:-}" ] ||
      skip "msr label: resctrl-fakehw or resctrl-msrd not built (RESCTRLFS_FAKEHW='${RESCTRLFS_FAKEHW:-}', RESCTRL_MSRD='${RESCTRL_MSRD:-}')"
  fi
  [ -x "${RESCTRLFS_SANDBOX_BIN:-}" ] || skip "resctrlfs-sandbox not built (RESCTRLFS_SANDBOX_BIN='${RESCTRLFS_SANDBOX_BIN:-}')"
}
require_daemon() {
  [ -x "${RESCTRLFSD_BIN:-}" ] || skip "resctrlfsd not built (RESCTRLFSD_BIN='${RESCTRLFSD_BIN:-}')"
}

pass() { PASSED=$((PASSED + 1)); echo "PASS: $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $1" >&2; }

check() {
  local desc=$1
  shift
  if "$@"; then pass "$desc"; else fail "$desc (command: $*)"; fi
}

check_eq() {
  if [ "$2" = "$3" ]; then
    pass "$1"
  else
    fail "$1"
    printf '  got:  %q\n  want: %q\n' "$2" "$3" >&2
  fi
}

check_match() {
  if printf '%s\n' "$2" | grep -Eq -- "$3"; then
    pass "$1"
  else
    fail "$1"
    printf '  no line matches /%s/ in:\n%s\n' "$3" "$2" | sed 's/^/    /' >&2
  fi
}

check_nomatch() {
  if printf '%s\n' "$2" | grep -Eq -- "$3"; then
    fail "$1"
    printf '  unexpected /%s/ in:\n%s\n' "$3" "$2" | sed 's/^/    /' >&2
  else
    pass "$1"
  fi
}

finish() {
  echo "$TEST_NAME: $PASSED passed, $FAILED failed"
  [ "$FAILED" = 0 ]
  exit $?
}

host_vendor() { awk -F': *' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo; }

host_cpus() { ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l; }

# make_platform_json OUT VENDOR SOCKETS [CAPS]
# CAPS: "full" (L3 CAT with CDP, MBA, L3 monitoring; the default) or
# "cmt" (monitoring only). CPUs are split evenly over SOCKETS packages, each
# package with its own L3 id; every CPU has its own L2.
make_platform_json() {
  local out=$1 vendor=$2 sockets=$3 caps=${4:-full}
  local n per c pkg sep=""
  n=$(host_cpus)
  per=$(((n + sockets - 1) / sockets))
  {
    echo "{"
    echo "  \"vendor\": \"$vendor\","
    if [ "$vendor" = AuthenticAMD ]; then
      echo '  "family": 25, "model": 1, "stepping": 1,'
    else
      echo '  "family": 6, "model": 106, "stepping": 6,'
    fi
    echo -n '  "cpus": ['
    for ((c = 0; c < n; c++)); do
      pkg=$((c / per))
      echo -n "$sep{\"cpu\": $c, \"package\": $pkg, \"l2\": $c, \"l3\": $pkg}"
      sep=", "
    done
    echo '],'
    echo '  "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,'
    if [ "$caps" = full ]; then
      if [ "$vendor" = AuthenticAMD ]; then
        echo '  "l3_cat": {"cbm_len": 16, "num_closid": 16, "shareable_bits": 0, "cdp": true},'
        echo '  "mb": {"num_closid": 16, "bw_len": 11},'
      else
        echo '  "l3_cat": {"cbm_len": 11, "num_closid": 16, "shareable_bits": 0, "cdp": true},'
        echo '  "mba": {"num_closid": 8, "max_delay": 90, "linear": true},'
      fi
    fi
    echo '  "l3_mon": {"num_rmids": 224, "scale": 65536, "counter_width": 24,'
    echo '             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]}'
    echo "}"
  } >"$out"
}

# enter_sandbox [DAEMON OPTIONS...]: unless already inside, re-runs this
# script (with SCRIPT_ARGS) inside resctrlfs-sandbox with the real daemon.
# The inner run does the checks and calls finish.
enter_sandbox() {
  [ -n "${RESCTRLFS_SANDBOX:-}" ] && return 0
  echo "== entering resctrlfs-sandbox $*"
  exec "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" "$@" -- bash "$0" "${SCRIPT_ARGS[@]}"
}

# The domain ids of resource RES (L3, MB) in the root schemata, space separated.
schemata_ids() {
  sed -n "s/^ *$1:\(.*\)$/\1/p" /sys/fs/resctrl/schemata | tr ';' '\n' | cut -d= -f1 | tr '\n' ' ' | sed 's/ $//'
}

# The value of resource RES on domain ID in GROUP's schemata (spaces trimmed).
schemata_value() {
  local group=$1 res=$2 id=$3
  sed -n "s/^ *$res:\(.*\)$/\1/p" "$group/schemata" | tr ';' '\n' | sed -n "s/^ *$id=//p" | tr -d ' '
}

# wait_for CMD...: runs CMD every 0.1 s until it succeeds (status 0). No
# deadline: an event comes late on a busy machine, not never, and ctest's
# per-test TIMEOUT ends a test where it truly never comes; after 60 s the
# wait says once on stderr what it is waiting for (so that such a test's
# output names it).
wait_for() { _wait_until "" "$@"; }

# wait_while_alive PID CMD...: wait_for CMD, but it gives up (CMD's status,
# tried once more) once PID has exited or is not a number: the process that
# would make the event is gone.
wait_while_alive() { _wait_until "$@"; }

# wait_output VAR PID CMD...: waits (while PID, if not empty, lives) until
# CMD succeeds and prints something; VAR gets its output.
wait_output() {
  local _wo_var=$1 _wo_pid=$2
  shift 2
  _wo_found() { _wo_out=$("$@") && [ -n "$_wo_out" ]; }
  local _wo_out=""
  _wait_until "$_wo_pid" _wo_found "$@"
  local rc=$?
  printf -v "$_wo_var" '%s' "$_wo_out"
  return $rc
}

_wait_until() {
  local pid=$1 start=$SECONDS said=""
  shift
  until "$@"; do
    if [ -n "$pid" ] && exited "$pid"; then
      "$@"
      return
    fi
    if [ -z "$said" ] && [ $((SECONDS - start)) -ge 60 ]; then
      said=1
      echo "$TEST_NAME: still waiting for: $* (60 s)" >&2
    fi
    sleep 0.1
  done
}

in_tasks() { grep -qx "$2" "$1/tasks"; }  # in_tasks GROUP PID

# True if PID has exited (gone, or a zombie waiting for its reaper).
exited() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# CLIENT_SUITE=trixie: the clients are Debian 13's, from a root that
# tests/clients/trixie.sh makes; the checks are the same.
if [ "${CLIENT_SUITE:-}" = trixie ]; then
  . "$(dirname "${BASH_SOURCE[0]}")/trixie.sh"
  TEST_SUFFIX=_trixie
  TEST_NAME=${TEST_NAME}$TEST_SUFFIX
  trixie_prepare
  [ -n "${RESCTRLFS_SANDBOX:-}" ] && trixie_enter
  require_cmd() {
    trixie_run sh -c "command -v $1" >/dev/null 2>&1 ||
      skip "$1 not found in the Debian 13 root (package $2; TRIXIE_PACKAGES in tests/clients/trixie.sh)"
  }
fi
