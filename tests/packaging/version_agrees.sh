#!/bin/sh
# The version comes from one place, CMakeLists.txt's project(VERSION): every
# program reports it with --version ("NAME VERSION") and debian/changelog's
# newest entry is that version (with a Debian revision: VERSION-N).
# usage: version_agrees.sh SOURCE_DIR PROJECT_VERSION PROGRAM...
set -u
src=$1 version=$2
shift 2
fail=0
changelog=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$src/debian/changelog" 2>/dev/null)
case "$changelog" in
  "$version"-*) echo "ok: debian/changelog $changelog" ;;
  *) echo "FAIL: debian/changelog's newest version is '$changelog', not $version-N" \
       "(project(VERSION) in CMakeLists.txt): add a changelog entry (dch -v $version-1)" >&2
     fail=1 ;;
esac
for prog in "$@"; do
  name=$(basename "$prog")
  out=$("$prog" --version 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || [ "$out" != "$name $version" ]; then
    echo "FAIL: $name --version printed '$out' (exit $rc), not '$name $version'" >&2
    fail=1
  else
    echo "ok: $out"
  fi
done
exit $fail
