// Tests make_sim_backend() on every built-in profile: the decoded platform
// carries exactly the parameters the profiles promise, and the basic
// downcalls reach the simulated registers.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

#include "hw/backend.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;

namespace {

Backend make(const std::string& name) {
  auto b = make_sim_backend(name);
  INFO(name << ": " << (b.ok() ? "" : b.error().message));
  REQUIRE(b.ok());
  return std::move(b).value();
}

std::vector<unsigned> cpus_of(const CpuMask& m) { return m.cpus(); }

uint64_t reg(const SimControl& sim, unsigned cpu, uint32_t msr) {
  for (const auto& r : sim.dump_registers())
    if (r.cpu == cpu && r.msr == msr) return r.value;
  FAIL("register not found");
  return 0;
}

}  // namespace

TEST_CASE("intel-2s profile decodes to the documented platform") {
  Backend b = make("intel-2s");
  const x86::X86Platform& i = *b.x86;
  CHECK(i.vendor == "GenuineIntel");
  CHECK(i.nr_cpus == 8);
  CHECK(i.online.count() == 8);
  CHECK(i.cpu_ids(Scope::PACKAGE) == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(i.cpu_ids(Scope::L3_CACHE) == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(i.cpu_ids(Scope::L2_CACHE) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.alloc_capable);
  CHECK(l3.num_closid == 15);  // Ice Lake-SP: 15 L3 CAT CLOS
  CHECK(l3.cache.cbm_len == 11);
  CHECK(l3.cache.full_mask() == 0x7ff);
  CHECK(l3.cache.shareable_bits == 0);
  CHECK(l3.cache.min_cbm_bits == 1);
  CHECK_FALSE(l3.cache.sparse_masks);
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 16u << 20);
  REQUIRE(l3.ctrl_domains.size() == 2);
  CHECK(l3.ctrl_domains[0].id == 0);
  CHECK(cpus_of(l3.ctrl_domains[0].cpus) == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(l3.ctrl_domains[1].id == 1);
  CHECK(cpus_of(l3.ctrl_domains[1].cpus) == std::vector<unsigned>{4, 5, 6, 7});
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  const Resource& mb = i.res(ResourceId::MB);
  CHECK(mb.alloc_capable);
  CHECK(mb.num_closid == 15);  // and 15 MBA CLOS
  CHECK(mb.membw.min_bw == 10);
  CHECK(mb.membw.bw_gran == 10);
  CHECK(mb.membw.max_bw == 100);
  CHECK(mb.membw.delay_linear);
  CHECK(mb.membw.arch_needs_linear);
  CHECK(mb.membw.throttle_mode == ThrottleMode::MAX);
  CHECK(mb.ctrl_domains.size() == 2);
  CHECK_FALSE(i.res(ResourceId::SMBA).alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 224);
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 65536);
  CHECK(i.res(ResourceId::L3).mon.counter_width == 32);  // 32-bit MBM counters from Ice Lake-SP on
  CHECK(i.res(ResourceId::L3).mon.event_ids() ==
        std::vector<EventId>{EventId::LLC_OCCUPANCY, EventId::MBM_TOTAL, EventId::MBM_LOCAL});
  CHECK(i.res(ResourceId::L3).mon.realloc_limit_bytes == 16u << 20);
  CHECK(i.res(ResourceId::L3).mon.default_threshold ==
        65536);  // 16 MiB / 224 rounded down to the scale
  CHECK_FALSE(i.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.cntr_assign.capable);
  CHECK(i.res(ResourceId::L3).mon.mon_domains.size() == 2);
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cat_l3", "cdp_l3", "mba", "cqm", "rdt_a",
                                                         "cqm_llc", "cqm_occup_llc",
                                                         "cqm_mbm_total", "cqm_mbm_local"});
}

