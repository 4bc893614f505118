// Tests the simulated machine's Intel I/O RDT at register level: the
// intel-gnr-io platform's CPUID bits and IRDT table, the MMIO tagging
// registers (reserved offsets, wrong widths and out-of-range values
// ignored, addresses outside the register pages failing), and device
// workloads in the model: a channel's fill confined by its CLOS's mask and
// counted in its RMID only while IA32_L3_IO_QOS_CFG (0xC83) IRAE/IRME are
// set on the L3 its I/O block fills.
#include <catch2/catch.hpp>
#include <memory>

#include "hw/backend.h"
#include "hw/sim/machine.h"
#include "hw/x86/irdt.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;

namespace {

std::unique_ptr<sim::SimMachine> gnr() {
  auto p = sim::load_profile("intel-gnr-io");
  REQUIRE(p.ok());
  auto m = std::make_unique<sim::SimMachine>(std::move(p).value());
  m->set_manual_clock(true);
  return m;
}

Workload device(uint64_t footprint, double mbps) {
  Workload w;
  w.cache_footprint_bytes = footprint;
  w.bandwidth_mbps = mbps;
  return w;
}

constexpr uint64_t kNicClos = 0xfed10000;  // channel 0x100: CLOS0 of RCS 1
constexpr uint64_t kNicRmid = 0xfed10100;

uint64_t mbm_total(sim::SimMachine& m, unsigned cpu, uint32_t rmid) {
  REQUIRE(m.write(cpu, IA32_QM_EVTSEL, (uint64_t{rmid} << 32) | 2).ok());
  auto v = m.read(cpu, IA32_QM_CTR);
  REQUIRE(v.ok());
  return *v;
}

}  // namespace

TEST_CASE("intel-gnr-io enumerates I/O RDT and has an IRDT table of its devices", "[iordt]") {
  auto mp = gnr();
  sim::SimMachine& m = *mp;
  CHECK(m.limits().io_rdt_alloc);
  CHECK(m.limits().io_rdt_mon);
  CHECK((m.cpuid(0, CPUID_LEAF_PQM, 1).eax & (CPUID_F_1_EAX_IO_CMT | CPUID_F_1_EAX_IO_MBM)) ==
        (CPUID_F_1_EAX_IO_CMT | CPUID_F_1_EAX_IO_MBM));
  CHECK((m.cpuid(0, CPUID_LEAF_PQE, 1).ecx & CPUID_10_CACHE_ECX_IO) != 0);
  auto t = parse_irdt(m.irdt_blob());
  REQUIRE(t.ok());
  REQUIRE(t->channels.size() == 4);
  CHECK(t->channels[0].id == 0x100);
  CHECK(t->channels[0].devices[0].bdf() == "0000:16:00.0");
  CHECK(t->channels[1].id == 0x101);
  CHECK(t->channels[2].id == 0x102);
  CHECK(t->channels[2].devices[0].bdf() == "0000:30:01.0");
  CHECK(t->channels[3].id == 0x10200);
  CHECK(t->channels[3].link == IoLinkType::kCxlCache);
  CHECK(t->channels[3].reg_bytes == 8);
  // Other built-ins have neither.
  auto p = sim::load_profile("intel-2s");
  REQUIRE(p.ok());
  sim::SimMachine plain(std::move(p).value());
  CHECK(plain.irdt_blob().empty());
  CHECK_FALSE(plain.mmio_write(kNicClos, 2, 1).ok());
  CHECK(plain.attach_channel_workload(0x100, device(1, 1.0)).error().code == ENODEV);
}

