// Tests the x86 Arch against a recording fake MSR device: the exact
// (cpu, register, value) sequences for control changes, CDP, MBA, AMD
// bandwidth, PQR_ASSOC, counter reads, BMEC/ABMC and rollback.
#include <catch2/catch.hpp>
#include <memory>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/registers.h"
#include "recording_msr.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using resctrlfs::hw::testing::R;
using resctrlfs::hw::testing::RecordingMsr;
using resctrlfs::hw::testing::W;

namespace {

struct Rig {
  std::shared_ptr<RecordingMsr> msr = std::make_shared<RecordingMsr>();
  std::unique_ptr<X86Arch> arch;
};

// An Arch over a recording device, with the platform of a profile.
Rig rig(const std::string& profile_name_or_json) {
  auto p = profile_name_or_json.front() == '{' ? sim::parse_profile(profile_name_or_json, "test")
                                               : sim::load_profile(profile_name_or_json);
  REQUIRE(p.ok());
  sim::SimMachine m(*p);  // only to decode the platform
  Rig r;
  auto a = X86Arch::create(m.info(), m.limits(), r.msr, nullptr);
  REQUIRE(a.ok());
  r.arch = std::move(a).value();
  r.msr->log.clear();
  return r;
}

}  // namespace

TEST_CASE("init brings every register to the boot state") {
  auto p = sim::load_profile("intel-2s");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  auto msr = std::make_shared<RecordingMsr>();
  auto a = X86Arch::create(m.info(), m.limits(), msr, nullptr);
  REQUIRE(a.ok());
  auto w = msr->writes();
  // 15 L3 masks x 2 domains + 15 MBA delays x 2 domains + CDP off x 2 + 8 PQR_ASSOC.
  REQUIRE(w.size() == 30 + 30 + 2 + 8);
  CHECK(w[0] == W(0, IA32_L3_MASK_0, 0x7ff));
  CHECK(w[15] == W(4, IA32_L3_MASK_0, 0x7ff));
  CHECK(w[30] == W(0, IA32_L2_QOS_EXT_BW_THRTL_0, 0));
  CHECK(w[60] == W(0, IA32_L3_QOS_CFG, 0));
  CHECK(w[61] == W(4, IA32_L3_QOS_CFG, 0));
  CHECK(w[62] == W(0, IA32_PQR_ASSOC, 0));
  CHECK(w[69] == W(7, IA32_PQR_ASSOC, 0));
}

TEST_CASE("a schemata change on one domain writes only the changed registers, once") {
  Rig r = rig("intel-2s");
  REQUIRE(r.arch
              ->update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 3, 0x0f0},
                              {ResourceId::L3, ConfType::NONE, 1, 4, 0x7ff},   // unchanged
                              {ResourceId::L3, ConfType::NONE, 0, 3, 0x7ff}})  // unchanged
              .ok());
  CHECK(r.msr->log == std::vector{W(4, IA32_L3_MASK_0 + 3, 0x0f0)});
  r.msr->log.clear();
  REQUIRE(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 3, 0x0f0}}).ok());
  CHECK(r.msr->log.empty());
  // Two values for the same register in one batch: the last one wins.
  REQUIRE(r.arch
              ->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 2, 0x00f},
                              {ResourceId::L3, ConfType::NONE, 0, 2, 0x0ff}})
              .ok());
  CHECK(r.msr->log == std::vector{W(0, IA32_L3_MASK_0 + 2, 0x0ff)});
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 0, 2) == 0x0ff);
}

TEST_CASE("invalid updates are refused before touching the hardware") {
  Rig r = rig("intel-2s");
  CHECK(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 7, 1, 1}}).error().code == EINVAL);
  CHECK(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 16, 1}}).error().code == EINVAL);
  CHECK(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 1, 0x800}}).error().code ==
        EINVAL);
  CHECK(r.arch->update_ctrls({{ResourceId::L2, ConfType::NONE, 0, 1, 1}}).error().code == EINVAL);
  CHECK(r.arch->update_ctrls({{ResourceId::MB, ConfType::NONE, 0, 1, 101}}).error().code == EINVAL);
  CHECK(r.msr->log.empty());
}

TEST_CASE("CDP on/off writes QOS_CFG and maps DATA/CODE to 2c/2c+1") {
  Rig r = rig("intel-2s");
  REQUIRE(r.arch->set_cdp_enabled(ResourceId::L3, true).ok());
  CHECK(r.msr->log == std::vector{W(0, IA32_L3_QOS_CFG, 1), W(4, IA32_L3_QOS_CFG, 1)});
  CHECK(r.arch->cdp_enabled(ResourceId::L3));
  r.msr->log.clear();
  REQUIRE(r.arch
              ->update_ctrls({{ResourceId::L3, ConfType::DATA, 0, 1, 0x003},
                              {ResourceId::L3, ConfType::CODE, 0, 1, 0x00c},
                              {ResourceId::L3, ConfType::CODE, 1, 6, 0x700}})
              .ok());
  CHECK(r.msr->log == std::vector{W(0, IA32_L3_MASK_0 + 2, 0x003), W(0, IA32_L3_MASK_0 + 3, 0x00c),
                                  W(4, IA32_L3_MASK_0 + 13, 0x700)});
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::DATA, 0, 1) == 0x003);
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::CODE, 0, 1) == 0x00c);
  // CLOSID 8 does not exist with CDP on (its DATA mask would be register
  // 16, past the 15 hardware CLOSIDs).
  CHECK_FALSE(r.arch->update_ctrls({{ResourceId::L3, ConfType::DATA, 0, 8, 1}}).ok());
  r.msr->log.clear();
  REQUIRE(r.arch->set_cdp_enabled(ResourceId::L3, false).ok());
  CHECK(r.msr->log == std::vector{W(0, IA32_L3_QOS_CFG, 0), W(4, IA32_L3_QOS_CFG, 0)});
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 0, 2) == 0x003);
  CHECK(r.arch->set_cdp_enabled(ResourceId::L2, true).error().code == EINVAL);
}

