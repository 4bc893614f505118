#!/bin/sh
# Runs `systemd-analyze verify` over every unit in DIR (packaging/) as they
# would be installed: in a scratch root holding the units under
# /etc/systemd/system, the host's own system units (the targets they name)
# and executable stand-ins at the paths their Exec lines use, since
# verify checks that those exist. Any output is a failure: systemd reports
# unknown keys and bad values as warnings with exit status 0.
set -u
dir=$1
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIPPED: systemd-analyze is not installed (package systemd); the units in $dir were not verified" >&2
  exit 77
fi
sysunits=
for d in /usr/lib/systemd/system /lib/systemd/system; do
  if [ -e "$d/sysinit.target" ]; then sysunits=$d; break; fi
done
if [ -z "$sysunits" ]; then
  echo "SKIPPED: no systemd system units on this machine (sysinit.target); cannot verify $dir" >&2
  exit 77
fi
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/etc/systemd/system" "$root/usr/lib/systemd"
cp -a "$sysunits" "$root/usr/lib/systemd/system"
units=
for u in "$dir"/*.service "$dir"/*.socket; do
  [ -e "$u" ] || continue
  cp "$u" "$root/etc/systemd/system/"
  units="$units $(basename "$u")"
  # Every absolute program an Exec line runs ('-' and '@' prefixes dropped).
  for prog in $(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\(\/[^ ]*\).*/\1/p' "$u"); do
    mkdir -p "$root$(dirname "$prog")"
    printf '#!/bin/sh\nexit 0\n' >"$root$prog"
    chmod +x "$root$prog"
  done
done
if [ -z "$units" ]; then
  echo "FAIL: no units in $dir" >&2
  exit 1
fi
out=$(systemd-analyze verify --man=no --root="$root" $units 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify$units (exit $rc):" >&2
  echo "$out" >&2
  exit 1
fi
# The daemon's connection outlives a crash: it is kept in the unit's file
# descriptor store and the daemon is started again (docs/reliability.md).
for want in 'FileDescriptorStoreMax=1' 'Restart=on-failure' 'resctrlfsd -f --fd-store '; do
  if ! grep -q -- "$want" "$dir/resctrlfsd.service"; then
    echo "FAIL: $dir/resctrlfsd.service lacks '$want'" >&2
    exit 1
  fi
done
# A condition on the mount point is checked before the restart after a
# crash too, when the mount is there (kept by the fd store): it skipped the
# restart, or hung PID 1 on the dead daemon's mount (systemd.restart).
if grep -q '^ConditionPathIsMountPoint=' "$dir/resctrlfsd.service"; then
  echo "FAIL: $dir/resctrlfsd.service has a ConditionPathIsMountPoint=, which stops a restart after a crash" >&2
  exit 1
fi
if grep -q '^ExecStopPost=.*fusermount' "$dir/resctrlfsd.service"; then
  echo "FAIL: $dir/resctrlfsd.service detaches the mount after a crash (ExecStopPost)" >&2
  exit 1
fi
echo "ok: systemd-analyze verify$units"