TEST_CASE("I/O RDT tagging registers ignore what the specification says to ignore", "[iordt]") {
  auto mp = gnr();
  sim::SimMachine& m = *mp;
  REQUIRE(m.mmio_write(kNicClos + 2, 2, 3).ok());  // IO_PQR_CLOS1
  CHECK(*m.mmio_read(kNicClos + 2, 2) == 3);
  CHECK(*m.mmio_read(kNicClos, 2) == 0);
  // A wrong width or an odd offset inside the block: ignored.
  REQUIRE(m.mmio_write(kNicClos + 2, 4, 5).ok());
  REQUIRE(m.mmio_write(kNicClos + 3, 1, 5).ok());
  CHECK(*m.mmio_read(kNicClos + 2, 2) == 3);
  // Beyond the CLOSIDs (15) or the RMIDs (512) the CPU enumerates: ignored.
  REQUIRE(m.mmio_write(kNicClos + 2, 2, 15).ok());
  CHECK(*m.mmio_read(kNicClos + 2, 2) == 3);
  REQUIRE(m.mmio_write(kNicRmid + 2, 2, 511).ok());
  CHECK(*m.mmio_read(kNicRmid + 2, 2) == 511);
  REQUIRE(m.mmio_write(kNicRmid + 2, 2, 512).ok());
  CHECK(*m.mmio_read(kNicRmid + 2, 2) == 511);
  // A reserved offset of the page: writes ignored, reads 0.
  REQUIRE(m.mmio_write(0xfed10800, 8, ~uint64_t{0}).ok());
  CHECK(*m.mmio_read(0xfed10800, 8) == 0);
  // The CXL.Cache link's 8-byte registers.
  REQUIRE(m.mmio_write(0xfed20100, 8, 9).ok());
  CHECK(*m.mmio_read(0xfed20100, 8) == 9);
  // Outside every register page.
  CHECK(m.mmio_write(0xfed11000, 2, 1).error().code == EIO);
  CHECK_FALSE(m.mmio_read(0x1000, 8).ok());
  // 0xC83: IRAE and IRME only.
  CHECK(m.write(0, IA32_L3_IO_RDT_CFG, 3).ok());
  CHECK_FALSE(m.write(0, IA32_L3_IO_RDT_CFG, 4).ok());
}

TEST_CASE(
    "a device fill is confined by its channel's CLOS and counted in its RMID only while "
    "IRAE/IRME are set",
    "[iordt]") {
  auto mp = gnr();
  sim::SimMachine& m = *mp;
  const double l3 = 301989888.0;
  // CLOS 3 may fill 2 of the 15 ways of socket 0's L3; the NIC's first
  // channel carries CLOS 3 and RMID 7.
  REQUIRE(m.write(0, IA32_L3_MASK_0 + 3, 0x3).ok());
  REQUIRE(m.mmio_write(kNicClos, 2, 3).ok());
  REQUIRE(m.mmio_write(kNicRmid, 2, 7).ok());
  REQUIRE(m.attach_channel_workload(0x100, device(uint64_t{200} << 20, 1000.0)).ok());
  CHECK(m.attach_channel_workload(0x103, device(1, 1.0)).error().code == EINVAL);

  // Off: the device's traffic is counted in no RMID.
  m.advance_ms(5000);
  CHECK(m.occupancy_bytes(0, 7) == 0);
  CHECK(m.occupancy_bytes(0, 0) == 0);
  CHECK(mbm_total(m, 0, 7) == 0);

  // IRME only: counted in RMID 7, filling as CLOS 0 (all ways).
  REQUIRE(m.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRME).ok());
  m.advance_ms(5000);
  CHECK(m.occupancy_bytes(0, 7) == Approx(200.0 * (1 << 20)).epsilon(0.01));
  const uint64_t c1 = mbm_total(m, 0, 7);
  // 1000 MB/s for 5 s, in units of the CPUID scale (131072 bytes).
  CHECK(static_cast<double>(c1) == Approx(5e9 / 131072).epsilon(0.01));

  // IRAE too: the device fills CLOS 3's two ways from now on (to the
  // full). Its lines in the other 13 ways stay until something replaces
  // them (nothing does yet)...
  REQUIRE(m.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE | L3_IO_RDT_CFG_IRME).ok());
  m.advance_ms(20000);
  CHECK(m.occupancy_bytes(0, 7) == Approx(200.0 * (1 << 20) * 13 / 15 + l3 * 2 / 15).epsilon(0.01));
  // ... and a CPU filling every other way (CLOS 1) replaces those: the
  // device keeps what it fills in its own two ways.
  REQUIRE(m.write(0, IA32_L3_MASK_0 + 1, 0x7ffc).ok());
  REQUIRE(m.write(0, IA32_PQR_ASSOC, (uint64_t{1} << 32) | 9).ok());
  REQUIRE(m.attach_cpu_workload(0, Workload{uint64_t{1} << 30, 0, 1.0}).ok());
  m.advance_ms(20000);
  CHECK(m.occupancy_bytes(0, 7) == Approx(l3 * 2 / 15).epsilon(0.01));
  CHECK(mbm_total(m, 0, 7) > c1);
  // Socket 1's L3 sees none of it.
  CHECK(m.occupancy_bytes(1, 7) == 0);
  CHECK(mbm_total(m, 4, 7) == 0);

  // Monitoring off again: the count stops.
  REQUIRE(m.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE).ok());
  const uint64_t c2 = mbm_total(m, 0, 7);
  m.advance_ms(5000);
  CHECK(mbm_total(m, 0, 7) == c2);
}

