// Defines X86Platform: the platform as the x86 code decodes it from CPUID,
// that is the contract's PlatformInfo (what fs/ sees) plus the CPU's x86
// identity: the CPUID vendor, family, model and stepping (which Linux's
// model quirks key on) and the RDT flags /proc/cpuinfo shows. Whoever needs
// the identity (the decoder's quirks, the broker's policy, the daemon's
// status, the sandbox's /proc/cpuinfo) reads it here, never through
// hw/arch.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hw/arch.h"
#include "hw/backend.h"

namespace resctrlfs::hw::x86 {

struct X86Platform : PlatformInfo {
  std::string vendor;  // "GenuineIntel" / "AuthenticAMD"
  unsigned family = 0, model = 0, stepping = 0;
  // AMD's register layout and rules (Hygon's parts follow AMD's).
  bool amd() const { return vendor == "AuthenticAMD" || vendor == "HygonGenuine"; }
  // The RDT flags /proc/cpuinfo shows, from CPUID as the kernel's feature
  // table reads it (before rdt= and the model quirks): a platform decoded
  // from CPUID has them; for one built by hand (none),
  // cpuinfo_rdt_flags() derives them from the resources instead.
  std::optional<std::vector<std::string>> cpuinfo_flags;
};

// The /proc/cpuinfo flags of the platform (X86Platform::cpuinfo_flags when
// decoded from CPUID, else what its resources imply), in the order the kernel
// prints them (lwp, cat_l3, cat_l2, cdp_l3, cdp_l2, mba, cqm, rdt_a, cqm_llc,
// cqm_occup_llc, cqm_mbm_total, cqm_mbm_local). lwp (AMD Lightweight
// Profiling, CPUID 8000_0001h ECX[15]) is not RDT but is listed with them
// when CPUID shows it, so that a machine decoded from a family-15h dump
// shows it as Linux does. SMBA, BMEC and ABMC have no
// cpuinfo flag in Linux (their feature names are hidden).
std::vector<std::string> cpuinfo_rdt_flags(const X86Platform& info);

// The platform's CPUs as /proc/cpuinfo shows them (hw/backend.h): vendor,
// family, model, cpuinfo_rdt_flags(), and Linux's x86_cache_size, which is
// CPUID 0x80000006's L2 on AMD (and Hygon), else the last level.
CpuDescription cpu_description(const X86Platform& info);

}  // namespace resctrlfs::hw::x86
