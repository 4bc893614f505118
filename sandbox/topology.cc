// Implements planning the binds that make the host's sysfs CPU topology
// (read by hw/host_topology.h) agree with a simulated platform.
#include "sandbox/topology.h"

#include <algorithm>

#include "base/cpulist.h"

namespace resctrlfs::sandbox {
namespace {

int placement_id(const CpuPlacement& p, int level) {
  return level == 2 ? p.l2_id : level == 3 ? p.l3_id : -1;
}

}  // namespace

Result<std::vector<HostCpu>> read_host_topology(const std::string& cpu_root) {
  RESCTRLFS_ASSIGN_OR_RETURN(hw::SysfsCpuTree tree, hw::read_sysfs_cpu_tree(cpu_root));
  return std::move(tree.cpus);
}

bool topology_matches(const std::vector<HostCpu>& host, const std::vector<CpuPlacement>& want) {
  if (host.size() != want.size()) return false;
  for (size_t i = 0; i < host.size(); ++i) {
    if (want[i].package >= 0 && host[i].package != want[i].package) return false;
    for (int level : {2, 3}) {
      int w = placement_id(want[i], level);
      if (w >= 0 && host[i].cache_id(level) != w) return false;
    }
  }
  return true;
}

Result<std::vector<FileBind>> plan_topology_binds(const std::vector<HostCpu>& host,
                                                  const std::vector<CpuPlacement>& want,
                                                  CacheSizes sizes) {
  if (host.size() != want.size()) {
    return Error::make(ENODEV, "the platform has " + std::to_string(want.size()) +
                                   " CPUs but this host has " + std::to_string(host.size()) +
                                   ": sysfs cannot be made to show the platform's topology "
                                   "(a built-in platform is fitted to the host's CPUs; for a "
                                   "JSON profile list the host's CPUs, or pass "
                                   "--ignore-topology if no client reads sysfs topology)");
  }
  const unsigned nr = static_cast<unsigned>(host.size());
  std::vector<FileBind> candidates;
  // The host CPU numbers the platform puts where `pred` says.
  unsigned highest = 0;
  for (const HostCpu& h : host) highest = std::max(highest, h.cpu);
  auto cpus_where = [&](auto pred) {
    std::vector<unsigned> v;
    for (unsigned i = 0; i < nr; ++i)
      if (pred(want[i])) v.push_back(host[i].cpu);
    return v;
  };
  // sysfs's two forms: the mask spans the host's CPU count, the list names
  // every CPU.
  auto map_of = [&](const std::vector<unsigned>& v) { return format_cpu_mask(cpu_mask_of(v, nr)); };
  auto list_of = [&](const std::vector<unsigned>& v) {
    return format_cpu_list(cpu_mask_of(v, highest + 1));
  };
  for (unsigned i = 0; i < nr; ++i) {
    const HostCpu& h = host[i];
    const CpuPlacement& w = want[i];
    if (w.package >= 0) {
      auto pkg = cpus_where([&](const CpuPlacement& p) { return p.package == w.package; });
      std::string topo = h.dir + "/topology/";
      candidates.push_back({topo + "physical_package_id", std::to_string(w.package) + "\n"});
      candidates.push_back({topo + "package_cpus", map_of(pkg) + "\n"});
      candidates.push_back({topo + "package_cpus_list", list_of(pkg) + "\n"});
      candidates.push_back({topo + "core_siblings", map_of(pkg) + "\n"});
      candidates.push_back({topo + "core_siblings_list", list_of(pkg) + "\n"});
    }
    for (const HostCache& c : h.caches) {
      int id = placement_id(w, c.level);
      if (id < 0) continue;
      int level = c.level;
      auto shared = cpus_where([&](const CpuPlacement& p) { return placement_id(p, level) == id; });
      candidates.push_back({c.dir + "/id", std::to_string(id) + "\n"});
      candidates.push_back({c.dir + "/shared_cpu_map", map_of(shared) + "\n"});
      candidates.push_back({c.dir + "/shared_cpu_list", list_of(shared) + "\n"});
      const uint64_t size = level == 2 ? sizes.l2 : sizes.l3;
      if (size != 0) candidates.push_back({c.dir + "/size", std::to_string(size >> 10) + "K\n"});
    }
  }
  std::vector<FileBind> out;
  for (auto& b : candidates) {
    std::string current;
    // Files the host lacks cannot be bind targets; clients cannot read them either.
    if (!hw::read_sysfs_file(b.target, &current)) continue;
    if (current != b.content) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace resctrlfs::sandbox
