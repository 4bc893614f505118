#!/usr/bin/env bash
# goresctrl (Debian's golang-github-intel-goresctrl-dev, the library of
# containerd and CRI-O) against resctrlfsd: a small Go program built offline
# in GOPATH mode initialises rdt from the mount, configures classes from a
# YAML file, assigns a process to a class and a monitoring group and reads
# monitoring data; every effect is then checked in the tree. goresctrl finds
# the mount by fstype `resctrl` in /proc/self/mounts, which the sandbox's
# seccomp supervisor shows to every process: the program runs unwrapped.
# With `--intercept none` it finds no mount unless run through
# `resctrlfs-sandbox --` (checked first).
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_cmd go golang-go
GORESCTRL=/usr/share/gocode/src/github.com/intel/goresctrl/pkg/rdt
[ -d "$GORESCTRL" ] || skip "$GORESCTRL missing (Debian package golang-github-intel-goresctrl-dev)"
require_sandbox
require_daemon
HERE=$(cd "$(dirname "$0")" && pwd)

if [ -z "${RESCTRLFS_SANDBOX:-}" ]; then
  GOWORK=$(mktemp -d /tmp/client-goresctrl.XXXXXX)
  mkdir -p "$GOWORK/src/rdtclient"
  cp "$HERE/goresctrl/main.go" "$GOWORK/src/rdtclient/"
  echo "== building rdtclient offline (GOPATH mode against /usr/share/gocode)"
  if ! (cd "$GOWORK/src/rdtclient" && GO111MODULE=off GOPROXY=off GOFLAGS= GOCACHE="${CLIENT_GOCACHE:-$GOWORK/cache}" \
        GOPATH="$GOWORK:/usr/share/gocode" go build -o "$GOWORK/rdtclient" .); then
    rm -rf "$GOWORK"
    echo "FAIL: rdtclient does not build" >&2
    exit 1
  fi
  export GOWORK RESCTRLFS_CONTROL=$GOWORK/ctl.sock
  echo "== first pass: --intercept none"
  GORESCTRL_PASS=none "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform host \
    --intercept none -- bash "$0"
  rc=$?
  if [ $rc = 0 ]; then
    echo "== second pass: the default supervisor"
    GORESCTRL_PASS=all "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform host \
      --control "$RESCTRLFS_CONTROL" -- bash "$0"
    rc=$?
  fi
  rm -rf "$GOWORK"
  exit $rc
fi

SB=$RESCTRLFS_SANDBOX_BIN
R=/sys/fs/resctrl
CLIENT=$GOWORK/rdtclient
sleep 300 &
PID=$!
trap 'kill $PID 2>/dev/null' EXIT

if [ "${GORESCTRL_PASS:-all}" = none ]; then
  echo "== without the supervisor goresctrl finds no resctrl"
  out=$("$CLIENT" "$HERE/goresctrl/config.yaml" gold $PID 2>&1)
  check "plain rdtclient fails" test $? -ne 0
  check_match "plain rdtclient cannot find the mount" "$out" 'resctrl|mount'
  echo "== through resctrlfs-sandbox -- (COMMAND's own rewritten tables) it works"
  out=$("$SB" -- "$CLIENT" "$HERE/goresctrl/config.yaml" gold $PID 2>/dev/null)
  check_eq "rdtclient through resctrlfs-sandbox -- succeeds" $? 0
  check "pid $PID is in gold/tasks" in_tasks $R/gold $PID
  finish
fi

# A synthetic load on the process, so that the monitoring data goresctrl
# reads must come from the simulated counters through the tree.
CTL=$(dirname "$RESCTRLFSD_BIN")/resctrlfsctl
LOADED=0
if msr_skip "a workload on pid $PID" "thread workloads exist only on the simulated machine"; then
  :
elif [ -x "$CTL" ] && [ -S "${RESCTRLFS_CONTROL:-}" ]; then
  "$CTL" workload --tid $PID --footprint $((2 << 20)) --bandwidth 800 --local 1 >/dev/null && LOADED=1
  check_eq "synthetic workload attached to pid $PID" $LOADED 1
else
  echo "*** no resctrlfsctl or control socket: monitoring values are not checked ***" >&2
fi

