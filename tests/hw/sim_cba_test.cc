// Tests Cache Bandwidth Allocation (ours: Linux has no CBA interface) at the
// register level: CPUID.0x10.0:EBX[5] and subleaf 5 decoded into the CB
// resource, IA32_QoS_Core_BW_Thrtl_n (0xE00 + n, a byte per CLOSID) kept
// per logical processor by the simulated machine with its #GP rules, the x86
// Arch's exact write sequences (every CPU of a domain, the other CLOSIDs'
// bytes kept, rollback), the broker's policy, and the workload model's
// effective throttle: the stricter of CBA and MBA.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "hw/broker/policy.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/registers.h"
#include "recording_msr.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;
using resctrlfs::hw::testing::RecordingMsr;
using resctrlfs::hw::testing::W;

namespace {

sim::Profile cba_profile() {
  auto p = sim::load_profile("intel-cba");
  REQUIRE(p.ok());
  return *p;
}

// The four CPUs of L3 domain 0 (CPUs 4..7 are domain 1) on intel-cba.
constexpr unsigned kDom0[] = {0, 1, 2, 3};

Workload demand(double mbps) {
  Workload w;
  w.bandwidth_mbps = mbps;
  return w;
}

struct Machine {
  std::unique_ptr<sim::SimMachine> m;
  Machine() {
    m = std::make_unique<sim::SimMachine>(cba_profile());
    m->set_manual_clock(true);
  }
  void wr(unsigned cpu, uint32_t msr, uint64_t v) { REQUIRE(m->write(cpu, msr, v).ok()); }
  uint64_t rd(unsigned cpu, uint32_t msr) {
    auto v = m->read(cpu, msr);
    REQUIRE(v.ok());
    return *v;
  }
  void assoc(unsigned cpu, uint32_t closid, uint32_t rmid) {
    wr(cpu, IA32_PQR_ASSOC, uint64_t{closid} << PQR_ASSOC_CLOS_SHIFT | rmid);
  }
  // MBM total of `rmid` in MB (intel-cba's counter unit is 128 KiB).
  double total_mb(unsigned cpu, uint32_t rmid) {
    wr(cpu, IA32_QM_EVTSEL, uint64_t{rmid} << QM_EVTSEL_RMID_SHIFT | QOS_L3_MBM_TOTAL_EVENT_ID);
    const uint64_t v = rd(cpu, IA32_QM_CTR);
    REQUIRE((v & (QM_CTR_ERROR | QM_CTR_UNAVAILABLE)) == 0);
    return static_cast<double>(v) * 131072 / 1e6;
  }
  // CPU 0 runs CLOS 1 / RMID 1 and CPU 1 CLOS 2 / RMID 2, each demanding
  // 1000 MB/s for one simulated second: the MB counted for RMIDs 1 and 2.
  std::pair<double, double> run() {
    assoc(0, 1, 1);
    assoc(1, 2, 2);
    for (unsigned c : {0u, 1u}) REQUIRE(m->attach_cpu_workload(c, demand(1000)).ok());
    const double b1 = total_mb(0, 1), b2 = total_mb(0, 2);
    m->advance_ms(1000);
    return {total_mb(0, 1) - b1, total_mb(0, 2) - b2};
  }
};

}  // namespace

