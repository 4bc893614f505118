#!/bin/sh
# install.sh of the resctrlfs release archive: copies files/ (the programs
# under /usr/local/{bin,sbin}, systemd units under
# /usr/local/lib/systemd/system, /usr/local/etc/resctrlfs/resctrlfsd.conf,
# the README, the man pages under /usr/local/share/man and the bash
# completions under /usr/local/share/bash-completion/completions, where man
# and bash-completion look) into / and records what it wrote in
# /usr/local/share/resctrlfs/installed-files, which uninstall.sh removes.
# Run it as root or with sudo; as another user it asks sudo itself. An
# existing configuration file that differs from the shipped one is kept
# (the shipped one is written next to it as .new). The units are not
# enabled or started: `systemctl enable --now resctrlfsd` does that.
# Environment: DESTDIR (install into another root; default /).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ] && [ -z "${DESTDIR:-}" ]; then
  command -v sudo >/dev/null || { echo "install.sh: run it as root (sudo is not installed)" >&2; exit 1; }
  exec sudo "$0" "$@"
fi
dest=${DESTDIR:-}
manifest=/usr/local/share/resctrlfs/installed-files
mkdir -p "$dest$(dirname $manifest)"
: >"$dest$manifest.tmp"
while read -r f; do
  target=$f
  if [ -e "$dest$f" ] && [ "${f#/usr/local/etc/}" != "$f" ] && ! cmp -s "$here/files$f" "$dest$f"; then
    target=$f.new
    echo "install.sh: keeping your $f; the shipped one is $target"
  fi
  mkdir -p "$dest$(dirname "$f")"
  cp -p "$here/files$f" "$dest$target.tmp-install"
  mv -f "$dest$target.tmp-install" "$dest$target"
  echo "$target" >>"$dest$manifest.tmp"
done <"$here/FILES"
echo "$manifest" >>"$dest$manifest.tmp"
mv -f "$dest$manifest.tmp" "$dest$manifest"
cp "$here/uninstall.sh" "$dest/usr/local/share/resctrlfs/uninstall.sh"
echo /usr/local/share/resctrlfs/uninstall.sh >>"$dest$manifest"
if [ -z "$dest" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
echo "resctrlfs $(cat "$here/VERSION") installed in /usr/local (uninstall: sudo /usr/local/share/resctrlfs/uninstall.sh)"