echo "== rdtclient, unwrapped, inside the sandbox"
out=$("$CLIENT" "$HERE/goresctrl/config.yaml" gold $PID 2>"$GOWORK/stderr")
check_eq "rdtclient succeeds" $? 0
echo "$out"
grep -v 'DEBUG' "$GOWORK/stderr" | sed 's/^/  stderr: /' 
check_match "initialised from the mount" "$out" '^initialized yes$'
check_match "classes gold and silver configured" "$out" '^classes (.*,)?gold,silver(,.*)?$'
full=$((16#$(cat $R/info/L3/cbm_mask)))
for g in gold silver; do check "group $g exists" test -f "$R/$g/tasks"; done
for d in $(schemata_ids L3); do
  check_eq "gold: L3 domain $d is the full mask" "$((16#$(schemata_value $R/gold L3 $d)))" $full
  s=$((16#$(schemata_value $R/silver L3 $d)))
  check "silver: L3 domain $d is a part of the mask ($s of $full)" \
    test $s -gt 0 -a $((s & ~full)) -eq 0 -a $s -lt $full
done
# goresctrl counts MBA as supported only when info/MB/min_bandwidth is not 0;
# AMD's is 0 (bandwidth in 1/8 GB/s units), so there MB stays untouched.
if [ -d $R/info/MB ] && [ "$(cat $R/info/MB/min_bandwidth)" != 0 ]; then
  for d in $(schemata_ids MB); do
    check_eq "gold: MB domain $d is 50" "$(schemata_value $R/gold MB $d)" 50
    check_eq "silver: MB domain $d is 30" "$(schemata_value $R/silver MB $d)" 30
  done
elif [ -d $R/info/MB ]; then
  for d in $(schemata_ids MB); do
    max=$(schemata_value $R MB $d)
    check_eq "gold: MB domain $d untouched (goresctrl skips MB with min_bandwidth 0)" "$(schemata_value $R/gold MB $d)" "$max"
    check_eq "silver: MB domain $d untouched" "$(schemata_value $R/silver MB $d)" "$max"
  done
fi
check_match "the class reports the pid" "$out" "^class_pids (.*,)?$PID(,.*)?\$"
check "pid $PID is in gold/tasks" in_tasks $R/gold $PID
check "pid $PID left the root group" bash -c "! grep -qx $PID $R/tasks"
if [ -d $R/info/L3_MON ]; then
  mg=$(ls -d $R/gold/mon_groups/*mon1 2>/dev/null | head -1)
  check "monitoring group created under gold/mon_groups ($mg)" test -n "$mg"
  check "pid $PID is in the monitoring group" in_tasks "${mg:-/nonexistent}" $PID
  check_match "mon group reports the pid" "$out" "^mon_pids (.*,)?$PID(,.*)?\$"
  for ev in $(cat $R/info/L3_MON/mon_features); do
    case $ev in llc_occupancy | mbm_total_bytes | mbm_local_bytes) ;; *) continue ;; esac
    for dir in $R/gold/mon_data/mon_L3_*; do
      id=$((10#${dir##*_}))
      # Real hardware counts a thread's RMID only if someone switches it at
      # each context switch: a group of tasks and no CPUs reads Unavailable
      # there (docs/hardware.md, "Tasks on real hardware"), which goresctrl reports.
      if msr_skip "monitoring data of gold and mon1, domain $id, $ev" \
        "their groups hold tasks and no CPUs; checked to read Unavailable"; then
        check_eq "gold, domain $id, $ev reads Unavailable" "$(cat "$dir/$ev")" Unavailable
        check_eq "mon1, domain $id, $ev reads Unavailable" \
          "$(cat "${mg:-/nonexistent}/mon_data/${dir##*/}/$ev" 2>&1)" Unavailable
        check_nomatch "goresctrl printed no number for gold/mon1, domain $id, $ev" "$out" \
          "^mon_data [^ ]* $id $ev "
        continue
      fi
      check_match "monitoring data of gold, domain $id, $ev read" "$out" "^mon_data gold $id $ev [0-9]+\$"
      check_match "monitoring data of mon1, domain $id, $ev read" "$out" "^mon_data [^ ]*mon1 $id $ev [0-9]+\$"
    done
  done
  if on_msr; then
    check_match "goresctrl says why it has no monitoring data" "$(cat "$GOWORK/stderr")" \
      'error reading data file: .*"Unavailable"'
  fi
  if [ $LOADED = 1 ]; then
    # The workload started before the group existed: its count starts at
    # the group's creation; the client samples a second after the move.
    sleep 1
    v=$(cat "$mg/mon_data/mon_L3_00/mbm_local_bytes")
    check "mon1's mbm_local_bytes grows under the load ($v)" test "${v:-0}" -gt 0 2>/dev/null
    check_match "goresctrl read mon1's LLC occupancy under the load" "$out" '^mon_data [^ ]*mon1 [0-9]+ llc_occupancy [1-9][0-9]*$'
  fi
else
  check_match "no monitoring reported" "$out" '^monitoring no$'
fi

echo "== reconfiguring with force removes a class no longer configured"
sed '/silver:/,$d' "$HERE/goresctrl/config.yaml" >"$GOWORK/gold-only.yaml"
"$CLIENT" "$GOWORK/gold-only.yaml" gold $PID >/dev/null 2>"$GOWORK/stderr"
check_eq "rdtclient with a gold-only config succeeds" $? 0
check "silver is removed" bash -c "! test -e $R/silver"
check "pid $PID still in gold" in_tasks $R/gold $PID
finish