TEST_CASE("intel-l2 profile decodes to the documented platform") {
  Backend b = make("intel-l2");
  const x86::X86Platform& i = *b.x86;
  CHECK(i.nr_cpus == 4);
  CHECK(i.cpu_ids(Scope::L2_CACHE) == std::vector<int>{0, 0, 2, 2});
  CHECK(i.cpu_ids(Scope::L3_CACHE) == std::vector<int>{0, 0, 0, 0});
  const Resource& l2 = i.res(ResourceId::L2);
  CHECK(l2.alloc_capable);
  CHECK(l2.cache.cbm_len == 8);
  CHECK(l2.num_closid == 8);
  CHECK(l2.cache.cdp_capable);
  CHECK(l2.cache.cache_size_bytes == 1u << 20);
  REQUIRE(l2.ctrl_domains.size() == 2);
  CHECK(l2.ctrl_domains[0].id == 0);
  CHECK(l2.ctrl_domains[1].id == 2);
  CHECK(cpus_of(l2.ctrl_domains[1].cpus) == std::vector<unsigned>{2, 3});
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.alloc_capable);
  CHECK(l3.cache.cbm_len == 12);
  CHECK(l3.num_closid == 8);
  CHECK(l3.cache.shareable_bits == 0xc00);
  CHECK_FALSE(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 8u << 20);
  CHECK_FALSE(i.res(ResourceId::MB).alloc_capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.capable);
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cat_l3", "cat_l2", "cdp_l2", "rdt_a"});
}

TEST_CASE("intel-cmt profile is monitoring only") {
  Backend b = make("intel-cmt");
  const x86::X86Platform& i = *b.x86;
  CHECK(i.nr_cpus == 4);
  for (const auto& r : i.resources) CHECK_FALSE(r.alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 64);
  CHECK(i.res(ResourceId::L3).mon.event_ids() == std::vector<EventId>{EventId::LLC_OCCUPANCY});
  CHECK(i.res(ResourceId::L3).mon.mon_domains.size() == 1);
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cqm", "cqm_llc", "cqm_occup_llc"});
}

TEST_CASE("amd-2s profile decodes to the documented platform") {
  Backend b = make("amd-2s");
  const x86::X86Platform& i = *b.x86;
  CHECK(i.vendor == "AuthenticAMD");
  CHECK(i.nr_cpus == 8);
  CHECK(i.cpu_ids(Scope::PACKAGE) == std::vector<int>(8, 0));
  CHECK(i.cpu_ids(Scope::L3_CACHE) == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.num_closid == 16);
  CHECK(l3.cache.cbm_len == 16);
  CHECK(l3.cache.sparse_masks);
  CHECK(l3.cache.min_cbm_bits == 0);
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 32u << 20);
  for (ResourceId rid : {ResourceId::MB, ResourceId::SMBA}) {
    const Resource& r = i.res(rid);
    CHECK(r.alloc_capable);
    CHECK(r.num_closid == 16);
    CHECK(r.membw.min_bw == 0);
    CHECK(r.membw.bw_gran == 1);
    CHECK(r.membw.max_bw == 2048);
    CHECK_FALSE(r.membw.delay_linear);
    CHECK_FALSE(r.membw.arch_needs_linear);
    CHECK(r.membw.throttle_mode == ThrottleMode::UNDEFINED);
    CHECK(r.ctrl_domains.size() == 2);
  }
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 256);
  CHECK(i.res(ResourceId::L3).mon.counter_width == 44);
  // Linux derives AMD's default from the L2 (512 KiB / 256 RMIDs).
  CHECK(i.res(ResourceId::L3).mon.realloc_limit_bytes == 512u << 10);
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 2048);
  CHECK(i.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK(i.res(ResourceId::L3).mon.evt_cfg.supported_mask == 0x7f);
  CHECK(i.res(ResourceId::L3).mon.evt_cfg.default_total == 0x7f);
  CHECK(i.res(ResourceId::L3).mon.evt_cfg.default_local == 0x15);
  CHECK(i.res(ResourceId::L3).mon.cntr_assign.capable);
  CHECK(i.res(ResourceId::L3).mon.cntr_assign.num_cntrs == 32);
  CHECK(i.res(ResourceId::L3).mon.events.size() == 3);
  CHECK(b.arch->default_ctrl(ResourceId::MB) == 2048);
  CHECK(b.arch->event_config(ResourceId::L3, 0, EventId::MBM_TOTAL) == 0x7f);
  CHECK(b.arch->event_config(ResourceId::L3, 1, EventId::MBM_LOCAL) == 0x15);
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cat_l3", "cdp_l3", "mba", "cqm", "rdt_a",
                                                         "cqm_llc", "cqm_occup_llc",
                                                         "cqm_mbm_total", "cqm_mbm_local"});
}

