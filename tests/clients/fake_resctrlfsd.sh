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
stop() {
  kill "$sleeper" 2>/dev/null
  umount "$mp"
  exit 0
}
trap stop TERM INT
sleep infinity &
sleeper=$!
wait "$sleeper"
