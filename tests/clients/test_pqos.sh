#!/usr/bin/env bash
# pqos and rdtset (intel-cmt-cat, OS interface) against resctrlfsd, on one
# socket (platform `host`, SOCKETS=1) or two (SOCKETS=2: a profile with this
# CPU's vendor, the host's CPUs split over two packages with one L3 each, and
# sysfs ids bound to agree; `builtin`: the two-socket built-in of this CPU's
# vendor, amd-2s or intel-2s, fitted to the host's CPUs). pqos reads the vendor through CPUID, so the
# simulated vendor must be the host's: on AMD it takes MB values in AMD units
# and L3 ids as domain ids, on Intel percentages and socket ids.
# Every step is checked against the files in /sys/fs/resctrl.
# usage: test_pqos.sh [1|2|builtin]
set -u
SCRIPT_ARGS=("$@")
MODE=${1:-1}
SOCKETS=${MODE/builtin/2}
. "$(dirname "$0")/lib.sh"
TEST_NAME="test_pqos_${MODE/builtin/builtin_2}s${TEST_SUFFIX:-}"
require_root
require_fuse
require_cmd pqos intel-cmt-cat
require_cmd rdtset intel-cmt-cat
require_sandbox
require_daemon

if [ -z "${RESCTRLFS_SANDBOX:-}" ]; then
  CTLSOCK=/tmp/client-pqos-$$.sock
  export RESCTRLFS_CONTROL=$CTLSOCK
  if [ "$SOCKETS" = 1 ]; then
    enter_sandbox --platform host --control "$CTLSOCK"
  fi
  [ "$(host_cpus)" -ge 2 ] || skip "two sockets need at least 2 CPUs (host has $(host_cpus))"
  if [ "$MODE" = builtin ]; then
    if [ "$(host_vendor)" = AuthenticAMD ]; then P=amd-2s; else P=intel-2s; fi
    enter_sandbox --platform "$P" --control "$CTLSOCK"
  fi
  PLATFORM_JSON=$(mktemp /tmp/client-pqos-2s.XXXXXX.json)
  make_platform_json "$PLATFORM_JSON" "$(host_vendor)" 2 full
  echo "== two-socket profile for vendor $(host_vendor):"
  cat "$PLATFORM_JSON"
  "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform "$PLATFORM_JSON" \
    --control "$CTLSOCK" -- bash "$0" "$@"
  rc=$?
  rm -f "$PLATFORM_JSON"
  exit $rc
fi