TEST_CASE("L2 CDP on intel-l2 uses L2_QOS_CFG and the L2 mask bank") {
  Rig r = rig("intel-l2");
  REQUIRE(r.arch->set_cdp_enabled(ResourceId::L2, true).ok());
  CHECK(r.msr->log == std::vector{W(0, IA32_L2_QOS_CFG, 1), W(2, IA32_L2_QOS_CFG, 1)});
  r.msr->log.clear();
  REQUIRE(r.arch->update_ctrls({{ResourceId::L2, ConfType::CODE, 2, 3, 0x0f}}).ok());
  CHECK(r.msr->log == std::vector{W(2, IA32_L2_MASK_0 + 7, 0x0f)});
}

TEST_CASE("AMD CDP is enabled on every CPU of each domain") {
  Rig r = rig("amd-2s");
  REQUIRE(r.arch->set_cdp_enabled(ResourceId::L3, true).ok());
  REQUIRE(r.msr->log.size() == 8);
  for (unsigned c = 0; c < 8; ++c) CHECK(r.msr->log[c] == W(c, IA32_L3_QOS_CFG, 1));
}

TEST_CASE("Intel MBA percent becomes a linear delay") {
  Rig r = rig("intel-2s");
  REQUIRE(r.arch
              ->update_ctrls({{ResourceId::MB, ConfType::NONE, 1, 2, 30},
                              {ResourceId::MB, ConfType::NONE, 0, 7, 10}})
              .ok());
  CHECK(r.msr->log == std::vector{W(4, IA32_L2_QOS_EXT_BW_THRTL_0 + 2, 70),
                                  W(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 7, 90)});
  r.msr->log.clear();
  REQUIRE(r.arch->update_ctrls({{ResourceId::MB, ConfType::NONE, 1, 2, 100}}).ok());
  CHECK(r.msr->log == std::vector{W(4, IA32_L2_QOS_EXT_BW_THRTL_0 + 2, 0)});
  CHECK(r.arch->get_ctrl(ResourceId::MB, ConfType::NONE, 1, 2) == 100);
}

TEST_CASE("AMD bandwidth is written in 1/8 GB/s with the unlimited bit for max_bw") {
  Rig r = rig("amd-2s");
  REQUIRE(r.arch
              ->update_ctrls({{ResourceId::MB, ConfType::NONE, 0, 1, 256},
                              {ResourceId::SMBA, ConfType::NONE, 1, 2, 16}})
              .ok());
  CHECK(r.msr->log ==
        std::vector{W(0, L3QOS_BW_CONTROL_0 + 1, 256), W(4, L3QOS_SLOW_BW_CONTROL_0 + 2, 16)});
  r.msr->log.clear();
  REQUIRE(r.arch->update_ctrls({{ResourceId::MB, ConfType::NONE, 0, 1, 2048}}).ok());
  CHECK(r.msr->log == std::vector{W(0, L3QOS_BW_CONTROL_0 + 1, 0x800)});
  CHECK(r.arch->update_ctrls({{ResourceId::MB, ConfType::NONE, 0, 1, 2049}}).error().code ==
        EINVAL);
}

TEST_CASE("PQR_ASSOC is written on CPU moves, and only when it changes") {
  Rig r = rig("intel-2s");
  REQUIRE(r.arch->set_cpu_assoc(2, 1, 5).ok());
  REQUIRE(r.arch->set_cpu_assoc(2, 1, 5).ok());
  REQUIRE(r.arch->set_cpu_assoc(6, 3, 0).ok());
  REQUIRE(r.arch->set_cpu_assoc(2, 0, 0).ok());
  CHECK(r.msr->log == std::vector{W(2, IA32_PQR_ASSOC, (1ULL << 32) | 5),
                                  W(6, IA32_PQR_ASSOC, 3ULL << 32), W(2, IA32_PQR_ASSOC, 0)});
  CHECK(r.arch->set_cpu_assoc(8, 0, 0).error().code == EINVAL);
}

