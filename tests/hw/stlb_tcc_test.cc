// Tests the Intel model-specific allocation features of the RDT
// architecture specification's Appendix B at the register level: STLB QoS
// (IA32_CORE_CAPABILITIES, STLB_QOS_INFO, STLB_QOS_MASK_n,
// STLB_FILL_TRANSLATION: values, #GP rules, core scope shared by SMT
// siblings), its decoding into the STLB resource, the Arch's and the
// broker's handling of it, and the non-enumerated L3 CAT of the TCC parts
// of Table B-8 (found by model and brand string, no CDP, every way shared).
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "hw/backend.h"
#include "hw/broker/policy.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/registers.h"
#include "recording_msr.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using resctrlfs::hw::testing::RecordingMsr;
using resctrlfs::hw::testing::W;

namespace {

std::unique_ptr<sim::SimMachine> machine(const std::string& name) {
  auto p = sim::load_profile(name);
  REQUIRE(p.ok());
  return std::make_unique<sim::SimMachine>(*p);
}

uint64_t rd(sim::SimMachine& m, unsigned cpu, uint32_t msr) {
  auto v = m.read(cpu, msr);
  REQUIRE(v.ok());
  return *v;
}

bool gp_read(sim::SimMachine& m, unsigned cpu, uint32_t msr) {
  auto v = m.read(cpu, msr);
  return !v.ok() && v.error().code == EIO;
}

bool gp_write(sim::SimMachine& m, unsigned cpu, uint32_t msr, uint64_t v) {
  auto r = m.write(cpu, msr, v);
  return !r.ok() && r.error().code == EIO;
}

}  // namespace

TEST_CASE("STLB QoS: enumeration and power-on values on intel-stlb", "[stlb]") {
  auto m = machine("intel-stlb");
  CHECK((m->cpuid(0, CPUID_LEAF_EXT_FEATURES, 0).edx & CPUID_7_EDX_CORE_CAPABILITIES) != 0);
  CHECK(rd(*m, 0, IA32_CORE_CAPABILITIES) == 0x1);
  // NCLOS 7 (8 CLOS), 4K_2M_CBM 7 (8 ways), fill MSR (bit 29), alias (bit 30).
  CHECK(rd(*m, 0, STLB_QOS_INFO) == 0x60070007);
  for (uint32_t n = 0; n < 8; ++n) {
    INFO("STLB_QOS_MASK_" << n);
    CHECK(rd(*m, 3, STLB_QOS_MASK_0 + n) == 0xFF);
  }
}

TEST_CASE("STLB QoS: the #GP rules", "[stlb]") {
  auto m = machine("intel-stlb");
  // Read-only registers.
  CHECK(gp_write(*m, 0, IA32_CORE_CAPABILITIES, 0x1));
  CHECK(gp_write(*m, 0, STLB_QOS_INFO, 0x60070007));
  // A mask register beyond NCLOS.
  CHECK(gp_read(*m, 0, STLB_QOS_MASK_0 + 8));
  CHECK(gp_write(*m, 0, STLB_QOS_MASK_0 + 8, 0xFF));
  // Empty, non-contiguous, reserved bits.
  CHECK(gp_write(*m, 0, STLB_QOS_MASK_0 + 1, 0x0));
  CHECK(gp_write(*m, 0, STLB_QOS_MASK_0 + 1, 0x5));
  CHECK(gp_write(*m, 0, STLB_QOS_MASK_0 + 1, 0x1FF));
  CHECK(gp_write(*m, 0, STLB_QOS_MASK_0 + 1, 0xF0ULL << 32));
  CHECK(rd(*m, 0, STLB_QOS_MASK_0 + 1) == 0xFF);  // untouched by the refused writes
  REQUIRE(m->write(0, STLB_QOS_MASK_0 + 1, 0x3C).ok());
  CHECK(rd(*m, 0, STLB_QOS_MASK_0 + 1) == 0x3C);
  // STLB_FILL_TRANSLATION: write-only; reserved bits 9:4; CLOS within NCLOS.
  CHECK(gp_read(*m, 0, STLB_FILL_TRANSLATION));
  CHECK(gp_write(*m, 0, STLB_FILL_TRANSLATION, 0x7ULL | (1ULL << 4)));
  CHECK(gp_write(*m, 0, STLB_FILL_TRANSLATION, 0x8ULL));
  CHECK(m->write(0, STLB_FILL_TRANSLATION, 0x7ffff000ULL | (1ULL << 11) | (1ULL << 10) | 7).ok());
}