R=/sys/fs/resctrl
PQ="pqos -I"
# No PMU in a VM: pqos would add IPC and LLC-miss perf events to monitoring.
MON="--disable-mon-ipc --disable-mon-llc_miss"
VENDOR=$(host_vendor)
L3_IDS=$(schemata_ids L3)
MB_IDS=$(schemata_ids MB)
NCPU=$(host_cpus)
# pqos -s lists the classes per package (amd-2s has two L3s in one package).
PKGS=$(cat /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id | sort -u | wc -l)
ALL_CPUS=$(cat /sys/devices/system/cpu/online)
CBM_FULL=$((16#$(cat $R/info/L3/cbm_mask)))
set -- $MB_IDS
MB_MAX=$(schemata_value $R MB "$1")
WORK=$(mktemp -d /tmp/client-pqos.XXXXXX)
sleep 600 &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf "$WORK"' EXIT
echo "vendor $VENDOR, L3 domains [$L3_IDS], MB domains [$MB_IDS], MB max $MB_MAX, CPUs $ALL_CPUS"
check_eq "L3 domains as expected for $SOCKETS socket(s)" "$(wc -w <<<"$L3_IDS")" "$SOCKETS"

# pqos 4.5 predates AMD's assignable counters (ABMC): in mbm_event mode its
# 15 COS groups take the counters and its monitoring groups read
# "Unassigned". A pqos user on such a machine switches to default mode.
if [ -f $R/info/L3_MON/mbm_assign_mode ] && grep -q '^\[mbm_event\]' $R/info/L3_MON/mbm_assign_mode; then
  echo default >$R/info/L3_MON/mbm_assign_mode
  check_match "ABMC: switched mbm_assign_mode to default for pqos" \
    "$(cat $R/info/L3_MON/mbm_assign_mode)" '^\[default\]$'
fi

# group COSk -> its directory (COS0 is the root)
gdir() { if [ "$1" = 0 ]; then echo $R; else echo $R/COS$1; fi; }

echo "== pqos -d (capabilities)"
$PQ -d >"$WORK/d" 2>&1
check_eq "pqos -d exit status" $? 0
cat "$WORK/d"
out=$(cat "$WORK/d")
check_match "-d shows L3 CAT (info/L3 exists)" "$out" '^ +L3 CAT$'
check_match "-d shows MBA (info/MB exists)" "$out" '^ +Memory Bandwidth Allocation \(MBA\)$'
check_match "-d shows L3 CAT CDP disabled (no info/L3CODE)" "$out" 'CDP: disabled'
grep -qx llc_occupancy $R/info/L3_MON/mon_features &&
  check_match "-d shows LLC occupancy (in mon_features)" "$out" 'LLC Occupancy'
grep -qx mbm_total_bytes $R/info/L3_MON/mon_features &&
  check_match "-d shows total memory bandwidth (in mon_features)" "$out" 'Total Memory Bandwidth'
grep -qx mbm_local_bytes $R/info/L3_MON/mon_features &&
  check_match "-d shows local memory bandwidth (in mon_features)" "$out" 'Local Memory Bandwidth'
NCOS=$(for f in $R/info/L3/num_closids $R/info/MB/num_closids; do cat $f; done | sort -n | head -1)
# pqos uses the smallest num_closids of all resources for every technology
# (older versions showed L3's own count).
check_match "-d L3 CAT Num COS is from info/*/num_closids" "$out" "Num COS: ($NCOS|$(cat $R/info/L3/num_closids))\$"
check_eq "pqos created COS1..COS$((NCOS - 1))" "$(ls -d $R/COS* | wc -l)" $((NCOS - 1))
LAST=$((NCOS - 1))

# compare_s FILE: every "L3CA COSk => MASK 0xV" and "MBA COSk => V..." line of
# pqos -s under a "for Socket|L3ID N" header must match COSk's schemata.
compare_s() {
  local dom="" line k v bad=0 n=0
  while IFS= read -r line; do
    if [[ $line =~ COS\ definitions\ for\ .*\ ([0-9]+):$ ]]; then dom=${BASH_REMATCH[1]}; continue; fi
    if [[ $line =~ ^\ +L3CA\ COS([0-9]+)\ =\>\ MASK\ 0x([0-9a-f]+)$ ]]; then
      k=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]}
      n=$((n + 1))
      [ "$((16#$v))" = "$((16#$(schemata_value "$(gdir $k)" L3 "$dom")))" ] || { echo "  COS$k L3 domain $dom: pqos 0x$v, schemata $(schemata_value "$(gdir $k)" L3 "$dom")"; bad=1; }
    elif [[ $line =~ ^\ +MBA\ COS([0-9]+)\ =\>\ ([0-9]+)%?\ available$ ]]; then
      k=${BASH_REMATCH[1]} v=${BASH_REMATCH[2]}
      n=$((n + 1))
      [ "$v" = "$(schemata_value "$(gdir $k)" MB "$dom")" ] || { echo "  COS$k MB domain $dom: pqos $v, schemata $(schemata_value "$(gdir $k)" MB "$dom")"; bad=1; }
    fi
  done <"$1"
  echo "  ($n definitions compared)"
  [ $bad = 0 ] && [ $n -ge $((2 * NCOS * PKGS)) ]
}

echo "== pqos -s (allocation display)"
$PQ -s >"$WORK/s" 2>&1
check_eq "pqos -s exit status" $? 0
check "-s COS definitions of every domain match the schemata files" compare_s "$WORK/s"
for c in $(seq 0 $((NCPU - 1))); do
  check_match "-s shows core $c in COS0" "$(cat "$WORK/s")" "Core $c, .* => COS0"
