// Sub-NUMA Clustering in fs/: mon_L3_XX keyed by the
// L3 cache id with summing files and one mon_sub_L3_YY per node, the
// CTRL_MON + MON group sums per node, error handling of the sums, limbo over
// every node domain, mba_MBps refused, and the info/L3_MON numbers of the
// simulated intel-snc platform with workloads on a manual clock.
#include <catch2/catch.hpp>
#include <chrono>

#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

using Clock = std::chrono::steady_clock;
using Set = std::set<std::string>;

uint64_t num(const std::string& s) { return std::stoull(s); }

// 8 CPUs, two L3 caches (ids 0 and 1) with L3 CAT and linear MBA; SNC2
// monitoring with NUMA nodes 0, 1 (L3 0) and 10, 11 (L3 1).
hw::PlatformInfo snc_platform(unsigned rmids = 8) {
  hw::PlatformInfo p = FakeArch::base_platform(8);
  FakeArch::add_l3_cat(p, 8, 4);
  hw::Resource& mb = p.resources[static_cast<int>(hw::ResourceId::MB)];
  mb.alloc_capable = true;
  mb.num_closid = 4;
  mb.membw = {10, 10, 100, true, true, hw::ThrottleMode::MAX};
  mb.ctrl_domains = FakeArch::two_domains(8);
  FakeArch::add_l3_mon(p, rmids);
  p.res(hw::ResourceId::L3).mon.snc_ways = 2;
  p.res(hw::ResourceId::L3).mon.mon_domains.clear();
  const int ids[] = {0, 1, 10, 11};
  for (int i = 0; i < 4; ++i) {
    hw::MonDomain d{ids[i], CpuMask(8), i / 2};
    d.cpus.set(2 * i);
    d.cpus.set(2 * i + 1);
    p.res(hw::ResourceId::L3).mon.mon_domains.push_back(d);
  }
  return p;
}

}  // namespace

TEST_CASE("SNC: mon_L3_XX per L3 cache with a mon_sub_L3_YY per node", "[snc]") {
  FakeFixture f(snc_platform(), /*mounted=*/false);
  REQUIRE(f.fs->mount({}).ok());
  Shell sh(*f.fs);
  REQUIRE(sh.mkdir("/p0", 0750) == 0);
  const Set events{"llc_occupancy", "mbm_total_bytes"};
  for (std::string g : {"", "/p0"}) {
    INFO("group '" << g << "'");
    CHECK(sh.ls(g + "/mon_data") == Set{"mon_L3_00", "mon_L3_01"});
    CHECK(sh.ls(g + "/mon_data/mon_L3_00") ==
          Set{"llc_occupancy", "mbm_total_bytes", "mon_sub_L3_00", "mon_sub_L3_01"});
    CHECK(sh.ls(g + "/mon_data/mon_L3_01") ==
          Set{"llc_occupancy", "mbm_total_bytes", "mon_sub_L3_10", "mon_sub_L3_11"});
    CHECK(sh.ls(g + "/mon_data/mon_L3_01/mon_sub_L3_11") == events);
    CHECK(sh.ls(g + "/mon_data/mon_L3_00/mon_sub_L3_10").empty());  // not under L3 0
    CHECK(sh.stat(g + "/mon_data/mon_L3_00").nlink == 4);
  }
  // Directories take the group directory's mode; event files are 0444.
  CHECK((sh.stat("/p0/mon_data/mon_L3_00/mon_sub_L3_01").mode & 07777) == 0750);
  CHECK((sh.stat("/p0/mon_data/mon_L3_00").mode & 07777) == 0750);
  CHECK((sh.stat("/p0/mon_data/mon_L3_00/mon_sub_L3_01/llc_occupancy").mode & 07777) == 0444);
  CHECK((sh.stat("/p0/mon_data/mon_L3_00/llc_occupancy").mode & 07777) == 0444);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.ls("/p0/mon_groups/m/mon_data/mon_L3_01") ==
        Set{"llc_occupancy", "mbm_total_bytes", "mon_sub_L3_10", "mon_sub_L3_11"});
}

