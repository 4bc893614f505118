#!/bin/bash
# Runs the resctrlfs benchmark: one command, one run, every figure a ratio
# measured on this machine in this run.
#
#   bench/run.sh [--quick] [--out FILE] [--build DIR] [-- RESCTRLFS_BENCH_ARGS...]
#
# As root (it mounts FUSE filesystems and a tmpfs). It builds floor_fs,
# resctrlfs_bench and resctrlfsd in DIR (default build-bench), then, in a
# temporary directory:
#   - mounts resctrlfsd on a generated simulated platform (2 L3 domains,
#     2048 RMIDs, so N=1024 MON groups fit) and floor_fs, the minimal FUSE
#     filesystem with the same libfuse settings;
#   - copies the resctrlfs tree into a private tmpfs;
#   - runs resctrlfs_bench against resctrlfs, floor, sysfs, /proc and tmpfs:
#     per-operation latencies pinned and unpinned with 1 and 2 client
#     threads, `cat` as a process, request counts, daemon CPU per request,
#     scale sweeps over N = 64, 256, 1024 MON groups, tasks files with 10k and
#     100k threads (or the most this machine allows, said loudly);
#   - prints the table and writes JSON to FILE (default
#     bench/results/latest.json);
#   - runs exporter_bench: a resctrlfs-exporter scrape of 1000 MON groups
#     against the raw pread sweep of the same files (JSON in FILE with
#     -exporter before .json), then unmounts everything.
# --quick: one run per figure with fewer iterations and only the 10k tasks
# file (about a minute); without it, 3 runs and medians.
# --raise-limits: for the 100k-thread tasks file, raise kernel.pid_max and
# vm.max_map_count for the duration of the run (restored at exit). Without
# it the benchmark measures the most threads the current limits allow and
# says so.
# --machine-scale: instead of all that, the machine-scale section: fresh
# daemons on generated platforms of 8, 64 and 512 CPUs (2 packages, 4096
# RMIDs, 15 CLOSIDs) with 200, 2000 and 4000 MON groups and a 10k-thread
# helper; mkdir, rmdir, echo > schemata, cpus writes, a held-fd sweep, a
# tasks move and listing, each with its growth from the smallest to the
# largest configuration (JSON to bench/results/machine-scale.json unless
# --out), and the tasks listing's slope per id from 10k to 100k ids against
# tmpfs and floor_fs (with --raise-limits; skipped loudly without). With
# --no-journal, without the journal.
# --no-journal: run resctrlfsd without --state-dir (no state journal), to
# see what journaling costs each command. With the journal, its directory is
# a private tmpfs (like the shipped /run/resctrlfs).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build="$repo/build-bench"
out="$repo/bench/results/latest.json"
quick=()
extra=()
raise_limits=0
no_journal=0
machine_scale=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick --tasks 10000); shift ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --raise-limits) raise_limits=1; shift ;;
    --no-journal) no_journal=1; shift ;;
    --machine-scale) machine_scale=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,39p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" != 0 ] || [ ! -w /dev/fuse ]; then
  echo "run.sh: needs root and /dev/fuse" >&2
  exit 77
fi

if [ "$machine_scale" = 1 ]; then
  [ "$out" = "$repo/bench/results/latest.json" ] && out="$repo/bench/results/machine-scale.json"
  echo "== building in $build" >&2
  [ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] ||
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j2 --target resctrlfs_machine_scale resctrlfsd floor_fs >&2
  work=$(mktemp -d /tmp/resctrlfs-scale.XXXXXX)
  state=()
  if [ "$no_journal" = 0 ]; then
    mkdir -p "$work/state"
    mount -t tmpfs -o size=256m,mode=0700 resctrlfs-bench-state "$work/state"
    state=(--state-dir "$work/state/j")
  fi
  # The listing slope needs 100k threads: the helper raises (and restores)
  # the limits itself.
  [ "$raise_limits" = 1 ] && state+=(--raise-limits)
  rc=0
  "$build/bench/resctrlfs_machine_scale" --daemon "$build/daemon/resctrlfsd" --work "$work" \
    "${state[@]}" --out "$out" "${extra[@]}" || rc=$?
  mountpoint -q "$work/mnt" && fusermount3 -u "$work/mnt"
  mountpoint -q "$work/state" && umount "$work/state"
  rm -rf "$work"
  echo "== JSON in $out" >&2
  exit "$rc"
fi

echo "== building in $build" >&2
[ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] ||
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target floor_fs resctrlfs_bench exporter_bench >&2
have_daemon=0
if cmake --build "$build" --target help 2>/dev/null | grep -q '^resctrlfsd:'; then
  if cmake --build "$build" -j2 --target resctrlfsd >"$build/resctrlfsd-build.log" 2>&1; then
    have_daemon=1
  elif [ -x "$build/daemon/resctrlfsd" ]; then
    echo "!!! run.sh: building resctrlfsd failed (see $build/resctrlfsd-build.log);" \
      "measuring the previously built binary" >&2
    have_daemon=1
  else
    echo "!!! run.sh: building resctrlfsd failed (see $build/resctrlfsd-build.log)" >&2
  fi
fi

work=$(mktemp -d /tmp/resctrlfs-bench.XXXXXX)
pids=()
mounts=()
cleanup() {
  set +e
  for m in "${mounts[@]}"; do
    if mountpoint -q "$m"; then fusermount3 -u "$m" 2>/dev/null || umount "$m"; fi
  done
  for p in "${pids[@]}"; do
    # The daemon exits once unmounted; give it a moment, then make sure.
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"
    wait "$p" 2>/dev/null
  done
  mountpoint -q "$work/tmpfs" && umount "$work/tmpfs"
  mountpoint -q "$work/state" && umount "$work/state"
  rm -rf "$work"
  if [ -n "${old_pid_max:-}" ]; then
    sysctl -q -w kernel.pid_max="$old_pid_max" vm.max_map_count="$old_map_count"
  fi
}
trap cleanup EXIT
mkdir -p "$work/floor" "$work/resctrl" "$work/tmpfs"

