#!/bin/sh
# uninstall.sh of the resctrlfs release archive (also installed as
# /usr/local/share/resctrlfs/uninstall.sh): stops and disables the units if
# systemd runs, removes every file install.sh recorded, and the directories
# it made once they are empty (never one that was there before it, such as
# /usr/local/sbin or /usr/local/share/man). A configuration file changed since it was installed
# is kept, and said so.
# Environment: DESTDIR (as for install.sh).
set -eu
if [ "$(id -u)" != 0 ] && [ -z "${DESTDIR:-}" ]; then
  command -v sudo >/dev/null || { echo "uninstall.sh: run it as root (sudo is not installed)" >&2; exit 1; }
  exec sudo "$0" "$@"
fi
dest=${DESTDIR:-}
manifest=/usr/local/share/resctrlfs/installed-files
[ -f "$dest$manifest" ] || { echo "uninstall.sh: resctrlfs is not installed ($manifest is missing)" >&2; exit 1; }
if [ -z "$dest" ] && [ -d /run/systemd/system ]; then
  systemctl disable --now resctrlfsd.service resctrlfs-exporter.service resctrl-msrd.service 2>/dev/null || true
fi
dirs=/usr/local/share/resctrlfs/installed-dirs
# Copy the lists first: they are among the files removed.
list=$(cat "$dest$manifest")
made=$(cat "$dest$dirs" 2>/dev/null || true)
for f in $list; do rm -f "$dest$f"; done
if [ -n "$made" ]; then
  # The directories install.sh made, deepest first (a directory sorts
  # before what it holds), each once it is empty; those that were there
  # before (/usr/local/sbin, /usr/local/share/man, ...) stay.
  for d in $(echo "$made" | sort -r); do rmdir "$dest$d" 2>/dev/null || true; done
else
  # Installed by an install.sh that kept no list of its directories.
  for f in $list; do
    d=$(dirname "$f")
    while [ "$d" != / ] && [ "$d" != /usr/local ] && rmdir "$dest$d" 2>/dev/null; do d=$(dirname "$d"); done
  done
fi
if [ -z "$dest" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
echo "resctrlfs uninstalled"
