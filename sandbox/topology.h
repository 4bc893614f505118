// Defines how the sandbox makes the host's sysfs CPU topology agree with a
// simulated platform: pqos takes socket and cache ids (its domain ids) from
// sysfs, so when the platform's packages or cache domains differ from the
// host's, single sysfs files are bind-mounted with the platform's values.
//
// Reading the host tree and computing the binds are separate from doing
// the binds so both are unit-tested on a fake sysfs tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace resctrlfs::sandbox {

// One cache of a host CPU as sysfs describes it.
struct HostCache {
  int level = 0;
  std::string dir;  // .../cpuN/cache/indexK
  int id = -1;      // -1 when the id file is missing
};

// One host CPU as sysfs describes it.
struct HostCpu {
  unsigned cpu = 0;
  std::string dir;  // .../cpuN
  int package = -1;
  std::vector<HostCache> caches;
  int cache_id(int level) const;
};

// Reads cpuN/topology/physical_package_id and cpuN/cache/index*/{level,id}
// for every cpuN directory under `cpu_root` (normally
// /sys/devices/system/cpu), sorted by CPU number.
Result<std::vector<HostCpu>> read_host_topology(const std::string& cpu_root);

// Where the platform puts one CPU (-1: the platform has no such cache).
struct CpuPlacement {
  int package = -1;
  int l2_id = -1;
  int l3_id = -1;
};

// The platform's cache sizes in bytes (0: keep the host's).
struct CacheSizes {
  uint64_t l2 = 0;
  uint64_t l3 = 0;
};

// A regular file to bind over `target` with `content`.
struct FileBind {
  std::string target;
  std::string content;
};

// True if every host CPU already has the platform's package, L2 and L3 ids
// (and the CPU counts match).
bool topology_matches(const std::vector<HostCpu>& host, const std::vector<CpuPlacement>& want);

// The binds that make sysfs show `want`: physical_package_id,
// package_cpus(_list), core_siblings(_list), and for L2/L3 the cache's id,
// shared_cpu_map, shared_cpu_list and (from `sizes`, as the kernel prints
// it: "<KiB>K") size, each only where the host's content differs. Fails
// (ENODEV, with a message for the user) when the CPU counts differ, since
// sysfs cannot gain or lose CPUs by binding files.
Result<std::vector<FileBind>> plan_topology_binds(const std::vector<HostCpu>& host,
                                                  const std::vector<CpuPlacement>& want,
                                                  CacheSizes sizes = {});

// Kernel bitmap formats of a set of CPUs out of `nr_cpus`: the hex mask
// (%*pb: 32-bit groups separated by commas) and the list (%*pbl).
std::string format_cpu_map(const std::vector<unsigned>& cpus, unsigned nr_cpus);
std::string format_cpu_list(const std::vector<unsigned>& cpus);

}  // namespace resctrlfs::sandbox
