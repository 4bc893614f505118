#!/usr/bin/env bash
# resctrlfs-sandbox with the built-in platforms on this host, and many
# sandboxes:
# - every built-in runs fitted to the host's CPUs (host CPU i of N takes the
#   place of the platform's CPU i*M/N of M): the tree keeps the platform's
#   domains and limits, and sysfs (package and cache ids, cache sizes) and
#   /proc/cpuinfo (physical id, cache size) agree with the tree: a synthetic
#   load on CPU c shows in the mon_data domain of c's sysfs L3 id, and the
#   root's `size` is the sysfs L3 size's share of the full mask. A platform
#   with more domains than the host has CPUs is refused with a message;
# - two sandboxes with different platforms at once, each with its own tree
#   and boot state;
# - 20 sandboxes started and stopped back to back, none seeing anything of
#   the one before (groups, RMID order, max_threshold_occupancy) and none
#   failing on the instance lock.
# Messages that would mean two instances met.
CLASH='already serves|lock|did not exit|do not fit|rejected|error'

set -u
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_sandbox
require_daemon
SB=$RESCTRLFS_SANDBOX_BIN
CTL=$(dirname "$RESCTRLFSD_BIN")/resctrlfsctl
WORK=$(mktemp -d /tmp/client-sbp.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
NCPU=$(host_cpus)
sb() { "$SB" --daemon "$RESCTRLFSD_BIN" "$@"; }

# What a platform's COMMAND reports, one "key value..." line per fact.
cat >"$WORK/report.sh" <<'EOF'
R=/sys/fs/resctrl
echo "l3ids $(sed -n 's/^ *L3:\(.*\)$/\1/p' $R/schemata | tr ';' '\n' | cut -d= -f1 | sort -n | tr '\n' ' ')"
echo "cbm_mask $(cat $R/info/L3/cbm_mask 2>/dev/null)"
echo "num_closids $(cat $R/info/L3/num_closids 2>/dev/null)"
echo "num_rmids $(cat $R/info/L3_MON/num_rmids 2>/dev/null)"
echo "size $(sed -n 's/^ *L3:\(.*\)$/\1/p' $R/size)"
for d in /sys/devices/system/cpu/cpu[0-9]*; do
  c=${d##*cpu}
  l3=$(dirname "$(grep -lx 3 $d/cache/index*/level 2>/dev/null | head -1)")
  echo "cpu $c package $(cat $d/topology/physical_package_id) l3 $(cat $l3/id 2>/dev/null) l3size $(cat $l3/size 2>/dev/null) l3cpus $(cat $l3/shared_cpu_list 2>/dev/null)"
done
awk -F'\t*: ' '/^processor/ {p = $2} /^physical id/ {print "cpuinfo " p " package " $2} /^cache size/ {print "cpuinfo " p " cache " $2}' /proc/cpuinfo
EOF

# The platform's numbers, from its definition in hw/sim/profile.cc.
declare -A L3SIZE=([intel-2s]=16384K [intel-bdx]=16384K [intel-l2]=8192K [intel-cmt]=8192K
  [amd-2s]=32768K [amd-io]=32768K [intel-snc]=30720K [intel-aet]=589824K)
declare -A CPUINFO_CACHE=([intel-2s]="16384 KB" [intel-bdx]="16384 KB" [intel-l2]="8192 KB"
  [intel-cmt]="8192 KB" [amd-2s]="512 KB" [amd-io]="512 KB" [intel-snc]="30720 KB"
  [intel-aet]="589824 KB")
declare -A DOMAINS=([intel-2s]=2 [intel-bdx]=2 [intel-l2]=1 [intel-cmt]=1 [amd-2s]=2 [amd-io]=2
  [intel-snc]=4 [intel-aet]=2)
declare -A L3IDS=([intel-2s]="0 1 " [intel-bdx]="0 1 " [intel-l2]="0 " [intel-cmt]="" [amd-2s]="0 1 "
  [amd-io]="0 1 " [intel-snc]="0 1 " [intel-aet]="0 1 ")

echo "== every built-in fitted to this host's $NCPU CPUs"
for P in intel-2s intel-bdx intel-l2 intel-cmt amd-2s amd-io intel-snc intel-aet; do
  echo "-- $P"
  out=$(sb --platform "$P" -- bash "$WORK/report.sh" 2>"$WORK/err")
  rc=$?
  if [ "$NCPU" -lt "${DOMAINS[$P]}" ]; then
    check_eq "$P: refused on $NCPU CPUs (125)" $rc 125
    check_match "$P: the refusal names the CPUs it needs" "$(cat "$WORK/err")" \
      "needs at least ${DOMAINS[$P]}, one per domain"
    continue
  fi
  check_eq "$P: runs on $NCPU CPUs" $rc 0
  [ $rc = 0 ] || { sed 's/^/  /' "$WORK/err"; continue; }
  check_eq "$P: the tree's L3 domains" "$(sed -n 's/^l3ids //p' <<<"$out")" "${L3IDS[$P]}"
  if [ -n "${L3IDS[$P]}" ]; then
    sysfs_ids=$(awk '$1 == "cpu" {print $6}' <<<"$out" | sort -nu | tr '\n' ' ')
    check_eq "$P: sysfs L3 ids are the tree's domains" "$sysfs_ids" "${L3IDS[$P]}"
    mask=$(sed -n 's/^cbm_mask //p' <<<"$out")
    bits=$(python3 -c "print(bin(int('$mask', 16)).count('1'))")
    kb=${L3SIZE[$P]%K}
    want=$(for d in ${L3IDS[$P]}; do echo -n "$d=$((kb * 1024 / bits * bits));"; done)
    check_eq "$P: root size = the sysfs L3 size's share of the full mask" \
      "$(sed -n 's/^size //p' <<<"$out" | tr -d ' ');" "$want"
  fi
  check_eq "$P: every CPU's sysfs L3 size is the platform's" \
    "$(awk '$1 == "cpu" {print $8}' <<<"$out" | sort -u)" "${L3SIZE[$P]}"
  bad=$(awk '$1 == "cpu" {pkg[$2] = $4} $1 == "cpuinfo" && $3 == "package" && pkg[$2] != $4 {print}' <<<"$out")
  check_eq "$P: cpuinfo's physical id is sysfs's package id for every CPU" "$bad" ""
  check_eq "$P: cpuinfo's cache size (L3 on Intel, L2 on AMD)" \
    "$(awk '$1 == "cpuinfo" && $3 == "cache" {print $4, $5}' <<<"$out" | sort -u)" "${CPUINFO_CACHE[$P]}"
done

# (Under the msr label the load is resctrl-fakehw's: msr_sandbox.sh gives
# COMMAND its control socket as RESCTRLFS_HW_CONTROL.)
echo "== the daemon's CPUs are sysfs's: a load on CPU c shows in c's L3 domain"
for P in intel-2s amd-2s; do
  [ "$NCPU" -ge 2 ] || break
  out=$(sb --platform "$P" --control "$WORK/ctl.sock" -- bash -c '
    R=/sys/fs/resctrl
    for d in /sys/devices/system/cpu/cpu[0-9]*; do
      c=${d##*cpu}
      l3=$(cat $(dirname "$(grep -lx 3 $d/cache/index*/level | head -1)")/id)
      mkdir $R/mon_groups/c$c && echo $c >$R/mon_groups/c$c/cpus_list || exit 3
      '"$CTL"' --socket "${RESCTRLFS_HW_CONTROL:-'"$WORK/ctl.sock"'}" workload --cpu $c --footprint 4194304 --bandwidth 1000 --local 1 >/dev/null || exit 4
      echo "cpu $c l3 $l3"
    done
    sleep 1
    for g in $R/mon_groups/c*; do
      for m in $g/mon_data/mon_L3_*; do echo "occ ${g##*/c} ${m##*_} $(cat $m/llc_occupancy)"; done
    done' 2>"$WORK/err")
  check_eq "$P: the load ran" $? 0
  bad=$(awk '$1 == "cpu" {l3[$2] = $4 + 0}
             $1 == "occ" && (($3 + 0 == l3[$2]) != ($4 > 0)) {print "cpu " $2 " domain " $3 ": " $4}' <<<"$out")
  check_eq "$P: occupancy only in each CPU's own sysfs L3 domain" "$bad" ""
  check "$P: some occupancy was measured" grep -qE '^occ [0-9]+ [0-9]+ [1-9]' <<<"$out"
done

echo "== two sandboxes with different platforms at once"
rm -f "$WORK"/a.*
sb --platform intel-2s -- bash -c "
  R=/sys/fs/resctrl
  mkdir \$R/ga && echo 131072 >\$R/info/L3_MON/max_threshold_occupancy || exit 3
  touch $WORK/a.ready
  until [ -e $WORK/a.go ]; do sleep 0.1; done
  echo \"ga \$(test -d \$R/ga && echo yes) gb \$(test -d \$R/gb && echo yes)\"
  echo \"threshold \$(cat \$R/info/L3_MON/max_threshold_occupancy) mask \$(cat \$R/info/L3/cbm_mask)\"
" >"$WORK/a.out" 2>"$WORK/a.err" &
apid=$!
check "the first sandbox (intel-2s) is ready" wait_while_alive "$apid" test -e "$WORK/a.ready"
out=$(sb --platform amd-2s -- bash -c '
  R=/sys/fs/resctrl
  echo "ga $(test -d $R/ga && echo yes) threshold $(cat $R/info/L3_MON/max_threshold_occupancy) mask $(cat $R/info/L3/cbm_mask)"
  mkdir $R/gb && echo 32768 >$R/info/L3_MON/max_threshold_occupancy' 2>"$WORK/b.err")
check_eq "the second sandbox (amd-2s) runs while the first does" $? 0
check_match "the second sees its own platform, no group and the default threshold" "$out" \
  '^ga  threshold [0-9]+ mask ffff$'
check_nomatch "the second's threshold is not the first's" "$out" 'threshold 131072 '
touch "$WORK/a.go"
wait $apid
check_eq "the first sandbox finished normally" $? 0
check_eq "the first kept its own tree and boot state" "$(cat "$WORK/a.out")" \
  "$(printf 'ga yes gb \nthreshold 131072 mask 7ff')"
check_nomatch "no lock error or clash in either" "$(cat "$WORK/a.err" "$WORK/b.err")" "$CLASH"

echo "== a profile whose CPUID has LWP shows the lwp cpuinfo flag (recognised, never used)"
# The FX-8150's LWP leaf (8000_001Ch) and 8000_0001h ECX[15] over an AMD
# profile: the sandbox's /proc/cpuinfo gains "lwp", as Linux shows it.
{
  printf '{"vendor": "AuthenticAMD", "family": 23, "model": 49, "cpus": ['
  for c in $(seq 0 $((NCPU - 1))); do
    [ "$c" -gt 0 ] && printf ', '
    printf '{"cpu": %d, "package": 0, "l2": %d, "l3": 0}' "$c" "$c"
  done
  printf '], "l3_size_bytes": 16777216, "l2_size_bytes": 524288,\n'
  printf ' "l3_cat": {"cbm_len": 16, "num_closid": 16},\n'
  printf ' "cpuid": {"0x80000001.0": ["0x00830f10", "0x00000000", "0x00008000", "0x00000000"],\n'
  printf '           "0x8000001c.0": ["0x00000000", "0x80032013", "0x00010200", "0x8000000f"]}}\n'
} >"$WORK/lwp.json"
flags=$(sb --platform "$WORK/lwp.json" -- sh -c "grep -m1 '^flags' /proc/cpuinfo" 2>"$WORK/err")
check_match "an LWP profile's cpuinfo flags include lwp ($(head -c 300 "$WORK/err"))" "$flags" ' lwp( |$)'
flags=$(sb --platform amd-2s -- sh -c "grep -m1 '^flags' /proc/cpuinfo" 2>/dev/null)
check_match "amd-2s's cpuinfo has flags" "$flags" '^flags'
check_eq "amd-2s's cpuinfo has no lwp flag" "$(grep -c ' lwp\( \|$\)' <<<"$flags")" 0

echo "== 20 sandboxes back to back"
default=$(sb --platform intel-2s -- cat /sys/fs/resctrl/info/L3_MON/max_threshold_occupancy 2>/dev/null)
check_match "a fresh sandbox's max_threshold_occupancy" "$default" '^[0-9]+$'
fails=0
for i in $(seq 20); do
  out=$(sb --platform intel-2s -o debug -- bash -c '
    R=/sys/fs/resctrl
    echo "$(ls $R | grep -c ^g) $(cat $R/info/L3_MON/max_threshold_occupancy)"
    mkdir $R/g1 && cat $R/g1/mon_hw_id && rmdir $R/g1 &&
      echo '$((i * 4096))' >$R/info/L3_MON/max_threshold_occupancy' 2>"$WORK/err")
  rc=$?
  if [ $rc != 0 ] || [ "$out" != "$(printf '0 %s\n1' "$default")" ] ||
    grep -qE "$CLASH" "$WORK/err"; then
    fails=$((fails + 1))
    echo "  sandbox $i: status $rc, saw: $(tr '\n' ' ' <<<"$out") stderr: $(cat "$WORK/err")"
  fi
done
check_eq "20 sandboxes: each exits 0 with no clash, no group, RMID 1 first, the default threshold" \
  $fails 0
finish
