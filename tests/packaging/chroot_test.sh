#!/bin/bash
# Installs resctrlfs into a fresh Debian system and uses it there: MODE deb
# (the packages deb_build.sh left in ARTIFACTS) or archive (the release
# archive release.sh left there), in SUITE (bullseye, bookworm, trixie).
# The system is a cached mmdebstrap tarball (packaging/chroot-lib.sh),
# unpacked into a scratch directory and entered with chroot in its own
# mount and PID namespaces, with the host's /dev (resctrlfsd needs
# /dev/fuse), /sys and a fresh /proc. tests/packaging/in_chroot.sh runs
# there as a user with sudo; afterwards the system's files must be what
# they were before the installation (nothing left behind, nothing that was
# there removed).
# usage: chroot_test.sh deb|archive SUITE ARTIFACTS
# Exit 77 (skipped) when not root, without mmdebstrap or network, or when
# the artefacts were not built (RESCTRLFS_INSTALL_TESTS unset: see
# tests/README.md).
set -uo pipefail
mode=$1 suite=$2 artifacts=$3
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
skip() { echo "SKIPPED: $*" >&2; exit 77; }
[ "${RESCTRLFS_INSTALL_TESTS:-}" = 1 ] ||
  skip "the install tests run only with RESCTRLFS_INSTALL_TESTS=1 (tests/ci.sh's install stage)"
[ "$(id -u)" = 0 ] || skip "needs root (chroot, mount namespaces)"
[ -e /dev/fuse ] || skip "no /dev/fuse"
case $mode in
  deb) ls "$artifacts"/resctrlfs_*_amd64.deb >/dev/null 2>&1 || skip "no .deb in $artifacts (packaging.deb_build failed?)"
       # The packages' dependencies come with the system: the test needs no network.
       pkgs=(sudo fuse3 libfuse3-3 libjemalloc2 libseccomp2 libspdlog1.10 libfmt9 intel-cmt-cat) ;;
  archive) ls "$artifacts"/resctrlfs-*-x86_64-linux.tar.gz >/dev/null 2>&1 ||
             skip "no release archive in $artifacts (packaging.release_build failed?)"
       # Nothing but sudo and the client the test runs (pqos): the archive's
       # programs need only glibc.
       pkgs=(sudo intel-cmt-cat) ;;
esac
. "$src/packaging/chroot-lib.sh"
tarball=$(chroot_tarball "$suite" "${pkgs[@]}") || skip "no $suite system could be made"

root=$(mktemp -d /var/tmp/resctrlfs-chroot.XXXXXX)
trap 'rm -rf --one-file-system "$root"' EXIT
tar -xf "$tarball" -C "$root" || { echo "FAIL: unpacking $tarball" >&2; exit 1; }
mkdir -p "$root/tmp/artifacts"
cp "$artifacts"/*.deb "$artifacts"/*.tar.gz "$root/tmp/artifacts/" 2>/dev/null
cp "$src/packaging/ci-install.sh" "$here/in_chroot.sh" "$root/tmp/"
chroot "$root" useradd -m -s /bin/sh tester
echo 'tester ALL=(ALL) NOPASSWD: ALL' >"$root/etc/sudoers.d/tester"
chmod 0440 "$root/etc/sudoers.d/tester"
echo "127.0.1.1 $(hostname)" >>"$root/etc/hosts"  # sudo resolves its host name

# What the system holds before the installation (paths only, the volatile
# directories left out).
listing() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./run \
     -o -path ./tmp -o -path ./var/tmp -o -path ./var/log -o -path ./var/cache \
     -o -path ./var/lib/apt -o -path ./home/tester \) -prune -o -print | sort)
}
listing >"$root/../$(basename "$root").before"
before=$root/../$(basename "$root").before
trap 'rm -rf --one-file-system "$root"; rm -f "$before"' EXIT

unshare -m -p -f --kill-child --propagation private bash -c '
  set -e
  root=$1 mode=$2
  # The root a mount point, as on a real system or in a container (the
  # sandbox makes "/" private, which needs a mount there).
  mount --bind "$root" "$root"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount -t proc proc "$root/proc"
  mount -t tmpfs tmpfs "$root/run"
  # What systemd-tmpfiles makes at boot: /var/lock points here (pqos takes
  # its API lock in it).
  mkdir -m 1777 "$root/run/lock"
  exec chroot "$root" runuser -u tester -- /tmp/in_chroot.sh "$mode"
' _ "$root" "$mode"
rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: the $mode installation in $suite failed (exit $rc; output above)" >&2
  exit 1
fi
listing >"$before.after"
left=$(comm -13 "$before" "$before.after")
gone=$(comm -23 "$before" "$before.after")
rm -f "$before.after"
if [ -n "$left" ]; then
  echo "FAIL: left behind in $suite after the uninstallation:" >&2
  echo "$left" >&2
  exit 1
fi
if [ -n "$gone" ]; then
  echo "FAIL: the uninstallation in $suite removed what was there before it:" >&2
  echo "$gone" >&2
  exit 1
fi
echo "ok: $mode in $suite: installed, used and uninstalled without a trace"
