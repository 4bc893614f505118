#!/bin/bash
# Builds the Debian packages from the working tree with the standard tools
# (dpkg-buildpackage -b -us -uc: debhelper, dh's cmake+ninja build system)
# and checks them: lintian reports no error or warning (overrides carry
# their reason in debian/*.lintian-overrides), the programs are stripped
# and their debug symbols are in the -dbgsym packages, the sample
# configuration is a conffile, the units are enabled but never started by
# the maintainer scripts, and each package holds what it should (with the
# man pages and bash completions of its programs).
# usage: deb_build.sh SOURCE_DIR OUT_DIR
# Leaves the .deb files in OUT_DIR (deb_chroot.sh installs them). Exit 77
# (skipped) when the packaging tools are not installed.
set -uo pipefail
src=$(cd "$1" && pwd)
out=$2
for tool in dpkg-buildpackage dh lintian; do
  if ! command -v $tool >/dev/null; then
    echo "SKIPPED: $tool is not installed (apt-get install debhelper lintian)" >&2
    exit 77
  fi
done
if ! deps=$(cd "$src" && dpkg-checkbuilddeps 2>&1); then
  echo "SKIPPED: build dependencies missing: $deps" >&2
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }

# A copy of the tracked and new files (not build trees), at a fixed path so
# that ccache (when the caller has one: CCACHE_DIR) hits on the next run.
rm -rf "$out"
mkdir -p "$out/src"
(cd "$src" && git ls-files -z -co --exclude-standard | xargs -0 tar -cf - --) |
  tar -xf - -C "$out/src" || fail "copying the source tree"
if [ -n "${CCACHE_DIR:-}" ] && command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_NOHASHDIR=1
fi
echo "== dpkg-buildpackage -b -us -uc (log: $out/build.log)"
if ! (cd "$out/src" && DEB_BUILD_OPTIONS="parallel=${JOBS:-2}" \
      nice -n 19 dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" >&2
  fail "dpkg-buildpackage failed (log above)"
fi
changes=$(ls "$out"/resctrlfs_*_amd64.changes)
echo "== lintian $(basename "$changes")"
lintian --fail-on error,warning --info "$changes" || fail "lintian reports errors or warnings (above)"

version=$(cd "$out/src" && dpkg-parsechangelog -S Version)
for p in resctrlfs resctrl-msrd resctrlfs-dbgsym resctrl-msrd-dbgsym; do
  f=$out/${p}_${version}_amd64.deb
  [ -f "$f" ] || f=$out/${p}_${version}_amd64.ddeb
  [ -f "$f" ] || fail "no package $p ${version} in $out"
done
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
for p in resctrlfs resctrl-msrd; do
  dpkg-deb -x "$out/${p}_${version}_amd64.deb" "$x/$p"
  dpkg-deb -e "$out/${p}_${version}_amd64.deb" "$x/$p.ctrl"
  dpkg-deb -x "$out/${p}-dbgsym_${version}_amd64.deb" "$x/$p-dbgsym"
done
expect() {  # package path...
  local p=$1
  shift
  for f in "$@"; do [ -e "$x/$p$f" ] || fail "$p does not ship $f"; done
}
expect resctrlfs /usr/sbin/resctrlfsd /usr/sbin/resctrlfs-exporter /usr/bin/resctrlfsctl \
  /usr/bin/resctrlfs-sandbox /lib/systemd/system/resctrlfsd.service \
  /lib/systemd/system/resctrlfs-exporter.service /etc/resctrlfs/resctrlfsd.conf \
  /usr/share/doc/resctrlfs/README.md /usr/share/doc/resctrlfs/copyright \
  /usr/share/man/man8/resctrlfsd.8.gz /usr/share/man/man8/resctrlfsctl.8.gz \
  /usr/share/man/man8/resctrlfs-exporter.8.gz /usr/share/man/man1/resctrlfs-sandbox.1.gz \
  /usr/share/bash-completion/completions/resctrlfsd /usr/share/bash-completion/completions/resctrlfsctl \
  /usr/share/bash-completion/completions/resctrlfs-sandbox \
  /usr/share/bash-completion/completions/resctrlfs-exporter
expect resctrl-msrd /usr/sbin/resctrl-msrd /lib/systemd/system/resctrl-msrd.service \
  /usr/lib/modules-load.d/resctrl-msrd.conf /usr/share/man/man8/resctrl-msrd.8.gz \
  /usr/share/bash-completion/completions/resctrl-msrd
[ -e "$x/resctrlfs/usr/sbin/resctrl-msrd" ] && fail "resctrlfs ships the broker (resctrl-msrd's)"
for bin in "$x"/resctrlfs/usr/{s,}bin/* "$x"/resctrl-msrd/usr/sbin/*; do
  readelf -S "$bin" | grep -q '\.debug_info' && fail "$(basename "$bin") is not stripped"
  id=$(readelf -n "$bin" | sed -n 's/.*Build ID: *//p')
  [ -n "$id" ] || fail "$(basename "$bin") has no build id"
  dbg=$(ls "$x"/*-dbgsym/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug 2>/dev/null)
  [ -n "$dbg" ] && readelf -S "$dbg" 2>/dev/null | grep -q '\.debug_info' ||
    fail "$(basename "$bin")'s debug symbols (build id $id) are not in a -dbgsym package"
done
grep -qx /etc/resctrlfs/resctrlfsd.conf "$x/resctrlfs.ctrl/conffiles" ||
  fail "/etc/resctrlfs/resctrlfsd.conf is not a conffile"
for p in resctrlfs resctrl-msrd; do
  grep -q 'deb-systemd-helper.*enable\|deb-systemd-helper unmask' "$x/$p.ctrl/postinst" ||
    fail "$p's postinst does not enable its units"
  grep -q 'deb-systemd-invoke.*start' "$x/$p.ctrl/postinst" &&
    fail "$p's postinst starts its units (they must only be enabled)"
done
for bin in "$x"/resctrlfs/usr/{s,}bin/* "$x"/resctrl-msrd/usr/sbin/*; do
  v=$("$bin" --version) || fail "$(basename "$bin") --version failed"
  [ "$v" = "$(basename "$bin") ${version%-*}" ] || fail "$(basename "$bin") --version says '$v', the package ${version}"
done
echo "ok: packages built, lintian clean, stripped with -dbgsym, conffile, units enabled not started"
ls "$out"/*.deb
