// Implements the reader of the host's sysfs CPU topology.
#include "hw/host_topology.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/cpulist.h"

namespace resctrlfs::hw {
namespace {

namespace stdfs = std::filesystem;

// A CPU list naming a CPU this high is not a machine's (the kernel's
// NR_CPUS is at most 8192).
constexpr unsigned kMaxListedCpus = 65536;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The decimal number a sysfs file holds, `fallback` when the file is missing
// or does not start with one.
int read_int(const std::string& path, int fallback) {
  std::string s;
  if (!read_sysfs_file(path, &s)) return fallback;
  size_t start = s.find_first_not_of(" \t");
  if (start == std::string::npos) return fallback;
  if (s[start] == '+') ++start;
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data() + start, s.data() + s.size(), v);
  return ec == std::errc() ? v : fallback;
}

// "32768K" / "1M" / "512" -> bytes; 0 when missing or not a size.
uint64_t read_size(const std::string& path) {
  std::string t;
  if (!read_sysfs_file(path, &t)) return 0;
  t = trimmed(t);
  if (t.empty()) return 0;
  uint64_t mult = 1;
  const char last = t.back();
  if (last == 'K') mult = 1024;
  if (last == 'M') mult = 1024 * 1024;
  if (last == 'G') mult = 1024ULL * 1024 * 1024;
  if (mult != 1) t.pop_back();
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end != t.data() ? v * mult : 0;
}

std::vector<unsigned> read_cpu_list(const std::string& path) {
  std::string text;
  if (!read_sysfs_file(path, &text)) return {};
  Result<CpuMask> m = parse_cpu_list(text, kMaxListedCpus, CpuListSyntax::kPrinted);
  return m.ok() ? m->cpus() : std::vector<unsigned>{};
}

// Parses "cpuN" / "indexN" / "nodeN"; -1 if `name` is not `prefix` followed
// by digits (a number too big for an int included).
int numbered(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string rest = name.substr(prefix.size());
  if (!std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  int n = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  return ec == std::errc() && end == rest.data() + rest.size() ? n : -1;
}

// The NUMA node of a CPU: its directory holds a "nodeN" link (absent on
// kernels without NUMA). -1 when there is none.
int cpu_node(const std::string& cpu_dir) {
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(cpu_dir, ec)) {
    const int n = numbered(e.path().filename().string(), "node");
    if (n >= 0) return n;
  }
  return -1;
}

std::vector<SysfsCache> read_caches(const std::string& cpu_dir) {
  std::vector<SysfsCache> out;
  std::error_code ec;
  for (const auto& e : stdfs::directory_iterator(cpu_dir + "/cache", ec)) {
    const int index = numbered(e.path().filename().string(), "index");
    if (index < 0) continue;
    SysfsCache c;
    c.index = static_cast<unsigned>(index);
    c.dir = e.path().string();
    c.level = read_int(c.dir + "/level", -1);
    std::string type;
    if (read_sysfs_file(c.dir + "/type", &type)) c.type = trimmed(type);
    c.id = read_int(c.dir + "/id", -1);
    c.size_bytes = read_size(c.dir + "/size");
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(),
            [](const SysfsCache& a, const SysfsCache& b) { return a.index < b.index; });
  return out;
}

}  // namespace

bool read_sysfs_file(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

int SysfsCpu::cache_id(int level) const {
  for (const auto& c : caches)
    if (c.level == level) return c.id;
  return -1;
}

Result<SysfsCpuTree> read_sysfs_cpu_tree(const std::string& cpu_root) {
  SysfsCpuTree tree;
  std::error_code ec;
  stdfs::directory_iterator it(cpu_root, ec);
  if (ec) return Error::make(ENOENT, "cannot read " + cpu_root + ": " + ec.message());
  tree.possible = read_cpu_list(cpu_root + "/possible");
  tree.online = read_cpu_list(cpu_root + "/online");
  for (const auto& entry : it) {
    const int cpu = numbered(entry.path().filename().string(), "cpu");
    if (cpu < 0) continue;
    SysfsCpu c;
    c.cpu = static_cast<unsigned>(cpu);
    c.dir = entry.path().string();
    c.package = read_int(c.dir + "/topology/physical_package_id", -1);
    c.node = cpu_node(c.dir);
    c.caches = read_caches(c.dir);
    tree.cpus.push_back(std::move(c));
  }
  std::sort(tree.cpus.begin(), tree.cpus.end(),
            [](const SysfsCpu& a, const SysfsCpu& b) { return a.cpu < b.cpu; });
  return tree;
}

}  // namespace resctrlfs::hw
