#!/usr/bin/env bash
# The project's one entry point for people and CI.
#   ./dev.sh mount [daemon options]  install what the programs need, build them, mount
#   ./dev.sh test                    install everything, build, run every test (what CI runs)
#   ./dev.sh deps | build | build-all  the steps on their own (build: the programs only)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
JOBS=$(nproc)
T0=$(date +%s)

# Debian 12 packages, each for a reason given in docs/dependencies.md.
# What building and running the programs needs:
PROGRAM_DEPS=(build-essential cmake ninja-build pkg-config
      libfuse3-dev fuse3 libboost-dev nlohmann-json3-dev
      libfmt-dev libspdlog-dev libcli11-dev libseccomp-dev libjemalloc-dev scdoc)
# What the tests need besides:
TEST_DEPS=(git catch2 python3 clang-14 libclang-rt-14-dev clang-format-14
      util-linux procps psmisc systemd
      intel-cmt-cat golang-go golang-github-intel-goresctrl-dev runc busybox-static containerd
      prometheus chromium chromium-driver
      libvirt-clients libvirt-daemon-driver-qemu qemu-system-x86
      linux-source-6.12 debhelper lintian mmdebstrap sudo groff-base bash-completion)
# The programs `./dev.sh mount` and `./dev.sh build` build, and their man
# pages (target man: build/docs/man).
PROGRAMS=(resctrlfsd resctrlfsctl resctrl-msrd resctrlfs-sandbox resctrlfs-exporter)
TARGETS=("${PROGRAMS[@]}" man)

step() { printf '== [%ds] %s\n' $(($(date +%s) - T0)) "$*"; }

install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    step "all ${#@} Debian packages are installed"
    return
  fi
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || {
      echo "dev.sh: installing ${missing[*]} needs root: run as root or install sudo" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  step "installing ${#missing[@]} Debian packages: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  step "packages installed"
}

# configure [TESTS=ON|OFF]: build/, RelWithDebInfo. `mount` configures it
# without the tests, so that a first mount needs no test package; the test
# command turns them on again in the same tree (the programs' objects stay).
configure() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRESCTRLFS_TESTS="$1" >/dev/null
}

build_programs() {
  local tests=OFF
  # A tree configured with the tests keeps them (no reconfigure back and forth).
  grep -q '^RESCTRLFS_TESTS:BOOL=ON' build/CMakeCache.txt 2>/dev/null && tests=ON
  step "building ${PROGRAMS[*]} and the man pages in build/ ($JOBS jobs)"
  configure "$tests"
  # Ninja's progress lines are left out; awk, unlike grep, succeeds on no
  # output, so with pipefail the pipeline's status is the build's.
  cmake --build build -j"$JOBS" --target "${TARGETS[@]}" | awk '!/^\[/' ||
    { echo "dev.sh: the build failed (see above)" >&2; exit 1; }
  step "built"
}

build_all() {
  step "building every target (programs, tests, benchmarks) in build/ ($JOBS jobs)"
  configure ON
  cmake --build build -j"$JOBS"
  step "built"
}

mountpoint_default() {
  if [ -d /sys/fs/resctrl ]; then echo /sys/fs/resctrl; else echo /mnt/resctrl; fi
}

case "${1:-}" in
  deps) install_packages "${PROGRAM_DEPS[@]}" "${TEST_DEPS[@]}" ;;
  build) install_packages "${PROGRAM_DEPS[@]}"; build_programs ;;
  build-all) install_packages "${PROGRAM_DEPS[@]}" "${TEST_DEPS[@]}"; build_all ;;
  mount)
    shift
    install_packages "${PROGRAM_DEPS[@]}"
    build_programs
    mp=$(mountpoint_default)
    mkdir -p "$mp"
    step "mounting on $mp: build/daemon/resctrlfsd --control /run/resctrlfsd.sock $* $mp"
    "$ROOT/build/daemon/resctrlfsd" --control /run/resctrlfsd.sock "$@" "$mp"
    step "resctrlfs is mounted at $mp (platform: host unless --platform was given)."
    echo "Next:"
    printf '  %s\n      %s\n' \
      "ls $mp; cat $mp/schemata" "the tree, as the kernel's resctrl shows it" \
      "build/daemon/resctrlfsctl --socket /run/resctrlfsd.sock status" \
      "the daemon's control socket (status, workloads)" \
      "build/sandbox/resctrlfs-sandbox --platform intel-2s -- bash" \
      "a shell in its own mount namespace that sees a tree at /sys/fs/resctrl" \
      "fusermount3 -u $mp" "unmount (the daemon exits)"
    echo "The programs are in build/daemon, build/sandbox, build/exporter and build/hw;"
    echo "their manuals: man -l build/docs/man/resctrlfsd.8 (and resctrlfsctl.8, resctrlfs-sandbox.1, ...)."
    ;;
  test)
    exec tests/ci.sh
    ;;
  *) sed -n '2,5p' "$0"; exit 2 ;;
esac