TEST_CASE("a failed write rolls back everything the update already wrote") {
  Rig r = rig("intel-2s");
  r.msr->fail_in = 2;  // the third write fails
  auto res = r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 1, 0x00f},
                                   {ResourceId::L3, ConfType::NONE, 1, 1, 0x0f0},
                                   {ResourceId::MB, ConfType::NONE, 0, 1, 50}});
  REQUIRE_FALSE(res.ok());
  CHECK(res.error().code == EIO);
  CHECK(res.error().message == kHwWriteFailed);
  CHECK(r.msr->log == std::vector{W(0, IA32_L3_MASK_0 + 1, 0x00f), W(4, IA32_L3_MASK_0 + 1, 0x0f0),
                                  W(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 1, 50),
                                  W(4, IA32_L3_MASK_0 + 1, 0x7ff),
                                  W(0, IA32_L3_MASK_0 + 1, 0x7ff)});
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 0, 1) == 0x7ff);
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 1, 1) == 0x7ff);
  CHECK(r.arch->get_ctrl(ResourceId::MB, ConfType::NONE, 0, 1) == 100);
}

TEST_CASE("reset_all_ctrls writes every control register to its default") {
  Rig r = rig("amd-2s");
  REQUIRE(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 5, 0x1}}).ok());
  r.msr->log.clear();
  REQUIRE(r.arch->reset_all_ctrls().ok());
  CHECK(r.msr->log.size() == 3 * 16 * 2);  // L3, MB, SMBA x 16 CLOSIDs x 2 domains
  CHECK(r.msr->log[5] == W(0, IA32_L3_MASK_0 + 5, 0xffff));
  CHECK(r.msr->log[32] == W(0, L3QOS_BW_CONTROL_0, 0x800));
  CHECK(r.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 0, 5) == 0xffff);
}

TEST_CASE("counter reads go through QM_EVTSEL/QM_CTR and fold the 24-bit wrap") {
  Rig r = rig("intel-bdx");  // Broadwell-EP: 24-bit MBM counters
  r.msr->qm_ctr = {0xFFFFF0, 0x000010, 0x000030};
  // RMID allocation records the counter's value as the baseline.
  r.arch->reset_event(1, 9, EventId::MBM_LOCAL);
  CHECK(r.msr->log[0] == W(4, IA32_QM_EVTSEL, (9ULL << 32) | 3));
  CHECK(r.msr->log[1] == R(4, IA32_QM_CTR, 0xFFFFF0));
  auto b = r.arch->read_event(1, 9, EventId::MBM_LOCAL);
  CHECK(b.err == ReadError::kNone);
  CHECK(b.bytes == 0x20ULL * 65536);
  auto c = r.arch->read_event(1, 9, EventId::MBM_LOCAL);
  CHECK(c.bytes == 0x40ULL * 65536);
  r.msr->qm_ctr = {0x100, 0x180};
  r.arch->reset_event(1, 9, EventId::MBM_LOCAL);
  CHECK(r.arch->read_event(1, 9, EventId::MBM_LOCAL).bytes == 0x80ULL * 65536);
  // A counter never reset (one the hardware cleared) counts from 0.
  r.msr->qm_ctr = {0x5};
  CHECK(r.arch->read_event(1, 10, EventId::MBM_LOCAL).bytes == 5ULL * 65536);
  // A baseline read that says Unavailable leaves the baseline at 0.
  r.msr->qm_ctr = {QM_CTR_UNAVAILABLE, 0x7};
  r.arch->reset_event(1, 11, EventId::MBM_TOTAL);
  CHECK(r.arch->read_event(1, 11, EventId::MBM_TOTAL).bytes == 7ULL * 65536);
}

namespace {

// Forwards to the simulated machine and keeps every QM_CTR value read.
class CtrObservingMsr final : public MsrDevice {
 public:
  explicit CtrObservingMsr(std::shared_ptr<sim::SimMachine> m) : m_(std::move(m)) {}
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override {
    Result<uint64_t> v = m_->read(cpu, msr);
    if (msr == IA32_QM_CTR && v.ok()) ctr_reads.push_back(*v);
    return v;
  }
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t v) override {
    return m_->write(cpu, msr, v);
  }
  std::vector<uint64_t> ctr_reads;

 private:
  std::shared_ptr<sim::SimMachine> m_;
};

// One L3 of two CPUs, 24-bit MBM counters of 64-byte units (a wrap every
// 2^30 bytes), with or without Intel's optional Overflow bit
// (CPUID.0xF.1:EAX[8]: QM_CTR bit 61 set when the counter wrapped since the
// last read).
std::string overflow_profile(bool overflow_bit) {
  return std::string(R"({"vendor": "GenuineIntel", "family": 6, "model": 106,
      "cpus": [{"cpu": 0}, {"cpu": 1}], "l3_size_bytes": 16777216,
      "l3_mon": {"num_rmids": 16, "scale": 64, "counter_width": 24,
                 "events": ["mbm_total_bytes"], "overflow_bit": )") +
         (overflow_bit ? "true" : "false") + "}}";
}

}  // namespace

