#!/bin/sh
# Installs the resctrlfs release archive on a CI runner or any x86_64 Linux
# with glibc >= 2.31, as a user with sudo (or as root), and checks that the
# programs run. docs/ci.md's GitHub Actions and GitLab CI recipes run this
# script; so does the project's own test of it in fresh Debian 11, 12 and
# 13 systems (tests/packaging/chroot_test.sh), so the recipe is the tested
# one.
# usage: ci-install.sh ARCHIVE|URL   (resctrlfs-VERSION-x86_64-linux.tar.gz)
# A URL is fetched with curl or wget. Afterwards resctrlfsd, resctrlfsctl,
# resctrl-msrd, resctrlfs-sandbox and resctrlfs-exporter are in
# /usr/local/bin and /usr/local/sbin; remove them with
# `sudo /usr/local/share/resctrlfs/uninstall.sh`.
set -eu
src=${1:?usage: ci-install.sh ARCHIVE|URL}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $src in
  http://*|https://*)
    if command -v curl >/dev/null; then curl -fsSL -o "$work/a.tar.gz" "$src"
    else wget -q -O "$work/a.tar.gz" "$src"; fi
    src=$work/a.tar.gz ;;
esac
tar -xzf "$src" -C "$work"
dir=$(echo "$work"/resctrlfs-*-x86_64-linux)
[ -x "$dir/install.sh" ] || { echo "ci-install.sh: $1 is not a resctrlfs release archive" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then "$dir/install.sh"; else sudo "$dir/install.sh"; fi
# The programs run here: this glibc is new enough, nothing else is needed.
PATH=$PATH:/usr/local/sbin
for p in resctrlfsd resctrlfsctl resctrl-msrd resctrlfs-sandbox resctrlfs-exporter; do
  "$p" --version
done
