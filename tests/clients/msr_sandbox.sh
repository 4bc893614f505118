#!/usr/bin/env bash
# resctrlfs-sandbox on the real-hardware path, for the client suite's msr
# label (lib.sh puts this script in RESCTRLFS_SANDBOX_BIN's place when
# RESCTRLFS_BACKEND=msr). `msr_sandbox.sh [OPTIONS] --platform P [OPTIONS]
# [-- COMMAND...]` starts resctrl-fakehw emulating /dev/cpu/N/{cpuid,msr} and
# the sysfs topology of the simulated platform P (a built-in other than
# `host` fitted to this machine's CPUs, P@host, as the sandbox fits it), and
# resctrl-msrd over it, then becomes (exec) the real sandbox with
#   --backend msr --broker SOCK --hw-root ROOT --rdt-from-cpuid [--rdt LIST]
# in place of --platform P: the daemon runs exactly as on a machine with
# RDT, and the sandbox shows ROOT's CPUID flags and topology in /proc/cpuinfo
# and sysfs. The sandbox keeps this process's pid (the tests signal it and
# look for COMMAND among its children); a watcher stops the emulation and
# the broker once it has exited. COMMAND gets RESCTRLFS_HW_CONTROL, the
# emulation's control socket (workloads, registers; the daemon's control
# socket answers "not simulated" for those). Without --platform (a nested
# `resctrlfs-sandbox -- CMD`), or inside a sandbox, the real sandbox runs
# unchanged.
# Environment: RESCTRLFS_SANDBOX_REAL, RESCTRLFS_FAKEHW, RESCTRL_MSRD.
set -u
real=${RESCTRLFS_SANDBOX_REAL:?}
args=()
platform=""
while [ $# -gt 0 ]; do
  case $1 in
    --) break ;;
    --platform) platform=$2; shift 2; continue ;;
    --platform=*) platform=${1#*=}; shift; continue ;;
  esac
  args+=("$1")
  shift
done
# Inside a sandbox only `resctrlfs-sandbox -- CMD` is allowed: the real one
# says so.
if [ -z "$platform" ] || [ -n "${RESCTRLFS_SANDBOX:-}" ]; then
  exec "$real" "${args[@]}" ${platform:+--platform "$platform"} "$@"
fi

say() { echo "msr_sandbox: $*" >&2; }
hwp=$platform
case $platform in
  host | *@* | */* | *.json) ;;
  *) hwp=$platform@host ;;
esac
dir=$(mktemp -d /tmp/client-msr.XXXXXX)
root=$dir/hw
mkdir "$root"
# Detached (double fork) with their output in files: they must not hold a
# caller's $(...) pipe open, nor be children the sandbox reaps.
( exec setsid "${RESCTRLFS_FAKEHW:?}" --platform "$hwp" --root "$root" --control "$dir/hw.sock" \
    </dev/null >"$dir/fakehw.log" 2>&1 & echo $! >"$dir/fakehw.pid" )
mounted() { grep -q " $root/dev " /proc/self/mounts; }
# Until it serves (however long a busy machine makes that) or exits.
until mounted && [ -S "$dir/hw.sock" ]; do
  kill -0 "$(cat "$dir/fakehw.pid")" 2>/dev/null || break
  sleep 0.02
done
if ! mounted; then
  say "resctrl-fakehw --platform $hwp did not start:"; cat "$dir/fakehw.log" >&2
  kill "$(cat "$dir/fakehw.pid")" 2>/dev/null
  rm -rf "$dir"
  exit 125
fi
broker=(--socket "$dir/msrd.sock" --hw-root "$root" --allow-uid 0)
[ -f "$root/irdt_wide_bytes" ] && broker+=(--irdt-wide-bytes "$(cat "$root/irdt_wide_bytes")")
( exec setsid "${RESCTRL_MSRD:?}" "${broker[@]}" </dev/null >"$dir/msrd.log" 2>&1 &
  echo $! >"$dir/msrd.pid" )
until [ -S "$dir/msrd.sock" ]; do
  kill -0 "$(cat "$dir/msrd.pid")" 2>/dev/null || break
  sleep 0.02
done
rdt=$(sed -n 's/.* rdt=\([^ ]*\).*/\1/p' "$root/proc/cmdline")
sandbox=$$
( exec setsid bash -c '
    while kill -0 '"$sandbox"' 2>/dev/null; do sleep 0.1; done
    kill $(cat "$1/msrd.pid") $(cat "$1/fakehw.pid") 2>/dev/null
    for _ in $(seq 50); do grep -q " $1/hw/dev " /proc/self/mounts || break; sleep 0.1; done
    fusermount3 -uz "$1/hw/dev" 2>/dev/null
    rm -rf "$1"' watcher "$dir" </dev/null >/dev/null 2>&1 & )
if [ ! -S "$dir/msrd.sock" ]; then
  say "resctrl-msrd did not start:"; cat "$dir/msrd.log" >&2
  exit 125
fi
export RESCTRLFS_HW_CONTROL=$dir/hw.sock
exec "$real" "${args[@]}" --backend msr --broker "$dir/msrd.sock" --hw-root "$root" \
  --rdt-from-cpuid ${rdt:+--rdt "$rdt"} "$@"
