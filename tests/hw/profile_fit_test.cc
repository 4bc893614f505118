// Tests fitting a built-in profile to another machine's CPUs
// (fit_profile_to_topology, "NAME@host"): the profile's features, limits
// and domains are kept, the host's CPUs are spread over the domains in
// order, and a host with too few CPUs is refused with a message.
#include <catch2/catch.hpp>
#include <set>
#include <tuple>

#include "hw/backend.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;

namespace {

// A host with `n` online CPUs numbered from `first`, all in package 0.
x86::Topology host(unsigned n, unsigned first = 0) {
  x86::Topology t;
  t.nr_cpus = first + n;
  t.online = CpuMask(t.nr_cpus);
  for (unsigned c = first; c < first + n; ++c) t.online.set(c);
  t.package.assign(t.nr_cpus, 0);
  t.l2_id.assign(t.nr_cpus, 0);
  t.l3_id.assign(t.nr_cpus, 0);
  t.node.assign(t.nr_cpus, 0);
  return t;
}

sim::Profile fitted(const std::string& name, const x86::Topology& t) {
  auto p = sim::load_profile(name);
  REQUIRE(p.ok());
  auto r = sim::fit_profile_to_topology(*p, t);
  INFO((r.ok() ? "" : r.error().message));
  REQUIRE(r.ok());
  return std::move(p).value();
}

// (package, l2, l3, node) of each CPU, -1 for a missing one.
std::vector<std::tuple<int, int, int, int>> layout(const sim::Profile& p) {
  std::vector<std::tuple<int, int, int, int>> out;
  for (const auto& c : p.cpus) out.emplace_back(c.package, c.l2, c.l3, c.node);
  return out;
}

}  // namespace

TEST_CASE("fit: two host CPUs on intel-2s take one package and L3 each") {
  sim::Profile p = fitted("intel-2s", host(2));
  CHECK(p.nr_cpus == 2);
  REQUIRE(p.cpus.size() == 2);
  // Host CPU 0 is intel-2s's CPU 0, host CPU 1 its CPU 4 (2 * 1 / ... = 8 * 1 / 2).
  CHECK(layout(p) == std::vector<std::tuple<int, int, int, int>>{{0, 0, 0, 0}, {1, 4, 1, 1}});
  CHECK(p.cpus[0].cpu == 0);
  CHECK(p.cpus[1].cpu == 1);
}

TEST_CASE("fit: as many host CPUs as the profile's is the profile's own layout") {
  auto plain = sim::load_profile("intel-2s");
  REQUIRE(plain.ok());
  sim::Profile p = fitted("intel-2s", host(8));
  CHECK(layout(p) == layout(*plain));
}

TEST_CASE("fit: more host CPUs share the profile's L2s like SMT siblings") {
  sim::Profile p = fitted("amd-2s", host(16));
  REQUIRE(p.cpus.size() == 16);
  for (unsigned c = 0; c < 16; ++c) {
    INFO("cpu " << c);
    CHECK(p.cpus[c].l2 == static_cast<int>(c / 2));
    CHECK(p.cpus[c].l3 == (c < 8 ? 0 : 1));
  }
}

TEST_CASE("fit: the host's CPU numbers are kept, offline ones stay absent") {
  x86::Topology t = host(3, 0);
  t.nr_cpus = 6;
  t.online = CpuMask(6);
  for (unsigned c : {1U, 3U, 5U}) t.online.set(c);
  sim::Profile p = fitted("intel-2s", t);
  CHECK(p.nr_cpus == 6);
  REQUIRE(p.cpus.size() == 6);
  for (unsigned c : {0U, 2U, 4U}) CHECK(p.cpus[c].cpu == -1);
  CHECK(p.cpus[1].cpu == 1);
  CHECK(p.cpus[1].package == 0);  // profile CPU 0
  CHECK(p.cpus[3].package == 0);  // profile CPU 2 (8 * 1 / 3)
  CHECK(p.cpus[5].package == 1);  // profile CPU 5 (8 * 2 / 3)
}

TEST_CASE("fit: every built-in keeps its CPUID and every domain down to one CPU per domain") {
  for (const std::string& name : sim::builtin_profile_names()) {
    if (name == "host") continue;
    auto plain = sim::load_profile(name);
    REQUIRE(plain.ok());
    std::set<std::tuple<int, int, int>> domains;
    for (const auto& c : plain->cpus) domains.emplace(c.package, c.l3, c.node);
    const unsigned d = static_cast<unsigned>(domains.size());
    for (unsigned n = d; n <= 2 * plain->cpus.size() + 1; ++n) {
      INFO(name << " on " << n << " CPUs");
      sim::Profile p = fitted(name, host(n));
      CHECK(p.cpuid == plain->cpuid);  // features and limits
      CHECK(p.telemetry.size() == plain->telemetry.size());
      std::set<std::tuple<int, int, int>> got;
      for (const auto& c : p.cpus) got.emplace(c.package, c.l3, c.node);
      CHECK(got == domains);
    }
    INFO(name << " on " << d - 1 << " CPUs");
    auto p = sim::load_profile(name);
    REQUIRE(p.ok());
    if (d > 1) {
      auto r = sim::fit_profile_to_topology(*p, host(d - 1));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == ENODEV);
      CHECK(r.error().message.find("at least " + std::to_string(d)) != std::string::npos);
    }
  }
}

