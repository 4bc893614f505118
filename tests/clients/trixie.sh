# shellcheck shell=bash
# Sourced by the client scripts (after lib.sh) when CLIENT_SUITE=trixie: the
# same scripts then run Debian 13's packaged clients, unmodified, instead of
# the build machine's (Debian 12's).
#
# The clients come from a Debian 13 root (mmdebstrap --variant=minbase with
# TRIXIE_PACKAGES; packaging/chroot-lib.sh caches the tarball, keyed by the
# package list and rebuilt after 7 days), unpacked once per tarball next to
# it (<cache>/trixie-<key>.root). Inside the sandbox, trixie_enter bind-mounts
# the root onto itself (so that it is a mount point: crun and runc
# pivot_root out of it) and rbinds the sandbox's /proc, /sys (with the
# resctrlfsd mount at /sys/fs/resctrl and the cgroup tree), /dev and /tmp
# into it, in the sandbox's own mount namespace. Each client program is
# then a shell function of the same name that runs the root's program
# through chroot: the test's checks, made by the script on the host's
# tools, read the same tree the client wrote. The sandbox's seccomp
# supervisor resolves paths from each process's own root, so what it
# answers (the resctrl fstype in mountinfo and statfs) holds in the chroot.
#
#   trixie_prepare     outside the sandbox: builds or finds the root (exit 77
#                      with the reason if it cannot be made: no mmdebstrap, no
#                      network to the archive; or RESCTRLFS_TRIXIE_TESTS is
#                      not 1); exports TRIXIE_ROOT
#   trixie_enter       inside the sandbox: the mounts above, and the wrappers
#   trixie_unified_cgroup  inside the sandbox, for crun (and podman, which
#                      runs crun): see below
#   trixie_version PKG the root's version of Debian package PKG

TRIXIE_PACKAGES=(crun podman containerd runc intel-cmt-cat busybox-static)
TRIXIE_CLIENTS=(crun podman containerd ctr containerd-shim-runc-v2 runc pqos rdtset)

trixie_prepare() {
  [ -n "${TRIXIE_ROOT:-}" ] && return 0
  [ "${RESCTRLFS_TRIXIE_TESTS:-}" = 1 ] ||
    skip "the Debian 13 client tests run only with RESCTRLFS_TRIXIE_TESTS=1 (tests/ci.sh's trixie stage): their root is built from the Debian archive (tests/README.md)"
  require_root
  command -v mmdebstrap >/dev/null 2>&1 ||
    skip "the Debian 13 root is made with mmdebstrap, which is not installed (./dev.sh deps installs it)"
  . "$CLIENT_TEST_DIR/../../packaging/chroot-lib.sh"
  local dir tarball root why
  dir=$(chroot_cache_dir)
  mkdir -p "$dir" || skip "cannot create the chroot cache $dir"
  # One build and one unpacking at a time (ctest -j2 runs two such tests).
  exec 9>"$dir/trixie-clients.lock"
  flock 9
  why=$(mktemp)
  tarball=$(chroot_tarball trixie "${TRIXIE_PACKAGES[@]}" 2>"$why")
  if [ -z "$tarball" ]; then
    cat "$why" >&2
    local reason
    reason=$(grep -v '^==' "$why" | head -c 400 | tr '\n' ' ')
    rm -f "$why"
    skip "no Debian 13 root could be made (the Debian archive could not be reached?): $reason"
  fi
  cat "$why" >&2  # what chroot_tarball did (built it, or kept an old one)
  rm -f "$why"
  root=${tarball%.tar}.root
  if [ ! -f "$root/.unpacked" ] || [ "$tarball" -nt "$root/.unpacked" ]; then
    echo "== unpacking $tarball into $root"
    rm -rf --one-file-system "$root"
    mkdir -p "$root"
    tar -xf "$tarball" -C "$root" --exclude='./dev/*' || {
      rm -rf --one-file-system "$root"
      skip "could not unpack $tarball"
    }
    touch "$root/.unpacked"
  fi
  exec 9>&-
  export TRIXIE_ROOT=$root
  echo "== Debian 13 root $TRIXIE_ROOT: $(trixie_versions)"
}

trixie_version() {
  chroot "$TRIXIE_ROOT" dpkg-query -W -f '${Version}' "$1" 2>/dev/null
}

trixie_versions() {
  local p out=""
  for p in "${TRIXIE_PACKAGES[@]}"; do out+="$p $(trixie_version "$p"), "; done
  echo "${out%, }"
}

trixie_enter() {
  local r=$TRIXIE_ROOT d
  mount --bind "$r" "$r" || skip "cannot bind-mount the Debian 13 root onto itself"
  for d in proc sys dev tmp; do
    mkdir -p "$r/$d"
    mount --rbind "/$d" "$r/$d" || skip "cannot bind /$d into the Debian 13 root"
  done
  mkdir -p "$r/run"
  mount -t tmpfs tmpfs "$r/run"
  mkdir -p "$r/run/lock"  # /var/lock: pqos's API lock
  local c
  for c in "${TRIXIE_CLIENTS[@]}"; do
    eval "$c() { trixie_run $c \"\$@\"; }"
  done
}

# trixie_run PROGRAM ARGS...: the root's PROGRAM, in the root, in the same
# working directory when the root has it (/tmp is the host's). In a
# subshell (a background job such as `containerd ... &`, a pipeline, a
# command substitution) the subshell becomes the program (chroot and env
# exec): `$!` is then the program's pid, and a kill reaches it, not a shell
# that would leave it running.
trixie_run() {
  local cwd=/
  [ -d "$TRIXIE_ROOT/$PWD" ] && cwd=$PWD
  local cmd=(chroot "$TRIXIE_ROOT" /usr/bin/env -i -C "$cwd"
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    HOME=/root TERM="${TERM:-dumb}" RESCTRLFS_SANDBOX="${RESCTRLFS_SANDBOX:-}" "$@")
  if [ "$BASHPID" != "$$" ]; then exec "${cmd[@]}"; fi
  "${cmd[@]}"
}

# crun 1.21 refuses a hybrid cgroup layout (v1 controllers under a tmpfs
# /sys/fs/cgroup, cgroup2 at /sys/fs/cgroup/unified: "cgroups in hybrid mode
# not supported, drop all controllers from cgroupv2"). Where the build
# machine has one, this gives the root the unified hierarchy alone at
# /sys/fs/cgroup, as a Debian 13 host (systemd, cgroup v2) has. Not for
# runc 1.1 under containerd: it handles the hybrid layout, and on a unified
# hierarchy without the cpu controller (bound to v1 here) it fails to set
# cpu.weight.
trixie_unified_cgroup() {
  [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && return 0
  mount -t cgroup2 cgroup2 "$TRIXIE_ROOT/sys/fs/cgroup" ||
    skip "cannot mount the cgroup2 hierarchy in the Debian 13 root"
}