TEST_CASE("SNC: the L3 files sum the nodes, the node files show one node", "[snc]") {
  FakeFixture f(snc_platform(), /*mounted=*/false);
  REQUIRE(f.fs->mount({}).ok());
  Shell sh(*f.fs);
  REQUIRE(sh.mkdir("/p0") == 0);               // rmid 1
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);  // rmid 2
  const auto T = hw::EventId::MBM_TOTAL;
  const auto ok = hw::ReadError::kNone;
  auto& v = f.arch.values;
  v[{0, 1, T}] = {ok, 100};
  v[{1, 1, T}] = {ok, 20};
  v[{1, 2, T}] = {ok, 3};
  v[{10, 1, T}] = {ok, 1000};
  v[{11, 2, T}] = {ok, 4000};
  v[{0, 0, T}] = {ok, 7};
  const std::string p0 = "/p0/mon_data/";
  const std::string m = "/p0/mon_groups/m/mon_data/";
  CHECK(sh.cat(p0 + "mon_L3_00/mbm_total_bytes") == "123\n");
  CHECK(sh.cat(p0 + "mon_L3_00/mon_sub_L3_00/mbm_total_bytes") == "100\n");
  CHECK(sh.cat(p0 + "mon_L3_00/mon_sub_L3_01/mbm_total_bytes") == "23\n");
  CHECK(sh.cat(p0 + "mon_L3_01/mbm_total_bytes") == "5000\n");
  CHECK(sh.cat(p0 + "mon_L3_01/mon_sub_L3_10/mbm_total_bytes") == "1000\n");
  CHECK(sh.cat(p0 + "mon_L3_01/mon_sub_L3_11/mbm_total_bytes") == "4000\n");
  CHECK(sh.cat(m + "mon_L3_00/mbm_total_bytes") == "3\n");
  CHECK(sh.cat(m + "mon_L3_00/mon_sub_L3_00/mbm_total_bytes") == "0\n");
  CHECK(sh.cat(m + "mon_L3_01/mbm_total_bytes") == "4000\n");
  CHECK(sh.cat("/mon_data/mon_L3_00/mbm_total_bytes") == "7\n");  // root: not p0's
  // A failing node is left out of the sum while another node succeeds...
  v[{0, 1, T}] = {hw::ReadError::kError, 0};
  CHECK(sh.cat(p0 + "mon_L3_00/mbm_total_bytes") == "23\n");
  CHECK(sh.cat(p0 + "mon_L3_00/mon_sub_L3_00/mbm_total_bytes") == "0\n");  // m's rmid 2 is 0
  CHECK(sh.cat(m + "mon_L3_01/mon_sub_L3_10/mbm_total_bytes") == "0\n");
  // ...and when every read fails the last failure shows.
  v[{11, 2, T}] = {hw::ReadError::kUnavailable, 0};
  v[{10, 2, T}] = {hw::ReadError::kError, 0};
  CHECK(sh.cat(m + "mon_L3_01/mbm_total_bytes") == "Unavailable\n");
  CHECK(sh.cat(m + "mon_L3_01/mon_sub_L3_10/mbm_total_bytes") == "Error\n");
  v[{11, 2, T}] = {hw::ReadError::kError, 0};
  CHECK(sh.cat(m + "mon_L3_01/mbm_total_bytes") == "Error\n");
}

TEST_CASE("SNC: a freed RMID stays in limbo until clean on every node", "[snc]") {
  FakeFixture f(snc_platform(2), /*mounted=*/false);
  REQUIRE(f.fs->mount({}).ok());
  Shell sh(*f.fs);
  REQUIRE(sh.mkdir("/mon_groups/a") == 0);  // rmid 1, the only one
  // Dirty on node 11 only (above the 4096-byte threshold).
  f.arch.values[{11, 1, hw::EventId::LLC_OCCUPANCY}] = {hw::ReadError::kNone, 8192};
  REQUIRE(sh.rmdir("/mon_groups/a") == 0);
  const Clock::time_point t0 = Clock::now();
  f.fs->tick(t0);
  CHECK(sh.mkdir("/mon_groups/b") == EBUSY);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  f.arch.values[{11, 1, hw::EventId::LLC_OCCUPANCY}] = {hw::ReadError::kNone, 4095};
  f.fs->tick(t0 + std::chrono::milliseconds(1000));
  CHECK(sh.mkdir("/mon_groups/b") == 0);
}