TEST_CASE("CBA: CPUID.0x10.0:EBX[5] and subleaf 5 become the CB resource") {
  sim::SimMachine m(cba_profile());
  CHECK((m.cpuid(0, CPUID_LEAF_PQE, 0).ebx & CPUID_10_0_EBX_CBA) != 0);
  const CpuidRegs r5 = m.cpuid(0, CPUID_LEAF_PQE, 5);
  CHECK(r5.eax == 9);                      // levels 0..9
  CHECK(r5.ecx == CPUID_10_5_ECX_LINEAR);  // bit 3
  CHECK(r5.edx == 14);                     // highest CLOS
  const Resource& cb = m.info().res(ResourceId::CB);
  REQUIRE(cb.alloc_capable);
  CHECK(cb.num_closid == 15);
  CHECK(cb.membw.min_bw == 10);
  CHECK(cb.membw.bw_gran == 10);
  CHECK(cb.membw.max_bw == 100);
  CHECK(cb.membw.delay_linear);
  CHECK(cb.membw.throttle_mode == ThrottleMode::PER_THREAD);
  REQUIRE(cb.ctrl_domains.size() == 2);  // the L3 domains, as MB's
  CHECK(cb.ctrl_domains[0].cpus.cpus() == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(m.limits().cba_max_level == 9);
  CHECK(m.limits().cba_num_closid == 15);
  CHECK(std::string(resource_name(ResourceId::CB)) == "CB");

  // rdt=!cba (ours) turns it off; without the CPUID bit there is none.
  const X86Platform off =
      decode_platform(m, cba_profile().topology(), nullptr, RdtOptions::parse("!cba"));
  CHECK_FALSE(off.res(ResourceId::CB).alloc_capable);
  auto gnr = sim::load_profile("intel-gnr-io");
  REQUIRE(gnr.ok());
  sim::SimMachine g(*gnr);
  CHECK_FALSE(g.info().res(ResourceId::CB).alloc_capable);
  CHECK(g.limits().cba_max_level == 0);
  CHECK_FALSE(g.read(0, IA32_QOS_CORE_BW_THRTL_0).ok());

  // A non-linear response, or a single level, is not offered (as Linux
  // refuses non-linear Intel MBA).
  for (const char* cba : {R"({"num_closid": 8, "max_level": 9, "linear": false})",
                          R"({"num_closid": 8, "max_level": 0})"}) {
    INFO(cba);
    const std::string json =
        R"({"vendor": "GenuineIntel", "family": 6, "model": 173, "cpus": [{"cpu": 0}],
            "l3_size_bytes": 16777216, "l2_size_bytes": 1048576, "cba": )" +
        std::string(cba) + "}";
    auto p = sim::parse_profile(json, "test");
    if (!p.ok()) {
      CHECK(p.error().message.find("cba needs") != std::string::npos);
      continue;
    }
    sim::SimMachine n(*p);
    CHECK_FALSE(n.info().res(ResourceId::CB).alloc_capable);
  }
}

TEST_CASE("CBA: the throttle registers are per logical processor, a byte per CLOS, #GP above") {
  Machine s;
  // Power-on: every CLOS unthrottled on every CPU; 15 CLOSIDs, two registers.
  for (unsigned c = 0; c < 8; ++c) {
    CHECK(s.rd(c, IA32_QOS_CORE_BW_THRTL_0) == 0);
    CHECK(s.rd(c, IA32_QOS_CORE_BW_THRTL_0 + 1) == 0);
  }
  CHECK_FALSE(s.m->read(0, IA32_QOS_CORE_BW_THRTL_0 + 2).ok());
  // CLOS 1 at level 9 and CLOS 7 at level 3 on CPU 0 only.
  s.wr(0, IA32_QOS_CORE_BW_THRTL_0, 0x0300000000000900ULL);
  CHECK(s.rd(0, IA32_QOS_CORE_BW_THRTL_0) == 0x0300000000000900ULL);
  CHECK(s.rd(1, IA32_QOS_CORE_BW_THRTL_0) == 0);  // its sibling in the L3 keeps its own
  // CLOS 14 is byte 6 of the second register; byte 7 would be CLOS 15.
  s.wr(2, IA32_QOS_CORE_BW_THRTL_0 + 1, 0x0009000000000000ULL);
  CHECK_FALSE(s.m->write(2, IA32_QOS_CORE_BW_THRTL_0 + 1, 0x0100000000000000ULL).ok());
  // A level above CPUID.0x10.5:EAX[7:0] (9) in any byte #GPs, leaving the
  // register as it was.
  CHECK_FALSE(s.m->write(0, IA32_QOS_CORE_BW_THRTL_0, 0x0A).ok());
  CHECK_FALSE(s.m->write(0, IA32_QOS_CORE_BW_THRTL_0, 0xFF00000000000000ULL).ok());
  CHECK(s.rd(0, IA32_QOS_CORE_BW_THRTL_0) == 0x0300000000000900ULL);
  // Offline and back: the logical processor's registers come back at reset.
  REQUIRE(s.m->set_cpu_online(0, false).ok());
  REQUIRE(s.m->set_cpu_online(0, true).ok());
  CHECK(s.rd(0, IA32_QOS_CORE_BW_THRTL_0) == 0);
  CHECK(s.rd(2, IA32_QOS_CORE_BW_THRTL_0 + 1) == 0x0009000000000000ULL);
}

