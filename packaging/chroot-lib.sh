# shellcheck shell=bash
# Sourced by the install tests: fresh Debian systems made with mmdebstrap,
# cached as tarballs between runs.
#
# chroot_tarball SUITE PACKAGE...: prints the path of a tarball of a minbase
# Debian SUITE (bullseye, bookworm, trixie) with PACKAGEs installed, building
# it if the cache does not have it. The cache directory is
# $RESCTRLFS_CHROOT_CACHE, else /var/cache/resctrlfs-tests (root) or
# ${XDG_CACHE_HOME:-~/.cache}/resctrlfs-tests; a tarball's name is the
# suite and a hash of the package list, and one older than
# RESCTRLFS_CHROOT_MAX_DAYS (default 7) days is rebuilt, so security
# updates arrive (if that rebuild fails, the old tarball is used, saying
# so). Returns 1, having printed why, if none can be had (no mmdebstrap, no
# network): the caller skips.
chroot_cache_dir() {
  if [ -n "${RESCTRLFS_CHROOT_CACHE:-}" ]; then
    echo "$RESCTRLFS_CHROOT_CACHE"
  elif [ "$(id -u)" = 0 ]; then
    echo /var/cache/resctrlfs-tests
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/resctrlfs-tests"
  fi
}

chroot_tarball() {
  local suite=$1
  shift
  local pkgs
  pkgs=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
  local dir key tarball
  dir=$(chroot_cache_dir)
  key=$(printf '%s %s' "$suite" "$pkgs" | sha256sum | cut -c1-12)
  tarball=$dir/$suite-$key.tar
  mkdir -p "$dir" || return 1
  if [ -f "$tarball" ] &&
    [ -z "$(find "$tarball" -mtime +"${RESCTRLFS_CHROOT_MAX_DAYS:-7}")" ]; then
    echo "$tarball"
    return 0
  fi
  if ! command -v mmdebstrap >/dev/null; then
    echo "mmdebstrap is not installed (apt-get install mmdebstrap)" >&2
    return 1
  fi
  local mirror=${RESCTRLFS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  local log=$dir/$suite-$key.log
  echo "== building the $suite chroot ($pkgs) into $tarball (log: $log)" >&2
  # Debian 11 and 12 keep their security updates in a separate archive.
  local sec=()
  case $suite in
    bullseye|bookworm)
      sec=("deb http://deb.debian.org/debian-security $suite-security main") ;;
  esac
  if ! mmdebstrap --variant=minbase --include="$pkgs" --format=tar "$suite" "$tarball.tmp" \
    "deb $mirror $suite main" "${sec[@]}" >"$log" 2>&1; then
    rm -f "$tarball.tmp"
    if [ -f "$tarball" ]; then
      echo "mmdebstrap could not rebuild the $suite chroot ($(grep -m1 '^E:' "$log")): using the older $tarball" >&2
      echo "$tarball"
      return 0
    fi
    # The first error (apt's "Failed to fetch ...: Could not connect") says
    # why; the last lines only that mmdebstrap stopped.
    echo "mmdebstrap could not build a $suite chroot (no network to $mirror?): $(grep -m1 '^E:' "$log" || tail -3 "$log")" >&2
    return 1
  fi
  mv "$tarball.tmp" "$tarball"
  echo "$tarball"
}
