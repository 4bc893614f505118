#!/bin/sh
# The release archive's install.sh and uninstall.sh (packaging/archive-*.sh),
# run with DESTDIR on a stage made as release.sh makes it (cmake --install
# of this build tree, its FILES list), into a scratch root that already
# holds the standard /usr/local directories (bin, sbin, lib, share,
# share/man) and a file of another program: the installation puts every
# file where FILES says (the man pages and completions among them), a
# second installation over it is harmless, and the uninstallation leaves
# the root as it was: nothing of ours left, and no directory that was there
# before removed.
# usage: archive_scripts.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/stage root=$tmp/root
mkdir -p "$stage/files" "$root/usr/local/bin" "$root/usr/local/sbin" "$root/usr/local/lib" \
  "$root/usr/local/share/man" "$root/usr/local/etc"
echo other >"$root/usr/local/bin/other-program"
fail() { echo "FAIL: $*" >&2; exit 1; }
DESTDIR=$stage/files cmake --install "$build" >/dev/null || fail "cmake --install $build"
(cd "$stage/files" && find . -type f | sed 's|^\.||' | sort) >"$stage/FILES"
cp "$src/packaging/archive-install.sh" "$stage/install.sh"
cp "$src/packaging/archive-uninstall.sh" "$stage/uninstall.sh"
echo 0 >"$stage/VERSION"
(cd "$root" && find . | sort) >"$tmp/before"
DESTDIR=$root sh "$stage/install.sh" >/dev/null || fail "install.sh"
for f in $(cat "$stage/FILES"); do
  [ -f "$root$f" ] || fail "install.sh did not install $f"
done
grep -q '/share/man/man8/resctrlfsd.8.gz$' "$stage/FILES" ||
  echo "note: the build has no man pages (scdoc missing at configure)" >&2
DESTDIR=$root sh "$stage/install.sh" >/dev/null || fail "install.sh a second time"
DESTDIR=$root sh "$root/usr/local/share/resctrlfs/uninstall.sh" >/dev/null || fail "uninstall.sh"
(cd "$root" && find . | sort) >"$tmp/after"
left=$(comm -13 "$tmp/before" "$tmp/after")
gone=$(comm -23 "$tmp/before" "$tmp/after")
[ -z "$left" ] || fail "left behind after uninstall.sh: $left"
[ -z "$gone" ] || fail "uninstall.sh removed what was there before: $gone"
echo "ok: install.sh installed $(wc -l <"$stage/FILES") files, uninstall.sh left the root as it was"