TEST_CASE("CBA: the Arch writes a domain's byte on every CPU of it, keeping the other bytes") {
  sim::SimMachine m(cba_profile());
  auto msr = std::make_shared<RecordingMsr>();
  auto a = X86Arch::create(m.info(), m.limits(), msr, nullptr);
  REQUIRE(a.ok());
  X86Arch& arch = **a;
  // Start-up resets both registers on all eight CPUs.
  for (unsigned c = 0; c < 8; ++c) {
    CHECK(msr->regs.at({c, IA32_QOS_CORE_BW_THRTL_0}) == 0);
    CHECK(msr->regs.at({c, IA32_QOS_CORE_BW_THRTL_0 + 1}) == 0);
  }
  CHECK(arch.default_ctrl(ResourceId::CB) == 100);
  msr->log.clear();

  // CLOS 1 at 30% on domain 0: level 7 in byte 1, on CPUs 0..3 only.
  REQUIRE(arch.update_ctrls({{ResourceId::CB, ConfType::NONE, 0, 1, 30}}).ok());
  std::vector<testing::Access> want;
  for (unsigned c : kDom0) want.push_back(W(c, IA32_QOS_CORE_BW_THRTL_0, 0x0700));
  CHECK(msr->log == want);
  CHECK(arch.get_ctrl(ResourceId::CB, ConfType::NONE, 0, 1) == 30);
  CHECK(arch.get_ctrl(ResourceId::CB, ConfType::NONE, 1, 1) == 100);

  // CLOS 2 at 90% and CLOS 9 at 50% in one batch: one write per register
  // and CPU, CLOS 1's byte kept.
  msr->log.clear();
  REQUIRE(arch.update_ctrls({{ResourceId::CB, ConfType::NONE, 0, 2, 90},
                             {ResourceId::CB, ConfType::NONE, 0, 9, 50},
                             {ResourceId::CB, ConfType::NONE, 0, 1, 30}})  // unchanged
              .ok());
  want.clear();
  for (unsigned c : kDom0) want.push_back(W(c, IA32_QOS_CORE_BW_THRTL_0, 0x010700));
  for (unsigned c : kDom0) want.push_back(W(c, IA32_QOS_CORE_BW_THRTL_0 + 1, 0x0500));
  CHECK(msr->log == want);

  // The schemata minimum is the highest level; 100 is level 0.
  CHECK(arch.ctrl_reg_value(ResourceId::CB, 10) == 9);
  CHECK(arch.ctrl_reg_value(ResourceId::CB, 100) == 0);
  CHECK(arch.ctrl_msr(ResourceId::CB, 14) == IA32_QOS_CORE_BW_THRTL_0 + 1);
  // Above max_bw is refused before any write.
  msr->log.clear();
  CHECK_FALSE(arch.update_ctrls({{ResourceId::CB, ConfType::NONE, 0, 1, 101}}).ok());
  CHECK(msr->log.empty());

  // All or nothing: the third CPU's write fails, the two written are put back.
  msr->fail_in = 2;
  auto r = arch.update_ctrls({{ResourceId::CB, ConfType::NONE, 0, 1, 60}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EIO);
  CHECK(msr->writes() == std::vector{W(0, IA32_QOS_CORE_BW_THRTL_0, 0x010400),
                                     W(1, IA32_QOS_CORE_BW_THRTL_0, 0x010400),
                                     W(2, IA32_QOS_CORE_BW_THRTL_0, 0x010400),
                                     W(1, IA32_QOS_CORE_BW_THRTL_0, 0x010700),
                                     W(0, IA32_QOS_CORE_BW_THRTL_0, 0x010700)});
  CHECK(arch.get_ctrl(ResourceId::CB, ConfType::NONE, 0, 1) == 30);

  // Reset: every CLOS back to 100 (level 0) on every CPU.
  msr->log.clear();
  REQUIRE(arch.reset_all_ctrls().ok());
  for (unsigned c = 0; c < 8; ++c) CHECK(msr->regs.at({c, IA32_QOS_CORE_BW_THRTL_0}) == 0);
  CHECK(arch.get_ctrl(ResourceId::CB, ConfType::NONE, 0, 2) == 100);
}

TEST_CASE("CBA: a CPU coming online takes its domain's values") {
  Machine s;
  auto msr = std::shared_ptr<MsrDevice>(s.m.get(), [](MsrDevice*) {});
  auto a = X86Arch::create(s.m->info(), s.m->limits(), msr, nullptr);
  REQUIRE(a.ok());
  X86Arch& arch = **a;
  REQUIRE(arch.update_ctrls({{ResourceId::CB, ConfType::NONE, 0, 3, 40}}).ok());
  CHECK(s.rd(3, IA32_QOS_CORE_BW_THRTL_0) == 0x06000000ULL);
  REQUIRE(arch.offline_cpu(3, nullptr).ok());
  REQUIRE(s.m->set_cpu_online(3, false).ok());
  REQUIRE(s.m->set_cpu_online(3, true).ok());
  CHECK(s.rd(3, IA32_QOS_CORE_BW_THRTL_0) == 0);  // reset with the CPU
  REQUIRE(arch.online_cpu(3, nullptr).ok());
  CHECK(s.rd(3, IA32_QOS_CORE_BW_THRTL_0) == 0x06000000ULL);
  CHECK(s.rd(4, IA32_QOS_CORE_BW_THRTL_0) == 0);  // the other domain untouched
}

TEST_CASE("CBA: the broker allows the throttle registers with levels in range only") {
  sim::SimMachine m(cba_profile());
  broker::Policy pol(m.info(), m.limits());
  using broker::OpKind;
  CHECK(pol.check(0, IA32_QOS_CORE_BW_THRTL_0, 0x0909090909090909ULL, OpKind::kWrite).ok());
  CHECK(pol.check(5, IA32_QOS_CORE_BW_THRTL_0 + 1, 0x0009000000000000ULL, OpKind::kWrite).ok());
  CHECK(pol.check(0, IA32_QOS_CORE_BW_THRTL_0 + 1, 0, OpKind::kRead).ok());
  CHECK_FALSE(pol.check(0, IA32_QOS_CORE_BW_THRTL_0, 0x0A, OpKind::kWrite).ok());
  CHECK_FALSE(pol.check(0, IA32_QOS_CORE_BW_THRTL_0 + 1, 0x0100000000000000ULL, OpKind::kWrite)
                  .ok());  // CLOS 15 does not exist
  CHECK_FALSE(pol.check(0, IA32_QOS_CORE_BW_THRTL_0 + 2, 0, OpKind::kRead).ok());
  auto gnr = sim::load_profile("intel-gnr-io");
  REQUIRE(gnr.ok());
  sim::SimMachine g(*gnr);
  broker::Policy gpol(g.info(), g.limits());
  CHECK_FALSE(gpol.check(0, IA32_QOS_CORE_BW_THRTL_0, 0, OpKind::kRead).ok());
}

TEST_CASE("CBA: the model throttles by the stricter of CBA and MBA, per logical processor") {
  SECTION("CBA alone: level 5 of 0..9 leaves half") {
    Machine s;
    s.wr(0, IA32_QOS_CORE_BW_THRTL_0, 0x0500);  // CLOS 1 on CPU 0
    auto [b1, b2] = s.run();
    CHECK(b1 == Approx(500).epsilon(0.02));
    CHECK(b2 == Approx(1000).epsilon(0.02));
  }
  SECTION("another CPU's registers do not throttle this one") {
    Machine s;
    s.wr(1, IA32_QOS_CORE_BW_THRTL_0, 0x0900);  // CLOS 1 on CPU 1, which runs CLOS 2
    auto [b1, b2] = s.run();
    CHECK(b1 == Approx(1000).epsilon(0.02));
    CHECK(b2 == Approx(1000).epsilon(0.02));
  }
  SECTION("MBA stricter than CBA: MBA's") {
    Machine s;
    s.wr(0, IA32_QOS_CORE_BW_THRTL_0, 0x0500);    // 50%
    s.wr(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 1, 70);  // 30%
    auto [b1, b2] = s.run();
    CHECK(b1 == Approx(300).epsilon(0.02));
    CHECK(b2 == Approx(1000).epsilon(0.02));
  }
  SECTION("CBA stricter than MBA: CBA's") {
    Machine s;
    s.wr(0, IA32_QOS_CORE_BW_THRTL_0, 0x0800);    // 20%
    s.wr(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 1, 30);  // 70%
    auto [b1, b2] = s.run();
    CHECK(b1 == Approx(200).epsilon(0.02));
    CHECK(b2 == Approx(1000).epsilon(0.02));
  }
}
