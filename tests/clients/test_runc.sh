#!/usr/bin/env bash
# An OCI runtime against resctrlfsd: a busybox container with intelRdt L3
# and MB schemata. While it runs, its group must exist with those schemata
# and hold the container's init and the child it forked (fork inheritance).
# usage: test_runc.sh [runc|crun]
#   runc (1.1): the group is named after the container and must be gone
#     after `runc delete`; runc checks that the resctrl mount has type
#     `resctrl` in its own /proc/self/mountinfo.
#   crun (1.21, CLIENT_SUITE=trixie): the config names the group
#     (linux.intelRdt.closID) and gives its schemata; crun checks the
#     filesystem type with statfs(2). crun keeps a group the config named
#     (it deletes only groups it named itself), so after `crun delete` the
#     group must still be there, with no tasks.
# Every runtime command runs unwrapped inside the sandbox.
set -u
SCRIPT_ARGS=("$@")
RT=${1:-runc}
. "$(dirname "$0")/lib.sh"
TEST_NAME=test_$RT${TEST_SUFFIX:-}
require_root
require_fuse
case $RT in
  runc) require_cmd runc runc ;;
  crun) require_cmd crun crun ;;
  *) echo "usage: test_runc.sh [runc|crun]" >&2; exit 2 ;;
esac
[ -x /bin/busybox ] || skip "/bin/busybox missing (Debian package busybox-static)"
file -L /bin/busybox 2>/dev/null | grep -q dynamic && skip "/bin/busybox is not static (install busybox-static)"
require_sandbox
require_daemon
if [ -z "${RESCTRLFS_SANDBOX:-}" ]; then
  echo "== first pass: --intercept none"
  RUNC_PASS=none "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform host \
    --intercept none -- bash "$0" "${SCRIPT_ARGS[@]}" || exit $?
  echo "== second pass: the default supervisor"
  export RUNC_PASS=all
  enter_sandbox --platform host
fi

R=/sys/fs/resctrl
[ "$RT" = crun ] && declare -F trixie_unified_cgroup >/dev/null && trixie_unified_cgroup
WORK=$(mktemp -d /tmp/client-$RT.XXXXXX)
ROOT=$WORK/state
B=$WORK/bundle
CTR=rdtctr$$
# The group: named after the container (runc), or by the config (crun).
if [ "$RT" = crun ]; then CLOS=clos$$; else CLOS=$CTR; fi
rt() { "$RT" --root "$@"; }
cleanup() {
  rt "$ROOT" delete -f "$CTR" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$B/rootfs/bin" "$B/rootfs/proc" "$B/rootfs/dev" "$B/rootfs/sys"
cp /bin/busybox "$B/rootfs/bin/"
for a in sh sleep cat; do ln -s busybox "$B/rootfs/bin/$a"; done
(cd "$B" && "$RT" spec)
L3_IDS=$(schemata_ids L3)
MB_IDS=$(schemata_ids MB)
echo "L3 domains: $L3_IDS; MB domains: $MB_IDS"
python3 - "$B/config.json" "$L3_IDS" "$MB_IDS" "$RT" "$CLOS" <<'PY'
import json, sys
path, l3, mb, rt, clos = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4], sys.argv[5]
c = json.load(open(path))
c["process"]["terminal"] = False
# The init forks a child that must inherit the group.
c["process"]["args"] = ["sh", "-c", "sleep 300 & exec sleep 301"]
rdt = {}
if l3: rdt["l3CacheSchema"] = "L3:" + ";".join(f"{d}=f" for d in l3)
if mb: rdt["memBwSchema"] = "MB:" + ";".join(f"{d}=40" for d in mb)
if rt == "crun": rdt["closID"] = clos
c["linux"]["intelRdt"] = rdt
json.dump(c, open(path, "w"), indent=1)
PY
grep -A3 intelRdt "$B/config.json"

