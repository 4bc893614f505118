// Defines the one reader of the host's CPU topology as sysfs shows it
// (/sys/devices/system/cpu): the possible and online CPU lists, and for
// each cpuN directory its package, NUMA node and caches. The host profile
// and the real backend build their topology from it; the sandbox plans its
// sysfs binds from it. Pure file reading, no x86: the tree is the same on
// every architecture Linux runs resctrl on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace resctrlfs::hw {

// One cache of a CPU: cpuN/cache/indexK.
struct SysfsCache {
  unsigned index = 0;       // K
  std::string dir;          // .../cpuN/cache/indexK
  int level = -1;           // -1 when the level file is missing or not a number
  std::string type;         // "Data", "Instruction", "Unified"; empty when missing
  int id = -1;              // -1 when the id file is missing or not a number
  uint64_t size_bytes = 0;  // from "<N>K" / "<N>M" / "<N>"; 0 when unknown
};

// One cpuN directory.
struct SysfsCpu {
  unsigned cpu = 0;
  std::string dir;                 // .../cpuN
  int package = -1;                // topology/physical_package_id; -1 when missing
  int node = -1;                   // the nodeM link beside it; -1 when none (no NUMA)
  std::vector<SysfsCache> caches;  // by index
  // The id of the first cache (lowest index) of `level`, -1 if none.
  int cache_id(int level) const;
};

struct SysfsCpuTree {
  // The CPUs the "possible" and "online" files list (empty when a file is
  // missing or not a CPU list; CPU numbers below 65536).
  std::vector<unsigned> possible, online;
  // Every cpuN directory, by CPU number.
  std::vector<SysfsCpu> cpus;
};

// The whole content of a sysfs file; false when it cannot be read.
bool read_sysfs_file(const std::string& path, std::string* out);

// Reads the tree rooted at `cpu_root` (normally /sys/devices/system/cpu).
// ENOENT when `cpu_root` cannot be listed.
Result<SysfsCpuTree> read_sysfs_cpu_tree(const std::string& cpu_root);

}  // namespace resctrlfs::hw
