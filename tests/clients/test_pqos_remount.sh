#!/usr/bin/env bash
# pqos remounting resctrl in the sandbox: `pqos -I -R l3cdp-on` unmounts
# /sys/fs/resctrl and mounts it again with cdp (mount(2) of type resctrl,
# which the sandbox's supervisor turns into a new daemon), 16 times in a row
# with short pauses, then `-R l3cdp-off`; and pqos on a sandbox where
# resctrl is not mounted mounts it itself. Every run creates its COS groups
# again, taking RMIDs that the previous mount's unmount left in limbo: the
# boot state carried from one daemon to the next must keep them counted as
# the kernel does, never running out (ENOSPC, "Failed to create resctrl
# group"). pqos reads the vendor through CPUID, so the platform is the
# two-socket built-in of this CPU's vendor (amd-2s or intel-2s), which has
# L3 CDP.
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_cmd pqos intel-cmt-cat
require_sandbox
require_daemon

if [ -z "${RESCTRLFS_SANDBOX:-}" ]; then
  if [ "$(host_vendor)" = AuthenticAMD ]; then P=amd-2s; else P=intel-2s; fi
  enter_sandbox --platform "$P"
fi

R=/sys/fs/resctrl
WORK=$(mktemp -d /tmp/client-pqos-remount.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
RUNS=16

for ((i = 1; i <= RUNS; i++)); do
  pqos -I -R l3cdp-on >"$WORK/out" 2>&1
  rc=$?
  # (A task that exits while pqos walks /proc gives "Failed to retrieve
  # task N association", with the kernel too: on a busy machine, not an
  # error of the remount.)
  if [ "$rc" != 0 ] || grep -Eq 'Failed to create|No space|Allocation reset failed' "$WORK/out"; then
    fail "pqos -R l3cdp-on, run $i of $RUNS: status $rc"
    sed 's/^/    /' "$WORK/out" >&2
    continue
  fi
  if [ -d $R/info/L3CODE ] && grep -q "^resctrl $R resctrl [^ ]*,cdp " /proc/mounts; then
    pass "pqos -R l3cdp-on, run $i of $RUNS: mounted with cdp"
  else
    fail "pqos -R l3cdp-on, run $i of $RUNS: not mounted with cdp"
    grep " $R " /proc/mounts >&2
  fi
  sleep 0.2
done

pqos -I -R l3cdp-off >"$WORK/out" 2>&1
check_eq "pqos -R l3cdp-off: status" $? 0
check "l3cdp-off: info/L3 again, no L3CODE" test -d $R/info/L3 -a ! -e $R/info/L3CODE
check_match "l3cdp-off: mounted without cdp" "$(grep " $R " /proc/mounts)" \
  "^resctrl $R resctrl rw(,(nosuid|nodev|noexec|relatime))* 0 0\$"

echo "== pqos on a sandbox where resctrl is not mounted"
check "umount $R" umount $R
pqos -I -d >"$WORK/out" 2>&1
rc=$?
check_eq "pqos -I -d without a mount: status" "$rc" 0
[ "$rc" = 0 ] || sed 's/^/    /' "$WORK/out" >&2
check_match "pqos mounted resctrl itself" "$(grep " $R " /proc/mounts)" "^resctrl $R resctrl "
check_match "pqos -d shows L3 CAT" "$(cat "$WORK/out")" 'L3 CAT'
check "the tree is there" test -f $R/schemata
finish
