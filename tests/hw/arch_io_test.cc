// Tests the x86 Arch's device channels (I/O RDT) on the intel-gnr-io
// machine: the channel list the contract shows, the exact MMIO write
// sequence of a channel's tags (CLOS then RMID, at the register's width),
// IA32_L3_IO_QOS_CFG on one CPU of every L3 domain (and restored when one
// domain fails), the refusals, and the effect through the simulator: a
// channel tagged into a group with a 2-way mask fills at most those ways
// and counts in the group's RMID once tagging is enabled.
#include <catch2/catch.hpp>
#include <memory>

#include "hw/backend.h"
#include "hw/sim/machine.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/irdt.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;

namespace {

struct MmioWrite {
  uint64_t addr;
  unsigned width;
  uint64_t value;
  bool operator==(const MmioWrite&) const = default;
};

std::ostream& operator<<(std::ostream& os, const MmioWrite& w) {
  return os << "{0x" << std::hex << w.addr << std::dec << "/" << w.width << "=" << w.value << "}";
}

// Records every MMIO write, then passes it to the machine; can fail the
// n-th write from now.
struct RecordingMmio final : MmioDevice {
  std::shared_ptr<sim::SimMachine> m;
  std::vector<MmioWrite> writes;
  int fail_in = -1;
  Result<uint64_t> mmio_read(uint64_t addr, unsigned width) override {
    return m->mmio_read(addr, width);
  }
  Result<void> mmio_write(uint64_t addr, unsigned width, uint64_t value) override {
    if (fail_in >= 0 && fail_in-- == 0) return Error::make(EIO);
    writes.push_back({addr, width, value});
    return m->mmio_write(addr, width, value);
  }
};

// Records MSR writes to 0xC83 and fails the n-th write from now.
struct CfgRecorder final : MsrDevice {
  std::shared_ptr<sim::SimMachine> m;
  std::vector<std::pair<unsigned, uint64_t>> cfg;
  int fail_in = -1;
  uint64_t gen = 0;  // reconnects()
  uint64_t reconnects() const override { return gen; }
  Result<uint64_t> read(unsigned cpu, uint32_t msr) override { return m->read(cpu, msr); }
  Result<void> write(unsigned cpu, uint32_t msr, uint64_t v) override {
    if (msr == IA32_L3_IO_RDT_CFG) {
      if (fail_in >= 0 && fail_in-- == 0) return Error::make(EIO);
      cfg.emplace_back(cpu, v);
    }
    return m->write(cpu, msr, v);
  }
};

struct Rig {
  std::shared_ptr<sim::SimMachine> m;
  std::shared_ptr<RecordingMmio> mmio = std::make_shared<RecordingMmio>();
  std::shared_ptr<CfgRecorder> msr = std::make_shared<CfgRecorder>();
  std::unique_ptr<X86Arch> arch;
  Rig() {
    auto p = sim::load_profile("intel-gnr-io");
    REQUIRE(p.ok());
    m = std::make_shared<sim::SimMachine>(std::move(p).value());
    m->set_manual_clock(true);
    mmio->m = m;
    msr->m = m;
    auto a = X86Arch::create(m->os_info(), m->limits(), msr, m);
    REQUIRE(a.ok());
    arch = std::move(a).value();
    auto t = parse_irdt(m->irdt_blob());
    REQUIRE(t.ok());
    REQUIRE(arch->attach_io_rdt(std::move(t).value(), mmio).ok());
  }
};

Workload device(uint64_t footprint, double mbps) {
  Workload w;
  w.cache_footprint_bytes = footprint;
  w.bandwidth_mbps = mbps;
  return w;
}

}  // namespace

TEST_CASE("the Arch lists the machine's device channels", "[iordt]") {
  Rig r;
  CHECK(r.arch->io_tag_caps().alloc);
  CHECK(r.arch->io_tag_caps().mon);
  auto ch = r.arch->io_channels();
  REQUIRE(ch.size() == 4);
  CHECK(ch[0] == IoChannelInfo{0x100, "pcie", true, true, {{"0000:16:00.0", 0, false}}});
  CHECK(ch[1] == IoChannelInfo{0x101, "pcie", true, true, {{"0000:16:00.0", 1, false}}});
  CHECK(ch[2] == IoChannelInfo{0x102, "pcie", true, true, {{"0000:30:01.0", 0, false}}});
  CHECK(ch[3] == IoChannelInfo{0x10200, "cxl.cache", true, true, {{"0000:80:00.0", 0, false}}});
  CHECK(r.mmio->writes.empty());  // attaching writes nothing
  CHECK(r.arch->io_channel_tags(0x100).error().code == EINVAL);

  // Built over the simulated backend the same way.
  auto b = make_sim_backend("intel-gnr-io");
  REQUIRE(b.ok());
  CHECK(b->arch->io_channels().size() == 4);
  auto plain = make_sim_backend("intel-2s");
  REQUIRE(plain.ok());
  CHECK(plain->arch->io_channels().empty());
  CHECK(plain->arch->set_io_channel_tags(0x100, 0, 0).error().code == ENODEV);
  CHECK(plain->arch->set_io_tagging(true, true).error().code == ENODEV);
}

