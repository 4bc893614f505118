#!/bin/bash
# What the sandbox's seccomp supervisor costs: sandbox_syscalls run inside
# resctrlfs-sandbox with --intercept none (no filter), statfs-only and all,
# interleaved ROUNDS times; per operation the best rate of each mode and its
# ratio to `none` (how many times slower). Ratios from one run on one
# machine, not a timed test.
#
#   bench/sandbox_seccomp.sh [--build DIR] [--rounds N] [--out FILE]
#
# As root with /dev/fuse. Builds sandbox_syscalls, resctrlfs-sandbox and
# resctrlfsd in DIR (default build), writes JSON to FILE (default
# bench/results/sandbox-seccomp.json).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
ROUNDS=3
OUT=bench/results/sandbox-seccomp.json
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "sandbox_seccomp.sh: needs root" >&2; exit 1; }
[ -d "$BUILD" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" --target sandbox_syscalls resctrlfs-sandbox resctrlfsd >/dev/null
SB=$BUILD/sandbox/resctrlfs-sandbox
BIN=$(readlink -f "$BUILD/bench/sandbox_syscalls")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MODES="none statfs-only all"
for r in $(seq "$ROUNDS"); do
  for m in $MODES; do
    "$SB" --daemon "$BUILD/daemon/resctrlfsd" --platform host --intercept "$m" -- "$BIN" 0.5 3 \
      2>/dev/null >>"$TMP/$m"
  done
done
python3 - "$TMP" "$OUT" $MODES <<'PY'
import json, sys, os, platform, datetime
tmp, out, modes = sys.argv[1], sys.argv[2], sys.argv[3:]
best = {}
for m in modes:
    for line in open(os.path.join(tmp, m)):
        name, rate = line.split()
        best.setdefault(name, {})[m] = max(best.get(name, {}).get(m, 0), float(rate))
print(f"{'operation':28} " + " ".join(f"{m + ' ops/s':>16}" for m in modes) +
      " " + " ".join(f"{m + ' x':>14}" for m in modes[1:]))
result = {"date": datetime.date.today().isoformat(), "kernel": platform.release(),
          "cpus": os.cpu_count(), "operations": {}}
for name, rates in best.items():
    base = rates["none"]
    ratios = {m: base / rates[m] for m in modes[1:]}
    print(f"{name:28} " + " ".join(f"{rates[m]:16.0f}" for m in modes) + " " +
          " ".join(f"{ratios[m]:14.2f}" for m in modes[1:]))
    result["operations"][name] = {"ops_per_s": rates, "slowdown_vs_none": ratios}
json.dump(result, open(out, "w"), indent=1)
print(f"written to {out}")
PY
