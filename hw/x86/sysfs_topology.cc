// Implements the reader of this machine's CPU topology from sysfs
// (hw/x86/sysfs_topology.h).
#include "hw/x86/sysfs_topology.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>

namespace resctrlfs::hw::x86 {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Parses a kernel cpulist ("0-3,8"). Returns the CPUs, or empty on error.
std::vector<unsigned> parse_cpulist(const std::string& s) {
  std::vector<unsigned> out;
  std::stringstream ss(trim(s));
  std::string part;
  auto number = [](std::string_view t, unsigned& v) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size();
  };
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    const std::string_view p(part);
    unsigned a = 0, b = 0;
    if (!number(p.substr(0, dash), a)) return {};
    if (dash == std::string::npos) {
      b = a;
    } else if (!number(p.substr(dash + 1), b)) {
      return {};
    }
    for (unsigned c = a; c <= b && c < 4096; ++c) out.push_back(c);
  }
  return out;
}

// "32768K" / "1M" / "512" -> bytes.
uint64_t parse_size(const std::string& s) {
  std::string t = trim(s);
  if (t.empty()) return 0;
  uint64_t mult = 1;
  char last = t.back();
  if (last == 'K') mult = 1024;
  if (last == 'M') mult = 1024 * 1024;
  if (last == 'G') mult = 1024ULL * 1024 * 1024;
  if (mult != 1) t.pop_back();
  char* end = nullptr;
  uint64_t v = std::strtoull(t.c_str(), &end, 10);
  return (end == t.c_str()) ? 0 : v * mult;
}

// The NUMA node of a CPU: its sysfs directory holds a "nodeN" link (absent
// on kernels without NUMA). -1 when there is none.
int sysfs_cpu_node(const std::string& cpu_dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(cpu_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos)
      return std::atoi(name.c_str() + 4);
  }
  return -1;
}

}  // namespace

Result<x86::Topology> read_sysfs_topology(const std::string& dir) {
  x86::Topology t;
  std::vector<unsigned> possible = parse_cpulist(read_file(dir + "/possible"));
  std::vector<unsigned> online = parse_cpulist(read_file(dir + "/online"));
  if (possible.empty()) possible = online;
  if (possible.empty()) {
    for (unsigned c = 0; c < 4096; ++c) {
      if (!std::filesystem::exists(dir + "/cpu" + std::to_string(c))) break;
      possible.push_back(c);
    }
    online = possible;
  }
  if (possible.empty()) return Error::make(ENOENT, "no CPUs found under " + dir);
  t.nr_cpus = *std::max_element(possible.begin(), possible.end()) + 1;
  t.online = CpuMask(t.nr_cpus);
  for (unsigned c : online) t.online.set(c);
  t.package.assign(t.nr_cpus, -1);
  t.l2_id.assign(t.nr_cpus, -1);
  t.l3_id.assign(t.nr_cpus, -1);
  t.node.assign(t.nr_cpus, -1);
  for (unsigned c = 0; c < t.nr_cpus; ++c) {
    if (!t.online.test(c)) continue;
    std::string base = dir + "/cpu" + std::to_string(c);
    const int node = sysfs_cpu_node(base);
    std::string pkg = trim(read_file(base + "/topology/physical_package_id"));
    t.package[c] = pkg.empty() ? 0 : std::atoi(pkg.c_str());
    for (int k = 0; k < 16; ++k) {
      std::string idx = base + "/cache/index" + std::to_string(k);
      std::string level = trim(read_file(idx + "/level"));
      if (level.empty()) break;
      if (trim(read_file(idx + "/type")) == "Instruction") continue;
      std::string id = trim(read_file(idx + "/id"));
      uint64_t size = parse_size(read_file(idx + "/size"));
      int lvl = std::atoi(level.c_str());
      if (lvl == 2) {
        t.l2_id[c] = id.empty() ? static_cast<int>(c) : std::atoi(id.c_str());
        if (t.l2_size_bytes == 0) t.l2_size_bytes = size;
      } else if (lvl == 3) {
        t.l3_id[c] = id.empty() ? t.package[c] : std::atoi(id.c_str());
        if (t.l3_size_bytes == 0) t.l3_size_bytes = size;
      }
    }
    // The node id counts only beside a real L3: Linux cannot infer SNC
    // without the L3's cacheinfo, and a synthesised L3 would skew the ratio.
    if (t.l3_id[c] >= 0) t.node[c] = node;
    // A machine (or VM) without an L3 in sysfs still gets one domain per
    // package, so that resctrl has somewhere to put its controls.
    if (t.l3_id[c] < 0) t.l3_id[c] = t.package[c];
    if (t.l2_id[c] < 0) t.l2_id[c] = static_cast<int>(c);
  }
  return t;
}

}  // namespace resctrlfs::hw::x86
