#!/bin/bash
# One shell-level writer of the concurrency test: OPS random resctrl
# commands (mkdir/rmdir of CTRL_MON and MON groups, schemata, tasks, cpus,
# mode) on the tree at MNT, each optionally under flock on the root.
# Errors of single commands are expected (races with other writers) and
# ignored; the test checks the final tree.
# Usage: concurrent_writer.sh MNT OPS SEED USE_FLOCK TID...
mnt=$1
ops=$2
RANDOM=$3
use_flock=$4
shift 4
tids=("$@")

group() { echo "c$((RANDOM % 6))"; }

one_op() {
  local g
  g=$(group)
  case $((RANDOM % 10)) in
    0 | 1) mkdir "$mnt/$g" ;;
    2) rmdir "$mnt/$g" ;;
    3) printf 'L3:0=%x;1=%x\n' $(((1 << (RANDOM % 11 + 1)) - 1)) \
         $(((1 << (RANDOM % 11 + 1)) - 1)) >"$mnt/$g/schemata" ;;
    4) echo "${tids[RANDOM % ${#tids[@]}]}" >"$mnt/$g/tasks" ;;
    5) echo "${tids[RANDOM % ${#tids[@]}]}" >"$mnt/tasks" ;;
    6) echo "$((RANDOM % 8))-$((RANDOM % 8))" >"$mnt/$g/cpus_list" ;;
    7) if ((RANDOM % 2)); then echo exclusive; else echo shareable; fi >"$mnt/$g/mode" ;;
    8) mkdir "$mnt/$g/mon_groups/m$((RANDOM % 3))" ;;
    9) rmdir "$mnt/$g/mon_groups/m$((RANDOM % 3))" ;;
  esac
} 2>/dev/null

for ((i = 0; i < ops; i++)); do
  if [ "$use_flock" = 1 ]; then
    {
      flock 9
      one_op
    } 9<"$mnt"
  else
    one_op
  fi
done
exit 0
