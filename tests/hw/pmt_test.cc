// Tests Intel PMT telemetry on the real-hardware path: finding the
// aggregators in an intel_pmt sysfs tree (known GUIDs with their layout's
// size, the package from the PCI device's NUMA node, every kind of bad
// attribute skipped with a message), the broker's policy for PMT reads
// (known aggregators only, one aligned word inside the size), the broker's
// reads of the telem files, and resctrl-msrd --sim serving a simulated
// machine's aggregators to the real backend's Arch.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hw/broker/client.h"
#include "hw/broker/dev_pmt.h"
#include "hw/broker/policy.h"
#include "hw/real/msr_backend.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/aet.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/pmt_sysfs.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
namespace fs = std::filesystem;

namespace {

// A temporary ROOT holding sys/class/intel_pmt and sys/devices.
struct PmtTree {
  fs::path root;
  PmtTree() {
    char dir[] = "/tmp/resctrl-pmt-test.XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    root = dir;
    node(0, "0-3\n");
    node(1, "4-7\n");
  }
  ~PmtTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  static void text(const fs::path& p, const std::string& s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
  }
  void node(int n, const std::string& cpulist) {
    text(root / "sys/devices/system/node" / ("node" + std::to_string(n)) / "cpulist", cpulist);
  }
  // telem<n> under a PCI device whose numa_node is `numa` (empty: no file),
  // with the given attribute texts (an empty text: no file).
  fs::path add(unsigned n, const std::string& guid, const std::string& size,
               const std::string& numa, bool data = true) {
    const fs::path pci = root / "sys/devices/pci0000:00" / ("0000:00:0" + std::to_string(n) + ".1");
    if (!numa.empty()) text(pci / "numa_node", numa);
    const fs::path dir = pci / "intel_vsec.telemetry.0/intel_pmt" / ("telem" + std::to_string(n));
    fs::create_directories(dir);
    if (!guid.empty()) text(dir / "guid", guid);
    if (!size.empty()) text(dir / "size", size);
    text(dir / "offset", "0\n");
    if (data) text(dir / "telem", std::string(64, '\0'));
    fs::create_directory_symlink("../..", dir / "device");
    fs::create_directories(root / "sys/class/intel_pmt");
    fs::create_directory_symlink(dir, root / "sys/class/intel_pmt" / ("telem" + std::to_string(n)));
    return dir;
  }
};

// Eight CPUs, 0-3 in package 0 and 4-7 in package 1 (or all in package 0).
Topology topology(bool one_package = false) {
  Topology t;
  t.nr_cpus = 8;
  t.online = CpuMask(8);
  for (unsigned c = 0; c < 8; ++c) {
    t.online.set(c);
    t.package.push_back(one_package ? 0 : static_cast<int>(c / 4));
  }
  t.l2_id = t.l3_id = t.node = std::vector<int>(8, -1);
  return t;
}

std::string hex(uint32_t guid) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%x\n", guid);
  return b;
}

std::string size_of(uint32_t guid) {
  return std::to_string(aet_event_group(guid)->mmio_size()) + "\n";
}

struct Logged {
  std::vector<std::string> lines;
  std::function<void(const std::string&)> fn() {
    return [this](const std::string& l) { lines.push_back(l); };
  }
  bool has(const std::string& s) const {
    for (const auto& l : lines)
      if (l.find(s) != std::string::npos) return true;
    return false;
  }
};

}  // namespace

