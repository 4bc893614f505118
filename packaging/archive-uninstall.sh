#!/bin/sh
# uninstall.sh of the resctrlfs release archive (also installed as
# /usr/local/share/resctrlfs/uninstall.sh): stops and disables the units if
# systemd runs, removes every file install.sh recorded, and the directories
# that are left empty. A configuration file changed since it was installed
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
# Copy the list first: it is one of the files removed.
list=$(cat "$dest$manifest")
for f in $list; do rm -f "$dest$f"; done
for f in $list; do
  d=$(dirname "$f")
  while [ "$d" != / ] && [ "$d" != /usr/local ] && rmdir "$dest$d" 2>/dev/null; do d=$(dirname "$d"); done
done
if [ -z "$dest" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
echo "resctrlfs uninstalled"