TEST_CASE("SNC: mba_MBps is refused because MBA and monitoring scopes differ", "[snc]") {
  FakeFixture f(snc_platform(), /*mounted=*/false);
  MountOptions o;
  o.mba_mbps = true;
  auto r = f.fs->mount(o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EINVAL);
  CHECK(r.error().message ==
        "mba_MBps requires MBM (mbm_event mode not supported) and linear scale MBA at L3 scope");
  // Without SNC the same platform accepts it.
  hw::PlatformInfo p = snc_platform(8);
  p.res(hw::ResourceId::L3).mon.snc_ways = 1;
  p.res(hw::ResourceId::L3).mon.mon_domains.clear();
  for (const hw::CtrlDomain& d : FakeArch::two_domains(8))
    p.res(hw::ResourceId::L3).mon.mon_domains.push_back({d.id, d.cpus, d.id});
  FakeFixture plain(p, /*mounted=*/false);
  CHECK(plain.fs->mount(o).ok());
  // A plain mount under SNC works.
  CHECK(f.fs->mount({}).ok());
}

TEST_CASE("SNC: intel-snc info/L3_MON numbers and sums of real counts", "[snc]") {
  SimFixture f("intel-snc");
  Shell& sh = *f.sh;
  CHECK(sh.cat("/info/L3_MON/num_rmids") == "128\n");
  CHECK(sh.cat("/info/L3_MON/mon_features") == "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
  CHECK(sh.cat("/info/L3_MON/max_threshold_occupancy") == "229376\n");
  // Writes round to the divided scale (32768); the limit is the whole L3.
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "100000") == 0);
  CHECK(sh.cat("/info/L3_MON/max_threshold_occupancy") == "98304\n");
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "31457281") == EINVAL);
  CHECK(sh.lcs() ==
        "max_threshold_occupancy: Exceeds limit (before adjustment) of 31457280 bytes\n");
  // Controls stay per L3; size is computed from the whole cache.
  CHECK(sh.cat("/schemata") == "    MB:0=100;1=100\n    L3:0=7fff;1=7fff\n");
  CHECK(sh.cat("/size") == "    MB:0=100;1=100\n    L3:0=31457280;1=31457280\n");
  CHECK(sh.ls("/mon_data/mon_L3_01") == Set{"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes",
                                            "mon_sub_L3_02", "mon_sub_L3_03"});

  f.backend.sim->set_manual_clock(true);
  REQUIRE(sh.mkdir("/p0") == 0);
  f.tasks.add(77);
  f.tasks.add(78);
  CHECK(sh.echo("/p0/tasks", "77") == 0);
  CHECK(sh.echo("/p0/tasks", "78") == 0);
  // Thread 77 runs on CPU 0 (node 0), thread 78 on CPU 2 (node 1): both L3 0.
  REQUIRE(f.backend.sim->attach_thread_workload(77, {2u << 20, 3000, 1.0, 0}).ok());
  REQUIRE(f.backend.sim->attach_thread_workload(78, {1u << 20, 1000, 1.0, 2}).ok());
  const std::string d = "/p0/mon_data/mon_L3_00/";
  for (const char* file :
       {"mbm_total_bytes", "mon_sub_L3_00/mbm_total_bytes", "mon_sub_L3_01/mbm_total_bytes"})
    CHECK(sh.cat(d + file) == "0\n");
  f.backend.sim->advance_ms(1000);
  const uint64_t sum = num(sh.cat(d + "mbm_total_bytes"));
  const uint64_t n0 = num(sh.cat(d + "mon_sub_L3_00/mbm_total_bytes"));
  const uint64_t n1 = num(sh.cat(d + "mon_sub_L3_01/mbm_total_bytes"));
  CHECK(sum == n0 + n1);
  CHECK(static_cast<double>(n0) == Approx(3e9).epsilon(0.001));
  CHECK(static_cast<double>(n1) == Approx(1e9).epsilon(0.001));
  CHECK(n0 % 32768 == 0);
  CHECK(sh.cat("/p0/mon_data/mon_L3_01/mbm_total_bytes") == "0\n");
  const uint64_t occ0 = num(sh.cat(d + "mon_sub_L3_00/llc_occupancy"));
  const uint64_t occ1 = num(sh.cat(d + "mon_sub_L3_01/llc_occupancy"));
  CHECK(static_cast<double>(occ0) == Approx(2 << 20).margin(32768));  // one counter unit
  CHECK(static_cast<double>(occ1) == Approx(1 << 20).margin(32768));
  CHECK(num(sh.cat(d + "llc_occupancy")) == occ0 + occ1);
  // The root group (RMID 0) saw none of it.
  CHECK(sh.cat("/mon_data/mon_L3_00/mbm_total_bytes") == "0\n");
}

}  // namespace resctrlfs::fs::testing