TEST_CASE("a channel's tags are written CLOS first, then RMID, at the register width", "[iordt]") {
  Rig r;
  REQUIRE(r.arch->set_io_channel_tags(0x101, 3, 7).ok());
  REQUIRE(r.arch->set_io_channel_tags(0x10200, 2, 9).ok());
  CHECK(r.mmio->writes ==
        std::vector<MmioWrite>{
            {0xfed10002, 2, 3}, {0xfed10102, 2, 7}, {0xfed20000, 8, 2}, {0xfed20100, 8, 9}});
  CHECK(*r.arch->io_channel_tags(0x101) == std::make_pair(3u, 7u));
  CHECK(*r.m->mmio_read(0xfed10102, 2) == 7);
  // Refused before any write: unknown channel, CLOSID or RMID out of range.
  r.mmio->writes.clear();
  CHECK(r.arch->set_io_channel_tags(0x103, 0, 0).error().code == EINVAL);
  CHECK(r.arch->set_io_channel_tags(0x100, 15, 0).error().code == EINVAL);
  CHECK(r.arch->set_io_channel_tags(0x100, 0, 512).error().code == EINVAL);
  CHECK(r.mmio->writes.empty());
  // A failed RMID write: a write failure (fs/ words it), tags unknown.
  r.mmio->fail_in = 1;
  auto f = r.arch->set_io_channel_tags(0x101, 4, 8);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code == EIO);
  CHECK(is_write_failure(f.error()));
  CHECK(r.mmio->writes == std::vector<MmioWrite>{{0xfed10002, 2, 4}});
  CHECK_FALSE(r.arch->io_channel_tags(0x101).ok());
}

TEST_CASE("I/O tagging is enabled on one CPU of every L3 domain, restored on failure", "[iordt]") {
  Rig r;
  REQUIRE(r.arch->set_io_tagging(true, true).ok());
  CHECK(r.msr->cfg == std::vector<std::pair<unsigned, uint64_t>>{{0, 3}, {4, 3}});
  CHECK(r.arch->io_tagging().alloc);
  r.msr->cfg.clear();
  REQUIRE(r.arch->set_io_tagging(false, true).ok());
  CHECK(r.msr->cfg == std::vector<std::pair<unsigned, uint64_t>>{{0, 2}, {4, 2}});
  // The second domain fails: the first gets the old value back.
  r.msr->cfg.clear();
  r.msr->fail_in = 1;
  auto f = r.arch->set_io_tagging(true, false);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().code == EIO);
  CHECK(r.msr->cfg == std::vector<std::pair<unsigned, uint64_t>>{{0, 1}, {0, 2}});
  CHECK_FALSE(r.arch->io_tagging().alloc);
  CHECK(r.arch->io_tagging().mon);
  CHECK(*r.m->read(0, IA32_L3_IO_RDT_CFG) == 2);
}

TEST_CASE(
    "a NIC channel in a group with a 2-way mask fills at most those ways and counts in "
    "its RMID",
    "[iordt]") {
  Rig r;
  // The group: CLOSID 1 with 2 of 15 ways on socket 0, RMID 5.
  REQUIRE(r.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 1, 0x3}}).ok());
  REQUIRE(r.arch->set_io_channel_tags(0x100, 1, 5).ok());
  REQUIRE(r.m->attach_channel_workload(0x100, device(uint64_t{200} << 20, 2000.0)).ok());
  r.m->advance_ms(5000);
  CHECK(r.arch->read_event(0, 5, EventId::LLC_OCCUPANCY).bytes == 0);  // not enabled yet
  REQUIRE(r.arch->set_io_tagging(true, true).ok());
  r.m->advance_ms(20000);
  auto occ = r.arch->read_event(0, 5, EventId::LLC_OCCUPANCY);
  REQUIRE(occ.err == ReadError::kNone);
  CHECK(static_cast<double>(occ.bytes) == Approx(301989888.0 * 2 / 15).epsilon(0.01));
  auto bw = r.arch->read_event(0, 5, EventId::MBM_TOTAL);
  REQUIRE(bw.err == ReadError::kNone);
  CHECK(static_cast<double>(bw.bytes) == Approx(2000e6 * 20).epsilon(0.02));
}

