#!/usr/bin/env bash
# mount(2) and umount(2) of resctrl inside resctrlfs-sandbox, as the kernel
# answers them: the sandbox's supervisor starts a daemon for a mount of type
# resctrl (on any directory, with the kernel's options) and stops it on its
# umount; the boot state (RMID order) carries over from one mount to the
# next while groups do not; a second mount is EBUSY, a bad option EINVAL
# with the kernel's log line on stderr; other filesystem types are the
# kernel's; every such mount reads as resctrl in the mount tables and
# statfs. Runs on intel-2s (fitted to the host's CPUs), which has L3 CDP and
# no L2 CAT.
set -u
SCRIPT_ARGS=("$@")
. "$(dirname "$0")/lib.sh"
require_root
require_fuse
require_sandbox
require_daemon
require_cmd python3 python3

if [ -z "${RESCTRLFS_SANDBOX:-}" ]; then
  WORK=$(mktemp -d /tmp/client-sandbox-mount.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
  echo "== entering resctrlfs-sandbox --platform intel-2s"
  "$RESCTRLFS_SANDBOX_BIN" --daemon "$RESCTRLFSD_BIN" --platform intel-2s -- bash "$0" \
    2>"$WORK/stderr"
  rc=$?
  cat "$WORK/stderr" >&2
  check_eq "the checks inside the sandbox passed" "$rc" 0
  # The kernel logs these (dmesg); the sandbox prints them on its stderr.
  check_match "an unknown option: the kernel's log line" "$(cat "$WORK/stderr")" \
    "^resctrl: Unknown parameter 'foo'\$"
  check_match "a flag given a value: the kernel's log line" "$(cat "$WORK/stderr")" \
    "^resctrl: Unexpected value for 'cdp'\$"
  finish
fi

R=/sys/fs/resctrl
# sys_mount TARGET [OPTIONS [FSTYPE]]: mount(2) itself (mount(8) turns errno
# into words and exit codes); prints 0 or the errno's name.
sys_mount() {
  python3 - "$1" "${2:-}" "${3:-resctrl}" <<'PY'
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
data = sys.argv[2].encode() if sys.argv[2] else None
r = libc.mount(b"resctrl", sys.argv[1].encode(), sys.argv[3].encode(), 0, data)
print(0 if r == 0 else errno.errorcode[ctypes.get_errno()])
PY
}
# sys_umount TARGET: umount2(TARGET, 0); prints 0 or the errno's name.
sys_umount() {
  python3 - "$1" <<'PY'
import ctypes, errno, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.umount2(sys.argv[1].encode(), 0)
print(0 if r == 0 else errno.errorcode[ctypes.get_errno()])
PY
}
# fsopen("resctrl", 0) of the new mount API (x86-64 syscall 430).
sys_fsopen() {
  python3 - <<'PY'
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(430, b"resctrl", 0)
print(errno.errorcode[ctypes.get_errno()] if fd < 0 else "fd")
PY
}
is_resctrl_mount() {  # is_resctrl_mount DIR: every table and statfs say so
  grep -q "^resctrl $1 resctrl " /proc/mounts &&
    grep -q "^resctrl $1 resctrl " /proc/self/mounts &&
    grep -Eq "^[0-9]+ [0-9]+ [0-9]+:[0-9]+ / $1 .* - resctrl resctrl rw" /proc/self/mountinfo &&
    [ "$(stat -f -c %t "$1")" = 7655821 ]
}
no_mount_at() { ! grep -q " $1 " /proc/self/mountinfo; }
WORK=$(mktemp -d /tmp/client-sandbox-mount-in.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

echo "== umount of the sandbox's mount"
check "the sandbox's mount reads as resctrl" is_resctrl_mount $R
first=${RESCTRLFSD_PID:-}
check_eq "umount $R" "$(sys_umount $R)" 0
check "the mount is gone when umount returns" no_mount_at $R
check "its daemon has exited when umount returns" exited "${first:-none}"
check_eq "umount $R again: not mounted (EINVAL, the kernel's)" "$(sys_umount $R)" EINVAL

echo "== mount -t resctrl"
check "mount -t resctrl resctrl $R (mount(8))" mount -t resctrl resctrl $R
check "the tree is there when mount returns" test -f $R/schemata -a -d $R/info/L3
check "it reads as resctrl in /proc/mounts, mountinfo and statfs" is_resctrl_mount $R
check_match "no options: none shown" "$(grep " $R " /proc/mounts)" \
  "^resctrl $R resctrl rw(,(nosuid|nodev|noexec|relatime))* 0 0\$"
check_eq "a second mount while mounted: EBUSY" "$(sys_mount $R)" EBUSY
mkdir -p "$WORK/other"
check_eq "a second mount on another directory: EBUSY" "$(sys_mount "$WORK/other")" EBUSY
check_eq "umount of a directory inside it: EINVAL (not a mount point)" \
  "$(sys_umount $R/info)" EINVAL

echo "== groups go with the mount, the boot state (RMID order) stays"
check "umount" umount $R
check "mount -o debug" mount -t resctrl -o debug resctrl $R
check_match "debug shown in the options" "$(grep " $R " /proc/mounts)" ',debug 0 0$'
mkdir $R/g1
rmid1=$(cat $R/g1/mon_hw_id 2>/dev/null)
check_match "g1 has an RMID (mon_hw_id)" "$rmid1" '^[0-9]+$'
rmdir $R/g1
mkdir $R/keep
check "umount with a group" umount $R
check "mount -o debug again" mount -t resctrl -o debug resctrl $R
check "the group did not survive the unmount" test ! -e $R/keep
mkdir $R/g2
rmid2=$(cat $R/g2/mon_hw_id 2>/dev/null)
# A fresh RMID free list hands out g1's RMID again first; the kernel's list
# (kept across mounts) has it at the tail or in limbo.
check_match "g2 has an RMID" "$rmid2" '^[0-9]+$'
if [ -n "$rmid1" ] && [ "$rmid1" = "$rmid2" ]; then
  fail "the RMID free list survived the remount (g2 got g1's freed RMID $rmid1 again)"
else
  pass "the RMID free list survived the remount (g1 had $rmid1, g2 has $rmid2)"
fi
rmdir $R/g2
check "umount" umount $R

echo "== options"
check_eq "mount -o foo: EINVAL" "$(sys_mount $R foo)" EINVAL
check_eq "mount -o cdp=1: EINVAL" "$(sys_mount $R cdp=1)" EINVAL
check_eq "mount -o cdpl2 on a platform without L2 CAT: EINVAL" "$(sys_mount $R cdpl2)" EINVAL
check "nothing mounted after the refusals" no_mount_at $R
check_eq "mount -o cdp" "$(sys_mount $R cdp)" 0
check "cdp: info/L3CODE and info/L3DATA" test -d $R/info/L3CODE -a -d $R/info/L3DATA
check_match "cdp shown in /proc/mounts" "$(grep " $R " /proc/mounts)" \
  "^resctrl $R resctrl rw[^ ]*,cdp 0 0\$"
check_match "cdp shown in mountinfo" "$(grep " $R " /proc/self/mountinfo)" ' - resctrl resctrl rw,cdp$'
check "umount" umount $R

echo "== a mount elsewhere"
check "mount -t resctrl on $WORK/other" mount -t resctrl resctrl "$WORK/other"
check "it reads as resctrl in every table and statfs" is_resctrl_mount "$WORK/other"
check "its tree is there" test -f "$WORK/other/schemata"
check_eq "mount at $R meanwhile: EBUSY" "$(sys_mount $R)" EBUSY
check "umount $WORK/other" umount "$WORK/other"
check "it is gone" no_mount_at "$WORK/other"

echo "== other filesystems are the kernel's"
mkdir -p "$WORK/t"
check "mount -t tmpfs" mount -t tmpfs none "$WORK/t"
check_match "tmpfs is tmpfs in /proc/mounts" "$(grep " $WORK/t " /proc/mounts)" "^none $WORK/t tmpfs "
check "umount tmpfs" umount "$WORK/t"
check_eq "fsopen(\"resctrl\") of the new mount API: ENODEV" "$(sys_fsopen)" ENODEV

echo "== back to the sandbox's state"
check "mount -t resctrl resctrl $R" mount -t resctrl resctrl $R
check "it reads as resctrl" is_resctrl_mount $R
finish