if [ "${RUNC_PASS:-all}" = none ]; then
  echo "== without the supervisor (and no per-process table) $RT refuses (it wants fstype resctrl)"
  (cd "$B" && rt "$WORK/plain" run -d "${CTR}x" </dev/null >"$WORK/plain.log" 2>&1)
  rc=$?
  rt "$WORK/plain" delete -f "${CTR}x" >/dev/null 2>&1
  check "plain $RT fails" test $rc -ne 0
  echo "  $RT said: $(tail -1 "$WORK/plain.log")"
  # crun 1.21 says "the resctl file system is not mounted" (sic).
  check_match "plain $RT says Intel RDT is not enabled" "$(cat "$WORK/plain.log")" 'RDT|rdt|resctrl|resctl'
  check "plain $RT made no group" test ! -e "$R/$CLOS"
  finish
fi

echo "== $RT run, unwrapped, inside the sandbox"
(cd "$B" && rt "$ROOT" run -d --pid-file "$WORK/pid" "$CTR" </dev/null >"$WORK/run.log" 2>&1)
check_eq "$RT run -d succeeds" $? 0
cat "$WORK/run.log"
G=$R/$CLOS
check "group $CLOS exists" test -d "$G"
for d in $L3_IDS; do
  v=$(schemata_value "$G" L3 "$d")
  check_eq "L3 domain $d mask is f (read '$v')" "$((16#${v:-0}))" 15
done
for d in $MB_IDS; do
  check_eq "MB domain $d is 40" "$(schemata_value "$G" MB "$d")" 40
done
init=$(cat "$WORK/pid" 2>/dev/null)
echo "container init pid: $init; group tasks:"; cat "$G/tasks" 2>/dev/null | tr '\n' ' '; echo
# runc puts its first init stage in the group; nsexec creates the later
# stages, the container's init among them, with clone(CLONE_PARENT), so their
# parent is runc itself. The kernel (and resctrlfsd, through the fork
# tracepoint) gives them the group of the stage that cloned them.
# A task that exited can no longer appear in a tasks file.
check "the container's init ($init) is in $CLOS/tasks" \
  wait_while_alive "${init:-x}" in_tasks "$G" "${init:-x}"
child=""
wait_output child "${init:-x}" pgrep -P "${init:-x}"
child=$(head -1 <<<"$child")
check "the init forked a child" test -n "$child"
check "the forked child ($child) is in $CLOS/tasks (fork inheritance)" \
  wait_while_alive "${child:-x}" in_tasks "$G" "${child:-x}"
check "the init is not in the root group's tasks" bash -c "! grep -qx '$init' $R/tasks"
# crun has no `events` command.
[ "$RT" = runc ] && out=$(rt "$ROOT" events --stats "$CTR" 2>&1)
# runc 1.1 reads the group's monitoring data with its schemata. On real
# hardware a group of tasks and no CPUs counts nothing (docs/hardware.md, "Tasks on
# real hardware"): it reads Unavailable, and runc gives up on the stats.
if [ "$RT" != runc ]; then
  :
elif msr_skip "runc events --stats reports intel_rdt and the L3 schema" \
  "the container's group holds tasks and no CPUs, so its mon_data reads Unavailable"; then
  check_eq "the container's mbm_total_bytes reads Unavailable" \
    "$(cat "$(ls -d "$G"/mon_data/mon_L3_* | head -1)/mbm_total_bytes" 2>&1)" Unavailable
  check_match "runc events --stats says it cannot parse Unavailable" "$out" \
    'unable to get container Intel RDT stats: unable to parse .*Unavailable'
else
  check_match "runc events --stats reports intel_rdt" "$out" '"intel_rdt"'
  check_match "runc events --stats shows the L3 schema" "$out" '"l3_cache_schema": *"L3:'
fi

echo "== $RT delete"
rt "$ROOT" delete -f "$CTR" >"$WORK/delete.log" 2>&1
check_eq "$RT delete -f succeeds" $? 0
cat "$WORK/delete.log"
check "the init has exited" wait_while_alive "${init:-x}" exited "${init:-1}"
if [ "$RT" = crun ]; then
  check "group $CLOS (named by the config) is kept after delete" test -d "$G"
  # Until its parent reaps it, the exited init is a zombie that the tasks
  # file still lists, as the kernel's does.
  no_tasks() { [ -z "$(cat "$G/tasks" 2>&1)" ]; }
  check "and holds no tasks once the init is reaped" wait_for no_tasks
  rmdir "$G"
else
  check "group $CLOS is gone after delete" bash -c "! test -e $G"
fi
finish
