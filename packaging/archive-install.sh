#!/bin/sh
# install.sh of the resctrlfs release archive: copies files/ (the programs
# under /usr/local/{bin,sbin}, systemd units under
# /usr/local/lib/systemd/system, /usr/local/etc/resctrlfs/resctrlfsd.conf,
# the README, the man pages under /usr/local/share/man and the bash
# completions under /usr/local/share/bash-completion/completions, where man
# and bash-completion look) into / and records what it wrote in
# /usr/local/share/resctrlfs/installed-files (and the directories it made
# in installed-dirs), which uninstall.sh removes.
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
# The directories this script made (not those that were there, such as
# /usr/local/sbin or /usr/local/share/man): uninstall.sh removes these
# only, once empty. A second installation keeps the first one's list.
dirs=/usr/local/share/resctrlfs/installed-dirs
made=$(cat "$dest$dirs" 2>/dev/null || true)
make_dir() {
  new= d=$1
  while [ ! -d "$dest$d" ]; do new="$d $new"; d=$(dirname "$d"); done
  for d in $new; do
    mkdir "$dest$d"
    made="$made
$d"
  done
}
make_dir "$(dirname $manifest)"
: >"$dest$manifest.tmp"
while read -r f; do
  target=$f
  if [ -e "$dest$f" ] && [ "${f#/usr/local/etc/}" != "$f" ] && ! cmp -s "$here/files$f" "$dest$f"; then
    target=$f.new
    echo "install.sh: keeping your $f; the shipped one is $target"
  fi
  make_dir "$(dirname "$f")"
  cp -p "$here/files$f" "$dest$target.tmp-install"
  mv -f "$dest$target.tmp-install" "$dest$target"
  echo "$target" >>"$dest$manifest.tmp"
done <"$here/FILES"
echo "$manifest" >>"$dest$manifest.tmp"
echo "$dirs" >>"$dest$manifest.tmp"
echo "$made" | sed '/^$/d' | sort -u >"$dest$dirs"
mv -f "$dest$manifest.tmp" "$dest$manifest"
cp "$here/uninstall.sh" "$dest/usr/local/share/resctrlfs/uninstall.sh"
echo /usr/local/share/resctrlfs/uninstall.sh >>"$dest$manifest"
if [ -z "$dest" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
echo "resctrlfs $(cat "$here/VERSION") installed in /usr/local (uninstall: sudo /usr/local/share/resctrlfs/uninstall.sh)"
