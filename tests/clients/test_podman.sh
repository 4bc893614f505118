#!/usr/bin/env bash
# podman `--rdt-class` against resctrlfsd: podman puts the class in the OCI
# config as linux.intelRdt.closID, and its runtime (crun) moves the
# container's init into that existing group. Checked in the tree: with
# class gold made beforehand (with its schemata), `podman run -d
# --rdt-class gold` puts the init and the child it forks in gold/tasks and
# nowhere else, gold's schemata are untouched, and after `podman rm -f` the
# tasks are gone and gold is kept (a class is the administrator's). A
# class that does not exist is refused and makes no group. The container
# runs from a directory (--rootfs, a static busybox), with no network,
# podman's storage in a scratch directory and no cgroup of its own
# (--cgroups disabled: on the build machine's hybrid cgroup layout crun
# finds no pids controller on cgroup2 for podman's default pids limit; the
# cgroups are not what is tested here): no image, registry or systemd is
# needed.
# Registered for Debian 13's podman 5.4 only (client_trixie.podman,
# CLIENT_SUITE=trixie); dev.sh does not install podman or crun.
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_cmd podman podman
require_cmd crun crun
[ -x /bin/busybox ] || skip "/bin/busybox missing (Debian package busybox-static)"
file -L /bin/busybox 2>/dev/null | grep -q dynamic && skip "/bin/busybox is not static (install busybox-static)"
require_sandbox
require_daemon
enter_sandbox --platform host

declare -F trixie_unified_cgroup >/dev/null && trixie_unified_cgroup
R=/sys/fs/resctrl
WORK=$(mktemp -d /tmp/client-podman.XXXXXX)
CTR=rdtpod$$
PM_OPTS=(--root "$WORK/storage" --runroot "$WORK/run" --tmpdir "$WORK/tmp"
  --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime crun)
pm() { podman "${PM_OPTS[@]}" "$@"; }
# conmon starts `podman container cleanup` when a container exits, which
# writes to podman's directories after `podman rm` has returned: the
# scratch directory goes once no process names it.
podman_left() { pgrep -f -- "$WORK/" >/dev/null; }
cleanup() {
  pm rm -f -t 0 "$CTR" "${CTR}x" >/dev/null 2>&1
  wait_for eval '! podman_left'
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/rootfs/bin" "$WORK/tmp"
cp /bin/busybox "$WORK/rootfs/bin/"
for a in sh sleep cat; do ln -s busybox "$WORK/rootfs/bin/$a"; done
echo "podman $(pm version --format '{{.Client.Version}}' 2>&1), runtime $(crun --version 2>&1 | head -1)"

echo "== a class that does not exist is refused"
pm run -d --name "${CTR}x" --network none --cgroups disabled --rdt-class nosuch --rootfs "$WORK/rootfs" \
  /bin/sleep 300 >"$WORK/nosuch.log" 2>&1
rc=$?
check "podman run --rdt-class nosuch fails" test $rc -ne 0
echo "  podman said: $(tail -1 "$WORK/nosuch.log")"
check_match "it names the missing group" "$(cat "$WORK/nosuch.log")" 'nosuch'
check "no group nosuch was made" test ! -e $R/nosuch
pm rm -f -t 0 "${CTR}x" >/dev/null 2>&1

echo "== class gold, made beforehand"
mkdir $R/gold
L3_IDS=$(schemata_ids L3)
MB_IDS=$(schemata_ids MB)
for d in $L3_IDS; do echo "L3:$d=3" >$R/gold/schemata; done
for d in $MB_IDS; do echo "MB:$d=50" >$R/gold/schemata; done
before=$(cat $R/gold/schemata)
pm run -d --name "$CTR" --network none --cgroups disabled --rdt-class gold --rootfs "$WORK/rootfs" \
  /bin/sh -c 'sleep 300 & exec /bin/sleep 301' >"$WORK/run.log" 2>&1
ran=$?
check_eq "podman run -d --rdt-class gold succeeds" $ran 0
cat "$WORK/run.log"
pid_of() { pm inspect -f '{{.State.Pid}}' "$CTR" 2>/dev/null | grep -v '^0$'; }
init=""
[ $ran = 0 ] && wait_output init "" pid_of
check "the container runs (init pid ${init:-none})" test -n "$init"
# The OCI config podman handed to crun (in the container's userdata).
check_match "podman's OCI config names the class (linux.intelRdt.closID)" \
  "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["linux"]["intelRdt"])' \
    "$(ls "$WORK"/storage/vfs-containers/*/userdata/config.json | head -1)" 2>&1)" \
  "'closID': 'gold'"
child=""
wait_output child "${init:-x}" pgrep -P "${init:-x}"
child=$(head -1 <<<"$child")
check "the init forked a child (${child:-none})" test -n "$child"
check "the init ($init) is in gold/tasks" \
  wait_while_alive "${init:-x}" in_tasks $R/gold "${init:-x}"
check "its child ($child) is in gold/tasks (fork inheritance)" \
  wait_while_alive "${child:-x}" in_tasks $R/gold "${child:-x}"
check "the init is not in the root group's tasks" bash -c "! grep -qx '${init:-x}' $R/tasks"
check_eq "gold's schemata are the ones it was given" "$(cat $R/gold/schemata)" "$before"
for d in $L3_IDS; do
  check_eq "gold: L3 domain $d is 3" "$((16#$(schemata_value $R/gold L3 "$d")))" 3
done

echo "== podman rm -f"
pm rm -f -t 0 "$CTR" >"$WORK/rm.log" 2>&1
check_eq "podman rm -f succeeds" $? 0
check "the init has exited" wait_while_alive "${init:-x}" exited "${init:-1}"
no_tasks() { [ -z "$(cat $R/gold/tasks 2>&1)" ]; }
check "gold holds no tasks once the container is reaped" wait_for no_tasks
check "gold is kept" test -d $R/gold
finish