TEST_CASE("STLB QoS: a machine without it has none of the registers", "[stlb]") {
  auto m = machine("intel-2s");
  CHECK((m->cpuid(0, CPUID_LEAF_EXT_FEATURES, 0).edx & CPUID_7_EDX_CORE_CAPABILITIES) == 0);
  CHECK(gp_read(*m, 0, IA32_CORE_CAPABILITIES));
  CHECK(gp_read(*m, 0, STLB_QOS_INFO));
  CHECK(gp_read(*m, 0, STLB_QOS_MASK_0));
  CHECK_FALSE(m->info().res(ResourceId::STLB).alloc_capable);
  // A profile that enumerates IA32_CORE_CAPABILITIES without STLB QoS.
  auto p = sim::parse_profile(R"({"vendor": "GenuineIntel", "model": 143,
      "cpus": [{"cpu": 0}], "l3_size_bytes": 16777216,
      "cpuid": {"0x7.0": ["0", "0", "0", "0x40000000"]}})",
                              "caps-only");
  REQUIRE(p.ok());
  sim::SimMachine c(*p);
  CHECK(rd(c, 0, IA32_CORE_CAPABILITIES) == 0);
  CHECK(gp_read(c, 0, STLB_QOS_INFO));
  CHECK_FALSE(c.os_info().res(ResourceId::STLB).alloc_capable);
}

TEST_CASE("STLB QoS: the masks are per core, shared by its SMT threads", "[stlb]") {
  auto m = machine("intel-stlb");  // CPUs n and n+4 are one core
  REQUIRE(m->write(1, STLB_QOS_MASK_0 + 2, 0x0F).ok());
  CHECK(rd(*m, 5, STLB_QOS_MASK_0 + 2) == 0x0F);  // the sibling sees it
  CHECK(rd(*m, 0, STLB_QOS_MASK_0 + 2) == 0xFF);  // another core does not
  REQUIRE(m->write(5, STLB_QOS_MASK_0 + 2, 0x03).ok());
  CHECK(rd(*m, 1, STLB_QOS_MASK_0 + 2) == 0x03);
  // The core loses its registers when both threads go down.
  REQUIRE(m->set_cpu_online(1, false).ok());
  CHECK(rd(*m, 5, STLB_QOS_MASK_0 + 2) == 0x03);  // one thread still up
  REQUIRE(m->set_cpu_online(5, false).ok());
  REQUIRE(m->set_cpu_online(5, true).ok());
  CHECK(rd(*m, 5, STLB_QOS_MASK_0 + 2) == 0xFF);
}

TEST_CASE("STLB QoS decodes into the STLB resource: per core, ours", "[stlb]") {
  auto m = machine("intel-stlb");
  const Resource& r = m->os_info().res(ResourceId::STLB);
  REQUIRE(r.alloc_capable);
  CHECK(std::string(resource_name(r.rid)) == "STLB");
  CHECK(r.is_bitmap());
  CHECK(std::string(r.mount_option) == "stlb");
  CHECK(r.num_closid == 8);
  CHECK(r.cache.cbm_len == 8);
  CHECK(r.cache.min_cbm_bits == 1);
  CHECK(r.cache.shareable_bits == 0);
  CHECK_FALSE(r.cache.cdp_capable);
  CHECK_FALSE(r.cache.sparse_masks);
  REQUIRE(r.ctrl_domains.size() == 4);
  for (int d = 0; d < 4; ++d) {
    CHECK(r.ctrl_domains[d].id == d);
    CHECK(r.ctrl_domains[d].cpus.cpus() ==
          std::vector<unsigned>{static_cast<unsigned>(d), static_cast<unsigned>(d + 4)});
  }
  // The kernel's resources are as before.
  CHECK(m->os_info().res(ResourceId::L3).mount_option == nullptr);
}

