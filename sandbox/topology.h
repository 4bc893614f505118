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
#include "hw/host_topology.h"

namespace resctrlfs::sandbox {

// A host CPU and its caches as sysfs describes them (hw/host_topology.h).
using HostCache = hw::SysfsCache;
using HostCpu = hw::SysfsCpu;

// Every cpuN directory under `cpu_root` (normally /sys/devices/system/cpu)
// with its package and caches, sorted by CPU number (hw's sysfs reader).
Result<std::vector<HostCpu>> read_host_topology(const std::string& cpu_root);

// Where the platform puts one CPU (-1: the platform has no such cache).
struct CpuPlacement {
  int package = -1;
  int l2_id = -1;
  int l3_id = -1;
  int core = -1;  // physical core id in its package (-1: the CPU is a core of its own)
  int node = -1;  // NUMA node (-1: none known)
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

// The files of a whole /sys/devices/system/cpu for a machine of
// want.size() CPUs (virtual CPUs, --cpus platform), paths relative to that
// directory: online, possible, present ("0-N"), offline (empty); per cpuN
// online, topology (physical_package_id, die_id, core_id, core_cpus,
// thread_siblings, die_cpus, package_cpus and core_siblings, each with its
// _list form) and cache/index0..3 (L1 data and instruction per core, the
// platform's L2 and L3 domains; level, type, id, size, shared_cpu_map and
// _list, coherency_line_size, ways_of_associativity, number_of_sets,
// physical_line_partition). L1 sizes come from `host_l1d`/`host_l1i`
// (bytes, 0: 32 KiB), L2/L3 sizes from `sizes` (0: 1 MiB / 16 MiB). A
// level whose id is -1 on every CPU is left out.
std::vector<FileBind> virtual_cpu_tree(const std::vector<CpuPlacement>& want, CacheSizes sizes,
                                       uint64_t host_l1d = 0, uint64_t host_l1i = 0);

}  // namespace resctrlfs::sandbox
