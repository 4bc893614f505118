// Tests Sub-NUMA Clustering in hw/: detection as Linux infers it (models,
// CPUs per L3 / CPUs per node), the per-node monitoring domains and divided
// RMID count and scale, the RMID_SNC_CONFIG write at start-up, the logical
// to physical RMID mapping of counter reads, the simulated machine's
// per-node counters in both RMID distribution modes, and the broker policy.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "hw/backend.h"
#include "hw/broker/policy.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/registers.h"
#include "hw/x86/sysfs_topology.h"
#include "recording_msr.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;
using resctrlfs::hw::testing::R;
using resctrlfs::hw::testing::RecordingMsr;
using resctrlfs::hw::testing::W;

namespace {

// `nodes` NUMA nodes over two packages of `cpus_per_pkg` CPUs each (one L3
// per package), on Intel family 6 `model` (stepping 7: past Skylake-SP's
// monitoring quirk).
std::string profile_json(unsigned model, unsigned cpus_per_pkg, unsigned nodes_per_pkg) {
  std::string cpus;
  const unsigned per_node = cpus_per_pkg / nodes_per_pkg;
  for (unsigned c = 0; c < 2 * cpus_per_pkg; ++c) {
    const unsigned pkg = c / cpus_per_pkg;
    const unsigned node = pkg * nodes_per_pkg + (c % cpus_per_pkg) / per_node;
    if (!cpus.empty()) cpus += ",";
    cpus += "{\"cpu\": " + std::to_string(c) + ", \"package\": " + std::to_string(pkg) +
            ", \"l3\": " + std::to_string(pkg) + ", \"node\": " + std::to_string(node) + "}";
  }
  return R"({"vendor": "GenuineIntel", "family": 6, "stepping": 7, "model": )" +
         std::to_string(model) + R"(, "cpus": [)" + cpus + R"(],
    "l3_size_bytes": 31457280, "l2_size_bytes": 2097152,
    "l3_cat": {"cbm_len": 15, "num_closid": 16},
    "l3_mon": {"num_rmids": 256, "scale": 65536,
               "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]}})";
}

x86::X86Platform decode(const std::string& name_or_json) {
  auto p = name_or_json.front() == '{' ? sim::parse_profile(name_or_json, "test")
                                       : sim::load_profile(name_or_json);
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  return m.os_info();  // what Linux shows
}

uint64_t bytes(Arch& a, int dom, uint32_t rmid, EventId ev) {
  auto v = a.read_counter(ResourceId::L3, dom, 0, rmid, ev, nullptr);
  REQUIRE(v.err == ReadError::kNone);
  return v.bytes;
}

}  // namespace

TEST_CASE("SNC: intel-snc decodes to per-node domains under each L3", "[snc]") {
  const x86::X86Platform info = decode("intel-snc");
  CHECK(info.model == INTEL_FAM6_SAPPHIRERAPIDS_X);
  const MonCaps& mon = info.res(ResourceId::L3).mon;
  REQUIRE(mon.capable);
  CHECK(mon.snc_ways == 2);
  CHECK(mon.num_rmids == 128);          // 256 physical / 2 nodes
  CHECK(mon.occupancy_scale == 32768);  // 65536 / 2
  // Limit and threshold from the whole L3: 30 MiB / 128 = 245760, rounded
  // down to the divided scale.
  CHECK(mon.realloc_limit_bytes == 31457280);
  CHECK(mon.default_threshold == 229376);
  REQUIRE(mon.mon_domains.size() == 4);
  for (int n = 0; n < 4; ++n) {
    CHECK(mon.mon_domains[n].id == n);
    CHECK(mon.mon_domains[n].l3_id == n / 2);
    CHECK(mon.mon_domains[n].cpus.cpus() ==
          std::vector<unsigned>{static_cast<unsigned>(2 * n), static_cast<unsigned>(2 * n + 1)});
  }
  CHECK(info.cpu_ids(Scope::NODE) == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  // Controls keep the L3 scope.
  REQUIRE(info.res(ResourceId::L3).ctrl_domains.size() == 2);
  REQUIRE(info.res(ResourceId::MB).ctrl_domains.size() == 2);
  CHECK(info.res(ResourceId::MB).ctrl_domains[1].id == 1);
  CHECK(info.res(ResourceId::L3).cache.cache_size_bytes == 31457280);
}

TEST_CASE("SNC: detected only on the models Linux lists, with a sane ratio", "[snc]") {
  for (unsigned model :
       {INTEL_FAM6_ICELAKE_X, INTEL_FAM6_SAPPHIRERAPIDS_X, INTEL_FAM6_EMERALDRAPIDS_X,
        INTEL_FAM6_GRANITERAPIDS_X, INTEL_FAM6_ATOM_CRESTMONT_X}) {
    INFO("model " << model);
    CHECK(decode(profile_json(model, 4, 2)).res(ResourceId::L3).mon.snc_ways == 2);
  }
  // Skylake-SP can run SNC, but Linux does not look for it there.
  const PlatformInfo skx = decode(profile_json(INTEL_FAM6_SKYLAKE_X, 4, 2));
  CHECK(skx.res(ResourceId::L3).mon.snc_ways == 1);
  CHECK(skx.res(ResourceId::L3).mon.num_rmids == 256);
  CHECK(skx.res(ResourceId::L3).mon.occupancy_scale == 65536);
  REQUIRE(skx.res(ResourceId::L3).mon.mon_domains.size() == 2);
  CHECK(skx.res(ResourceId::L3).mon.mon_domains[1].id == 1);
  CHECK(skx.res(ResourceId::L3).mon.mon_domains[1].l3_id == 1);
  // One node per package (intel-2s is an Ice Lake-SP; "node" defaults to
  // the package): no SNC.
  const PlatformInfo i2s = decode("intel-2s");
  CHECK(i2s.res(ResourceId::L3).mon.snc_ways == 1);
  CHECK(i2s.cpu_ids(Scope::NODE) == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(i2s.res(ResourceId::L3).mon.mon_domains.size() == 2);
  // SNC3, SNC4 and SNC6 are plausible; 5 is not.
  CHECK(decode(profile_json(INTEL_FAM6_GRANITERAPIDS_X, 6, 3)).res(ResourceId::L3).mon.snc_ways ==
        3);
  CHECK(decode(profile_json(INTEL_FAM6_GRANITERAPIDS_X, 8, 4)).res(ResourceId::L3).mon.num_rmids ==
        64);
  CHECK(decode(profile_json(INTEL_FAM6_GRANITERAPIDS_X, 6, 6)).res(ResourceId::L3).mon.snc_ways ==
        6);
  const PlatformInfo five = decode(profile_json(INTEL_FAM6_GRANITERAPIDS_X, 5, 5));
  CHECK(five.res(ResourceId::L3).mon.snc_ways == 1);
  CHECK(five.res(ResourceId::L3).mon.mon_domains.size() == 2);
}

TEST_CASE("SNC: the ratio uses the first CPU's L3 and node, unknown nodes mean none", "[snc]") {
  x86::Topology t;
  t.nr_cpus = 4;
  t.online = CpuMask(4);
  for (unsigned c = 0; c < 4; ++c) t.online.set(c);
  t.l3_id = {0, 0, 0, 0};
  t.node = {0, 0, 1, 1};
  CHECK(snc_nodes_per_l3("GenuineIntel", 6, INTEL_FAM6_SAPPHIRERAPIDS_X, t) == 2);
  CHECK(snc_nodes_per_l3("AuthenticAMD", 6, INTEL_FAM6_SAPPHIRERAPIDS_X, t) == 1);
  CHECK(snc_nodes_per_l3("GenuineIntel", 6, INTEL_FAM6_SKYLAKE_X, t) == 1);
  t.node = {-1, -1, -1, -1};
  CHECK(snc_nodes_per_l3("GenuineIntel", 6, INTEL_FAM6_SAPPHIRERAPIDS_X, t) == 1);
  // CPU 0 offline: the first online CPU decides.
  t.node = {0, 1, 1, 1};
  t.online.set(0, false);
  CHECK(snc_nodes_per_l3("GenuineIntel", 6, INTEL_FAM6_SAPPHIRERAPIDS_X, t) == 1);
}

TEST_CASE("SNC: start-up enables RMID sharing mode once per node domain", "[snc]") {
  auto p = sim::load_profile("intel-snc");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  auto msr = std::make_shared<RecordingMsr>();
  for (unsigned cpu : {0u, 2u, 4u}) msr->regs[{cpu, MSR_RMID_SNC_CONFIG}] = 1;
  msr->regs[{6u, MSR_RMID_SNC_CONFIG}] = 0;  // already in sharing mode: left alone
  auto a = X86Arch::create(m.os_info(), m.limits(), msr, nullptr);
  REQUIRE(a.ok());
  std::vector<testing::Access> snc;
  for (const auto& acc : msr->log)
    if (acc.msr == MSR_RMID_SNC_CONFIG) snc.push_back(acc);
  CHECK(snc ==
        std::vector<testing::Access>{R(0, MSR_RMID_SNC_CONFIG, 1), W(0, MSR_RMID_SNC_CONFIG, 0),
                                     R(2, MSR_RMID_SNC_CONFIG, 1), W(2, MSR_RMID_SNC_CONFIG, 0),
                                     R(4, MSR_RMID_SNC_CONFIG, 1), W(4, MSR_RMID_SNC_CONFIG, 0),
                                     R(6, MSR_RMID_SNC_CONFIG, 0)});
  // Without SNC the register is never touched.
  auto p2 = sim::load_profile("intel-2s");
  REQUIRE(p2.ok());
  sim::SimMachine m2(*p2);
  auto msr2 = std::make_shared<RecordingMsr>();
  REQUIRE(X86Arch::create(m2.os_info(), m2.limits(), msr2, nullptr).ok());
  for (const auto& acc : msr2->log) CHECK(acc.msr != MSR_RMID_SNC_CONFIG);
}

TEST_CASE("SNC: a read of logical RMID r on node n selects the node's physical RMID", "[snc]") {
  auto p = sim::load_profile("intel-snc");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  auto msr = std::make_shared<RecordingMsr>();
  auto a = X86Arch::create(m.os_info(), m.limits(), msr, nullptr);
  REQUIRE(a.ok());
  X86Arch& arch = **a;
  struct Case {
    int node;
    uint32_t rmid;
    unsigned cpu;
    uint64_t phys;
  };
  for (const Case& c : {Case{0, 5, 0, 5}, Case{1, 5, 2, 133}, Case{2, 127, 4, 127},
                        Case{3, 0, 6, 128}, Case{3, 127, 6, 255}}) {
    INFO("node " << c.node << " rmid " << c.rmid);
    msr->log.clear();
    msr->qm_ctr.push_back(3);
    auto v = arch.read_counter(ResourceId::L3, c.node, 0, c.rmid, EventId::LLC_OCCUPANCY, nullptr);
    CHECK(v.err == ReadError::kNone);
    CHECK(v.bytes == 3 * 32768);  // units of the divided scale
    REQUIRE(msr->log.size() == 2);
    CHECK(msr->log[0] == W(c.cpu, IA32_QM_EVTSEL, (c.phys << 32) | QOS_L3_OCCUP_EVENT_ID));
    CHECK(msr->log[1].msr == IA32_QM_CTR);
    CHECK(msr->log[1].cpu == c.cpu);
  }
  // Logical RMIDs stop at num_rmids.
  CHECK(arch.read_counter(ResourceId::L3, 0, 0, 128, EventId::LLC_OCCUPANCY, nullptr).err ==
        ReadError::kError);
}

TEST_CASE("SNC: the simulated RMID_SNC_CONFIG register and its #GP rules", "[snc]") {
  auto p = sim::load_profile("intel-snc");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  auto v = m.read(3, MSR_RMID_SNC_CONFIG);
  REQUIRE(v.ok());
  CHECK(*v == 1);  // power-on: default (localized) distribution
  CHECK_FALSE(m.write(3, MSR_RMID_SNC_CONFIG, 2).ok());  // reserved bit
  REQUIRE(m.write(3, MSR_RMID_SNC_CONFIG, 0).ok());
  // One register per L3: CPU 0 shares it, CPU 4 does not.
  CHECK(*m.read(0, MSR_RMID_SNC_CONFIG) == 0);
  CHECK(*m.read(4, MSR_RMID_SNC_CONFIG) == 1);
  bool dumped = false;
  for (const auto& r : m.dump_registers())
    if (r.msr == MSR_RMID_SNC_CONFIG && r.cpu == 0) dumped = r.value == 0;
  CHECK(dumped);
  // Models without the register, or without SNC enabled, fault on it.
  auto i2s = sim::load_profile("intel-2s");
  REQUIRE(i2s.ok());
  sim::SimMachine m2(*i2s);
  CHECK_FALSE(m2.read(0, MSR_RMID_SNC_CONFIG).ok());
  auto skx = sim::parse_profile(profile_json(INTEL_FAM6_SKYLAKE_X, 4, 2), "skx");
  REQUIRE(skx.ok());
  sim::SimMachine m3(*skx);
  CHECK_FALSE(m3.read(0, MSR_RMID_SNC_CONFIG).ok());
  auto cmt = sim::load_profile("intel-cmt");
  REQUIRE(cmt.ok());
  sim::SimMachine mc(*cmt);
  CHECK_FALSE(mc.read(0, MSR_RMID_SNC_CONFIG).ok());
  CHECK_FALSE(mc.write(0, MSR_RMID_SNC_CONFIG, 0).ok());
}

TEST_CASE("SNC: counts are per node in sharing mode", "[snc]") {
  auto b = make_sim_backend("intel-snc");
  REQUIRE(b.ok());
  Arch& arch = *b->arch;
  auto* m = dynamic_cast<sim::SimMachine*>(b->sim);
  REQUIRE(m != nullptr);
  m->set_manual_clock(true);
  CHECK(*m->read(0, MSR_RMID_SNC_CONFIG) == 0);  // the Arch switched it
  CHECK(*m->read(4, MSR_RMID_SNC_CONFIG) == 0);
  // CPU 2 is on node 1 (the second node of L3 0); CPU 4 on node 2.
  REQUIRE(arch.set_cpu_assoc(2, 1, 5).ok());
  REQUIRE(arch.set_cpu_assoc(4, 1, 5).ok());
  REQUIRE(m->attach_cpu_workload(2, Workload{64u << 20, 1000, 1.0}).ok());
  REQUIRE(m->attach_cpu_workload(4, Workload{1u << 20, 3000, 0.5}).ok());
  for (int n = 0; n < 4; ++n) {  // baselines
    CHECK(bytes(arch, n, 5, EventId::MBM_TOTAL) == 0);
    CHECK(bytes(arch, n, 5, EventId::MBM_LOCAL) == 0);
  }
  m->advance_ms(1000);
  CHECK(static_cast<double>(bytes(arch, 1, 5, EventId::MBM_TOTAL)) == Approx(1e9).epsilon(0.001));
  CHECK(static_cast<double>(bytes(arch, 2, 5, EventId::MBM_TOTAL)) == Approx(3e9).epsilon(0.001));
  CHECK(static_cast<double>(bytes(arch, 2, 5, EventId::MBM_LOCAL)) == Approx(1.5e9).epsilon(0.001));
  CHECK(bytes(arch, 0, 5, EventId::MBM_TOTAL) == 0);
  CHECK(bytes(arch, 3, 5, EventId::MBM_TOTAL) == 0);
  // Node 1 owns half of the 30 MiB L3; the footprint fills all of it.
  m->advance_ms(3000);
  const uint64_t occ = bytes(arch, 1, 5, EventId::LLC_OCCUPANCY);
  CHECK(occ % 32768 == 0);
  CHECK(static_cast<double>(occ) == Approx(15.0 * (1 << 20)).epsilon(0.01));
  CHECK(bytes(arch, 0, 5, EventId::LLC_OCCUPANCY) == 0);
  CHECK(static_cast<double>(bytes(arch, 2, 5, EventId::LLC_OCCUPANCY)) ==
        Approx(1 << 20).epsilon(0.02));
  // In physical terms: node 1's slice of L3 0 holds it.
  CHECK(m->occupancy_bytes(0, 128 + 5) == Approx(15.0 * (1 << 20)).epsilon(0.01));
  CHECK(m->occupancy_bytes(0, 5) == 0);
}

TEST_CASE("SNC: an unpinned thread is spread over every node", "[snc]") {
  auto b = make_sim_backend("intel-snc");
  REQUIRE(b.ok());
  Arch& arch = *b->arch;
  b->sim->set_manual_clock(true);
  REQUIRE(arch.thread_tagger() != nullptr);
  arch.thread_tagger()->set_thread_tags(42, 0, 9);
  REQUIRE(b->sim->attach_thread_workload(42, Workload{0, 4000, 1.0}).ok());
  for (int n = 0; n < 4; ++n) bytes(arch, n, 9, EventId::MBM_TOTAL);
  b->sim->advance_ms(1000);
  for (int n = 0; n < 4; ++n) {
    INFO("node " << n);
    CHECK(static_cast<double>(bytes(arch, n, 9, EventId::MBM_TOTAL)) == Approx(1e9).epsilon(0.001));
  }
}

TEST_CASE("SNC: in the power-on mode an RMID counts only on the node owning it", "[snc]") {
  auto p = sim::load_profile("intel-snc");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);  // no Arch: RMID_SNC_CONFIG keeps its power-on value
  m.set_manual_clock(true);
  // CPU 2 (node 1) tagged RMID 5, which belongs to node 0's slice: lost.
  // CPU 3 (node 1) tagged RMID 130, in node 1's slice: counted there.
  REQUIRE(m.write(2, IA32_PQR_ASSOC, 5).ok());
  REQUIRE(m.write(3, IA32_PQR_ASSOC, 130).ok());
  REQUIRE(m.attach_cpu_workload(2, Workload{0, 1000, 1.0}).ok());
  REQUIRE(m.attach_cpu_workload(3, Workload{0, 2000, 1.0}).ok());
  m.advance_ms(1000);
  auto read = [&](uint64_t phys) {
    REQUIRE(m.write(0, IA32_QM_EVTSEL, (phys << 32) | QOS_L3_MBM_TOTAL_EVENT_ID).ok());
    auto v = m.read(0, IA32_QM_CTR);
    REQUIRE(v.ok());
    return *v * 32768;
  };
  CHECK(read(5) == 0);
  CHECK(read(133) == 0);
  CHECK(static_cast<double>(read(130)) == Approx(2e9).epsilon(0.001));
}

TEST_CASE("SNC: the broker allows RMID_SNC_CONFIG and physical RMIDs only under SNC", "[snc]") {
  auto p = sim::load_profile("intel-snc");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  broker::Policy pol(m.info(), m.limits());
  using broker::OpKind;
  CHECK(pol.check(0, MSR_RMID_SNC_CONFIG, 0, OpKind::kRead).ok());
  CHECK(pol.check(0, MSR_RMID_SNC_CONFIG, 0, OpKind::kWrite).ok());
  CHECK_FALSE(pol.check(0, MSR_RMID_SNC_CONFIG, 2, OpKind::kWrite).ok());
  CHECK(pol.check(2, IA32_QM_EVTSEL, (uint64_t{255} << 32) | 1, OpKind::kWrite).ok());
  CHECK_FALSE(pol.check(2, IA32_QM_EVTSEL, (uint64_t{256} << 32) | 1, OpKind::kWrite).ok());
  // PQR_ASSOC takes logical RMIDs only.
  CHECK(pol.check(2, IA32_PQR_ASSOC, 127, OpKind::kWrite).ok());
  CHECK_FALSE(pol.check(2, IA32_PQR_ASSOC, 128, OpKind::kWrite).ok());
  auto p2 = sim::load_profile("intel-2s");
  REQUIRE(p2.ok());
  sim::SimMachine m2(*p2);
  broker::Policy pol2(m2.info(), m2.limits());
  CHECK_FALSE(pol2.check(0, MSR_RMID_SNC_CONFIG, 0, OpKind::kRead).ok());
}

TEST_CASE("SNC: host topology reads NUMA nodes from sysfs only beside a real L3", "[snc]") {
  char tmpl[] = "/tmp/resctrlfs-snc-sysfs-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string root = tmpl;
  auto put = [](const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  };
  put(root + "/possible", "0-3\n");
  put(root + "/online", "0-3\n");
  for (int c = 0; c < 4; ++c) {
    const std::string base = root + "/cpu" + std::to_string(c);
    put(base + "/topology/physical_package_id", "0\n");
    std::filesystem::create_directories(base + "/node" + std::to_string(c / 2));
    if (c < 2) {  // CPUs 2 and 3 have no L3 in sysfs
      put(base + "/cache/index0/level", "3\n");
      put(base + "/cache/index0/type", "Unified\n");
      put(base + "/cache/index0/id", "0\n");
      put(base + "/cache/index0/size", "30720K\n");
    }
  }
  auto t = x86::read_sysfs_topology(root);
  std::filesystem::remove_all(root);
  REQUIRE(t.ok());
  CHECK(t->node == std::vector<int>{0, 0, -1, -1});
  CHECK(t->l3_id == std::vector<int>{0, 0, 0, 0});
}
