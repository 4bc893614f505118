// Implements the reader of this machine's CPU topology from sysfs
// (hw/x86/sysfs_topology.h) on top of the one sysfs reader,
// hw/host_topology.h, with the x86 backends' own rules.
#include "hw/x86/sysfs_topology.h"

#include <algorithm>
#include <map>
#include <vector>

#include "hw/host_topology.h"

namespace resctrlfs::hw::x86 {

Result<Topology> read_sysfs_topology(const std::string& dir) {
  // The profile's own limit: CPUs at or beyond it are left out.
  constexpr unsigned kMaxCpus = 4096;
  Result<SysfsCpuTree> read = read_sysfs_cpu_tree(dir);
  if (!read.ok()) return Error::make(ENOENT, "no CPUs found under " + dir);
  const SysfsCpuTree& tree = *read;
  auto below_max = [](std::vector<unsigned> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](unsigned c) { return c >= kMaxCpus; }), v.end());
    return v;
  };
  std::vector<unsigned> possible = below_max(tree.possible);
  std::vector<unsigned> online = below_max(tree.online);
  if (possible.empty()) possible = online;
  if (possible.empty()) {
    // No lists: cpu0, cpu1, ... as far as they go without a gap.
    for (const SysfsCpu& c : tree.cpus) {
      if (c.cpu != possible.size() || c.cpu >= kMaxCpus) break;
      possible.push_back(c.cpu);
    }
    online = possible;
  }
  if (possible.empty()) return Error::make(ENOENT, "no CPUs found under " + dir);
  Topology t;
  t.nr_cpus = *std::max_element(possible.begin(), possible.end()) + 1;
  t.online = CpuMask(t.nr_cpus);
  for (unsigned c : online) t.online.set(c);
  t.package.assign(t.nr_cpus, -1);
  t.l2_id.assign(t.nr_cpus, -1);
  t.l3_id.assign(t.nr_cpus, -1);
  t.node.assign(t.nr_cpus, -1);
  std::map<unsigned, const SysfsCpu*> by_number;
  for (const SysfsCpu& c : tree.cpus) by_number[c.cpu] = &c;
  for (unsigned c = 0; c < t.nr_cpus; ++c) {
    if (!t.online.test(c)) continue;
    const auto found = by_number.find(c);
    const SysfsCpu none{};
    const SysfsCpu& cpu = found == by_number.end() ? none : *found->second;
    t.package[c] = cpu.package < 0 ? 0 : cpu.package;
    // Caches index0, index1, ... up to the first without a level.
    for (size_t k = 0; k < cpu.caches.size() && k < 16; ++k) {
      const SysfsCache& cache = cpu.caches[k];
      if (cache.index != k || cache.level < 0) break;
      if (cache.type == "Instruction") continue;
      if (cache.level == 2) {
        t.l2_id[c] = cache.id < 0 ? static_cast<int>(c) : cache.id;
        if (t.l2_size_bytes == 0) t.l2_size_bytes = cache.size_bytes;
      } else if (cache.level == 3) {
        t.l3_id[c] = cache.id < 0 ? t.package[c] : cache.id;
        if (t.l3_size_bytes == 0) t.l3_size_bytes = cache.size_bytes;
      }
    }
    // The node id counts only beside a real L3: Linux cannot infer SNC
    // without the L3's cacheinfo, and a synthesised L3 would skew the ratio.
    if (t.l3_id[c] >= 0) t.node[c] = cpu.node;
    // A machine (or VM) without an L3 in sysfs still gets one domain per
    // package, so that resctrl has somewhere to put its controls.
    if (t.l3_id[c] < 0) t.l3_id[c] = t.package[c];
    if (t.l2_id[c] < 0) t.l2_id[c] = static_cast<int>(c);
  }
  return t;
}

}  // namespace resctrlfs::hw::x86