TEST_CASE("decode_stlb refuses what it cannot use", "[stlb]") {
  auto m = machine("intel-stlb");  // its CPUID enumerates IA32_CORE_CAPABILITIES
  auto decode = [&](RecordingMsr& msr) {
    X86Platform info = m->os_info();
    decode_stlb(info, *m, msr);
    return info.res(ResourceId::STLB);
  };
  RecordingMsr msr;
  msr.regs[{0, IA32_CORE_CAPABILITIES}] = 0x1;
  msr.regs[{0, STLB_QOS_INFO}] = 0x00030003;  // 4 CLOS, 4 ways
  Resource ok = decode(msr);
  CHECK(ok.alloc_capable);
  CHECK(ok.num_closid == 4);
  CHECK(ok.cache.cbm_len == 4);
  // Exactly the two enumeration reads, on the first CPU.
  CHECK(msr.log == std::vector<testing::Access>{testing::R(0, IA32_CORE_CAPABILITIES, 0x1),
                                                testing::R(0, STLB_QOS_INFO, 0x00030003)});
  // A mask length the 8-bit WAY_MASK field cannot hold.
  msr.regs[{0, STLB_QOS_INFO}] = 0x00080003;
  CHECK_FALSE(decode(msr).alloc_capable);
  // IA32_CORE_CAPABILITIES bit 0 clear: STLB_QOS_INFO is not even read.
  RecordingMsr none;
  CHECK_FALSE(decode(none).alloc_capable);
  CHECK(none.log.size() == 1);
}

TEST_CASE("the Arch writes an STLB mask on the core's first CPU", "[stlb]") {
  auto m = machine("intel-stlb");
  auto rec = std::make_shared<RecordingMsr>();
  auto a = X86Arch::create(m->os_info(), m->limits(), rec, nullptr);
  REQUIRE(a.ok());
  // Start-up resets every STLB mask of every core (with the other controls).
  size_t stlb_writes = 0;
  for (const auto& w : rec->writes())
    if (w.msr >= STLB_QOS_MASK_0 && w.msr < STLB_QOS_MASK_0 + 8) {
      ++stlb_writes;
      CHECK(w.value == 0xFF);
      CHECK(w.cpu < 4);
    }
  CHECK(stlb_writes == 4 * 8);
  rec->log.clear();
  X86Arch& arch = **a;
  CHECK(arch.default_ctrl(ResourceId::STLB) == 0xFF);
  REQUIRE(arch.update_ctrls({{ResourceId::STLB, ConfType::NONE, 2, 3, 0xF0}}).ok());
  CHECK(rec->writes() == std::vector<testing::Access>{W(2, STLB_QOS_MASK_0 + 3, 0xF0)});
  CHECK(arch.get_ctrl(ResourceId::STLB, ConfType::NONE, 2, 3) == 0xF0);
  // Beyond the mask length or the CLOSIDs: refused before any write.
  rec->log.clear();
  CHECK_FALSE(arch.update_ctrls({{ResourceId::STLB, ConfType::NONE, 2, 3, 0x1FF}}).ok());
  CHECK_FALSE(arch.update_ctrls({{ResourceId::STLB, ConfType::NONE, 2, 8, 0x1}}).ok());
  CHECK(rec->log.empty());
  // No pseudo-locking of a TLB.
  CHECK_FALSE(arch.pseudo_lock(ResourceId::STLB, 0, 1, 0x3).ok());
}

TEST_CASE("the Arch programs the simulated STLB registers", "[stlb]") {
  auto p = sim::load_profile("intel-stlb");
  REQUIRE(p.ok());
  auto m = std::make_shared<sim::SimMachine>(*p);
  auto a = X86Arch::create(m->os_info(), m->limits(), m, nullptr);
  REQUIRE(a.ok());
  REQUIRE((*a)->update_ctrls({{ResourceId::STLB, ConfType::NONE, 1, 7, 0x0C}}).ok());
  CHECK(rd(*m, 5, STLB_QOS_MASK_0 + 7) == 0x0C);  // the other thread of core 1
  // A non-contiguous mask: the Arch passes it on, the hardware #GPs, the
  // register keeps its value.
  CHECK_FALSE((*a)->update_ctrls({{ResourceId::STLB, ConfType::NONE, 1, 7, 0x0D}}).ok());
  CHECK(rd(*m, 1, STLB_QOS_MASK_0 + 7) == 0x0C);
}