TEST_CASE("Intel's Overflow bit in QM_CTR does not change the bytes counted") {
  SECTION("scripted: a wrapped read with bit 61 set folds like one without it") {
    Rig r = rig(overflow_profile(true));
    r.msr->qm_ctr = {0xFFFFF0, QM_CTR_OVERFLOW | 0x000010, 0x000030};
    r.arch->reset_event(0, 9, EventId::MBM_TOTAL);
    auto b = r.arch->read_event(0, 9, EventId::MBM_TOTAL);
    CHECK(b.err == ReadError::kNone);
    CHECK(b.bytes == 0x20ULL * 64);
    CHECK(r.arch->read_event(0, 9, EventId::MBM_TOTAL).bytes == 0x40ULL * 64);
  }
  SECTION("the simulated machine: 1.5e9 bytes, a wrap between two reads, through the Arch") {
    // The Arch folds one wrap between two reads, as the kernel's, which
    // reads every counter once a second for that reason: a read at 1 s
    // (5e8 bytes), then at 3 s (1.5e9, past 2^30: the counter wrapped in
    // between and the second read carries the Overflow bit).
    auto check = [](bool overflow_bit) {
      CAPTURE(overflow_bit);
      auto p = sim::parse_profile(overflow_profile(overflow_bit), "test");
      REQUIRE(p.ok());
      auto m = std::make_shared<sim::SimMachine>(std::move(p).value());
      m->set_manual_clock(true);
      auto dev = std::make_shared<CtrObservingMsr>(m);
      auto a = X86Arch::create(m->os_info(), m->limits(), dev, nullptr);
      REQUIRE(a.ok());
      X86Arch& arch = **a;
      REQUIRE(arch.set_cpu_assoc(0, 0, 3).ok());
      dev->ctr_reads.clear();
      arch.reset_event(0, 3, EventId::MBM_TOTAL);  // a new RMID's baseline
      Workload w;
      w.bandwidth_mbps = 500;
      REQUIRE(m->attach_cpu_workload(0, w).ok());
      m->advance_ms(1000);
      REQUIRE(arch.read_event(0, 3, EventId::MBM_TOTAL).err == ReadError::kNone);
      m->advance_ms(2000);
      CounterValue v = arch.read_event(0, 3, EventId::MBM_TOTAL);
      REQUIRE(v.err == ReadError::kNone);
      // Baseline, 1 s and 3 s reads: the baseline 0, the wrap flagged on the
      // last one only where the part has the bit.
      REQUIRE(dev->ctr_reads.size() == 3);
      CHECK(dev->ctr_reads[0] == 0);
      CHECK((dev->ctr_reads[1] & QM_CTR_OVERFLOW) == 0);
      CHECK(((dev->ctr_reads[2] & QM_CTR_OVERFLOW) != 0) == overflow_bit);
      // Exactly one wrap of the 24-bit count plus its low bits, bit 61 left
      // out: 500 MB/s for 3 s, within the model's first-millisecond step.
      const uint64_t low = dev->ctr_reads[2] & ((1ULL << 24) - 1);
      CHECK(v.bytes == ((1ULL << 24) + low) * 64);
      CHECK(v.bytes >= 1499000000ULL);
      CHECK(v.bytes <= 1501000000ULL);
      // A second read right away: the bit was cleared, nothing more counted.
      CHECK(arch.read_event(0, 3, EventId::MBM_TOTAL).bytes == v.bytes);
    };
    check(true);
    check(false);
  }
}

namespace {

// Counts the batches (run() calls) that reach a RecordingMsr.
class BatchCountingMsr final : public MsrDevice {
 public:
  explicit BatchCountingMsr(std::shared_ptr<RecordingMsr> inner) : inner_(std::move(inner)) {}
  void run(std::vector<MsrOp>& ops) override {
    ++batches;
    MsrDevice::run(ops);
  }
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override { return inner_->read(cpu, msr); }
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t v) override {
    return inner_->write(cpu, msr, v);
  }
  unsigned batches = 0;

 private:
  std::shared_ptr<RecordingMsr> inner_;
};

}  // namespace

