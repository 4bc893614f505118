// Tests the simulated machine's MBA generations at the register level:
// SMT siblings of one core resolving their CLOSes' delays to the max (MBA
// 1.0/2.0) or, with MBA_CFG bit 0, the min (2.0); per-thread delays when
// CPUID.0x10.3:ECX[0] enumerates per-thread MBA (3.0); MBA_CFG present only
// on the listed models, with its #GP rules (bit 0 gone on 3.0, bit 2 only on
// the Resource-Aware MBA parts). Bandwidth is read through QM_EVTSEL/QM_CTR.
#include <array>
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;

namespace {

// Two cores of two SMT threads each (CPUs 0,1 and 2,3) on one L3, with MBA
// and MBM; `model` and `per_thread` choose the MBA generation.
std::string smt_profile(unsigned model, bool per_thread) {
  return R"({"vendor": "GenuineIntel", "family": 6, "model": )" + std::to_string(model) +
         R"(, "stepping": 1,
    "cpus": [{"cpu": 0, "core": 0}, {"cpu": 1, "core": 0},
             {"cpu": 2, "core": 1}, {"cpu": 3, "core": 1}],
    "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
    "mba": {"num_closid": 8, "max_delay": 90, "linear": true, "per_thread": )" +
         (per_thread ? "true" : "false") + R"(},
    "l3_mon": {"num_rmids": 64, "scale": 65536, "counter_width": 24,
               "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
    "sim": {"mem_bandwidth_mbps": 100000}})";
}

// A workload demanding `mbps` of memory bandwidth, on `cpu` for a thread.
Workload demand(double mbps, int cpu = -1) {
  Workload w;
  w.bandwidth_mbps = mbps;
  w.cpu = cpu;
  return w;
}

constexpr unsigned kIceLakeX = 0x6A, kSkylakeX = 0x55, kGraniteRapidsX = 0xAD;

struct Machine {
  std::unique_ptr<sim::SimMachine> m;
  explicit Machine(const std::string& json) {
    auto p = sim::parse_profile(json, "test");
    REQUIRE(p.ok());
    m = std::make_unique<sim::SimMachine>(*p);
    m->set_manual_clock(true);
  }
  void wr(unsigned cpu, uint32_t msr, uint64_t v) { REQUIRE(m->write(cpu, msr, v).ok()); }
  void assoc(unsigned cpu, uint32_t closid, uint32_t rmid) {
    wr(cpu, IA32_PQR_ASSOC, uint64_t{closid} << PQR_ASSOC_CLOS_SHIFT | rmid);
  }
  // MBM total of `rmid` in MB (counter units of 64 KiB), read on `cpu`.
  double total_mb(unsigned cpu, uint32_t rmid) {
    wr(cpu, IA32_QM_EVTSEL, uint64_t{rmid} << QM_EVTSEL_RMID_SHIFT | QOS_L3_MBM_TOTAL_EVENT_ID);
    auto v = m->read(cpu, IA32_QM_CTR);
    REQUIRE(v.ok());
    REQUIRE((*v & (QM_CTR_ERROR | QM_CTR_UNAVAILABLE)) == 0);
    return static_cast<double>(*v) * 65536 / 1e6;
  }
};

// Siblings CPU 0 (CLOS 1, delay 90, RMID 1) and CPU 1 (CLOS 2, delay 0,
// RMID 2), CPU 2 on the other core (CLOS 2, RMID 3); each CPU demands 1000
// MB/s for one simulated second. Returns the MB counted for RMIDs 1, 2, 3.
std::array<double, 3> run_pair(Machine& s) {
  s.wr(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 1, 90);
  s.wr(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 2, 0);
  s.assoc(0, 1, 1);
  s.assoc(1, 2, 2);
  s.assoc(2, 2, 3);
  for (unsigned c : {0u, 1u, 2u}) REQUIRE(s.m->attach_cpu_workload(c, demand(1000)).ok());
  const double b1 = s.total_mb(0, 1), b2 = s.total_mb(0, 2), b3 = s.total_mb(0, 3);
  s.m->advance_ms(1000);
  return {s.total_mb(0, 1) - b1, s.total_mb(0, 2) - b2, s.total_mb(0, 3) - b3};
}

}  // namespace

TEST_CASE("MBA 1.0/2.0: a core applies the max of its threads' delays to both") {
  Machine s(smt_profile(kIceLakeX, false));
  CHECK(s.m->info().res(ResourceId::MB).membw.throttle_mode == ThrottleMode::MAX);
  auto mb = run_pair(s);
  CHECK(mb[0] == Approx(100).epsilon(0.01));
  CHECK(mb[1] == Approx(100).epsilon(0.01));   // the unthrottled sibling is throttled
  CHECK(mb[2] == Approx(1000).epsilon(0.01));  // the other core is not
}