TEST_CASE(
    "after the broker reconnected, the enable bits and every channel's tags are written "
    "again",
    "[iordt]") {
  Rig r;
  REQUIRE(r.arch->set_io_channel_tags(0x101, 3, 7).ok());
  REQUIRE(r.arch->set_io_tagging(true, true).ok());
  r.mmio->writes.clear();
  r.msr->cfg.clear();
  r.msr->gen = 1;
  REQUIRE(r.arch->set_io_channel_tags(0x100, 1, 2).ok());
  CHECK(r.msr->cfg == std::vector<std::pair<unsigned, uint64_t>>{{0, 3}, {4, 3}});
  CHECK(r.mmio->writes ==
        std::vector<MmioWrite>{
            {0xfed10002, 2, 3}, {0xfed10102, 2, 7}, {0xfed10000, 2, 1}, {0xfed10100, 2, 2}});
  // Once in step, nothing is written again.
  r.mmio->writes.clear();
  r.msr->cfg.clear();
  REQUIRE(r.arch->set_io_channel_tags(0x100, 1, 3).ok());
  CHECK(r.msr->cfg.empty());
  CHECK(r.mmio->writes == std::vector<MmioWrite>{{0xfed10000, 2, 1}, {0xfed10100, 2, 3}});
}

TEST_CASE(
    "an L3 domain that comes back online gets IA32_L3_IO_QOS_CFG again while channels are tagged",
    "[iordt]") {
  Rig r;
  REQUIRE(r.arch->set_io_channel_tags(0x100, 1, 2).ok());
  REQUIRE(r.arch->set_io_tagging(true, true).ok());
  // Socket 1's L3 (CPUs 4-7) goes away entirely.
  for (unsigned c = 4; c < 8; ++c) REQUIRE(r.arch->offline_cpu(c, nullptr).ok());
  r.msr->cfg.clear();
  r.mmio->writes.clear();
  REQUIRE(r.arch->online_cpu(5, nullptr).ok());
  CHECK(r.msr->cfg == std::vector<std::pair<unsigned, uint64_t>>{{5, 3}});
  CHECK(r.mmio->writes.empty());  // the channels' registers are not the L3's
  // A second CPU of the same L3: already enabled.
  REQUIRE(r.arch->online_cpu(6, nullptr).ok());
  CHECK(r.msr->cfg.size() == 1);
  // A CPU of an L3 that never went away: nothing.
  REQUIRE(r.arch->offline_cpu(1, nullptr).ok());
  REQUIRE(r.arch->online_cpu(1, nullptr).ok());
  CHECK(r.msr->cfg.size() == 1);
  // Allocation tagging only: IRAE alone.
  REQUIRE(r.arch->set_io_tagging(true, false).ok());
  for (unsigned c : {5u, 6u}) REQUIRE(r.arch->offline_cpu(c, nullptr).ok());
  r.msr->cfg.clear();
  REQUIRE(r.arch->online_cpu(6, nullptr).ok());
  CHECK(r.msr->cfg == std::vector<std::pair<unsigned, uint64_t>>{{6, 1}});
  // A write that fails is the online's failure, the CPU stays offline.
  REQUIRE(r.arch->offline_cpu(6, nullptr).ok());
  r.msr->fail_in = 0;
  CHECK_FALSE(r.arch->online_cpu(6, nullptr).ok());
  CHECK_FALSE(r.arch->info().online.test(6));
}

TEST_CASE("an L3 domain that comes back while no channel tagging is on gets no IA32_L3_IO_QOS_CFG",
          "[iordt]") {
  Rig r;
  for (unsigned c = 4; c < 8; ++c) REQUIRE(r.arch->offline_cpu(c, nullptr).ok());
  r.msr->cfg.clear();
  REQUIRE(r.arch->online_cpu(4, nullptr).ok());
  CHECK(r.msr->cfg.empty());
}
