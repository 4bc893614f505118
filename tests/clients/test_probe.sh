#!/usr/bin/env bash
# Detection as runc >= 1.2, crun >= 1.10 and cAdvisor do it: rdtprobe (a
# small Go program, standard library only, built offline with Debian's Go)
# checks statfs("/sys/fs/resctrl") and fstatfs of a file opened there against
# RDTGROUP_SUPER_MAGIC and reads /proc/thread-self/mountinfo on a locked
# thread that is not the main one. Run as a grandchild of the sandbox's
# COMMAND (through `sh -c` and a double fork) every check passes; on the
# host, and in a sandbox with --intercept none, every one fails; with
# --intercept statfs-only the statfs checks pass and the mountinfo one fails.
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_cmd go golang-go
require_sandbox
require_daemon
HERE=$(cd "$(dirname "$0")" && pwd)
SB=$RESCTRLFS_SANDBOX_BIN

GOWORK=$(mktemp -d /tmp/client-probe.XXXXXX)
trap 'rm -rf "$GOWORK"' EXIT
mkdir -p "$GOWORK/src/rdtprobe"
cp "$HERE/rdtprobe/main.go" "$GOWORK/src/rdtprobe/"
echo "== building rdtprobe offline (GOPATH mode, standard library only)"
if ! (cd "$GOWORK/src/rdtprobe" && GO111MODULE=off GOPROXY=off GOFLAGS= \
      GOCACHE="${CLIENT_GOCACHE:-$GOWORK/cache}" GOPATH="$GOWORK" go build -o "$GOWORK/rdtprobe" .); then
  echo "FAIL: rdtprobe does not build" >&2
  exit 1
fi
PROBE=$GOWORK/rdtprobe

# Runs the probe as a grandchild of COMMAND: sh forks a subshell, which
# forks the probe; its output and status land in files.
GRANDCHILD='( "$0" >"$1.out" 2>&1; echo $? >"$1.rc" ) & wait'

results() { sed -n 's/^\(PASS\|FAIL\) \([a-z]*\):.*/\2 \1/p' "$1.out" | tr '\n' ' '; }

echo "== on the host"
if grep -q ' /sys/fs/resctrl ' /proc/self/mountinfo; then
  echo "(the host has a mount at /sys/fs/resctrl: host checks not made)"
else
  sh -c "$GRANDCHILD" "$PROBE" "$GOWORK/host"
  cat "$GOWORK/host.out"
  check_eq "host: the probe fails" "$(cat "$GOWORK/host.rc")" 1
  check_eq "host: statfs, fstatfs and mountinfo fail" "$(results "$GOWORK/host")" \
    "statfs FAIL fstatfs FAIL thread PASS mountinfo FAIL "
fi

for mode in all statfs-only none; do
  echo "== in the sandbox, --intercept $mode, as a grandchild of COMMAND"
  "$SB" --daemon "$RESCTRLFSD_BIN" --platform host --intercept $mode -- \
    sh -c "$GRANDCHILD" "$PROBE" "$GOWORK/$mode" 2>"$GOWORK/$mode.err"
  check_eq "--intercept $mode: the sandbox ran" $? 0
  cat "$GOWORK/$mode.out"
  case $mode in
    all)
      check_eq "all: the probe passes" "$(cat "$GOWORK/$mode.rc")" 0
      check_eq "all: every check passes" "$(results "$GOWORK/$mode")" \
        "statfs PASS fstatfs PASS thread PASS mountinfo PASS "
      check_match "all: statfs answers kernfs's block size and name length" \
        "$(cat "$GOWORK/$mode.out")" '^PASS statfs: f_type 0x7655821 bsize 4096 namelen 255$'
      check_match "all: mountinfo shows fstype and source resctrl" "$(cat "$GOWORK/$mode.out")" \
        '^PASS mountinfo: fstype resctrl source resctrl options rw$'
      ;;
    statfs-only)
      check_eq "statfs-only: statfs checks pass, the grandchild's mountinfo is FUSE's" \
        "$(results "$GOWORK/$mode")" "statfs PASS fstatfs PASS thread PASS mountinfo FAIL "
      ;;
    none)
      check_eq "none: the probe fails" "$(cat "$GOWORK/$mode.rc")" 1
      check_eq "none: statfs, fstatfs and mountinfo fail (FUSE's magic and type)" \
        "$(results "$GOWORK/$mode")" "statfs FAIL fstatfs FAIL thread PASS mountinfo FAIL "
      check_match "none: statfs reports FUSE's magic" "$(cat "$GOWORK/$mode.out")" \
        '^FAIL statfs: f_type 0x65735546 '
      ;;
  esac
done
finish