TEST_CASE("an io_rdt profile key that makes a bad table or lacks its prerequisites is refused",
          "[iordt]") {
  auto with = [](const std::string& io, const std::string& extra = "") {
    return R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "l3_size_bytes": 1048576,
               "l3_cat": {"cbm_len": 8, "num_closid": 8},
               "l3_mon": {"num_rmids": 16, "events": ["llc_occupancy"]})" +
           extra + R"(, "io_rdt": )" + io + "}";
  };
  const std::string link =
      R"("links": [{"id": 1, "channels": 4, "regw": true, "mmio": "0x10000"}])";
  auto ok = sim::parse_profile(
      with(R"({"cat": true, "cmt": true, "blocks": [{)" + link +
           R"(, "devices": [{"bdf": "0000:16:00.0", "chms": [{"link": 1, "vcs": [-1, 3]}]}]}]})"),
      "t");
  REQUIRE(ok.ok());
  sim::SimMachine m(std::move(ok).value());
  auto t = parse_irdt(m.irdt_blob());
  REQUIRE(t.ok());
  REQUIRE(t->channels.size() == 1);
  CHECK(t->channels[0].id == 0x103);
  CHECK(t->channels[0].devices[0].vc == 1);
  CHECK(m.limits().io_rdt_alloc);
  CHECK(m.limits().io_rdt_mon);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"blocks": [{)" + link + R"(, "devices": [{"bdf": "16:00.0", "chms": [{"link": 1,
          "vcs": [4]}]}]}]})",
       "channel 4 of RCS 1"},
      {R"({"blocks": [{)" + link + R"(, "devices": [{"bdf": "16:00.0", "chms": [{"link": 2,
          "vcs": [0]}]}]}]})",
       "names RCS 2"},
      {R"({"blocks": [{)" + link + R"(, "devices": [{"bdf": "16:0.9"}]}]})", "is not a"},
      {R"({"blocks": [{"links": [{"id": 1, "type": "nvlink"}]}]})", "type must be"},
      {R"({"blocks": [{"links": [{"id": 1, "channels": 2, "mmio": 0}]}]})", "no MMIO location"},
      {R"({"wide_reg_bytes": 2})", "wide_reg_bytes"},
  };
  for (const auto& [io, why] : bad) {
    INFO(io);
    auto p = sim::parse_profile(with(io), "t");
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == EINVAL);
    CHECK_THAT(p.error().message, Catch::Contains(why));
  }
  // The CPU-agent feature is a prerequisite.
  auto no_cat = sim::parse_profile(
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "io_rdt": {"cat": true}})", "t");
  REQUIRE_FALSE(no_cat.ok());
  CHECK_THAT(no_cat.error().message, Catch::Contains("needs \"l3_cat\""));
  auto no_mon = sim::parse_profile(
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "io_rdt": {"mbm": true}})", "t");
  REQUIRE_FALSE(no_mon.ok());
  CHECK_THAT(no_mon.error().message, Catch::Contains("need \"l3_mon\""));
  auto amd =
      sim::parse_profile(R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}], "io_rdt": {}})", "t");
  REQUIRE_FALSE(amd.ok());
  CHECK_THAT(amd.error().message, Catch::Contains("Intel I/O RDT"));
}

