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

namespace resctrlfs::sandbox {

std::vector<FileBind> virtual_cpu_tree(const std::vector<CpuPlacement>& want, CacheSizes sizes,
                                       uint64_t host_l1d, uint64_t host_l1i) {
  const unsigned nr = static_cast<unsigned>(want.size());
  std::vector<FileBind> out;
  auto all = [&](auto pred) {
    std::vector<unsigned> v;
    for (unsigned i = 0; i < nr; ++i)
      if (pred(i)) v.push_back(i);
    return v;
  };
  auto map_of = [&](const std::vector<unsigned>& v) {
    return format_cpu_mask(cpu_mask_of(v, nr)) + "\n";
  };
  auto list_of = [&](const std::vector<unsigned>& v) {
    return format_cpu_list(cpu_mask_of(v, nr)) + "\n";
  };
  // A CPU without a core id is a core of its own: its number in its package.
  std::vector<int> core(nr);
  for (unsigned i = 0; i < nr; ++i) {
    if (want[i].core >= 0) {
      core[i] = want[i].core;
    } else {
      int n = 0;
      for (unsigned j = 0; j < i; ++j) n += want[j].package == want[i].package;
      core[i] = n;
    }
  }
  const std::string every = nr == 0 ? "\n" : "0-" + std::to_string(nr - 1) + "\n";
  out.push_back({"online", every});
  out.push_back({"possible", every});
  out.push_back({"present", every});
  out.push_back({"offline", "\n"});
  bool has_l2 = false, has_l3 = false;
  for (const auto& w : want) {
    has_l2 = has_l2 || w.l2_id >= 0;
    has_l3 = has_l3 || w.l3_id >= 0;
  }
  struct Level {
    int level;
    const char* type;
    uint64_t size;
    unsigned ways;
  };
  std::vector<Level> levels = {{1, "Data", host_l1d ? host_l1d : 32 << 10, 8},
                               {1, "Instruction", host_l1i ? host_l1i : 32 << 10, 8}};
  if (has_l2) levels.push_back({2, "Unified", sizes.l2 ? sizes.l2 : 1 << 20, 16});
  if (has_l3) levels.push_back({3, "Unified", sizes.l3 ? sizes.l3 : 16 << 20, 16});
  for (unsigned i = 0; i < nr; ++i) {
    const CpuPlacement& w = want[i];
    const std::string d = "cpu" + std::to_string(i) + "/";
    out.push_back({d + "online", "1\n"});
    auto same_core =
        all([&](unsigned j) { return want[j].package == w.package && core[j] == core[i]; });
    auto same_pkg = all([&](unsigned j) { return want[j].package == w.package; });
    const std::string t = d + "topology/";
    out.push_back({t + "physical_package_id", std::to_string(std::max(w.package, 0)) + "\n"});
    out.push_back({t + "die_id", "0\n"});
    out.push_back({t + "core_id", std::to_string(core[i]) + "\n"});
    for (const char* n : {"core_cpus", "thread_siblings"}) {
      out.push_back({t + n, map_of(same_core)});
      out.push_back({t + n + "_list", list_of(same_core)});
    }
    for (const char* n : {"die_cpus", "package_cpus", "core_siblings"}) {
      out.push_back({t + n, map_of(same_pkg)});
      out.push_back({t + n + "_list", list_of(same_pkg)});
    }
    for (size_t k = 0; k < levels.size(); ++k) {
      const Level& l = levels[k];
      const std::string c = d + "cache/index" + std::to_string(k) + "/";
      int id;
      std::vector<unsigned> shared;
      if (l.level == 1) {
        id = static_cast<int>(same_core.front());  // one per core
        shared = same_core;
      } else {
        int mine = l.level == 2 ? w.l2_id : w.l3_id;
        id = mine;
        shared =
            all([&](unsigned j) { return (l.level == 2 ? want[j].l2_id : want[j].l3_id) == mine; });
      }
      out.push_back({c + "level", std::to_string(l.level) + "\n"});
      out.push_back({c + "type", std::string(l.type) + "\n"});
      out.push_back({c + "id", std::to_string(id) + "\n"});
      out.push_back({c + "size", std::to_string(l.size >> 10) + "K\n"});
      out.push_back({c + "shared_cpu_map", map_of(shared)});
      out.push_back({c + "shared_cpu_list", list_of(shared)});
      out.push_back({c + "coherency_line_size", "64\n"});
      out.push_back({c + "ways_of_associativity", std::to_string(l.ways) + "\n"});
      out.push_back({c + "number_of_sets", std::to_string(l.size / (64 * l.ways)) + "\n"});
      out.push_back({c + "physical_line_partition", "1\n"});
    }
  }
  return out;
}

}  // namespace resctrlfs::sandbox