done

echo "== pqos -e llc / mba (set classes)"
set -- $L3_IDS
if [ "$SOCKETS" = 1 ]; then
  EXP_L3=([$1]=3)
  $PQ -e "llc:1=0x3" >"$WORK/e" 2>&1
else
  EXP_L3=([$1]=3 [$2]=12)
  $PQ -e "llc@$1:1=0x3;llc@$2:1=0xc" >"$WORK/e" 2>&1
fi
check_eq "pqos -e llc exit status" $? 0
for d in $L3_IDS; do
  check_eq "COS1 L3 domain $d = ${EXP_L3[$d]}" "$((16#$(schemata_value $R/COS1 L3 $d)))" "${EXP_L3[$d]}"
  check_eq "COS2 L3 domain $d untouched" "$((16#$(schemata_value $R/COS2 L3 $d)))" "$CBM_FULL"
done
for d in $MB_IDS; do
  check_eq "COS1 MB domain $d kept by the L3 write (merge)" "$(schemata_value $R/COS1 MB $d)" "$MB_MAX"
done
$PQ -e "mba:1=50" >"$WORK/e" 2>&1
check_eq "pqos -e mba:1=50 exit status" $? 0
cat "$WORK/e" | grep -v '^NOTE\|^ *CAT or'
check_nomatch "pqos did not switch to the MBps controller" "$(cat "$WORK/e")" 'Expected MBA controller|MBA CTRL'
for d in $MB_IDS; do
  check_eq "COS1 MB domain $d = 50" "$(schemata_value $R/COS1 MB $d)" 50
  check_eq "COS1 L3 domain kept by the MB write (merge)" "$((16#$(schemata_value $R/COS1 L3 $d)))" "${EXP_L3[$d]:-$CBM_FULL}"
done
# pqos (Intel) probes the MBps controller by writing MB:<id>=200 to a free
# group: that write must fail in percent mode. On AMD the MB unit is 1/8
# GB/s up to the maximum, so over-maximum is the invalid value there.
if [ "$VENDOR" = AuthenticAMD ]; then OVER=$((MB_MAX * 2)); else OVER=200; fi
set -- $MB_IDS
if printf 'MB:%s=%s\n' "$1" "$OVER" >$R/COS$LAST/schemata 2>/dev/null; then
  fail "MB:$1=$OVER (the pqos MBps probe) must be rejected"
else
  pass "MB:$1=$OVER (the pqos MBps probe) is rejected"
fi
check_nomatch "last_cmd_status explains the rejection" "$(cat $R/info/last_cmd_status)" '^ok$'
check_eq "the probed group keeps MB at the maximum" "$(schemata_value $R/COS$LAST MB "$1")" "$MB_MAX"
over=$(for g in $R $R/COS*; do for d in $MB_IDS; do schemata_value $g MB $d; done; done | awk -v m=$MB_MAX '$1 > m' | wc -l)
check_eq "no group's MB is above the maximum (percent/unit mode kept)" "$over" 0
$PQ -s >"$WORK/s" 2>&1
check "-s after -e matches the schemata files" compare_s "$WORK/s"

echo "== pqos -a (associate a core and a live process)"
$PQ -a "llc:1=0" >"$WORK/a" 2>&1
check_eq "pqos -a llc:1=0 exit status" $? 0
check_eq "COS1/cpus_list is 0" "$(cat $R/COS1/cpus_list)" 0
check_nomatch "core 0 left the root group" "$(cat $R/cpus_list | tr ',' '\n')" '^0(-|$)'
$PQ -a "pid:2=$PID" >"$WORK/a" 2>&1
check_eq "pqos -a pid:2=$PID exit status" $? 0
check "pid $PID is in COS2/tasks" in_tasks $R/COS2 $PID
check "pid $PID left the root tasks" bash -c "! grep -qx $PID $R/tasks"
$PQ -s >"$WORK/s" 2>&1
check_match "-s shows core 0 in COS1" "$(cat "$WORK/s")" 'Core 0, .* => COS1'
check_match "-s shows the pid in COS2" "$(cat "$WORK/s")" "COS2 => .*\\b$PID\\b"

