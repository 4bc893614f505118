#!/usr/bin/env bash
# A stand-in for resctrlfsd used by test_sandbox.sh to check the sandbox's
# namespace machinery without FUSE: it mounts a tmpfs on its last argument
# (the mount point), records its arguments there, and unmounts on SIGTERM,
# like `resctrlfsd -f` does.
set -u
mp="${!#}"
# Populate the tmpfs before it appears at the mount point, as a FUSE daemon
# answers as soon as it is mounted.
tmp=$(mktemp -d /tmp/fake-resctrl.XXXXXX)
mount -t tmpfs -o size=64k fake-resctrl "$tmp" || exit 1
printf '%s\n' "$@" > "$tmp/args"
mount --move "$tmp" "$mp" || exit 1
rmdir "$tmp"
# The sandbox may stop it (SIGTERM) as soon as the mount appeared, before
# the sleeper below exists or before $! is kept: a trap run between
# `sleep &` and the assignment used to find $sleeper unset (set -u ended the
# script) and left the sleeper running, holding the caller's stdout, so a
# test's $(resctrlfs-sandbox ...) never saw EOF and hung until ctest's
# TIMEOUT (on a busy machine, where the window is wide). So the trap kills
# every background job, whatever was assigned, and the sleeper holds no
# descriptor of the caller's.
stop() {
  local jobs
  jobs=$(jobs -p)
  [ -n "$jobs" ] && kill $jobs 2>/dev/null
  umount "$mp"
  exit 0
}
trap stop TERM INT
sleep infinity </dev/null >/dev/null 2>&1 &
wait