TEST_CASE("a new RMID's MBM baselines, domain by domain and event by event, are one batch") {
  auto p = sim::load_profile("intel-2s");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  auto rec = std::make_shared<RecordingMsr>();
  auto dev = std::make_shared<BatchCountingMsr>(rec);
  auto a = X86Arch::create(m.info(), m.limits(), dev, nullptr);
  REQUIRE(a.ok());
  X86Arch& arch = **a;
  REQUIRE(arch.info().res(ResourceId::L3).mon.mon_domains.size() == 2);
  rec->log.clear();
  dev->batches = 0;
  const uint64_t mon_cpu1 = arch.info().res(ResourceId::L3).mon.mon_domains[1].cpus.first();

  SECTION("the whole sweep: one batch, each baseline kept") {
    rec->qm_ctr = {0x10, 0x20, 0x30, 0x40};
    arch.reset_event(0, 9, EventId::MBM_TOTAL);
    arch.reset_event(0, 9, EventId::MBM_LOCAL);
    arch.reset_event(1, 9, EventId::MBM_TOTAL);
    arch.reset_event(1, 9, EventId::MBM_LOCAL);
    CHECK(dev->batches == 1);
    REQUIRE(rec->log.size() == 8);
    CHECK(rec->log[0] == W(0, IA32_QM_EVTSEL, (9ULL << 32) | 2));
    CHECK(rec->log[3] == R(0, IA32_QM_CTR, 0x20));
    CHECK(rec->log[6] == W(mon_cpu1, IA32_QM_EVTSEL, (9ULL << 32) | 3));
    rec->qm_ctr = {0x15, 0x48};
    CHECK(arch.read_event(0, 9, EventId::MBM_TOTAL).bytes == 5ULL * 65536);
    CHECK(arch.read_event(1, 9, EventId::MBM_LOCAL).bytes == 8ULL * 65536);
  }
  SECTION("a sweep interrupted by another call reads the rest on its own") {
    rec->qm_ctr = {0x10, 0x20, 0x30, 0x40, 0x7};
    arch.reset_event(0, 9, EventId::MBM_TOTAL);
    (void)arch.read_event(0, 3, EventId::LLC_OCCUPANCY);  // drops the read-ahead
    rec->qm_ctr = {0x50, 0x58};
    arch.reset_event(0, 9, EventId::MBM_LOCAL);  // not the sweep's start: its own read
    CHECK(dev->batches == 3);
    CHECK(arch.read_event(0, 9, EventId::MBM_LOCAL).bytes == 8ULL * 65536);
  }
  SECTION("another RMID's reset does not take the first one's baselines") {
    rec->qm_ctr = {0x10, 0x20, 0x30, 0x40};
    arch.reset_event(0, 9, EventId::MBM_TOTAL);
    rec->qm_ctr = {0x100, 0x0, 0x0, 0x0};
    arch.reset_event(0, 10, EventId::MBM_TOTAL);
    CHECK(dev->batches == 2);
    rec->qm_ctr = {0x101};
    CHECK(arch.read_event(0, 10, EventId::MBM_TOTAL).bytes == 1ULL * 65536);
  }
  SECTION("a reset of one domain alone (not the sweep's start) costs one batch of two") {
    rec->qm_ctr = {0x10};
    arch.reset_event(1, 9, EventId::MBM_TOTAL);
    CHECK(dev->batches == 1);
    CHECK(rec->log.size() == 2);
  }
}

TEST_CASE("occupancy is scaled, not folded") {
  Rig r = rig("intel-2s");
  r.msr->qm_ctr = {5};
  auto v = r.arch->read_event(0, 3, EventId::LLC_OCCUPANCY);
  CHECK(v.bytes == 5ULL * 65536);
  CHECK(r.msr->log[0] == W(0, IA32_QM_EVTSEL, (3ULL << 32) | 1));
}

TEST_CASE("Error and Unavailable bits become read errors") {
  Rig r = rig("intel-2s");
  r.msr->qm_ctr = {QM_CTR_ERROR | 5, QM_CTR_UNAVAILABLE | 5, QM_CTR_ERROR | QM_CTR_UNAVAILABLE};
  CHECK(r.arch->read_event(0, 1, EventId::MBM_TOTAL).err == ReadError::kError);
  CHECK(r.arch->read_event(0, 1, EventId::MBM_TOTAL).err == ReadError::kUnavailable);
  CHECK(r.arch->read_event(0, 1, EventId::LLC_OCCUPANCY).err == ReadError::kError);
  CHECK(r.arch->read_event(5, 1, EventId::MBM_TOTAL).err == ReadError::kError);    // no domain
  CHECK(r.arch->read_event(0, 224, EventId::MBM_TOTAL).err == ReadError::kError);  // no RMID
}

TEST_CASE("AMD 44-bit counters fold across their width") {
  Rig r = rig("amd-2s");
  const uint64_t top = (1ULL << 44) - 2;
  // The baseline at RMID allocation; the first reset of a sweep reads the
  // baselines of every domain and MBM event at once (zeros after the first).
  r.msr->qm_ctr.assign(2 * r.arch->info().res(ResourceId::L3).mon.mon_domains.size(), 0);
  r.msr->qm_ctr.front() = top;
  r.msr->qm_ctr.push_back(3);
  r.arch->reset_event(0, 1, EventId::MBM_TOTAL);
  CHECK(r.arch->read_event(0, 1, EventId::MBM_TOTAL).bytes == 5ULL * 64);
}

TEST_CASE("MBM errata correction applies above the RMID threshold on Skylake-SP") {
  // 224 RMIDs on family 6 model 0x55: threshold 191, factor 1.143118.
  Rig r = rig(R"({"vendor": "GenuineIntel", "family": 6, "model": 85,
      "cpus": [{"cpu": 0}], "l3_size_bytes": 33554432,
      "l3_mon": {"num_rmids": 224, "scale": 65536, "counter_width": 24,
                 "events": ["mbm_total_bytes"]}})");
  r.msr->qm_ctr = {0, 1000000, 0, 1000000};
  r.arch->read_event(0, 192, EventId::MBM_TOTAL);
  const uint64_t cf = static_cast<uint64_t>(1.143118 * (1 << 20) + 0.5);
  CHECK(r.arch->read_event(0, 192, EventId::MBM_TOTAL).bytes == ((1000000 * cf) >> 20) * 65536);
  r.arch->read_event(0, 191, EventId::MBM_TOTAL);
  CHECK(r.arch->read_event(0, 191, EventId::MBM_TOTAL).bytes == 1000000ULL * 65536);
}