TEST_CASE("fit: intel-snc on four CPUs keeps SNC2 with one CPU per node") {
  sim::Profile p = fitted("intel-snc", host(4));
  sim::SimMachine m(p);
  const PlatformInfo& info = m.os_info();
  CHECK(info.res(ResourceId::L3).mon.snc_ways == 2);
  CHECK(info.nr_cpus == 4);
  CHECK(info.cpu_ids(Scope::NODE) == std::vector<int>{0, 1, 2, 3});
  CHECK(info.cpu_ids(Scope::L3_CACHE) == std::vector<int>{0, 0, 1, 1});
}

TEST_CASE("NAME@host: this machine's CPUs with the built-in's resources") {
  auto fitted_backend = make_sim_backend("intel-2s@host");
  auto host_backend = make_sim_backend("host");
  auto plain_backend = make_sim_backend("intel-2s");
  REQUIRE(host_backend.ok());
  REQUIRE(plain_backend.ok());
  const x86::X86Platform& h = *host_backend->x86;
  if (h.online.cpus().size() < 2) {
    REQUIRE_FALSE(fitted_backend.ok());
    CHECK(fitted_backend.error().message.find("at least 2") != std::string::npos);
    return;
  }
  REQUIRE(fitted_backend.ok());
  const x86::X86Platform& f = *fitted_backend->x86;
  const x86::X86Platform& p = *plain_backend->x86;
  CHECK(fitted_backend->platform_name == "intel-2s@host");
  CHECK(f.vendor == p.vendor);
  CHECK(f.model == p.model);
  CHECK(f.nr_cpus == h.nr_cpus);
  CHECK(f.online.cpus() == h.online.cpus());
  CHECK(std::set<int>(f.cpu_ids(Scope::L3_CACHE).begin(), f.cpu_ids(Scope::L3_CACHE).end()) ==
        std::set<int>{0, 1});
  for (int r = 0; r < kNumResources; ++r) {
    INFO("resource " << r);
    CHECK(f.resources[r].alloc_capable == p.resources[r].alloc_capable);
    CHECK(f.resources[r].num_closid == p.resources[r].num_closid);
  }
  CHECK(f.res(ResourceId::L3).mon.num_rmids == p.res(ResourceId::L3).mon.num_rmids);
  CHECK(f.res(ResourceId::L3).mon.realloc_limit_bytes ==
        p.res(ResourceId::L3).mon.realloc_limit_bytes);
}

TEST_CASE("NAME@host: only built-ins other than host are fitted") {
  for (const char* bad : {"host@host", "nosuch@host", "/tmp/x.json@host", "intel-2s@host@host"}) {
    INFO(bad);
    auto p = sim::load_profile(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == ENOENT);
    CHECK(p.error().message.find("only a built-in") != std::string::npos);
  }
}

TEST_CASE("cache sizes come from the profile's CPUID") {
  auto p = sim::load_profile("intel-2s");
  REQUIRE(p.ok());
  CHECK(sim::cache_size_bytes(*p, 3) == 16777216);
  CHECK(sim::cache_size_bytes(*p, 2) == 1048576);
  auto a = sim::load_profile("amd-2s");
  REQUIRE(a.ok());
  CHECK(sim::cache_size_bytes(*a, 3) == 33554432);
  CHECK(sim::cache_size_bytes(*a, 2) == 524288);
}

TEST_CASE("fit: a host CPU answers CPUID as the profile CPU whose place it takes") {
  auto p = sim::load_profile("intel-2s");
  REQUIRE(p.ok());
  p->cpuid_per_cpu[4][{0xb, 0}] = CpuidRegs{4, 4, 4, 4};
  p->cpuid_per_cpu[5][{0xb, 0}] = CpuidRegs{5, 5, 5, 5};
  REQUIRE(sim::fit_profile_to_topology(*p, host(2)).ok());
  // Host CPU 1 takes intel-2s's CPU 4; CPU 5 has no host CPU.
  REQUIRE(p->cpuid_per_cpu.size() == 1);
  CHECK(p->cpuid_per_cpu.at(1).at({0xb, 0}) == CpuidRegs{4, 4, 4, 4});
}
