// A simulated AMD machine with LWP for the LWP tests: two L3 domains of 11
// ways and 16 MiB, bandwidth limits, and LWP as a JSON object says (a
// profile's "lwp": the generation, the events offered, the interrupt).
// No built-in platform has LWP (none is a family-15h part).
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"

namespace resctrlfs::hw::sim::test {

inline std::string amd_with_lwp(const std::string& lwp) {
  return R"({"vendor": "AuthenticAMD", "family": 25, "model": 1, "stepping": 1,
    "cpus": [{"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0},
             {"cpu": 2, "package": 0, "l2": 2, "l3": 1}, {"cpu": 3, "package": 0, "l2": 3, "l3": 1}],
    "l3_size_bytes": 16777216, "l2_size_bytes": 524288,
    "l3_cat": {"cbm_len": 11, "num_closid": 16},
    "mb": {"num_closid": 16, "bw_len": 11},
    "sim": {"mem_bandwidth_mbps": 20000},
    "lwp": )" +
         lwp + "}";
}

// The machine, on the manual clock.
inline std::unique_ptr<SimMachine> lwp_machine(const std::string& lwp = "{}") {
  auto p = parse_profile(amd_with_lwp(lwp), "lwp-test");
  REQUIRE(p.ok());
  auto m = std::make_unique<SimMachine>(std::move(p).value());
  m->set_manual_clock(true);
  return m;
}

}  // namespace resctrlfs::hw::sim::test