TEST_CASE("BMEC writes the event configuration MSR and restarts the counts") {
  Rig r = rig("amd-2s");
  REQUIRE(r.arch->set_event_config(1, EventId::MBM_TOTAL, 0x15).ok());
  REQUIRE(r.arch->set_event_config(1, EventId::MBM_TOTAL, 0x15).ok());  // no change, no write
  REQUIRE(r.arch->set_event_config(0, EventId::MBM_LOCAL, 0x01).ok());
  CHECK(r.msr->log == std::vector{W(4, QOS_EVT_CFG_0, 0x15), W(0, QOS_EVT_CFG_0 + 1, 0x01)});
  CHECK(r.arch->event_config(1, EventId::MBM_TOTAL) == 0x15);
  CHECK(r.arch->set_event_config(0, EventId::MBM_TOTAL, 0x80).error().code == EINVAL);
  Rig i = rig("intel-2s");
  CHECK(i.arch->set_event_config(0, EventId::MBM_TOTAL, 0x15).error().code == EINVAL);
}

TEST_CASE("ABMC mode and counter assignment") {
  Rig r = rig("amd-2s");
  REQUIRE(r.arch->set_abmc_enabled(true).ok());
  REQUIRE(r.msr->log.size() == 8);
  CHECK(r.msr->log[0] == W(0, L3_QOS_EXT_CFG, 1));
  CHECK(r.msr->log[7] == W(7, L3_QOS_EXT_CFG, 1));
  r.msr->log.clear();
  REQUIRE(r.arch->config_cntr(1, 3, 17, EventId::MBM_TOTAL, 0x7f, true).ok());
  REQUIRE(r.arch->config_cntr(1, 3, 17, EventId::MBM_TOTAL, 0x7f, false).ok());
  CHECK(r.msr->log ==
        std::vector{W(4, L3_QOS_ABMC_CFG,
                      (1ULL << 63) | (1ULL << 62) | (3ULL << 48) | (17ULL << 32) | 0x7f),
                    W(4, L3_QOS_ABMC_CFG, (1ULL << 63) | (3ULL << 48) | (17ULL << 32))});
  r.msr->log.clear();
  r.msr->qm_ctr = {10, 25};
  // Configuring a counter clears it: it counts from 0.
  CHECK(r.arch->read_event(1, 17, EventId::MBM_TOTAL, 3u).bytes == 10 * 64);
  CHECK(r.arch->read_event(1, 17, EventId::MBM_TOTAL, 3u).bytes == 25 * 64);
  CHECK(r.msr->log[0] == W(4, IA32_QM_EVTSEL, (3ULL << 32) | (1ULL << 31) | 1));
  CHECK(r.arch->config_cntr(1, 32, 17, EventId::MBM_TOTAL, 0x7f, true).error().code == EINVAL);
}

TEST_CASE("ABMC mode and every configured counter are written again after a broker reconnect") {
  Rig r = rig("amd-2s");
  REQUIRE(r.arch->set_abmc_enabled(true).ok());
  const uint64_t assigned =
      (1ULL << 63) | (1ULL << 62) | (3ULL << 48) | (17ULL << 32) | 0x7f;  // CFG_EN|CTR_EN
  const uint64_t other = (1ULL << 63) | (1ULL << 62) | (5ULL << 48) | (2ULL << 32) | 0x15;
  const uint64_t released = (1ULL << 63) | (1ULL << 48);  // counter 1 configured, not counting
  REQUIRE(r.arch->config_cntr(1, 3, 17, EventId::MBM_TOTAL, 0x7f, true).ok());
  REQUIRE(r.arch->config_cntr(0, 5, 2, EventId::MBM_LOCAL, 0x15, true).ok());
  REQUIRE(r.arch->config_cntr(0, 1, 0, EventId::MBM_TOTAL, 0x7f, true).ok());
  REQUIRE(r.arch->config_cntr(0, 1, 0, EventId::MBM_TOTAL, 0x7f, false).ok());
  // Counter 3 of domain 1 has counted 10 chunks.
  r.msr->qm_ctr = {10};
  REQUIRE(r.arch->read_event(1, 17, EventId::MBM_TOTAL, 3u).bytes == 10 * 64);

  r.msr->log.clear();
  r.msr->gen = 1;  // the broker restarted: the registers may not hold what was written
  r.msr->qm_ctr = {4};
  // The next access re-syncs first: the counter counts on from 0, its total kept.
  CHECK(r.arch->read_event(1, 17, EventId::MBM_TOTAL, 3u).bytes == 14 * 64);
  std::vector<testing::Access> abmc;
  size_t ext_cfg = 0, last_ext_cfg = 0, first_abmc = r.msr->log.size();
  for (size_t i = 0; i < r.msr->log.size(); ++i) {
    const testing::Access& a = r.msr->log[i];
    if (a.op != 'w') continue;
    if (a.msr == L3_QOS_EXT_CFG) {
      CHECK(a.value == 1);
      ++ext_cfg;
      last_ext_cfg = i;
    }
    if (a.msr == L3_QOS_ABMC_CFG) {
      abmc.push_back(a);
      first_abmc = std::min(first_abmc, i);
    }
  }
  CHECK(ext_cfg == 8);               // ABMC mode on every CPU
  CHECK(last_ext_cfg < first_abmc);  // before the counters
  CHECK(abmc == std::vector{W(0, L3_QOS_ABMC_CFG, released), W(0, L3_QOS_ABMC_CFG, other),
                            W(4, L3_QOS_ABMC_CFG, assigned)});
  CHECK(r.arch->resyncs() == 1);

  // In step again: nothing more is written.
  r.msr->log.clear();
  r.msr->qm_ctr = {6};
  CHECK(r.arch->read_event(1, 17, EventId::MBM_TOTAL, 3u).bytes == 16 * 64);
  CHECK(r.msr->writes() == std::vector{W(4, IA32_QM_EVTSEL, (3ULL << 32) | (1ULL << 31) | 1)});

  // Turning ABMC off forgets the assignments: a later reconnect writes none.
  REQUIRE(r.arch->set_abmc_enabled(false).ok());
  r.msr->log.clear();
  r.msr->gen = 2;
  REQUIRE(r.arch->set_abmc_enabled(true).ok());
  for (const testing::Access& a : r.msr->writes()) CHECK(a.msr != L3_QOS_ABMC_CFG);
}

