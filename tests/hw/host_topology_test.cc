// Tests hw/host_topology.h, the one reader of the host's sysfs CPU tree,
// on a fake tree: the possible/online lists, cpuN directories only, caches
// by index number, missing files as "unknown", and the topology the host
// profile builds from it.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw/host_topology.h"
#include "hw/sim/profile.h"
#include "hw/x86/sysfs_topology.h"

namespace resctrlfs::hw {
namespace {

struct FakeTree {
  std::string root;
  FakeTree() {
    char tmpl[] = "/tmp/resctrlfs-host-topology-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    root = tmpl;
  }
  ~FakeTree() { std::filesystem::remove_all(root); }
  void put(const std::string& rel, const std::string& text) const {
    const std::string path = root + "/" + rel;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
  void cache(unsigned cpu, unsigned index, const std::string& level, const std::string& type,
             const std::string& id, const std::string& size) const {
    const std::string dir = "cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(index);
    put(dir + "/level", level);
    put(dir + "/type", type);
    if (!id.empty()) put(dir + "/id", id);
    put(dir + "/size", size);
  }
};

}  // namespace

TEST_CASE("host topology: the sysfs CPU tree as files show it", "[host_topology]") {
  FakeTree t;
  t.put("possible", "0-3\n");
  t.put("online", "0-1,3\n");
  t.put("cpufreq/boost", "1\n");  // not a CPU
  t.put("cpu0/topology/physical_package_id", "1\n");
  std::filesystem::create_directories(t.root + "/cpu0/node2");
  t.cache(0, 0, "1\n", "Data\n", "0\n", "48K\n");
  t.cache(0, 1, "1\n", "Instruction\n", "0\n", "32K\n");
  t.cache(0, 2, "2\n", "Unified\n", "5\n", "2048K\n");
  t.cache(0, 10, "3\n", "Unified\n", "", "1M\n");
  t.put("cpu1/topology/physical_package_id", "not a number\n");
  std::filesystem::create_directories(t.root + "/cpu3");

  auto tree = read_sysfs_cpu_tree(t.root);
  REQUIRE(tree.ok());
  CHECK(tree->possible == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(tree->online == std::vector<unsigned>{0, 1, 3});
  REQUIRE(tree->cpus.size() == 3);
  const SysfsCpu& c0 = tree->cpus[0];
  CHECK(c0.cpu == 0);
  CHECK(c0.dir == t.root + "/cpu0");
  CHECK(c0.package == 1);
  CHECK(c0.node == 2);
  REQUIRE(c0.caches.size() == 4);
  CHECK(c0.caches[0].index == 0);
  CHECK(c0.caches[1].type == "Instruction");
  CHECK(c0.caches[2].size_bytes == 2048 * 1024);
  CHECK(c0.caches[3].index == 10);  // by number, not by name
  CHECK(c0.caches[3].id == -1);
  CHECK(c0.caches[3].size_bytes == 1024 * 1024);
  CHECK(c0.cache_id(1) == 0);
  CHECK(c0.cache_id(2) == 5);
  CHECK(c0.cache_id(3) == -1);
  CHECK(tree->cpus[1].package == -1);
  CHECK(tree->cpus[1].node == -1);
  CHECK(tree->cpus[1].caches.empty());
  CHECK(tree->cpus[2].cpu == 3);
}

TEST_CASE("host topology: lists that are not CPU lists read as none", "[host_topology]") {
  FakeTree t;
  t.put("possible", "0-3:1/2\n");
  t.put("online", "1,,2\n");
  std::filesystem::create_directories(t.root + "/cpu0");
  std::filesystem::create_directories(t.root + "/cpu1");
  auto tree = read_sysfs_cpu_tree(t.root);
  REQUIRE(tree.ok());
  CHECK(tree->possible.empty());
  CHECK(tree->online.empty());
  // The host profile then takes cpu0, cpu1, ... as far as they go.
  auto topo = x86::read_sysfs_topology(t.root);
  REQUIRE(topo.ok());
  CHECK(topo->nr_cpus == 2);
  CHECK(topo->online.count() == 2);
  CHECK(topo->package == std::vector<int>{0, 0});
  CHECK(topo->l3_id == std::vector<int>{0, 0});
  CHECK(topo->l2_id == std::vector<int>{0, 1});
}

TEST_CASE("host topology: a root that cannot be read is an error", "[host_topology]") {
  auto tree = read_sysfs_cpu_tree("/nonexistent/resctrlfs-host-topology");
  REQUIRE_FALSE(tree.ok());
  CHECK(tree.error().code == ENOENT);
  auto topo = x86::read_sysfs_topology("/nonexistent/resctrlfs-host-topology");
  REQUIRE_FALSE(topo.ok());
  CHECK(topo.error().message == "no CPUs found under /nonexistent/resctrlfs-host-topology");
}

TEST_CASE("host topology: the host profile's view of L2/L3 ids and sizes", "[host_topology]") {
  FakeTree t;
  t.put("possible", "0-1\n");
  t.put("online", "0-1\n");
  for (unsigned c = 0; c < 2; ++c) {
    t.put("cpu" + std::to_string(c) + "/topology/physical_package_id", "0\n");
    t.cache(c, 0, "1\n", "Data\n", "0\n", "48K\n");
    t.cache(c, 1, "1\n", "Instruction\n", "0\n", "32K\n");
    t.cache(c, 2, "2\n", "Unified\n", std::to_string(c) + "\n", "2048K\n");
    t.cache(c, 3, "3\n", "Unified\n", "7\n", "30M\n");
  }
  auto topo = x86::read_sysfs_topology(t.root);
  REQUIRE(topo.ok());
  CHECK(topo->nr_cpus == 2);
  CHECK(topo->l2_id == std::vector<int>{0, 1});
  CHECK(topo->l3_id == std::vector<int>{7, 7});
  CHECK(topo->l2_size_bytes == 2048 * 1024);
  CHECK(topo->l3_size_bytes == 30ULL * 1024 * 1024);
  CHECK(topo->node == std::vector<int>{-1, -1});
}

}  // namespace resctrlfs::hw