TEST_CASE("PMT aggregators are found in sysfs with their package from the NUMA node", "[pmt]") {
  PmtTree t;
  t.add(0, hex(AET_GUID_CWF_ENERGY), size_of(AET_GUID_CWF_ENERGY), "0\n");
  t.add(1, hex(AET_GUID_CWF_PERF), size_of(AET_GUID_CWF_PERF), "1\n");
  t.add(2, "0x12345678\n", "4096\n", "0\n");  // platform telemetry, not per RMID
  Logged log;
  auto aggs = read_pmt_aggregators(t.root.string(), topology(), log.fn());
  CHECK(log.lines.empty());
  REQUIRE(aggs.size() == 2);
  CHECK(aggs[0].telem == 0);
  CHECK(aggs[0].region.guid == AET_GUID_CWF_ENERGY);
  CHECK(aggs[0].region.feature == PmtFeature::kPerRmidEnergy);
  CHECK(aggs[0].region.package_id == 0);
  CHECK(aggs[0].region.num_rmids == 576);
  CHECK(aggs[0].region.size == aet_event_group(AET_GUID_CWF_ENERGY)->mmio_size());
  CHECK(aggs[0].data_path == (t.root / "sys/class/intel_pmt/telem0/telem").string());
  CHECK(aggs[1].telem == 1);
  CHECK(aggs[1].region.feature == PmtFeature::kPerRmidPerf);
  CHECK(aggs[1].region.package_id == 1);
  // No intel_pmt class at all: nothing, quietly.
  CHECK(read_pmt_aggregators("/nonexistent-root", topology(), log.fn()).empty());
  CHECK(log.lines.empty());
}

TEST_CASE("PMT aggregators with bad attributes are skipped with a message", "[pmt]") {
  PmtTree t;
  const std::string e = hex(AET_GUID_CWF_ENERGY), es = size_of(AET_GUID_CWF_ENERGY);
  t.add(0, "garbage\n", es, "0\n");
  t.add(1, "", es, "0\n");  // no guid
  t.add(2, e, "many\n", "0\n");
  t.add(3, e, "4096\n", "0\n");  // not the layout's size
  t.add(4, e, es, "0\n", /*data=*/false);
  t.add(5, e, es, "x\n");
  t.add(6, e, es, "");      // no numa_node anywhere above
  t.add(7, e, es, "-1\n");  // no node on a two-package machine
  t.add(8, e, es, "3\n");   // a node sysfs does not list
  t.node(2, "\n");
  t.add(9, e, es, "2\n");  // a node without CPUs (memory only)
  t.node(4, "2-5\n");
  t.add(10, e, es, "4\n");  // a node across packages
  t.add(11, e, es, "1\n");  // the one good aggregator
  Logged log;
  auto aggs = read_pmt_aggregators(t.root.string(), topology(), log.fn());
  REQUIRE(aggs.size() == 1);
  CHECK(aggs[0].telem == 11);
  CHECK(aggs[0].region.package_id == 1);
  CHECK(log.lines.size() == 11);
  CHECK(log.has("telem0: unreadable or malformed guid"));
  CHECK(log.has("telem1: unreadable or malformed guid"));
  CHECK(log.has("telem2: unreadable or malformed size"));
  CHECK(log.has("telem3: size 4096 is not the"));
  CHECK(log.has("telem4: no telem file"));
  CHECK(log.has("numa_node is not a number"));
  CHECK(log.has("no numa_node above"));
  CHECK(log.has("numa_node -1) and the machine has 2 packages"));
  CHECK(log.has("node3/cpulist"));
  CHECK(log.has("NUMA node 2 has no online CPU"));
  CHECK(log.has("NUMA node 4 has CPUs of 2 packages"));
  // On a machine with one package, a device without a node is that package's.
  Logged one;
  PmtTree u;
  u.add(0, e, es, "-1\n");
  auto single = read_pmt_aggregators(u.root.string(), topology(true), one.fn());
  REQUIRE(single.size() == 1);
  CHECK(single[0].region.package_id == 0);
}