// RDT architecture specification, 4.3 (enumeration of non-CPU agent RDT):
// the CPU agents' feature is a prerequisite, and using the I/O equivalent of
// an absent one "in the MSR interface" is a general protection fault. A
// raw CPUID that sets I/O CAT (0x10.1:ECX[1]) without the CPU agents' L3
// CAT still has IA32_L3_IO_QOS_CFG (an I/O RDT bit is set), but setting IRAE
// there faults.
TEST_CASE("IRAE #GPs where the CPU agents' L3 CAT is not enumerated", "[iordt]") {
  auto p = sim::parse_profile(R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}],
      "l3_size_bytes": 1048576,
      "l3_mon": {"num_rmids": 16, "events": ["llc_occupancy"]},
      "cpuid": {"0x10.1": ["0xb", "0", "0x2", "0xf"]}})",
                              "raw-io-cat");
  REQUIRE(p.ok());
  sim::SimMachine m(std::move(p).value());
  REQUIRE(m.limits().io_rdt_alloc);
  REQUIRE_FALSE(m.info().res(ResourceId::L3).alloc_capable);
  auto v = m.read(0, IA32_L3_IO_RDT_CFG);
  REQUIRE(v.ok());
  CHECK(*v == 0);
  auto w = m.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().code == EIO);
  CHECK(*m.read(0, IA32_L3_IO_RDT_CFG) == 0);
  // On intel-gnr-io, which has both, it is taken.
  auto g = gnr();
  CHECK(g->write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE).ok());
}

// Chapter 6 of the specification: writes to reserved fields of the tagging
// pages are ignored, and a link whose RCS does not set CLOS (or RMID)
// tagging support has no such field: what is written there is dropped and
// reads back 0.
TEST_CASE("tag registers of a link without that tagging ignore writes", "[iordt]") {
  auto p = sim::parse_profile(R"({"vendor": "GenuineIntel", "family": 6, "model": 173,
      "cpus": [{"cpu": 0, "package": 0, "l2": 0, "l3": 0}], "l3_size_bytes": 1048576,
      "l3_cat": {"cbm_len": 8, "num_closid": 8},
      "l3_mon": {"num_rmids": 16, "events": ["llc_occupancy"]},
      "io_rdt": {"cat": true, "cmt": true, "mbm": false, "wide_reg_bytes": 8,
                 "blocks": [{"segment": 0, "package": 0,
                   "links": [{"id": 1, "type": "pcie", "channels": 2, "regw": true,
                              "clos_tagging": false,
                              "mmio": "0xfed10000", "clos_offset": 0, "rmid_offset": 256}],
                   "devices": [{"bdf": "16:00.0", "type": "root-port",
                                "chms": [{"link": 1, "vcs": [0, 1]}]}]}]}})",
                              "no-clos-tagging");
  REQUIRE(p.ok());
  sim::SimMachine m(std::move(p).value());
  REQUIRE(m.mmio_write(0xfed10000, 2, 3).ok());  // IO_PQR_CLOS0: no CLOS tagging here
  CHECK(*m.mmio_read(0xfed10000, 2) == 0);
  REQUIRE(m.mmio_write(0xfed10100, 2, 5).ok());  // IO_PQR_RMID0: RMID tagging is there
  CHECK(*m.mmio_read(0xfed10100, 2) == 5);
}