TEST_CASE("the broker allows the STLB registers where it found STLB QoS", "[stlb]") {
  auto m = machine("intel-stlb");
  broker::Policy p(m->info(), m->limits());
  using broker::OpKind;
  CHECK(p.check(0, IA32_CORE_CAPABILITIES, 0, OpKind::kRead).ok());
  CHECK(p.check(0, STLB_QOS_INFO, 0, OpKind::kRead).ok());
  CHECK_FALSE(p.check(0, IA32_CORE_CAPABILITIES, 1, OpKind::kWrite).ok());
  CHECK_FALSE(p.check(0, STLB_QOS_INFO, 0, OpKind::kWrite).ok());
  CHECK(p.check(0, STLB_QOS_MASK_0 + 7, 0xFF, OpKind::kWrite).ok());
  CHECK_FALSE(p.check(0, STLB_QOS_MASK_0 + 7, 0x1FF, OpKind::kWrite).ok());
  CHECK_FALSE(p.check(0, STLB_QOS_MASK_0 + 8, 0x1, OpKind::kWrite).ok());
  CHECK_FALSE(p.check(0, STLB_FILL_TRANSLATION, 0x1, OpKind::kWrite).ok());
  auto plain = machine("intel-2s");
  broker::Policy q(plain->info(), plain->limits());
  CHECK_FALSE(q.check(0, IA32_CORE_CAPABILITIES, 0, OpKind::kRead).ok());
  CHECK_FALSE(q.check(0, STLB_QOS_MASK_0, 0xFF, OpKind::kWrite).ok());
}

TEST_CASE("TCC L3 CAT: Table B-8 parts by model and brand string", "[tcc]") {
  auto part =
      tcc_l3_part(6, INTEL_FAM6_TIGERLAKE_L, "11th Gen Intel(R) Core(TM) i7-1185GRE @ 2.80GHz");
  REQUIRE(part);
  CHECK(part->num_closid == 4);
  CHECK(part->cbm_len == 12);
  auto atom = tcc_l3_part(6, INTEL_FAM6_ATOM_TREMONT, "Intel(R) Atom(TM) x6200FE Processor");
  REQUIRE(atom);
  CHECK(atom->num_closid == 4);
  CHECK(atom->cbm_len == 8);
  // A whole-word match: i5-13500E is not i5-13500TE.
  auto e = tcc_l3_part(6, INTEL_FAM6_RAPTORLAKE, "13th Gen Intel(R) Core(TM) i5-13400E");
  REQUIRE(e);
  CHECK(e->cbm_len == 10);
  CHECK_FALSE(tcc_l3_part(6, INTEL_FAM6_RAPTORLAKE, "13th Gen Intel(R) Core(TM) i5-13400"));
  // The non-TCC sibling of a listed part, the wrong model, the wrong family.
  CHECK_FALSE(tcc_l3_part(6, INTEL_FAM6_TIGERLAKE_L, "11th Gen Intel(R) Core(TM) i7-1185G7"));
  CHECK_FALSE(tcc_l3_part(6, INTEL_FAM6_ALDERLAKE, "11th Gen Intel(R) Core(TM) i7-1185GRE"));
  CHECK_FALSE(tcc_l3_part(15, INTEL_FAM6_TIGERLAKE_L, "Intel(R) Core(TM) i7-1185GRE"));
}