TEST_CASE("amd-io is amd-2s plus SDCIAE") {
  Backend io = make("amd-io");
  Backend plain = make("amd-2s");
  const x86::X86Platform& i = *io.x86;
  const x86::X86Platform& p = *plain.x86;
  CHECK(i.res(ResourceId::L3).cache.io_alloc_capable);
  CHECK_FALSE(p.res(ResourceId::L3).cache.io_alloc_capable);
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  CHECK(i.vendor == p.vendor);
  CHECK(i.nr_cpus == p.nr_cpus);
  for (int r = 0; r < kNumResources; ++r) {
    INFO("resource " << r);
    CHECK(i.resources[r].alloc_capable == p.resources[r].alloc_capable);
    CHECK(i.resources[r].num_closid == p.resources[r].num_closid);
    CHECK(i.resources[r].cache.cbm_len == p.resources[r].cache.cbm_len);
    CHECK(i.resources[r].cache.cdp_capable == p.resources[r].cache.cdp_capable);
    CHECK(i.resources[r].membw.max_bw == p.resources[r].membw.max_bw);
  }
  CHECK(i.res(ResourceId::L3).mon.num_rmids == p.res(ResourceId::L3).mon.num_rmids);
  CHECK(i.res(ResourceId::L3).mon.cntr_assign.capable ==
        p.res(ResourceId::L3).mon.cntr_assign.capable);
  CHECK(i.res(ResourceId::L3).mon.evt_cfg.capable == p.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK_FALSE(io.arch->io_alloc_enabled(ResourceId::L3));
  REQUIRE(io.arch->set_io_alloc_enabled(ResourceId::L3, true).ok());
  CHECK(reg(*io.sim, 4, x86::L3_QOS_EXT_CFG) & x86::L3_QOS_EXT_CFG_SDCIAE_EN);
}

TEST_CASE("host profile mirrors this machine's CPUs") {
  Backend b = make("host");
  const x86::X86Platform& i = *b.x86;
  CHECK(i.nr_cpus >= 1);
  CHECK(i.online.count() >= 1);
  CHECK(i.res(ResourceId::L3).alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK((i.vendor == "GenuineIntel" || i.vendor == "AuthenticAMD"));
  for (unsigned c : i.online.cpus()) CHECK(i.cpu_ids(Scope::L3_CACHE)[c] >= 0);
}

TEST_CASE("unknown platform is refused") {
  auto b = make_sim_backend("no-such-platform");
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == ENOENT);
  // The message lists the built-ins, and suggests one for a near miss.
  CHECK(b.error().message.find("intel-2s, ") != std::string::npos);
  CHECK(b.error().message.find("did you mean") == std::string::npos);
  auto typo = make_sim_backend("amd2s");
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.error().message.find("unknown platform \"amd2s\" (did you mean amd-2s?)") !=
        std::string::npos);
}