namespace resctrlfs::fs::testing {

TEST_CASE("SNC: node domains come and go with their CPUs, the L3 directory with the last",
          "[snc]") {
  SimFixture f("intel-snc");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  auto offline = [&](unsigned cpu) {
    REQUIRE(f.fs->cpu_offline(cpu).ok());
    REQUIRE(f.backend.sim->set_cpu_online(cpu, false).ok());
  };
  auto online = [&](unsigned cpu) {
    REQUIRE(f.backend.sim->set_cpu_online(cpu, true).ok());
    REQUIRE(f.fs->cpu_online(cpu).ok());
  };
  const Set l3_0{"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes", "mon_sub_L3_00",
                 "mon_sub_L3_01"};
  // Node 1 (CPUs 2, 3) goes: only its sub-directory leaves.
  offline(2);
  CHECK(sh.ls("/p0/mon_data/mon_L3_00") == l3_0);
  offline(3);
  for (const char* g : {"", "/p0"}) {
    CHECK(sh.ls(std::string(g) + "/mon_data") == Set{"mon_L3_00", "mon_L3_01"});
    CHECK(sh.ls(std::string(g) + "/mon_data/mon_L3_00") ==
          Set{"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes", "mon_sub_L3_00"});
  }
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mon_sub_L3_01/llc_occupancy") == "ERRNO 2");
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "0\n");  // node 0 alone
  // Node 0 too: the whole L3 is gone, and its directory with it.
  offline(0);
  offline(1);
  CHECK(sh.ls("/p0/mon_data") == Set{"mon_L3_01"});
  CHECK(sh.cat("/schemata") == "    MB:1=100\n    L3:1=7fff\n");
  // A CPU of node 1 comes back: the L3 directory returns with that node only.
  online(3);
  CHECK(sh.ls("/p0/mon_data") == Set{"mon_L3_00", "mon_L3_01"});
  CHECK(sh.ls("/p0/mon_data/mon_L3_00") ==
        Set{"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes", "mon_sub_L3_01"});
  // The powered-up L3 was switched back to RMID sharing mode: a logical
  // RMID on node 1 counts again.
  const std::vector<hw::RegisterValue> regs = f.backend.sim->dump_registers();
  bool sharing = false;
  for (const hw::RegisterValue& r : regs)
    if (r.msr == 0xCA0 && r.cpu == 3) sharing = r.value == 0;
  CHECK(sharing);
  f.backend.sim->set_manual_clock(true);
  REQUIRE(sh.echo("/p0/cpus_list", "3") == 0);
  REQUIRE(f.backend.sim->attach_cpu_workload(3, {0, 1000, 1.0}).ok());
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "0\n");
  f.backend.sim->advance_ms(1000);
  CHECK(static_cast<double>(num(sh.cat("/p0/mon_data/mon_L3_00/mon_sub_L3_01/mbm_total_bytes"))) ==
        Approx(1e9).epsilon(0.001));
  online(0);
  CHECK(sh.ls("/p0/mon_data/mon_L3_00") == l3_0);
}

}  // namespace resctrlfs::fs::testing