TEST_CASE("TCC L3 CAT on intel-tcc: the L3 resource, ours, every way shared", "[tcc]") {
  auto m = machine("intel-tcc");
  CHECK(cpuid_brand(*m, 0) == "11th Gen Intel(R) Core(TM) i7-1185GRE @ 2.80GHz");
  // CPUID enumerates no RDT allocation.
  CHECK((m->cpuid(0, CPUID_LEAF_EXT_FEATURES, 0).ebx & CPUID_7_EBX_PQE) == 0);
  const Resource& l3 = m->os_info().res(ResourceId::L3);
  REQUIRE(l3.alloc_capable);
  CHECK(std::string(l3.mount_option) == "tccl3");
  CHECK(l3.num_closid == 4);
  CHECK(l3.cache.cbm_len == 12);
  CHECK(l3.cache.shareable_bits == 0xFFF);
  CHECK_FALSE(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 12582912);
  // The registers: four masks at the architectural addresses, power-on all
  // ways, no fifth, no CDP register, no monitoring.
  for (uint32_t n = 0; n < 4; ++n) CHECK(rd(*m, 0, IA32_L3_MASK_0 + n) == 0xFFF);
  CHECK(gp_read(*m, 0, IA32_L3_MASK_0 + 4));
  CHECK(gp_write(*m, 0, IA32_L3_MASK_0 + 4, 0xFFF));
  CHECK(gp_read(*m, 0, IA32_L3_QOS_CFG));
  CHECK(gp_write(*m, 0, IA32_L3_MASK_0 + 1, 0x1000));
  CHECK(gp_write(*m, 0, IA32_L3_MASK_0 + 1, 0x101));
  REQUIRE(m->write(0, IA32_L3_MASK_0 + 1, 0x0F0).ok());
  CHECK(gp_read(*m, 0, IA32_QM_CTR));
  CHECK(gp_write(*m, 0, IA32_PQR_ASSOC, 4ULL << 32));  // 4 CLOS
  CHECK(m->write(0, IA32_PQR_ASSOC, 3ULL << 32).ok());
  // It also has STLB QoS (Appendix A.3 lists the 11th Gen UP3 TCC parts).
  CHECK(m->os_info().res(ResourceId::STLB).alloc_capable);
  // rdt=!l3cat turns it off like any L3 CAT.
  auto p = sim::load_profile("intel-tcc");
  REQUIRE(p.ok());
  p->rdt = RdtOptions::parse("!l3cat");
  sim::SimMachine off(*p);
  CHECK_FALSE(off.os_info().res(ResourceId::L3).alloc_capable);
  // Another part of the same generation that Table B-8 does not list.
  auto other = sim::parse_profile(R"({"vendor": "GenuineIntel", "model": 140, "stepping": 1,
      "brand": "11th Gen Intel(R) Core(TM) i7-1185G7 @ 3.00GHz",
      "cpus": [{"cpu": 0}], "l3_size_bytes": 12582912})",
                                  "tgl");
  REQUIRE(other.ok());
  sim::SimMachine plain(*other);
  CHECK_FALSE(plain.os_info().res(ResourceId::L3).alloc_capable);
}