TEST_CASE("io_alloc (SDCIAE) sets bit 1 of L3_QOS_EXT_CFG on every CPU, keeping ABMC") {
  Rig r = rig("amd-io");
  CHECK(r.arch->info().res(ResourceId::L3).cache.io_alloc_capable);
  CHECK_FALSE(r.arch->io_alloc_enabled(ResourceId::L3));
  REQUIRE(r.arch->set_io_alloc_enabled(ResourceId::L3, true).ok());
  // The register is per logical CPU: L3 domain 0 (CPUs 0-3), then domain 1 (CPUs 4-7).
  CHECK(r.msr->log == std::vector{W(0, L3_QOS_EXT_CFG, 2), W(1, L3_QOS_EXT_CFG, 2),
                                  W(2, L3_QOS_EXT_CFG, 2), W(3, L3_QOS_EXT_CFG, 2),
                                  W(4, L3_QOS_EXT_CFG, 2), W(5, L3_QOS_EXT_CFG, 2),
                                  W(6, L3_QOS_EXT_CFG, 2), W(7, L3_QOS_EXT_CFG, 2)});
  CHECK(r.arch->io_alloc_enabled(ResourceId::L3));
  r.msr->log.clear();
  REQUIRE(r.arch->set_io_alloc_enabled(ResourceId::L3, true).ok());  // unchanged: no write
  CHECK(r.msr->log.empty());
  // ABMC shares the register: each keeps the other's bit.
  REQUIRE(r.arch->set_abmc_enabled(true).ok());
  CHECK(r.msr->log.front() == W(0, L3_QOS_EXT_CFG, 3));
  CHECK(r.msr->log.back() == W(7, L3_QOS_EXT_CFG, 3));
  r.msr->log.clear();
  REQUIRE(r.arch->set_io_alloc_enabled(ResourceId::L3, false).ok());
  REQUIRE(r.msr->log.size() == 8);
  CHECK(r.msr->log[0] == W(0, L3_QOS_EXT_CFG, 1));
  CHECK(r.msr->log[7] == W(7, L3_QOS_EXT_CFG, 1));
  CHECK_FALSE(r.arch->io_alloc_enabled(ResourceId::L3));
  r.msr->log.clear();
  // The io_alloc mask is the ordinary L3 mask register of the highest CLOSID.
  REQUIRE(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 15, 0x00ff}}).ok());
  CHECK(r.msr->log == std::vector{W(4, IA32_L3_MASK_0 + 15, 0x00ff)});
  // Only L3 can be capable; platforms without SDCIAE refuse.
  CHECK(r.arch->set_io_alloc_enabled(ResourceId::L2, true).error().code == EINVAL);
  Rig plain = rig("amd-2s");
  CHECK(plain.arch->set_io_alloc_enabled(ResourceId::L3, true).error().code == EINVAL);
  CHECK(plain.msr->log.empty());
}

TEST_CASE("io_alloc enable rolls back the CPUs already written when a write fails") {
  Rig r = rig("amd-io");
  r.msr->fail_in = 5;  // the sixth write (CPU 5) fails
  auto res = r.arch->set_io_alloc_enabled(ResourceId::L3, true);
  REQUIRE_FALSE(res.ok());
  CHECK(res.error().code == EIO);
  CHECK_FALSE(r.arch->io_alloc_enabled(ResourceId::L3));
  for (unsigned cpu = 0; cpu < 8; ++cpu) CHECK(r.msr->regs[{cpu, L3_QOS_EXT_CFG}] == 0);
}

TEST_CASE("init adopts an io_alloc state left in the hardware") {
  auto p = sim::load_profile("amd-io");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  auto msr = std::make_shared<RecordingMsr>();
  msr->regs[{0, L3_QOS_EXT_CFG}] = L3_QOS_EXT_CFG_SDCIAE_EN;
  auto a = X86Arch::create(m.info(), m.limits(), msr, nullptr);
  REQUIRE(a.ok());
  CHECK((*a)->io_alloc_enabled(ResourceId::L3));
  CHECK_FALSE((*a)->abmc_enabled());
}