echo "== pqos -m / -p (monitoring for 2 seconds)"
mon_groups_with() {  # mon_groups_with FILE VALUE: mon groups whose FILE is VALUE
  local g
  for g in $R/mon_groups/pqos-* $R/COS*/mon_groups/pqos-*; do
    [ -d "$g" ] && [ "$(cat $g/$1 2>/dev/null)" = "$2" ] && echo "$g"
  done
}
# Synthetic load through the daemon's control socket, so that the counts
# pqos prints must come from the simulated counters through the tree.
# Under the msr label the load is resctrl-fakehw's (the daemon has no
# simulated machine), and only on CPUs: a thread workload needs the
# simulated scheduler.
CTL=$(dirname "$RESCTRLFSD_BIN")/resctrlfsctl
LOADED=0
TASK_LOADED=0
if [ -x "$CTL" ] && [ -S "${RESCTRLFS_HW_CONTROL:-${RESCTRLFS_CONTROL:-}}" ]; then
  hwctl workload --cpu 0 --footprint $((4 << 20)) --bandwidth 1000 --local 1 >/dev/null && LOADED=1
  check_eq "synthetic workload attached on cpu 0" $LOADED 1
  if ! msr_skip "a workload on pid $PID" "thread workloads exist only on the simulated machine"; then
    "$CTL" workload --tid $PID --footprint $((2 << 20)) --bandwidth 500 --local 1 >/dev/null &&
      TASK_LOADED=1
    check_eq "synthetic workload attached to pid $PID" $TASK_LOADED 1
  fi
else
  echo "*** no resctrlfsctl or control socket: monitoring values are not checked ***" >&2
fi
# last_sample FILE ID: the LLC and MBL columns of ID's last sample line
# (-m lines: CORE LLC MBL MBR; -p lines: PID CORE LLC MBL MBR)
last_sample() { awk -v id="$2" '$1 == id {v = $(NF - 2) " " $(NF - 1)} END {print v}' "$1"; }
$PQ $MON -m "all:0,1" -t 3 -i 5 >"$WORK/m" 2>&1 &
mpid=$!
has_mon_group() { mon_groups_with "$1" "$2" | grep -q "^$3"; }  # FILE VALUE PREFIX
# pqos monitors for 3 s (-t 3) once it has started, however long that takes.
check "while -m runs, core 0 has a mon group under COS1" \
  wait_while_alive $mpid has_mon_group cpus_list 0 "$R/COS1/mon_groups/pqos-"
[ "$NCPU" -ge 2 ] &&
  check "while -m runs, core 1 has a mon group under the root" \
    wait_while_alive $mpid has_mon_group cpus_list 1 "$R/mon_groups/pqos-"
wait $mpid
check_eq "pqos -m exit status" $? 0
cat "$WORK/m" | tail -4
check_match "-m printed a sample line for core 0" "$(cat "$WORK/m")" '^ +0( +[0-9.]+k?){3}$'
if [ $LOADED = 1 ]; then
  read -r llc mbl <<<"$(last_sample "$WORK/m" 0)"
  check "-m: core 0 (loaded) shows LLC occupancy ($llc KB) and local bandwidth ($mbl MB/s)" \
    awk -v a="${llc:-0}" -v b="${mbl:-0}" 'BEGIN {exit !(a > 0 && b > 0)}'
fi
check_eq "mon groups removed after -m" "$(ls -d $R/mon_groups/pqos-* $R/COS*/mon_groups/pqos-* 2>/dev/null)" ""
$PQ $MON -p "all:$PID" -t 3 -i 5 >"$WORK/p" 2>&1 &
mpid=$!
check "while -p runs, pid $PID has a mon group under COS2" \
  wait_while_alive $mpid has_mon_group tasks $PID "$R/COS2/mon_groups/pqos-"
