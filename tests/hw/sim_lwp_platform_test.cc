// Tests the simulated machine's LWP as its platform enumerates it: the
// generation its CPUID 8000_001Ch layout names (the 2007 proposal or the
// shipped specification, AMD pub. 43724), the events that leaf offers, the
// LWP MSRs (LWP_CFG and LWP_CBADDR, the proposal's LWPMSR0 and LWPMSR1),
// and LWPINS / LWPVAL executed through the control interface.
//
// The proposal's facts, from its text: the event ids of its "Table 1:
// EventId values" (1 instructions retired, 2 branches retired, 3 DCache
// misses); the CPUID layout of its "Table 2: Lightweight Profiling CPUID
// Values" (EAX: bit 0 enabled, 1-3 the three events, 31 interrupt; EDX:
// bit 0 available, bit 1 interrupt, 2-4 the three events; EBX[31:24] the
// version, 1); LWPMSR0 in "Table 3" (the EAX layout; setting a bit EDX
// lacks is a #GP; CPUID EAX reads it back) and "5.2.2 LWPMSR1" (reading it
// is SLWPCB, writing it LLWPCB); the LWPCB Flags of "Figure 6: LWP Flags"
// (EN bit 0, bit i for event id i, INT bit 31). The shipped facts, as
// documented publicly: LWPVAL is event id 1 and LWPINS writes id 255
// (Microsoft's __lwpval / __lwpins intrinsic documentation), so the
// proposal's events move up by one; LWP_CFG[31:0] may only enable what
// CPUID 8000_001Ch EDX offers (Xen's SVM LWP_CFG handling) and CPUID EAX is
// its copy.
#include <catch2/catch.hpp>
#include <string>

#include "hw/backend.h"
#include "hw/sim/lwp_unit.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/lwp_cpuid.h"
#include "hw/x86/lwp_format.h"
#include "hw/x86/registers.h"
#include "lwp_profile.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::sim;
using namespace resctrlfs::hw::x86;
using namespace resctrlfs::lwp;

namespace {

std::unique_ptr<SimMachine> machine(const std::string& lwp) { return test::lwp_machine(lwp); }

std::string lwpcb(std::vector<EventSlot> events, uint32_t records = 1024) {
  Lwpcb cb;
  cb.buffer_size = records * kRecordSize;
  cb.buffer_base = 0x7f0000100000;
  cb.events = std::move(events);
  auto bytes = encode_lwpcb(cb);
  REQUIRE(bytes.ok());
  return *bytes;
}

// A thread on CPU `cpu` retiring 1e9 instructions per second with memory
// traffic (so that it also has DCache misses).
void busy_thread(SimMachine& m, int tid, int cpu = 0) {
  Workload w{8u << 20, 2000, 1.0};
  w.cpu = cpu;
  w.instructions_per_sec = 1e9;
  REQUIRE(m.attach_thread_workload(tid, w).ok());
}

std::vector<Record> drain(SimMachine& m, int tid, Generation g) {
  auto bytes = m.lwp_drain(tid, 0);
  REQUIRE(bytes.ok());
  auto recs = decode_records(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), g);
  REQUIRE(recs.ok());
  return *recs;
}

}  // namespace

