// Implements reading the host's sysfs CPU topology and planning the binds
// that make it agree with a simulated platform.
#include "sandbox/topology.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace resctrlfs::sandbox {
namespace {

namespace stdfs = std::filesystem;

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

int read_int(const std::string& path, int fallback) {
  std::string s;
  if (!read_file(path, &s)) return fallback;
  try {
    return std::stoi(s);
  } catch (...) {
    return fallback;
  }
}

// Parses "cpuN" / "indexN"; -1 if `name` is not `prefix` followed by digits.
int numbered(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  std::string rest = name.substr(prefix.size());
  if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  // from_chars, not stoi: a number too big for an int is "not numbered",
  // never an exception.
  int n = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  return ec == std::errc() && end == rest.data() + rest.size() ? n : -1;
}

int placement_id(const CpuPlacement& p, int level) {
  return level == 2 ? p.l2_id : level == 3 ? p.l3_id : -1;
}

}  // namespace

int HostCpu::cache_id(int level) const {
  for (const auto& c : caches)
    if (c.level == level) return c.id;
  return -1;
}

Result<std::vector<HostCpu>> read_host_topology(const std::string& cpu_root) {
  std::vector<HostCpu> out;
  std::error_code ec;
  stdfs::directory_iterator it(cpu_root, ec);
  if (ec) return Error::make(ENOENT, "cannot read " + cpu_root + ": " + ec.message());
  for (const auto& entry : it) {
    int cpu = numbered(entry.path().filename().string(), "cpu");
    if (cpu < 0) continue;
    HostCpu h;
    h.cpu = static_cast<unsigned>(cpu);
    h.dir = entry.path().string();
    h.package = read_int(h.dir + "/topology/physical_package_id", -1);
    stdfs::directory_iterator cit(h.dir + "/cache", ec);
    if (!ec) {
      for (const auto& c : cit) {
        if (numbered(c.path().filename().string(), "index") < 0) continue;
        HostCache hc;
        hc.dir = c.path().string();
        hc.level = read_int(hc.dir + "/level", 0);
        hc.id = read_int(hc.dir + "/id", -1);
        // Level 1 has separate data and instruction caches; keep one
        // entry per level, the lowest index (sorted below).
        h.caches.push_back(hc);
      }
      std::sort(h.caches.begin(), h.caches.end(),
                [](const HostCache& a, const HostCache& b) { return a.dir < b.dir; });
    }
    ec.clear();
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(),
            [](const HostCpu& a, const HostCpu& b) { return a.cpu < b.cpu; });
  return out;
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

std::string format_cpu_map(const std::vector<unsigned>& cpus, unsigned nr_cpus) {
  unsigned ndigits = std::max(1U, (nr_cpus + 3) / 4);
  std::string hex(ndigits, '0');
  for (unsigned c : cpus) {
    if (c >= nr_cpus) continue;
    unsigned digit = ndigits - 1 - c / 4;
    int v = (hex[digit] <= '9' ? hex[digit] - '0' : hex[digit] - 'a' + 10) | (1 << (c % 4));
    hex[digit] = static_cast<char>(v < 10 ? '0' + v : 'a' + v - 10);
  }
  // Commas between 32-bit groups, counted from the least significant end.
  std::string out;
  for (unsigned i = 0; i < ndigits; ++i) {
    if (i > 0 && (ndigits - i) % 8 == 0) out += ',';
    out += hex[i];
  }
  return out;
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
  std::vector<unsigned> s = cpus;
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j + 1 < s.size() && s[j + 1] == s[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(s[i]);
    if (j > i) out += "-" + std::to_string(s[j]);
    i = j + 1;
  }
  return out;
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
  auto cpus_where = [&](auto pred) {
    std::vector<unsigned> v;
    for (unsigned i = 0; i < nr; ++i)
      if (pred(want[i])) v.push_back(host[i].cpu);
    return v;
  };
  for (unsigned i = 0; i < nr; ++i) {
    const HostCpu& h = host[i];
    const CpuPlacement& w = want[i];
    if (w.package >= 0) {
      auto pkg = cpus_where([&](const CpuPlacement& p) { return p.package == w.package; });
      std::string topo = h.dir + "/topology/";
      candidates.push_back({topo + "physical_package_id", std::to_string(w.package) + "\n"});
      candidates.push_back({topo + "package_cpus", format_cpu_map(pkg, nr) + "\n"});
      candidates.push_back({topo + "package_cpus_list", format_cpu_list(pkg) + "\n"});
      candidates.push_back({topo + "core_siblings", format_cpu_map(pkg, nr) + "\n"});
      candidates.push_back({topo + "core_siblings_list", format_cpu_list(pkg) + "\n"});
    }
    for (const HostCache& c : h.caches) {
      int id = placement_id(w, c.level);
      if (id < 0) continue;
      int level = c.level;
      auto shared = cpus_where([&](const CpuPlacement& p) { return placement_id(p, level) == id; });
      candidates.push_back({c.dir + "/id", std::to_string(id) + "\n"});
      candidates.push_back({c.dir + "/shared_cpu_map", format_cpu_map(shared, nr) + "\n"});
      candidates.push_back({c.dir + "/shared_cpu_list", format_cpu_list(shared) + "\n"});
      const uint64_t size = level == 2 ? sizes.l2 : sizes.l3;
      if (size != 0) candidates.push_back({c.dir + "/size", std::to_string(size >> 10) + "K\n"});
    }
  }
  std::vector<FileBind> out;
  for (auto& b : candidates) {
    std::string current;
    // Files the host lacks cannot be bind targets; clients cannot read them either.
    if (!read_file(b.target, &current)) continue;
    if (current != b.content) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace resctrlfs::sandbox
