#!/bin/bash
# Builds the portable release archive resctrlfs-VERSION-x86_64-linux.tar.gz:
# the five programs, stripped, needing nothing but the kernel and glibc 2.31
# or newer (RESCTRLFS_PORTABLE, linked against Debian 11's glibc), the
# systemd units, the sample configuration, the README, the man pages
# (share/man, gzipped; built with scdoc, which this script needs) and the
# bash completions (share/bash-completion/completions), and install.sh /
# uninstall.sh (packaging/archive-install.sh).
# usage: packaging/release.sh [OUT_DIR]   (default: out/; relative paths are
# relative to the repository)
# Environment: BUILD_DIR (default build-portable), JOBS (default 2).
# Needs mmdebstrap and network access the first time (the Debian 11 glibc
# root is cached: packaging/chroot-lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${1:-out}
BUILD=${BUILD_DIR:-build-portable}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
JOBS=${JOBS:-2}
PREFIX=/usr/local
. packaging/chroot-lib.sh

version=$(sed -n 's/^project(resctrlfs .*VERSION \([0-9.]*\)).*/\1/p' CMakeLists.txt)
name=resctrlfs-$version-x86_64-linux
echo "== $name"

# Debian 11's glibc, for the link only.
sysroot=$BUILD/glibc-2.31
if [ ! -f "$sysroot/usr/lib/x86_64-linux-gnu/libc_nonshared.a" ]; then
  tarball=$(chroot_tarball bullseye libc6-dev) || { echo "release.sh: no Debian 11 root" >&2; exit 1; }
  rm -rf "$sysroot"
  mkdir -p "$sysroot"
  tar -xf "$tarball" -C "$sysroot" ./usr/lib/x86_64-linux-gnu ./lib/x86_64-linux-gnu ./lib64
  # Absolute links (lib64/ld-linux-x86-64.so.2 -> /lib/...) point into the
  # root, not the build machine: ld looks them up inside the sysroot.
  find "$sysroot" -type l -lname '/*' -exec sh -c 'ln -sfn "$1$(readlink "$2")" "$2"' _ "$sysroot" {} \;
fi

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DRESCTRLFS_TESTS=OFF -DRESCTRLFS_FUZZ=OFF -DRESCTRLFS_BENCH=OFF -DRESCTRLFS_PORTABLE=ON \
  -DRESCTRLFS_GLIBC_SYSROOT="$sysroot" -DCMAKE_INSTALL_PREFIX=$PREFIX >/dev/null
programs=(resctrlfsd resctrlfsctl resctrl-msrd resctrlfs-sandbox resctrlfs-exporter)
command -v scdoc >/dev/null || { echo "release.sh: scdoc is missing (apt-get install scdoc): the archive carries the man pages" >&2; exit 1; }
nice -n 19 cmake --build "$BUILD" -j"$JOBS" --target "${programs[@]}" man | awk '!/^\[/'

stage=$BUILD/stage/$name
rm -rf "$BUILD/stage"
mkdir -p "$stage/files"
DESTDIR=$stage/files cmake --install "$BUILD" --strip >/dev/null
packaging/portable_check.sh 2.31 "$stage"/files$PREFIX/{bin,sbin}/*
cp packaging/archive-install.sh "$stage/install.sh"
cp packaging/archive-uninstall.sh "$stage/uninstall.sh"
chmod 755 "$stage/install.sh" "$stage/uninstall.sh"
cp README.md "$stage/README.md"
# The README links into docs/: ship the pages it links (not the man sources).
mkdir -p "$stage/docs"
find docs -maxdepth 1 -type f \( -name '*.md' -o -name '*.png' \) -exec cp {} "$stage/docs/" \;
echo "$version" >"$stage/VERSION"
(cd "$stage/files" && find . -type f | sed 's|^\.||' | sort) >"$stage/FILES"
mkdir -p "$OUT"
tar -C "$BUILD/stage" --owner=0 --group=0 --numeric-owner -czf "$OUT/$name.tar.gz" "$name"
(cd "$OUT" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
echo "== $OUT/$name.tar.gz ($(du -h "$OUT/$name.tar.gz" | cut -f1))"