TEST_CASE("the proposal's CPUID 8000_001Ch layout decodes and encodes by its Table 2") {
  // EAX: enabled, IRE, DME, interrupt. EBX: a 64-byte LWPCB (40 + 3 x 8),
  // 32-byte records, 3 events, version 1. ECX: 12-bit latencies, data
  // addresses, both filters. EDX: available, interrupt, all three events.
  struct Src : CpuidSource {
    CpuidRegs cpuid(unsigned, uint32_t leaf, uint32_t) const override {
      if (leaf == 0) return {0xD, 0x68747541, 0x444D4163, 0x69746E65};  // AuthenticAMD
      if (leaf == 0x80000000) return {0x8000001C, 0, 0, 0};
      if (leaf == 0x80000001) return {0, 0, 1U << 15, 0};
      if (leaf == 0x8000001C) return {0x8000000B, 0x01032040, 0xC000002C, 0x0000001F};
      return {};
    }
  } src;
  LwpCaps c = decode_lwp(src, 0);
  REQUIRE(c.present);
  CHECK(c.generation == Generation::kProposal);
  CHECK(c.version == 1);
  CHECK(c.cb_size_bytes == 64);  // in bytes, not quadwords, in this layout
  CHECK(c.event_size == 32);
  CHECK(c.max_events == 3);
  CHECK(c.event_offset == 40);
  CHECK(c.latency_max_bits == 12);
  CHECK(c.data_address);
  CHECK(c.cache_levels);
  CHECK(c.cache_latency);
  CHECK(c.enabled.avail);
  CHECK(c.enabled.ire);
  CHECK_FALSE(c.enabled.bre);
  CHECK(c.enabled.dme);
  CHECK(c.enabled.interrupt);
  CHECK(c.supported.avail);
  CHECK(c.supported.interrupt);  // EDX bit 1
  CHECK(c.supported.ire);        // EDX bit 2
  CHECK(c.supported.bre);        // EDX bit 3
  CHECK(c.supported.dme);        // EDX bit 4
  CHECK_FALSE(c.supported.val);
  // By the proposal's ids: EDX's bit 2 is event 1, and so on.
  CHECK(c.supported.event(kProposalInstructionsRetired));
  CHECK(c.supported.event(kProposalBranchesRetired));
  CHECK(c.supported.event(kProposalDcacheMiss));
  CHECK_FALSE(c.supported.event(4));
  // The enable-mask layout (LWPMSR0, Flags) of EDX's features.
  CHECK(c.supported.mask() == 0x8000000F);
  const CpuidRegs back = c.encode();
  CHECK(back.eax == 0x8000000B);
  CHECK(back.ebx == 0x01032040);
  CHECK(back.ecx == 0xC000002C);
  CHECK(back.edx == 0x0000001F);
  // A profile asking for the proposal's generation synthesises that layout.
  auto m = machine(R"({"generation": "proposal"})");
  LwpCaps d = decode_lwp(*m, 0);
  REQUIRE(d.present);
  CHECK(d.generation == Generation::kProposal);
  CHECK(m->cpuid(0, 0x8000001C, 0).edx == 0x1F);
  CHECK(m->cpuid(0, 0x8000001C, 0).ebx >> 24 == 1);
  CHECK(m->lwp_generation() == Generation::kProposal);
}

TEST_CASE("each generation's unit writes its own event ids and Flags") {
  for (Generation g : {Generation::kProposal, Generation::kShipped}) {
    auto m = machine(g == Generation::kProposal ? R"({"generation": "proposal"})" : "{}");
    busy_thread(*m, 100);
    const uint8_t ire = event_id(g, Event::kInstructions);
    const uint8_t bre = event_id(g, Event::kBranches);
    const uint8_t dme = event_id(g, Event::kDcache);
    REQUIRE(m->lwp_arm(100, lwpcb({{99999, ire, 99999}, {9999, bre, 9999}, {999, dme, 999}})).ok());
    auto st = m->lwp_status(100);
    REQUIRE(st.ok());
    CHECK(st->generation == generation_name(g));
    INFO(generation_name(g));
    if (g == Generation::kProposal) {
      // Figure 6: EN, IRE (1), BRE (2), DME (3), INT.
      CHECK(st->flags == 0x8000000F);
    } else {
      // EN, bits 2-4 for ids 2-4, INT.
      CHECK(st->flags == 0x8000001D);
    }
    m->advance_ms(5);
    auto recs = drain(*m, 100, g);
    REQUIRE_FALSE(recs.empty());
    std::map<uint8_t, int> ids;
    for (const Record& r : recs) ++ids[r.event_id];
    CHECK(ids.count(ire) == 1);
    CHECK(ids.count(bre) == 1);
    CHECK(ids.count(dme) == 1);
    CHECK(ids.size() == 3);
  }
  // Instructions retired alone with the interrupt: 0x80000003 in the
  // proposal's Flags, 0x80000005 in the shipped one's.
  auto p = machine(R"({"generation": "proposal"})");
  busy_thread(*p, 101);
  REQUIRE(p->lwp_arm(101, lwpcb({{999, kProposalInstructionsRetired, 999}})).ok());
  CHECK(p->lwp_status(101)->flags == 0x80000003);
  auto s = machine("{}");
  busy_thread(*s, 101);
  REQUIRE(s->lwp_arm(101, lwpcb({{999, kInstructionsRetired, 999}})).ok());
  CHECK(s->lwp_status(101)->flags == 0x80000005);
}

TEST_CASE("the unit counts only the events the platform's CPUID offers") {
  // A platform offering instructions retired only: a DCache-miss slot is
  // not usable (its Flags bit stays clear) and writes no record.
  auto m = machine(R"({"events": ["instructions"]})");
  CHECK_FALSE(decode_lwp(*m, 0).supported.dme);
  busy_thread(*m, 200);
  REQUIRE(
      m->lwp_arm(200, lwpcb({{99999, kInstructionsRetired, 99999}, {99, kDcacheMiss, 99}})).ok());
  auto st = m->lwp_status(200);
  REQUIRE(st.ok());
  CHECK(st->flags == (Lwpcb::kFlagEn | Lwpcb::flag_of(kInstructionsRetired) | Lwpcb::kFlagInt));
  m->advance_ms(5);
  auto recs = drain(*m, 200, Generation::kShipped);
  REQUIRE_FALSE(recs.empty());
  for (const Record& r : recs) CHECK(r.event_id == kInstructionsRetired);
  // Without the interrupt in CPUID, INT stays clear.
  auto n = machine(R"({"interrupt": false})");
  busy_thread(*n, 201);
  REQUIRE(n->lwp_arm(201, lwpcb({{999, kInstructionsRetired, 999}})).ok());
  CHECK(n->lwp_status(201)->flags == 0x5);
}