if [ "$raise_limits" = 1 ]; then
  old_pid_max=$(cat /proc/sys/kernel/pid_max)
  old_map_count=$(cat /proc/sys/vm/max_map_count)
  new_pid_max=$((old_pid_max > 262144 ? old_pid_max : 262144))
  new_map_count=$((old_map_count > 262144 ? old_map_count : 262144))
  echo "== raising kernel.pid_max to $new_pid_max and vm.max_map_count to $new_map_count" \
    "for this run" >&2
  sysctl -q -w kernel.pid_max="$new_pid_max" vm.max_map_count="$new_map_count"
fi

wait_mounted() {  # MOUNTPOINT PID
  for _ in $(seq 100); do
    mountpoint -q "$1" && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# A simulated two-socket Intel machine with RMIDs for 1024 MON groups plus
# the groups the benchmark itself makes. The L3 is large on purpose: the
# limbo threshold is L3 size / num_rmids rounded down to the upscaling
# factor, and with a 16 MiB L3 it rounds to 0, so freed RMIDs would stay in
# limbo forever (as they would under the kernel).
cat >"$work/platform.json" <<'EOF'
{
  "vendor": "GenuineIntel", "family": 6, "model": 106, "stepping": 6,
  "cpus": [
    {"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0},
    {"cpu": 2, "package": 0, "l2": 2, "l3": 0}, {"cpu": 3, "package": 0, "l2": 3, "l3": 0},
    {"cpu": 4, "package": 1, "l2": 4, "l3": 1}, {"cpu": 5, "package": 1, "l2": 5, "l3": 1},
    {"cpu": 6, "package": 1, "l2": 6, "l3": 1}, {"cpu": 7, "package": 1, "l2": 7, "l3": 1}
  ],
  "l3_size_bytes": 268435456, "l2_size_bytes": 1048576,
  "l3_cat": {"cbm_len": 11, "num_closid": 16, "shareable_bits": 0, "sparse": false, "cdp": true},
  "mba": {"num_closid": 8, "max_delay": 90, "linear": true, "per_thread": false},
  "l3_mon": {"num_rmids": 2048, "scale": 65536, "counter_width": 24,
             "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]}
}
EOF

"$build/bench/floor_fs" --domains 2 --control "$work/floor.sock" -f "$work/floor" &
floor_pid=$!
pids+=("$floor_pid")
mounts+=("$work/floor")
wait_mounted "$work/floor" "$floor_pid" || { echo "run.sh: floor_fs did not mount" >&2; exit 1; }
args=(--floor "$work/floor" --floor-pid "$floor_pid" --floor-control "$work/floor.sock")

tree_src="$work/floor"
if [ "$have_daemon" = 1 ]; then
  state=(--state-dir "$work/state")
  [ "$no_journal" = 1 ] && state=()
  mkdir -p "$work/state"
  # The journal on tmpfs, as the shipped configuration keeps it
  # (/run/resctrlfs): fdatasync there costs nothing, and on a disk it would
  # measure the disk, not resctrlfs.
  [ "$no_journal" = 1 ] || mount -t tmpfs -o size=256m,mode=0700 resctrlfs-bench-state "$work/state"
  "$build/daemon/resctrlfsd" -f --platform "$work/platform.json" "${state[@]}" \
    --control "$work/resctrl.sock" "$work/resctrl" 2>"$work/resctrlfsd.log" &
  rpid=$!
  pids+=("$rpid")
  mounts+=("$work/resctrl")
  if wait_mounted "$work/resctrl" "$rpid"; then
    for _ in $(seq 100); do [ -S "$work/resctrl.sock" ] && break; sleep 0.05; done
    args+=(--resctrl "$work/resctrl" --resctrl-pid "$rpid" --resctrl-control "$work/resctrl.sock")
    tree_src="$work/resctrl"
  else
    echo "!!! run.sh: resctrlfsd did not mount; measuring the baselines only" >&2
    cat "$work/resctrlfsd.log" >&2
  fi
else
  echo "!!! run.sh: no resctrlfsd target in this tree; measuring the baselines only" >&2
fi

# tmpfs: a plain copy of the tree (same names, same depth).
mount -t tmpfs -o size=512m,mode=0755 resctrlfs-bench "$work/tmpfs"
cp -r "$tree_src/." "$work/tmpfs/" 2>/dev/null || true
args+=(--tmpfs "$work/tmpfs")

echo "== running resctrlfs_bench (${quick[*]:-full}); results in $out" >&2
"$build/bench/resctrlfs_bench" "${args[@]}" "${quick[@]}" --out "$out" "${extra[@]}"

if [ "$tree_src" = "$work/resctrl" ]; then
  exporter_out="${out%.json}-exporter.json"
  echo "== running exporter_bench; results in $exporter_out" >&2
  exporter_rounds=(--rounds 5)
  [ ${#quick[@]} -gt 0 ] && exporter_rounds=(--rounds 3 --passes 10)
  "$build/bench/exporter_bench" --resctrl "$work/resctrl" --resctrl-pid "$rpid" \
    --resctrl-control "$work/resctrl.sock" "${exporter_rounds[@]}" --out "$exporter_out"
fi