wait $mpid
check_eq "pqos -p exit status" $? 0
check_match "-p printed a sample line for the pid" "$(cat "$WORK/p")" "^ +$PID +"
# On real hardware the pid's group (tasks, no CPUs) reads Unavailable, which
# pqos 4.5 shows as zeros.
if msr_skip "-p: values for pid $PID" "its group holds tasks and no CPUs; checked to show zeros"; then
  check_eq "-p: pid $PID's group reads Unavailable, pqos shows zeros" \
    "$(last_sample "$WORK/p" $PID)" "0.0 0.0"
fi
if [ $TASK_LOADED = 1 ]; then
  read -r llc mbl <<<"$(last_sample "$WORK/p" $PID)"
  check "-p: pid $PID (loaded) shows LLC occupancy ($llc KB) and local bandwidth ($mbl MB/s)" \
    awk -v a="${llc:-0}" -v b="${mbl:-0}" 'BEGIN {exit !(a > 0 && b > 0)}'
fi
check_eq "mon groups removed after -p" "$(ls -d $R/mon_groups/pqos-* $R/COS*/mon_groups/pqos-* 2>/dev/null)" ""

echo "== pqos -R (reset)"
$PQ -R >"$WORK/R" 2>&1
check_eq "pqos -R exit status" $? 0
bad=0
for k in $(seq 1 $LAST); do
  for d in $L3_IDS; do [ "$((16#$(schemata_value $R/COS$k L3 $d)))" = "$CBM_FULL" ] || bad=1; done
  for d in $MB_IDS; do [ "$(schemata_value $R/COS$k MB $d)" = "$MB_MAX" ] || bad=1; done
  [ -z "$(cat $R/COS$k/cpus_list)" ] && [ -z "$(cat $R/COS$k/tasks)" ] || bad=1
done
check_eq "after -R every COS has default schemata, no CPUs, no tasks" $bad 0
check_eq "after -R the root owns every CPU" "$(cat $R/cpus_list)" "$ALL_CPUS"
check "after -R pid $PID is back in the root" in_tasks $R $PID

echo "== rdtset -I (run a command with a class)"
l3_of_cpu0=$(cat $(dirname $(grep -l '^3$' /sys/devices/system/cpu/cpu0/cache/index*/level))/id)
# The command runs until the test lets it go (one byte on a FIFO the test
# holds open), not for a time the checks below would have to fit in.
mkfifo "$WORK/rdtset.go"
exec 3<>"$WORK/rdtset.go"
rdtset -I -t 'l3=0xf' -c 0 -- sh -c "echo \$\$ > $WORK/rdtset.pid; exec head -c1 $WORK/rdtset.go" >"$WORK/rdtset" 2>&1 &
rpid=$!
# rdtset initialises the library (reading every task's group) before it
# starts the command: that can take a while on a loaded machine.
wait_while_alive $rpid test -s "$WORK/rdtset.pid"
sp=$(cat "$WORK/rdtset.pid" 2>/dev/null)
check "rdtset started the command (pid ${sp:-none})" test -n "$sp"
find_group() {
  local g
  for g in $R/COS*; do in_tasks "$g" "$1" && { echo "$g"; return 0; }; done
  return 1
}
grp=""
wait_output grp "${sp:-x}" find_group "${sp:-x}"
check "the command's pid is in a COS group's tasks (${grp:-none})" test -n "$grp"
if [ -n "$grp" ]; then
  check_eq "that group's L3 on cpu0's domain $l3_of_cpu0 is 0xf" \
    "$((16#$(schemata_value $grp L3 $l3_of_cpu0)))" 15
fi
check_match "the command runs on cpu 0 only" "$(taskset -pc ${sp:-1} 2>&1)" 'list: 0$'
echo >&3  # the command ends
wait $rpid
exec 3>&-
check_eq "rdtset exit status (the command's)" $? 0
sed 's/^/  rdtset: /' "$WORK/rdtset" | tail -5
finish