TEST_CASE("a platform whose CPUID has no LWP has no unit and no LWP MSRs") {
  for (const char* name : {"intel-2s", "amd-2s"}) {
    auto b = make_sim_backend(name);
    REQUIRE(b.ok());
    auto* m = dynamic_cast<SimMachine*>(b->sim);
    REQUIRE(m != nullptr);
    INFO(name);
    CHECK_FALSE(m->lwp_generation().has_value());
    busy_thread(*m, 300);
    auto r = m->lwp_arm(300, lwpcb({{999, kInstructionsRetired, 999}}));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EOPNOTSUPP);
    CHECK(r.error().message.find("8000_0001h ECX[15]") != std::string::npos);
    CHECK_FALSE(m->read(0, MSR_AMD64_LWP_CFG).ok());
    CHECK_FALSE(m->read(0, MSR_AMD64_LWP_CBADDR).ok());
  }
}

TEST_CASE("LWP_CFG: enables only what CPUID EDX offers, and CPUID EAX reads it back") {
  // Shipped: LWP_CFG[31:0] in the EAX layout, COREID [39:32], vector [47:40].
  auto m = machine(R"({"events": ["instructions", "branches"]})");
  const uint32_t edx = m->cpuid(1, 0x8000001C, 0).edx;
  CHECK(edx == 0x8000000D);  // available, instructions, branches, interrupt
  auto cfg = m->read(1, MSR_AMD64_LWP_CFG);
  REQUIRE(cfg.ok());
  // What the simulated OS loaded at boot: everything offered, CPU 1's
  // COREID, vector 0xEF.
  CHECK(*cfg == (uint64_t{0xEF} << 40 | uint64_t{1} << 32 | edx));
  CHECK(m->cpuid(1, 0x8000001C, 0).eax == edx);
  // DCache misses are not offered: #GP, nothing changes.
  CHECK_FALSE(m->write(1, MSR_AMD64_LWP_CFG, *cfg | (1U << kDcacheMiss)).ok());
  CHECK(*m->read(1, MSR_AMD64_LWP_CFG) == *cfg);
  // Branches and the interrupt off: CPUID EAX follows on that CPU only.
  const uint64_t less = *cfg & ~uint64_t{(1U << kBranchesRetired) | (1U << 31)};
  REQUIRE(m->write(1, MSR_AMD64_LWP_CFG, less).ok());
  CHECK(m->cpuid(1, 0x8000001C, 0).eax == static_cast<uint32_t>(less));
  CHECK(m->cpuid(0, 0x8000001C, 0).eax == edx);
  // An LLWPCB on CPU 1 gets only what LWP_CFG enables.
  busy_thread(*m, 400, 1);
  REQUIRE(m->lwp_arm(400, lwpcb({{999, kInstructionsRetired, 999}, {999, kBranchesRetired, 999}}))
              .ok());
  CHECK(m->lwp_status(400)->flags == 0x5);
  // LWP off in LWP_CFG: LLWPCB raises #UD, the arm is refused.
  REQUIRE(m->write(1, MSR_AMD64_LWP_CFG, 0).ok());
  CHECK(m->cpuid(1, 0x8000001C, 0).eax == 0);
  busy_thread(*m, 401, 1);
  CHECK_FALSE(m->lwp_arm(401, lwpcb({{999, kInstructionsRetired, 999}})).ok());

  // The proposal's LWPMSR0: the EAX layout (bit 1 IRE, 2 BRE, 3 DME, 31
  // interrupt), bits 4-30 and everything above 31 reserved.
  auto p = machine(R"({"generation": "proposal", "events": ["instructions"]})");
  CHECK(p->cpuid(0, 0x8000001C, 0).edx == 0x7);  // available, interrupt, IRE
  CHECK(*p->read(0, MSR_AMD64_LWP_CFG) == 0x80000003);
  CHECK(p->cpuid(0, 0x8000001C, 0).eax == 0x80000003);
  CHECK_FALSE(p->write(0, MSR_AMD64_LWP_CFG, 0x80000007).ok());  // BRE not offered
  CHECK_FALSE(p->write(0, MSR_AMD64_LWP_CFG, 0x80000013).ok());  // reserved bit 4
  CHECK_FALSE(p->write(0, MSR_AMD64_LWP_CFG, uint64_t{1} << 32 | 0x3).ok());
  REQUIRE(p->write(0, MSR_AMD64_LWP_CFG, 0x3).ok());
  CHECK(p->cpuid(0, 0x8000001C, 0).eax == 0x3);
}