// Appendix B, "PQR_ASSOC" of the model-specific L3 CAT: the register
// follows IA32_PQR_ASSOC (apart from RMIDs), and Table B-8 gives each
// part's CLOS count, which CPUID does not enumerate. Every CLOS of that
// count must be accepted, whatever the STLB's own (smaller) count or its
// absence.
TEST_CASE("TCC L3 CAT: PQR_ASSOC takes every CLOS Table B-8 gives the part", "[tcc]") {
  // An Atom x7425E (16 L3 CLOS, 12-bit masks in the table) with a 4-CLOS
  // STLB, and a Core i7-1185GRE (4 CLOS) without STLB QoS.
  auto atom = sim::parse_profile(R"({"vendor": "GenuineIntel", "model": 190, "stepping": 0,
      "brand": "Intel(R) Atom(TM) x7425E Processor",
      "cpus": [{"cpu": 0, "core": 0}, {"cpu": 1, "core": 1}], "l3_size_bytes": 6291456,
      "stlb": {"num_closid": 4, "cbm_len": 8, "fill": false, "alias": true}})",
                                 "x7425e");
  REQUIRE(atom.ok());
  sim::SimMachine a(*atom);
  REQUIRE(a.os_info().res(ResourceId::L3).num_closid == 16);
  for (uint64_t clos : {1, 4, 5, 15}) {
    INFO("CLOS " << clos);
    CHECK(a.write(1, IA32_PQR_ASSOC, clos << 32).ok());
    CHECK(rd(a, 1, IA32_PQR_ASSOC) == clos << 32);
  }
  CHECK(gp_write(a, 1, IA32_PQR_ASSOC, 16ULL << 32));
  auto tgl = sim::parse_profile(R"({"vendor": "GenuineIntel", "model": 140, "stepping": 1,
      "brand": "11th Gen Intel(R) Core(TM) i7-1185GRE @ 2.80GHz",
      "cpus": [{"cpu": 0}, {"cpu": 1}], "l3_size_bytes": 12582912})",
                                "tgl-tcc");
  REQUIRE(tgl.ok());
  sim::SimMachine t(*tgl);
  REQUIRE(t.os_info().res(ResourceId::L3).num_closid == 4);
  REQUIRE_FALSE(t.os_info().res(ResourceId::STLB).alloc_capable);
  CHECK(t.write(1, IA32_PQR_ASSOC, 1ULL << 32).ok());
  CHECK(t.write(1, IA32_PQR_ASSOC, 3ULL << 32).ok());
  CHECK(rd(t, 1, IA32_PQR_ASSOC) == 3ULL << 32);
  CHECK(gp_write(t, 1, IA32_PQR_ASSOC, 4ULL << 32));
  // No monitoring is enumerated: RMIDs stay refused.
  CHECK(gp_write(t, 1, IA32_PQR_ASSOC, 1));
}

namespace {

struct DomainLog final : ArchEvents {
  void ctrl_domain_online(ResourceId rid, int id) override {
    log.push_back(std::string("+") + resource_name(rid) + ":" + std::to_string(id));
  }
  void ctrl_domain_offline(ResourceId rid, int id) override {
    log.push_back(std::string("-") + resource_name(rid) + ":" + std::to_string(id));
  }
  void mon_domain_online(ResourceId, int) override {}
  void mon_domain_offline(ResourceId, int) override {}
  std::vector<std::string> log;
};

}  // namespace

TEST_CASE("STLB domains follow CPU hotplug: a core goes with its last thread", "[stlb]") {
  auto b = make_sim_backend("intel-stlb");
  REQUIRE(b.ok());
  Arch& a = *b->arch;
  auto m = std::static_pointer_cast<sim::SimMachine>(b->keepalive);
  REQUIRE(a.update_ctrls({{ResourceId::STLB, ConfType::NONE, 1, 2, 0x0F}}).ok());
  DomainLog ev;
  REQUIRE(a.offline_cpu(1, &ev).ok());
  REQUIRE(m->set_cpu_online(1, false).ok());
  CHECK(ev.log.empty());
  CHECK(a.info().res(ResourceId::STLB).ctrl_domains[1].cpus.cpus() == std::vector<unsigned>{5});
  REQUIRE(a.offline_cpu(5, &ev).ok());
  REQUIRE(m->set_cpu_online(5, false).ok());
  CHECK(ev.log == std::vector<std::string>{"-STLB:1"});
  CHECK(a.update_ctrls({{ResourceId::STLB, ConfType::NONE, 1, 2, 0x3}}).error().code == EINVAL);
  ev.log.clear();
  REQUIRE(m->set_cpu_online(5, true).ok());
  REQUIRE(a.online_cpu(5, &ev).ok());
  CHECK(ev.log == std::vector<std::string>{"+STLB:1"});
  CHECK(a.get_ctrl(ResourceId::STLB, ConfType::NONE, 1, 2) == 0xFF);
  for (uint32_t i = 0; i < 8; ++i) CHECK(rd(*m, 5, STLB_QOS_MASK_0 + i) == 0xFF);
  REQUIRE(a.update_ctrls({{ResourceId::STLB, ConfType::NONE, 1, 2, 0x3}}).ok());
  CHECK(rd(*m, 5, STLB_QOS_MASK_0 + 2) == 0x3);
}
