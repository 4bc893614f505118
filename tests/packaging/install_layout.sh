#!/bin/sh
# `cmake --install` (into a scratch DESTDIR) puts what the units name where
# they name it, for the prefix the tree was configured with (the units are
# generated at configure time; /usr/local by default, /usr for the Debian
# package): every Exec line's program exists under the prefix (the units
# are generated with it, never a hard-coded /usr/sbin), every
# Documentation= target is installed (file://PATH; man:NAME(N) as
# PREFIX/share/man/manN/NAME.N.gz, so scdoc must have built the pages), the sample configuration is
# where resctrlfsd.service's EnvironmentFile= reads it, and resctrl-msrd.service's --socket is the default of
# `resctrlfsd --broker` (and of resctrl-msrd --socket), so a daemon started
# with --backend msr and no --broker finds the broker the unit starts.
# usage: install_layout.sh BUILD_DIR
set -u
build=$1
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
if ! out=$(DESTDIR=$dest cmake --install "$build" 2>&1); then
  echo "FAIL: cmake --install: $out" >&2
  exit 1
fi
fail=0
skipped=0
units=$(find "$dest" -name '*.service')
[ -n "$units" ] || { echo "FAIL: no systemd unit installed" >&2; exit 1; }
for u in $units; do
  for prog in $(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\(\/[^ ]*\).*/\1/p' "$u"); do
    case "$prog" in
      /bin/*|/usr/bin/fusermount3) continue ;;  # the system's, not ours
    esac
    if [ ! -x "$dest$prog" ]; then
      echo "FAIL: $(basename "$u") runs $prog, which the install did not put there" >&2
      fail=1
    fi
  done
  for doc in $(sed -n 's/^Documentation=//p' "$u"); do
    case "$doc" in
      file://*) doc=${doc#file://} ;;
      # man:NAME(SECTION): the page, gzipped, under the prefix's share/man.
      man:*) page=${doc#man:} sec=${doc##*(}
             page=${page%(*} sec=${sec%)}
             doc=$prefix/share/man/man$sec/$page.$sec.gz
             if ! ls "$build"/docs/man/*.[1-8] >/dev/null 2>&1; then
               echo "NOT CHECKED: $(basename "$u")'s $page($sec): the build has no man pages (scdoc was missing at configure)" >&2
               skipped=1
               continue
             fi ;;
    esac
    if [ ! -f "$dest$doc" ]; then
      echo "FAIL: $(basename "$u") documents itself at $doc, which the install did not put there" >&2
      fail=1
    fi
  done
done
daemon_unit=$(find "$dest" -name resctrlfsd.service)
conf=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$daemon_unit")
if [ -z "$conf" ] || [ ! -f "$dest$conf" ]; then
  echo "FAIL: resctrlfsd.service reads its configuration from '$conf', which the install did not put there" >&2
  fail=1
fi
msrd_unit=$(find "$dest" -name resctrl-msrd.service)
unit_sock=$(sed -n 's/^ExecStart=.*--socket \([^ ]*\).*/\1/p' "$msrd_unit")
daemon_sock=$("$build/daemon/resctrlfsd" --help | sed -n 's/.*--broker SOCKET=\([^ ]*\).*/\1/p')
msrd_sock=$("$build/hw/resctrl-msrd" --help | sed -n 's/.*--socket SOCKET=\([^ ]*\).*/\1/p')
if [ -z "$unit_sock" ] || [ "$unit_sock" != "$daemon_sock" ] || [ "$unit_sock" != "$msrd_sock" ]; then
  echo "FAIL: resctrl-msrd.service listens on '$unit_sock', resctrlfsd --broker defaults to" \
    "'$daemon_sock', resctrl-msrd --socket to '$msrd_sock': they must be one path" >&2
  fail=1
fi
[ $fail = 0 ] && echo "ok: units, documentation, configuration and broker socket agree under $prefix"
# Skipped (77) rather than passed when the man pages could not be checked.
[ $fail = 0 ] && [ $skipped = 1 ] && exit 77
exit $fail
