#!/bin/bash
# Boots a real systemd, Debian 12's, as PID 1 of a container: a bookworm
# root made by packaging/chroot-lib.sh (mmdebstrap, cached), seen through
# an overlay so that the cached root is never written, in new PID, mount,
# cgroup, UTS and IPC namespaces. tests/packaging/test_systemd.py drives it.
#
#   systemd_container.sh root           prints the unpacked root's path
#                                       (building the tarball if the cache
#                                       lacks it); exit 77 with the reason
#                                       if there can be none
#   systemd_container.sh boot ROOT WORK STAGE
#                                       boots ROOT with WORK as scratch
#                                       (the overlay's upper layer, the
#                                       console log); STAGE is a directory
#                                       copied over the root first (the
#                                       programs and files under test, at
#                                       their installed paths). Runs until
#                                       the container's systemd exits; the
#                                       host's id of its PID 1 is in
#                                       WORK/pid1 once it is about to start.
#
# What systemd 252 needs to run as a container's init, and what this gives
# it (systemd-nspawn, package systemd-container, does the same; this needs
# only util-linux, and works whatever the host's PID 1 and cgroup layout):
#   - the environment variable container=, so that it behaves as in a
#     container (no udev, no hardware units, no kernel module loading);
#   - PID 1 of its own PID namespace (it refuses to be a system manager
#     otherwise);
#   - a cgroup hierarchy it may write and that shows its own cgroup as the
#     root: the host's cgroup2 (at /sys/fs/cgroup, or /sys/fs/cgroup/unified
#     in a hybrid layout) gets a child cgroup for the container, which
#     enters it, then a cgroup namespace, and the container's
#     /sys/fs/cgroup is that namespace's cgroup2 mount: systemd runs in
#     unified mode, as on a Debian 12 host;
#   - /proc of its PID namespace, a sysfs, a /dev with the usual nodes plus
#     /dev/fuse, and a /dev/console (a file: finding no terminal there,
#     systemd logs to its journal; journalctl in the container reads it);
#     /run it mounts itself.
# The container's /sys/fs is a tmpfs with cgroup/ and resctrl/ in it: the
# sample configuration mounts resctrlfs at /sys/fs/resctrl, which exists
# only on kernels built with resctrl (a Debian 12 kernel is one).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
skip() {
  echo "SKIPPED: $*" >&2
  exit 77
}

# What the root holds: systemd and the daemon's shared libraries (the
# resctrlfs package's Depends, minus what minbase has).
SYSTEMD_ROOT_PACKAGES=(systemd fuse3 libfuse3-3 libjemalloc2 libspdlog1.10 libfmt9)

make_root() {
  [ "$(id -u)" = 0 ] || skip "needs root (namespaces, mounts, cgroups)"
  command -v mmdebstrap >/dev/null 2>&1 ||
    skip "the Debian 12 root is made with mmdebstrap, which is not installed (./dev.sh deps installs it)"
  # shellcheck source=packaging/chroot-lib.sh
  . "$src/packaging/chroot-lib.sh"
  local dir tarball root why
  dir=$(chroot_cache_dir)
  mkdir -p "$dir" || skip "cannot create the chroot cache $dir"
  exec 9>"$dir/bookworm-systemd.lock"
  flock 9
  why=$(mktemp)
  tarball=$(chroot_tarball bookworm "${SYSTEMD_ROOT_PACKAGES[@]}" 2>"$why")
  cat "$why" >&2
  if [ -z "$tarball" ]; then
    local reason
    reason=$(grep -v '^==' "$why" | head -c 400 | tr '\n' ' ')
    rm -f "$why"
    skip "no Debian 12 root with systemd could be made (the Debian archive could not be reached?): $reason"
  fi
  rm -f "$why"
  # Unpacked once per tarball (the tarball's name is its package list's
  # hash, so a new list is a new root); never written afterwards.
  root=${tarball%.tar}.root
  if [ ! -f "$root/.unpacked" ] || [ "$tarball" -nt "$root/.unpacked" ]; then
    echo "== unpacking $tarball into $root" >&2
    rm -rf --one-file-system "$root"
    mkdir -p "$root"
    tar -xf "$tarball" -C "$root" --exclude='./dev/*' || {
      rm -rf --one-file-system "$root"
      skip "could not unpack $tarball"
    }
    touch "$root/.unpacked"
  fi
  echo "$root"
}