TEST_CASE("sim backend programs registers through the Arch") {
  Backend b = make("intel-2s");
  Arch& a = *b.arch;
  REQUIRE(a.update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 3, 0x0f0},
                          {ResourceId::MB, ConfType::NONE, 0, 2, 40}})
              .ok());
  CHECK(a.get_ctrl(ResourceId::L3, ConfType::NONE, 1, 3) == 0x0f0);
  CHECK(a.get_ctrl(ResourceId::L3, ConfType::NONE, 0, 3) == 0x7ff);
  CHECK(reg(*b.sim, 4, x86::IA32_L3_MASK_0 + 3) == 0x0f0);
  CHECK(reg(*b.sim, 0, x86::IA32_L2_QOS_EXT_BW_THRTL_0 + 2) == 60);
  REQUIRE(a.set_cpu_assoc(5, 3, 7).ok());
  CHECK(reg(*b.sim, 5, x86::IA32_PQR_ASSOC) == ((3ULL << 32) | 7));
  auto v = a.read_counter(ResourceId::L3, 0, 0, 0, EventId::MBM_TOTAL, nullptr);
  CHECK(v.err == ReadError::kNone);
  // A non-contiguous mask is refused by the (simulated) hardware.
  auto r = a.update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 1, 0x505}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EIO);
  CHECK(a.get_ctrl(ResourceId::L3, ConfType::NONE, 0, 1) == 0x7ff);
}

TEST_CASE("a JSON profile of raw CPUID leaves from a real machine") {
  Backend b = make(std::string(RESCTRLFS_HW_TEST_DATA) + "/profile-xeon-gold-6252.json");
  const x86::X86Platform& i = *b.x86;
  CHECK(i.model == 0x55);
  CHECK(i.nr_cpus == 4);
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.cache.full_mask() == 0x7ff);
  CHECK(l3.cache.shareable_bits == 0x600);
  CHECK(l3.cache.cache_size_bytes == 37486592);  // from leaf 4, not the profile
  CHECK(l3.ctrl_domains.size() == 2);
  CHECK(i.res(ResourceId::MB).num_closid == 8);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 208);
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 106496);
  // The simulated hardware enforces the dump's limits.
  CHECK(b.arch->update_ctrls({{ResourceId::MB, ConfType::NONE, 1, 7, 10}}).ok());
  CHECK(reg(*b.sim, 2, x86::IA32_L2_QOS_EXT_BW_THRTL_0 + 7) == 90);
  CHECK(b.arch->set_cpu_assoc(3, 15, 207).ok());
  CHECK_FALSE(b.arch->set_cpu_assoc(3, 16, 0).ok());
}

TEST_CASE("the rdt= boot parameter of a profile and of the daemon") {
  const std::string path = std::string(RESCTRLFS_HW_TEST_DATA) + "/profile-xeon-gold-6252.json";
  // The profile says rdt=l3cat; an extra !mba hides MB on top of it.
  Backend b = make_sim_backend(path, "!mba").value();
  CHECK(b.arch->info().res(ResourceId::L3).alloc_capable);
  CHECK_FALSE(b.arch->info().res(ResourceId::MB).alloc_capable);
  // The registers are the hardware's, whatever the kernel shows: MBA's
  // throttle MSRs exist (boot value 0) though MB is hidden.
  CHECK(reg(*b.sim, 0, x86::IA32_L2_QOS_EXT_BW_THRTL_0) == 0);
  // A force-off does not undo the profile's force-on (the kernel's rule).
  Backend still = make_sim_backend(path, "!l3cat").value();
  CHECK(still.arch->info().res(ResourceId::L3).alloc_capable);
  // Without any rdt=l3cat, Linux's quirk for model 0x55 hides L3 CAT.
  auto text = R"({"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 7,
      "cpus": [{"cpu": 0}], "l3_size_bytes": 8388608,
      "l3_cat": {"cbm_len": 11, "num_closid": 16},
      "l3_mon": {"num_rmids": 64, "events": ["llc_occupancy"]}})";
  char tmpl[] = "/tmp/rdt-profile-XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text, strlen(text)) == static_cast<ssize_t>(strlen(text)));
  close(fd);
  Backend clx = make_sim_backend(tmpl).value();
  CHECK_FALSE(clx.arch->info().res(ResourceId::L3).alloc_capable);
  CHECK(clx.arch->info().res(ResourceId::L3).mon.capable);
  CHECK(make_sim_backend(tmpl, "l3cat").value().arch->info().res(ResourceId::L3).alloc_capable);
  unlink(tmpl);
}
