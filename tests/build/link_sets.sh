#!/usr/bin/env bash
# The programs link what they run, checked on the built binaries and on the
# link commands:
#   resctrl-msrd (the privileged broker) holds no code of the simulator
#     (namespace resctrlfs::hw::sim) and its link command names no simulator
#     library; resctrl-msrd-sim, the test build of the same source, does
#     hold it (so the check can see simulator code when it is there);
#   resctrlfsctl needs no libfuse at run time and its link command names
#     neither libfuse nor fs/ or hw/, and it holds no fs/ or hw/ code;
#     resctrlfsd does (the control);
#   resctrlfsd allocates with jemalloc unless it is a sanitizer build
#     (whose runtime brings its own allocator).
# Arguments: the build directory, then the four binaries.
set -euo pipefail
build="$1" msrd="$2" msrd_sim="$3" ctl="$4" daemon="$5"
for tool in nm readelf; do
  command -v "$tool" >/dev/null || { echo "$tool not found (Debian package binutils)" >&2; exit 1; }
done
fail=0
bad() {
  echo "link sets: $*" >&2
  fail=1
}
defined() { nm -C --defined-only "$1" | grep -c -- "$2" || true; }
needs_fuse() { readelf -d "$1" | grep NEEDED | grep -c fuse || true; }
# The libraries on a target's link command (Ninja, the generator dev.sh uses).
link_line() {
  if [ -f "$build/build.ninja" ]; then
    ninja -C "$build" -t commands "$1" | tail -n 1
  else
    echo "link sets: $build is not a Ninja build; link commands not checked" >&2
  fi
}

[ "$(defined "$msrd" 'resctrlfs::hw::sim::')" = 0 ] || bad "resctrl-msrd holds simulator code"
[ "$(defined "$msrd_sim" 'resctrlfs::hw::sim::')" != 0 ] ||
  bad "resctrl-msrd-sim holds no simulator code: the check cannot see it"
case "$(link_line resctrl-msrd)" in *resctrlfs_hw_sim*) bad "resctrl-msrd links the simulator" ;; esac

[ "$(needs_fuse "$ctl")" = 0 ] || bad "resctrlfsctl needs libfuse"
[ "$(needs_fuse "$daemon")" != 0 ] || bad "resctrlfsd needs no libfuse: the check cannot see it"
for ns in fs hw; do
  [ "$(defined "$ctl" "resctrlfs::$ns::")" = 0 ] || bad "resctrlfsctl holds $ns/ code"
  [ "$(defined "$daemon" "resctrlfs::$ns::")" != 0 ] ||
    bad "resctrlfsd holds no $ns/ code: the check cannot see it"
done
if readelf -d "$daemon" | grep NEEDED | grep -q -e libasan -e libtsan; then
  [ "$(readelf -d "$daemon" | grep NEEDED | grep -c jemalloc || true)" = 0 ] ||
    bad "the sanitizer build of resctrlfsd links jemalloc as well"
else
  [ "$(readelf -d "$daemon" | grep NEEDED | grep -c libjemalloc || true)" != 0 ] ||
    bad "resctrlfsd does not allocate with jemalloc"
fi
case "$(link_line resctrlfsctl)" in
  *fuse3* | *resctrlfs_fs* | *resctrlfs_hw* | *resctrlfs_daemon*)
    bad "resctrlfsctl's link command names libfuse, fs/, hw/ or the daemon: $(link_line resctrlfsctl)"
    ;;
esac
[ "$fail" = 0 ] || exit 1
echo "resctrl-msrd links no simulator; resctrlfsctl links no libfuse, fs/ or hw/; resctrlfsd allocates as built"