TEST_CASE("broker policy serves PMT reads only of known aggregators, aligned and inside", "[pmt]") {
  auto p = sim::load_profile("intel-aet");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  broker::Policy policy(m.info(), m.limits());
  const uint64_t size = aet_event_group(AET_GUID_CWF_PERF)->mmio_size();
  // Nothing is served until the broker found aggregators.
  CHECK(policy.check_pmt(3, 0, 8).error().code == EPERM);
  PmtAggregator perf{3, PmtRegion{PmtFeature::kPerRmidPerf, AET_GUID_CWF_PERF, 1, 576, size}, ""};
  PmtAggregator energy{5,
                       PmtRegion{PmtFeature::kPerRmidEnergy, AET_GUID_CWF_ENERGY, 0, 576,
                                 aet_event_group(AET_GUID_CWF_ENERGY)->mmio_size()},
                       ""};
  PmtAggregator unknown{7, PmtRegion{PmtFeature::kPerRmidPerf, 0x12345678, 0, 1, 4096}, ""};
  policy.set_pmt({perf, energy, unknown});
  struct Case {
    const char* what;
    unsigned telem;
    uint64_t offset;
    unsigned width;
    int index;  // -1: refused
  };
  const Case cases[] = {
      {"first word", 3, 0, 8, 0},
      {"last word", 3, size - 8, 8, 0},
      {"a word of the second", 5, 64, 8, 1},
      {"unaligned", 3, 4, 8, -1},
      {"four bytes", 3, 0, 4, -1},
      {"sixteen bytes", 3, 0, 16, -1},
      {"at the end", 3, size, 8, -1},
      {"straddling the end", 3, size - 4, 8, -1},
      {"far beyond", 3, uint64_t{1} << 40, 8, -1},
      {"an aggregator not found", 4, 0, 8, -1},
      {"an unknown GUID", 7, 0, 8, -1},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto r = policy.check_pmt(c.telem, c.offset, c.width);
    CHECK(r.ok() == (c.index >= 0));
    if (r.ok()) {
      CHECK(*r == static_cast<size_t>(c.index));
    } else {
      CHECK(r.error().code == EPERM);
      CHECK_FALSE(r.error().message.empty());
    }
  }
  // MSR checks are not PMT's: a PMT kind through check() is refused.
  CHECK_FALSE(policy.check(0, 0xc8f, 0, broker::OpKind::kPmtRead).ok());
}

TEST_CASE("the broker reads a telem file one word at the counter's offset", "[pmt]") {
  PmtTree t;
  const fs::path dir =
      t.add(0, hex(AET_GUID_CWF_ENERGY), size_of(AET_GUID_CWF_ENERGY), "0\n", false);
  std::string words(aet_event_group(AET_GUID_CWF_ENERGY)->mmio_size(), '\0');
  const uint64_t w = PMT_DATA_VALID | 0x1234;
  std::memcpy(&words[16], &w, 8);
  PmtTree::text(dir / "telem", words);
  auto aggs = read_pmt_aggregators(t.root.string(), topology(), [](const std::string&) {});
  REQUIRE(aggs.size() == 1);
  broker::DevPmtDevice dev(aggs);
  REQUIRE(dev.pmt_regions().size() == 1);
  auto v = dev.pmt_read64(0, 16);
  REQUIRE(v.ok());
  CHECK(*v == w);
  CHECK(dev.pmt_read64(0, 8).value() == 0);
  CHECK_FALSE(dev.pmt_read64(0, 12).ok());
  CHECK_FALSE(dev.pmt_read64(1, 0).ok());
  CHECK_FALSE(dev.pmt_read64(0, words.size()).ok());
  // The file gone (the device removed): EIO, not a crash.
  PmtTree u;
  const fs::path d2 = u.add(0, hex(AET_GUID_CWF_ENERGY), size_of(AET_GUID_CWF_ENERGY), "0\n", true);
  auto a2 = read_pmt_aggregators(u.root.string(), topology(), [](const std::string&) {});
  REQUIRE(a2.size() == 1);
  fs::remove(d2 / "telem");
  broker::DevPmtDevice gone(a2);
  auto r = gone.pmt_read64(0, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EIO);
}
