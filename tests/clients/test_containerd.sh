#!/usr/bin/env bash
# containerd 1.6 (Debian) with an rdt_config_file, started as the sandbox's
# COMMAND, with no wrapper: its goresctrl must configure the classes of the
# file in the tree, and `ctr run --rdt-class gold` with the stock runc 1.1
# must put the task's init and the child it forks in gold while it runs.
# runc runs under containerd-shim, a grandchild of COMMAND that daemonises;
# it (and containerd's goresctrl) see the mount as resctrl only through the
# sandbox's seccomp supervisor, which the last part shows by running the
# same steps with `--intercept none`: the container then starts, outside
# gold.
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_cmd containerd containerd
require_cmd ctr containerd
require_cmd runc runc
require_cmd containerd-shim-runc-v2 containerd
[ -x /bin/busybox ] || skip "/bin/busybox missing (Debian package busybox-static)"
file -L /bin/busybox 2>/dev/null | grep -q dynamic && skip "/bin/busybox is not static (install busybox-static)"
require_sandbox
require_daemon
HERE=$(cd "$(dirname "$0")" && pwd)

if [ -z "${RESCTRLFS_SANDBOX:-}" ]; then
  CTRD_WORK=$(mktemp -d /tmp/client-containerd.XXXXXX)
  export CTRD_WORK
  R=$CTRD_WORK/rootfs
  mkdir -p "$R/bin" "$R/proc" "$R/dev" "$R/sys" "$R/tmp"
  cp /bin/busybox "$R/bin/"
  for a in sh sleep cat; do ln -s busybox "$R/bin/$a"; done
  cp "$HERE/goresctrl/config.yaml" "$CTRD_WORK/rdt.yaml"
  echo "== with the supervisor (default --intercept all)"
  CTRD_EXPECT=gold "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform host -- bash "$0"
  rc=$?
  if [ $rc = 0 ]; then
    echo "== without it (--intercept none): the same steps leave the container outside gold"
    CTRD_EXPECT=outside "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform host \
      --intercept none -- bash "$0"
    rc=$?
  fi
  rm -rf "$CTRD_WORK"
  exit $rc
fi

W=$CTRD_WORK/$CTRD_EXPECT
mkdir -p "$W"
SOCK=$W/containerd.sock
RES=/sys/fs/resctrl
CTR=(ctr -a "$SOCK" -n resctrlfs-test)
ID=rdt$$
cat >"$W/config.toml" <<TOML
version = 2
root = "$W/root"
state = "$W/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.service.v1.tasks-service"]
  rdt_config_file = "$CTRD_WORK/rdt.yaml"
TOML

CTRD_PID=""
cleanup() {
  "${CTR[@]}" task kill -s KILL "$ID" >/dev/null 2>&1
  "${CTR[@]}" task delete -f "$ID" >/dev/null 2>&1
  "${CTR[@]}" container delete "$ID" >/dev/null 2>&1
  [ -n "$CTRD_PID" ] && kill "$CTRD_PID" 2>/dev/null && wait "$CTRD_PID" 2>/dev/null
}
trap cleanup EXIT

containerd --config "$W/config.toml" >"$W/containerd.log" 2>&1 &
CTRD_PID=$!
up() { "${CTR[@]}" version >/dev/null 2>&1; }
if ! wait_while_alive "$CTRD_PID" up; then
  echo "--- containerd log:" >&2
  tail -20 "$W/containerd.log" >&2
  skip "containerd did not start here (log above)"
fi
echo "containerd $(containerd --version | awk '{print $3}') is up (pid $CTRD_PID)"

if [ "$CTRD_EXPECT" = gold ]; then
  check "containerd's goresctrl created class gold from rdt_config_file" test -f $RES/gold/tasks
  check "and class silver" test -f $RES/silver/tasks
  full=$((16#$(cat $RES/info/L3/cbm_mask)))
  for d in $(schemata_ids L3); do
    s=$((16#$(schemata_value $RES/silver L3 "$d")))
    check "silver: L3 domain $d is a part of the mask ($s of $full)" \
      test $s -gt 0 -a $((s & ~full)) -eq 0 -a $s -lt $full
  done
else
  check "without the supervisor containerd's goresctrl finds no resctrl (no gold)" \
    test ! -e $RES/gold
  grep -i rdt "$W/containerd.log" | tail -2 | sed 's/^/  containerd: /'
fi

"${CTR[@]}" run -d --rdt-class gold --rootfs "$CTRD_WORK/rootfs" "$ID" \
  /bin/sh -c 'sleep 300 & exec /bin/sleep 301' >"$W/run.log" 2>&1
ran=$?
check_eq "ctr run -d --rdt-class gold succeeds" $ran 0
cat "$W/run.log"
task_pid() {
  "${CTR[@]}" task ls 2>/dev/null | awk -v id="$ID" '$1 == id && $3 == "RUNNING" {print $2}'
}
init=""
# The task was created; it is RUNNING once containerd says so (if it started).
[ "$ran" = 0 ] && wait_output init "$CTRD_PID" task_pid
check "the task is running (init pid ${init:-none})" test -n "$init"
child=""
wait_output child "${init:-x}" pgrep -P "${init:-x}"
child=$(head -1 <<<"$child")
check "the task's init forked a child (${child:-none})" test -n "$child"
if [ "$CTRD_EXPECT" = gold ]; then
  # A task that exited can no longer appear in a tasks file.
  check "the task's init ($init) is in gold/tasks" \
    wait_while_alive "${init:-x}" in_tasks $RES/gold "${init:-x}"
  check "its child ($child) is in gold/tasks" \
    wait_while_alive "${child:-x}" in_tasks $RES/gold "${child:-x}"
  check "the init is not in the root group's tasks" bash -c "! grep -qx '${init:-x}' $RES/tasks"
  check "the child is not in the root group's tasks" bash -c "! grep -qx '${child:-x}' $RES/tasks"
  shim=$(ps -o ppid= -p "${init:-1}" | tr -d ' ')
  check "runc ran under containerd-shim (the init's parent, $shim, is the shim)" \
    grep -q containerd-shim "/proc/${shim:-0}/cmdline"
else
  check "without the supervisor the init ($init) stays in the root group" in_tasks $RES "${init:-x}"
fi

"${CTR[@]}" task kill -s KILL "$ID" >/dev/null 2>&1
check "the task exits after SIGKILL" wait_while_alive "${init:-x}" exited "${init:-1}"
"${CTR[@]}" task delete "$ID" >/dev/null 2>&1
"${CTR[@]}" container delete "$ID" >/dev/null 2>&1
container_gone() { ! "${CTR[@]}" container ls -q | grep -qx "$ID"; }
check "the container is gone" container_gone
if [ "$CTRD_EXPECT" = gold ]; then
  check "the pids left gold/tasks" bash -c "! grep -qxE '${init:-x}|${child:-x}' $RES/gold/tasks"
fi
finish