# The host's cgroup2 hierarchy, or nothing.
host_cgroup2() {
  local d
  for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
    if [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ]; then
      echo "$d"
      return
    fi
  done
}

boot() {
  local root=$1 work=$2 stage=$3
  local cg2
  cg2=$(host_cgroup2)
  [ -n "$cg2" ] || skip "no cgroup2 hierarchy on this machine (systemd 252 runs on cgroup2 here)"
  # The container's own cgroup, named after this process (which becomes
  # unshare), left empty when it ends and removed by the caller; those of
  # containers whose caller could not remove them (killed) go here.
  local old
  for old in "$cg2"/resctrlfs-systemd-*; do
    if [ -d "$old" ] && [ ! -e "/proc/${old##*-}" ]; then
      find "$old" -depth -type d -exec rmdir {} + 2>/dev/null
    fi
  done
  local cg=$cg2/resctrlfs-systemd-$$
  mkdir "$cg" || skip "cannot make a cgroup under $cg2"
  echo "$cg" >"$work/cgroup"
  echo $$ >"$cg/cgroup.procs" || skip "cannot enter the cgroup $cg"
  mkdir -p "$work/upper" "$work/ovl" "$work/merged"
  : >"$work/console.log"
  exec unshare --pid --mount --cgroup --uts --ipc --fork --kill-child=SIGKILL \
    --propagation private "$here/systemd_container.sh" pid1 "$root" "$work" "$stage"
}

# In the new namespaces: the container's mounts, then systemd as PID 1.
pid1() {
  # A step that fails here is something this machine does not allow (no
  # overlayfs, no sysfs or cgroup2 mount in a namespace): skipped, saying
  # which.
  trap 'skip "cannot set the container up here: \`$BASH_COMMAND\` failed"' ERR
  local root=$1 work=$2 stage=$3
  local r=$work/merged hostpid _
  # This process becomes PID 1; its id outside (the host's /proc is still
  # mounted here, and bash reads the file itself).
  read -r hostpid _ </proc/self/stat
  echo "$hostpid" >"$work/pid1.tmp"
  mv "$work/pid1.tmp" "$work/pid1"
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$work/upper,workdir=$work/ovl" "$r"
  # As dpkg unpacks: through the root's /lib -> usr/lib symlink.
  tar -C "$stage" -cf - . | tar -C "$r" -xf - --keep-directory-symlink
  hostname resctrlfs-systemd
  mount -t proc proc "$r/proc"
  mount -t sysfs sysfs "$r/sys"
  mount -t tmpfs -o mode=0755 tmpfs "$r/sys/fs"
  mkdir "$r/sys/fs/cgroup" "$r/sys/fs/resctrl"
  mount -t cgroup2 cgroup2 "$r/sys/fs/cgroup"
  mount -t tmpfs -o mode=0755 tmpfs "$r/dev"
  local d
  for d in null zero full random urandom tty fuse; do
    touch "$r/dev/$d"
    mount --bind "/dev/$d" "$r/dev/$d"
  done
  touch "$r/dev/console"
  mount --bind "$work/console.log" "$r/dev/console"
  mkdir "$r/dev/pts" "$r/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$r/dev/pts"
  ln -s pts/ptmx "$r/dev/ptmx"
  ln -s /proc/self/fd "$r/dev/fd"
  # pivot_root, not chroot: the container's / is its mount namespace's
  # root, as systemd and systemctl expect (they refuse some requests in a
  # chroot). From here on the programs are the root's.
  cd "$r" || skip "cannot enter $r"
  mkdir -p .host
  pivot_root . .host
  umount -l /.host
  rmdir /.host
  exec env -i container=resctrlfs-test TERM=dumb /lib/systemd/systemd --show-status=no
}

case ${1:-} in
  root) make_root ;;
  boot) shift; boot "$@" ;;
  pid1) shift; pid1 "$@" ;;
  *) echo "usage: $0 root | boot ROOT WORK STAGE" >&2; exit 2 ;;
esac
