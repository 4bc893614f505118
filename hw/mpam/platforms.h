// Defines the built-in MPAM platforms (named for Arm Neoverse server parts)
// and make_mpam_backend(), the MPAM half of the backend factory
// (hw/backend.h's make_sim_backend dispatches here for these names).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "hw/backend.h"
#include "hw/mpam/machine.h"

namespace resctrlfs::hw::mpam {

// Names of the built-in MPAM platforms, in the order --list-platforms shows.
std::vector<std::string> mpam_platform_names();

// The platform `name` ("grace-2s", or "grace-2s@host": fitted to this
// machine's online CPUs as hw/sim/profile.h fits x86 profiles), or nullopt
// when `name` is not an MPAM platform. `host_cpus` overrides the host's
// online CPU count (tests).
std::optional<Result<MpamPlatform>> mpam_platform(const std::string& name,
                                                  std::optional<unsigned> host_cpus = {});

// Gives `p` `n` CPUs in place of its own: CPU i takes the package, core,
// caches and node of the platform's CPU floor(i * M / n) of M. ENODEV when
// n is smaller than the platform's L3 count.
Result<void> fit_platform(MpamPlatform& p, unsigned n);

// The simulated MPAM backend of `name`, or nullopt for a name that is not
// an MPAM platform.
std::optional<Result<Backend>> make_mpam_backend(const std::string& name);

// The arm64 /proc/cpuinfo of a platform's CPUs (`cpus`: the CPU numbers to
// list), as Linux prints it on arm64.
std::string arm64_cpuinfo(const MpamPlatform& p, const std::vector<unsigned>& cpus);

}  // namespace resctrlfs::hw::mpam