TEST_CASE("LWP_CBADDR reads as SLWPCB and writes as LLWPCB") {
  auto m = machine("{}");
  busy_thread(*m, 500, 2);
  CHECK(*m->read(2, MSR_AMD64_LWP_CBADDR) == 0);
  REQUIRE(m->lwp_arm(500, lwpcb({{999, kInstructionsRetired, 999}})).ok());
  auto st = m->lwp_status(500);
  REQUIRE(st.ok());
  REQUIRE(st->lwpcb_address != 0);
  CHECK(*m->read(2, MSR_AMD64_LWP_CBADDR) == st->lwpcb_address);
  CHECK(*m->read(0, MSR_AMD64_LWP_CBADDR) == 0);  // no profiled thread there
  const uint64_t addr = st->lwpcb_address;
  // Writing 0 is LLWPCB 0: the thread's LWP stops.
  REQUIRE(m->write(2, MSR_AMD64_LWP_CBADDR, 0).ok());
  CHECK_FALSE(m->lwp_status(500)->active);
  CHECK(*m->read(2, MSR_AMD64_LWP_CBADDR) == 0);
  m->advance_ms(1);
  const size_t pending = m->lwp_status(500)->pending_records;
  // Writing the LWPCB's address back resumes it (the pause/resume idiom).
  REQUIRE(m->write(2, MSR_AMD64_LWP_CBADDR, addr).ok());
  CHECK(m->lwp_status(500)->active);
  m->advance_ms(1);
  CHECK(m->lwp_status(500)->pending_records > pending);
  // An address the simulator holds no LWPCB at: #GP.
  CHECK_FALSE(m->write(2, MSR_AMD64_LWP_CBADDR, addr + 4096).ok());
  // Both registers are listed with every other register of the machine.
  int listed = 0;
  for (const RegisterValue& r : m->dump_all_registers())
    if (std::string(r.group) == "lwp") ++listed;
  CHECK(listed == 2 * 4);
}

TEST_CASE("LWPVAL and LWPINS through the machine: every k-th value, always an insert") {
  auto m = machine("{}");
  busy_thread(*m, 600);
  // LWPVAL's event with interval 9: one record per 10 executions.
  REQUIRE(m->lwp_arm(600, lwpcb({{9, kProgrammedValue, 9}})).ok());
  LwpInsert val;
  val.value = true;
  val.data2 = 0x1122334455667788;
  val.data1 = 0xCAFE;
  val.flags = 0x0102;
  val.count = 100;
  auto v = m->lwp_insert(600, val);
  REQUIRE(v.ok());
  CHECK(v->written == 10);
  LwpInsert ins;
  ins.data2 = 7;
  ins.data1 = 8;
  ins.flags = 9;
  auto i = m->lwp_insert(600, ins);
  REQUIRE(i.ok());
  CHECK(i->written == 1);
  CHECK(i->full == 0);
  auto recs = drain(*m, 600, Generation::kShipped);
  REQUIRE(recs.size() == 11);
  for (size_t k = 0; k < 10; ++k) {
    CHECK(recs[k].event_id == kProgrammedValue);
    CHECK(recs[k].data2 == 0x1122334455667788);
    CHECK(recs[k].data1 == 0xCAFE);
    CHECK(recs[k].flags == 0x0102);
  }
  CHECK(recs[10].event_id == kProgrammedEvent);
  CHECK(recs[10].data2 == 7);
  CHECK(recs[10].data1 == 8);
  CHECK(recs[10].flags == 9);
  // A full ring: LWPINS overwrites the last record and returns CF = 1.
  REQUIRE(m->lwp_arm(600, lwpcb({{9, kProgrammedValue, 9}}, 32)).ok());
  ins.count = 40;
  auto full = m->lwp_insert(600, ins);
  REQUIRE(full.ok());
  CHECK(full->full == 40 - 31);
  // The proposal has neither instruction.
  auto p = machine(R"({"generation": "proposal"})");
  busy_thread(*p, 601);
  REQUIRE(p->lwp_arm(601, lwpcb({{9, kProposalInstructionsRetired, 9}})).ok());
  auto no = p->lwp_insert(601, ins);
  REQUIRE_FALSE(no.ok());
  CHECK(no.error().code == EOPNOTSUPP);
  // Without a unit: ENOENT.
  CHECK(m->lwp_insert(999, ins).error().code == ENOENT);
}
