// Reads this machine's CPU topology (possible and online CPUs, packages, L2
// and L3 ids and sizes, NUMA nodes) from a sysfs cpu directory. Used by the
// real backend, the MSR broker and the simulator's `host` profile; it is not
// part of the simulator, so the broker links no simulator.
#pragma once

#include <string>

#include "base/result.h"
#include "hw/x86/cpuid_decode.h"

namespace resctrlfs::hw::x86 {

// `sysfs_cpu_dir` is normally /sys/devices/system/cpu.
Result<Topology> read_sysfs_topology(const std::string& sysfs_cpu_dir);

}  // namespace resctrlfs::hw::x86