TEST_CASE("thread tags are only modelled with a scheduler") {
  Rig r = rig("intel-2s");
  CHECK(r.arch->thread_tagger() == nullptr);  // no tagger to call
  CHECK(r.msr->log.empty());
}

TEST_CASE("pseudo_lock runs the register part of the kernel's locking sequence") {
  Rig r = rig("intel-bdx");
  // CPU 0 (first of L3 domain 0) runs with RMID 5; its prefetchers have bit 1 set.
  REQUIRE(r.arch->set_cpu_assoc(0, 0, 5).ok());
  r.msr->regs[{0, MSR_MISC_FEATURE_CONTROL}] = 0x2;
  r.msr->log.clear();
  REQUIRE(r.arch->pseudo_lock(ResourceId::L3, 0, 3, 0x3).ok());
  CHECK(r.msr->log ==
        std::vector{W(0, IA32_L3_MASK_0 + 3, 0x3), R(0, MSR_MISC_FEATURE_CONTROL, 0x2),
                    W(0, MSR_MISC_FEATURE_CONTROL, 0xF), W(0, IA32_PQR_ASSOC, (3ULL << 32) | 5),
                    W(0, IA32_PQR_ASSOC, 5), W(0, MSR_MISC_FEATURE_CONTROL, 0x2)});
  CHECK(r.arch->pseudo_locked_cbm(ResourceId::L3, 0) == 0x3);
  CHECK(r.arch->pseudo_locked_cbm(ResourceId::L3, 1) == 0);
  // One region per domain; unlocking forgets it without touching registers.
  CHECK(r.arch->pseudo_lock(ResourceId::L3, 0, 4, 0x4).error().code == EBUSY);
  r.msr->log.clear();
  r.arch->pseudo_unlock(ResourceId::L3, 0);
  CHECK(r.msr->log.empty());
  CHECK(r.arch->pseudo_locked_cbm(ResourceId::L3, 0) == 0);
  // The mask already programmed is not written again.
  REQUIRE(r.arch->pseudo_lock(ResourceId::L3, 0, 3, 0x3).ok());
  CHECK(r.msr->log.front() == R(0, MSR_MISC_FEATURE_CONTROL, 0x2));
}

TEST_CASE("pseudo_lock restores the CPU when a write fails, and is refused where not offered") {
  Rig r = rig("intel-bdx");
  r.msr->fail_in = 2;  // mask, prefetchers off, then the PQR_ASSOC switch fails
  auto res = r.arch->pseudo_lock(ResourceId::L3, 1, 2, 0x3);
  REQUIRE_FALSE(res.ok());
  CHECK(res.error().code == EIO);
  CHECK(r.msr->writes() == std::vector{W(4, IA32_L3_MASK_0 + 2, 0x3),
                                       W(4, MSR_MISC_FEATURE_CONTROL, 0xF),
                                       W(4, IA32_PQR_ASSOC, 2ULL << 32), W(4, IA32_PQR_ASSOC, 0),
                                       W(4, MSR_MISC_FEATURE_CONTROL, 0)});
  CHECK(r.arch->pseudo_locked_cbm(ResourceId::L3, 1) == 0);
  // Not a Broadwell server / with CDP / bad arguments.
  Rig two = rig("intel-2s");
  CHECK(two.arch->pseudo_lock(ResourceId::L3, 0, 1, 0x3).error().code == EINVAL);
  CHECK(two.msr->log.empty());
  CHECK(r.arch->pseudo_lock(ResourceId::MB, 0, 1, 10).error().code == EINVAL);
  CHECK(r.arch->pseudo_lock(ResourceId::L3, 7, 1, 0x3).error().code == EINVAL);
  CHECK(r.arch->pseudo_lock(ResourceId::L3, 0, 1, 0x800).error().code == EINVAL);
  REQUIRE(r.arch->set_cdp_enabled(ResourceId::L3, true).ok());
  CHECK(r.arch->pseudo_lock(ResourceId::L3, 0, 1, 0x3).error().code == EINVAL);
}

TEST_CASE("the simulated machine has the prefetcher register on Intel") {
  auto p = sim::load_profile("intel-bdx");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  CHECK(m.info().pseudo_lock_capable);
  REQUIRE(m.write(2, MSR_MISC_FEATURE_CONTROL, 0xF).ok());
  CHECK(*m.read(2, MSR_MISC_FEATURE_CONTROL) == 0xF);
  CHECK(*m.read(3, MSR_MISC_FEATURE_CONTROL) == 0);
  CHECK(m.write(2, MSR_MISC_FEATURE_CONTROL, 0x10).error().code == EIO);
  bool dumped = false;
  for (const RegisterValue& v : m.dump_registers())
    dumped = dumped || (v.cpu == 2 && v.msr == MSR_MISC_FEATURE_CONTROL && v.value == 0xF);
  CHECK(dumped);
  auto amd = sim::load_profile("amd-2s");
  REQUIRE(amd.ok());
  sim::SimMachine a(*amd);
  CHECK_FALSE(a.info().pseudo_lock_capable);
  CHECK_FALSE(a.read(0, MSR_MISC_FEATURE_CONTROL).ok());
}
