#!/usr/bin/env bash
# The project's one entry point for people and CI.
#   ./dev.sh mount [daemon options]  install deps, build, mount on the default platform
#   ./dev.sh test                    install deps, build, run every test (what CI runs)
#   ./dev.sh deps | build            the steps on their own
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
JOBS=$(nproc)

# Debian 12 packages, each for a reason given in README.md "Dependencies".
DEPS=(build-essential cmake ninja-build pkg-config git
      libfuse3-dev fuse3 libboost-dev nlohmann-json3-dev catch2
      libfmt-dev libspdlog-dev libcli11-dev
      clang-14 libclang-rt-14-dev clang-format-14
      util-linux procps psmisc python3
      libseccomp-dev libjemalloc-dev systemd
      intel-cmt-cat golang-go golang-github-intel-goresctrl-dev runc busybox-static containerd
      prometheus chromium chromium-driver
      libvirt-clients libvirt-daemon-driver-qemu qemu-system-x86)

deps() {
  local missing=()
  for p in "${DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$JOBS"
}

build_fuzz() {
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRESCTRLFS_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j"$JOBS" --target fuzzers
}

mountpoint_default() {
  if [ -d /sys/fs/resctrl ]; then echo /sys/fs/resctrl; else echo /mnt/resctrl; fi
}

case "${1:-}" in
  deps) deps ;;
  build) deps; build ;;
  mount)
    shift
    deps; build
    mp=$(mountpoint_default)
    mkdir -p "$mp"
    "$ROOT/build/daemon/resctrlfsd" --control /run/resctrlfsd.sock "$@" "$mp"
    echo "resctrlfs is mounted at $mp (platform: host unless --platform was given)."
    echo "Unmount with: fusermount3 -u $mp"
    ;;
  test)
    deps; build
    echo "== clang-format check"
    git ls-files '*.h' '*.cc' | xargs -r clang-format-14 --dry-run --Werror
    echo "== unit and integration tests"
    (cd build && ctest --output-on-failure -j"$JOBS")
    if [ -x tests/run-extra.sh ]; then tests/run-extra.sh; fi
    ;;
  *) sed -n '2,6p' "$0"; exit 2 ;;
esac