TEST_CASE("MBA 2.0: MBA_CFG bit 0 resolves a core to the min of its threads' delays") {
  Machine s(smt_profile(kIceLakeX, false));
  REQUIRE(s.m->read(0, MBA_CFG).ok());
  CHECK(*s.m->read(0, MBA_CFG) == 0);  // reset: max
  s.wr(1, MBA_CFG, MBA_CFG_MIN);
  // One value per core: the sibling sees it, the other core does not.
  CHECK(*s.m->read(0, MBA_CFG) == MBA_CFG_MIN);
  CHECK(*s.m->read(2, MBA_CFG) == 0);
  auto mb = run_pair(s);
  CHECK(mb[0] == Approx(1000).epsilon(0.01));  // the throttled sibling is not
  CHECK(mb[1] == Approx(1000).epsilon(0.01));
  CHECK(mb[2] == Approx(1000).epsilon(0.01));
  // Reserved bits #GP, and bit 2 is reserved on a part without RA-MBA.
  CHECK_FALSE(s.m->write(0, MBA_CFG, 2).ok());
  CHECK_FALSE(s.m->write(0, MBA_CFG, MBA_CFG_RAMBAE).ok());
  CHECK(*s.m->read(0, MBA_CFG) == MBA_CFG_MIN);
}

TEST_CASE("MBA 3.0: per-thread delays, MBA_CFG bit 0 #GPs, RA-MBA's bit 2 is kept") {
  Machine s(smt_profile(kGraniteRapidsX, true));
  CHECK(s.m->info().res(ResourceId::MB).membw.throttle_mode == ThrottleMode::PER_THREAD);
  CHECK_FALSE(s.m->write(0, MBA_CFG, MBA_CFG_MIN).ok());
  s.wr(0, MBA_CFG, MBA_CFG_RAMBAE);
  // Die scope: every CPU of the L3 reads it.
  CHECK(*s.m->read(3, MBA_CFG) == MBA_CFG_RAMBAE);
  auto mb = run_pair(s);
  CHECK(mb[0] == Approx(100).epsilon(0.01));
  CHECK(mb[1] == Approx(1000).epsilon(0.01));  // the sibling keeps its own CLOS's delay
  CHECK(mb[2] == Approx(1000).epsilon(0.01));
}

TEST_CASE("MBA 1.0 (Skylake-SP): the core's max, and no MBA_CFG") {
  Machine s(smt_profile(kSkylakeX, false));
  CHECK_FALSE(s.m->read(0, MBA_CFG).ok());
  CHECK_FALSE(s.m->write(0, MBA_CFG, 0).ok());
  auto mb = run_pair(s);
  CHECK(mb[1] == Approx(100).epsilon(0.01));
}

TEST_CASE("MBA_CFG exists only on the listed parts and only with MBA") {
  struct Case {
    const char* profile;
    bool present;
  };
  // intel-2s: Ice Lake-SP without per-thread MBA; intel-snc: Sapphire
  // Rapids, second-generation MBA (per core) as the RDT specification
  // lists it; intel-aet: a model outside both lists; intel-l2: Atom P5000
  // (a listed model) without MBA.
  for (const Case& c : {Case{"intel-2s", true}, Case{"intel-snc", true}, Case{"intel-aet", false},
                        Case{"intel-l2", false}}) {
    INFO(c.profile);
    auto p = sim::load_profile(c.profile);
    REQUIRE(p.ok());
    sim::SimMachine m(*p);
    CHECK(m.read(0, MBA_CFG).ok() == c.present);
    CHECK(m.write(0, MBA_CFG, 0).ok() == c.present);
  }
}

TEST_CASE("the threads a core resolves are the CLOSes running on them") {
  Machine s(smt_profile(kIceLakeX, false));
  s.wr(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 1, 50);
  SECTION("an idle sibling still holds its CLOS") {
    s.assoc(1, 1, 0);  // CPU 1: CLOS 1, nothing running
    s.assoc(0, 0, 4);
    REQUIRE(s.m->attach_cpu_workload(0, demand(1000)).ok());
    const double b = s.total_mb(0, 4);
    s.m->advance_ms(1000);
    CHECK(s.total_mb(0, 4) - b == Approx(500).epsilon(0.01));
  }
  SECTION("a thread pinned to the sibling brings its own CLOS") {
    s.m->set_thread_tags(100, 1, 5);
    REQUIRE(s.m->attach_thread_workload(100, demand(1000, 1)).ok());
    s.assoc(0, 0, 4);
    REQUIRE(s.m->attach_cpu_workload(0, demand(1000)).ok());
    const double b4 = s.total_mb(0, 4), b5 = s.total_mb(0, 5);
    s.m->advance_ms(1000);
    CHECK(s.total_mb(0, 4) - b4 == Approx(500).epsilon(0.01));
    CHECK(s.total_mb(0, 5) - b5 == Approx(500).epsilon(0.01));
  }
  SECTION("a thread spread over every CPU keeps its own CLOS's delay") {
    s.m->set_thread_tags(100, 0, 5);
    s.assoc(0, 1, 0);
    s.assoc(2, 1, 0);
    REQUIRE(s.m->attach_thread_workload(100, demand(1000)).ok());
    const double b = s.total_mb(0, 5);
    s.m->advance_ms(1000);
    CHECK(s.total_mb(0, 5) - b == Approx(1000).epsilon(0.01));
  }
}

TEST_CASE("a core's MBA_CFG is back at reset when the core comes back online") {
  Machine s(smt_profile(kIceLakeX, false));
  s.wr(0, MBA_CFG, MBA_CFG_MIN);
  REQUIRE(s.m->set_cpu_online(1, false).ok());
  CHECK(*s.m->read(0, MBA_CFG) == MBA_CFG_MIN);  // one thread still up
  REQUIRE(s.m->set_cpu_online(0, false).ok());
  REQUIRE(s.m->set_cpu_online(0, true).ok());
  CHECK(*s.m->read(0, MBA_CFG) == 0);
}
