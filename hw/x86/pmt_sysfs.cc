// Implements read_pmt_aggregators() (see pmt_sysfs.h).
#include "hw/x86/pmt_sysfs.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/cpulist.h"
#include "hw/x86/aet.h"

namespace resctrlfs::hw::x86 {

namespace fs = std::filesystem;

namespace {

// The whole of a small text file, or nullopt when it cannot be read.
std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  if (f.bad()) return std::nullopt;
  return s.str();
}

std::string chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "0x1a2b3c4d" (the driver's "0x%x"): 1 to 8 hex digits after 0x.
std::optional<uint32_t> parse_guid(const std::string& text) {
  const std::string s = chomp(text);
  if (s.size() < 3 || s.size() > 10 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return {};
  if (s.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos) return {};
  return static_cast<uint32_t>(std::stoul(s.substr(2), nullptr, 16));
}

// A decimal number that fits 64 bits.
std::optional<uint64_t> parse_u64(const std::string& text) {
  const std::string s = chomp(text);
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
    return {};
  return std::stoull(s);
}

// A decimal int, possibly negative (numa_node is -1 without a node).
std::optional<int> parse_int(const std::string& text) {
  const std::string s = chomp(text);
  const bool neg = !s.empty() && s[0] == '-';
  const std::string digits = s.substr(neg ? 1 : 0);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return {};
  const int v = std::stoi(digits);
  return neg ? -v : v;
}

// Which physical package an aggregator belongs to. The driver does not
// say: an aggregator is a region of a PCI device (the package's telemetry
// endpoint), and what sysfs tells about that device is its NUMA node. So:
// follow telem<N>/device to the real directory and walk up towards
// sys/devices until a directory has a `numa_node` attribute (the PCI
// device; the auxiliary device in between has none). A node >= 0 is
// turned into CPUs with sys/devices/system/node/node<M>/cpulist, and those
// CPUs into their package with the topology; the node's online CPUs must
// all be in one package. A node of -1 (firmware gave the device no
// proximity) is only unambiguous on a machine with a single package.
// Returns the package, or the reason it cannot be told.
Result<int> package_of(const fs::path& root, const fs::path& dir, const Topology& topo) {
  std::error_code ec;
  const fs::path devices = fs::weakly_canonical(root / "sys/devices", ec);
  fs::path dev = fs::canonical(dir / "device", ec);
  if (ec) return Error::make(ENOENT, "no device link");
  std::optional<int> node;
  for (fs::path p = dev; !p.empty(); p = p.parent_path()) {
    const std::string s = p.string();
    if (s.size() < devices.string().size() ||
        s.compare(0, devices.string().size(), devices.string()) != 0)
      break;  // left sys/devices
    if (fs::exists(p / "numa_node", ec)) {
      auto text = read_text(p / "numa_node");
      node = text ? parse_int(*text) : std::nullopt;
      if (!node) return Error::make(EINVAL, (p / "numa_node").string() + " is not a number");
      break;
    }
    if (p == p.parent_path()) break;
  }
  if (!node) return Error::make(ENOENT, "no numa_node above " + dev.string());
  std::set<int> packages;
  if (*node < 0) {
    for (unsigned c = 0; c < topo.nr_cpus && c < topo.package.size(); ++c)
      if (topo.online.test(c) && topo.package[c] >= 0) packages.insert(topo.package[c]);
    if (packages.size() != 1)
      return Error::make(EINVAL, "its device has no NUMA node (numa_node -1) and the machine has " +
                                     std::to_string(packages.size()) + " packages");
    return *packages.begin();
  }
  const fs::path list =
      root / "sys/devices/system/node" / ("node" + std::to_string(*node)) / "cpulist";
  auto text = read_text(list);
  if (!text) return Error::make(ENOENT, "cannot read " + list.string());
  auto mask = parse_cpu_list(*text, 4096);
  if (!mask.ok()) return Error::make(EINVAL, list.string() + " is not a CPU list");
  for (unsigned c : mask->cpus())
    if (c < topo.nr_cpus && c < topo.package.size() && topo.online.test(c) && topo.package[c] >= 0)
      packages.insert(topo.package[c]);
  if (packages.size() != 1)
    return Error::make(
        EINVAL,
        "NUMA node " + std::to_string(*node) + " has " +
            (packages.empty() ? std::string("no online CPU")
                              : "CPUs of " + std::to_string(packages.size()) + " packages"));
  return *packages.begin();
}

}  // namespace

std::vector<PmtAggregator> read_pmt_aggregators(
    const std::string& root_dir, const Topology& topo,
    const std::function<void(const std::string&)>& log) {
  const fs::path root(root_dir.empty() ? "/" : root_dir);
  const fs::path cls = root / "sys/class/intel_pmt";
  std::vector<PmtAggregator> out;
  std::error_code ec;
  fs::directory_iterator it(cls, ec);
  if (ec) return out;
  std::vector<std::pair<unsigned, fs::path>> dirs;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (name.rfind("telem", 0) != 0) continue;
    const std::string num = name.substr(5);
    if (num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos)
      continue;
    dirs.emplace_back(static_cast<unsigned>(std::stoul(num)), it->path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& [n, dir] : dirs) {
    const std::string where = "PMT telemetry " + dir.string() + ": ";
    auto guid_text = read_text(dir / "guid");
    auto guid = guid_text ? parse_guid(*guid_text) : std::nullopt;
    if (!guid) {
      log(where + "unreadable or malformed guid; aggregator skipped");
      continue;
    }
    const AetEventGroup* layout = aet_event_group(*guid);
    if (layout == nullptr) continue;  // not a per-RMID aggregator
    auto size_text = read_text(dir / "size");
    auto size = size_text ? parse_u64(*size_text) : std::nullopt;
    if (!size) {
      log(where + "unreadable or malformed size; aggregator skipped");
      continue;
    }
    if (*size != layout->mmio_size()) {
      log(where + "size " + std::to_string(*size) + " is not the " +
          std::to_string(layout->mmio_size()) + " bytes of its GUID's layout; aggregator skipped");
      continue;
    }
    if (!fs::exists(dir / "telem", ec)) {
      log(where + "no telem file; aggregator skipped");
      continue;
    }
    auto pkg = package_of(root, dir, topo);
    if (!pkg.ok()) {
      log(where + "cannot tell its package (" + pkg.error().message + "); aggregator skipped");
      continue;
    }
    PmtAggregator a;
    a.telem = n;
    a.region = PmtRegion{layout->feature, *guid, *pkg, layout->num_rmids, *size};
    a.data_path = (dir / "telem").string();
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace resctrlfs::hw::x86
