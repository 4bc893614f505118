// Defines the CPUID decoder: raw CPUID leaves (Intel RDT or AMD PQoS) plus
// the machine's topology become the X86Platform (the hw::PlatformInfo that
// fs/ sees, plus the CPU's identity), with
// exactly the values Linux shows under /sys/fs/resctrl/info.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpumask.h"
#include "base/result.h"
#include "hw/arch.h"
#include "hw/x86/device.h"
#include "hw/x86/platform.h"

namespace resctrlfs::hw::x86 {

// What CPUID does not say: which CPUs exist and which caches they share.
struct Topology {
  unsigned nr_cpus = 0;
  CpuMask online;
  std::vector<int> package;  // per CPU
  std::vector<int> l2_id;    // per CPU, -1 if none
  std::vector<int> l3_id;    // per CPU, -1 if none
  std::vector<int> node;     // NUMA node per CPU, -1 if unknown (then no SNC)
  // Physical core per CPU, a machine-wide id (SMT siblings share it); empty
  // or -1: unknown, and the L2 id stands in (one L2 per core on the parts
  // with STLB QoS, the only user).
  std::vector<int> core;
  // Cache sizes used when CPUID leaf 4 / 0x8000001D does not describe them.
  uint64_t l2_size_bytes = 0;
  uint64_t l3_size_bytes = 0;
};

// Size in bytes of the cache of `level` (2 or 3) from the deterministic
// cache parameters leaf (4 on Intel, 0x8000001D on AMD), or 0.
uint64_t cpuid_cache_size(const CpuidSource& src, unsigned cpu, bool amd, unsigned level);

// The vendor string of CPUID leaf 0 ("GenuineIntel", "AuthenticAMD", ...).
std::string cpuid_vendor(const CpuidSource& src, unsigned cpu);

// The kernel's rdt= boot parameter: a comma-separated list of feature names
// (cmt, mbmtotal, mbmlocal, l3cat, l3cdp, l2cat, l2cdp, mba, smba, bmec,
// abmc, sdciae; and ours: cba), each turned off by a leading '!'. A feature the CPU does not
// enumerate cannot be turned on; a name given both ways is on; unknown
// names are ignored. The default (empty) is what a plain boot shows.
struct RdtOptions {
  std::vector<std::string> force_on, force_off;

  static RdtOptions parse(std::string_view list);
  // For a command line (ours: the kernel ignores what it does not know):
  // EINVAL naming the first token that is no feature name, with the
  // nearest name and the list. "energy", "perf" and "perf:<hex guid>" (up
  // to 8 digits, 0x optional) name telemetry groups.
  static Result<void> check(std::string_view list);
  // Every feature on: the platform as the hardware enumerates it, before
  // any kernel policy (what a register model or an MSR guard needs).
  static RdtOptions all();
  bool forced_on(std::string_view name) const;
  bool forced_off(std::string_view name) const;
  // Whether a feature the CPU has stays enabled.
  bool enabled(std::string_view name) const { return forced_on(name) || !forced_off(name); }
};

// Sub-NUMA Clustering as Linux infers it (there is no CPUID bit): on the
// models that have MSR_RMID_SNC_CONFIG only, the number of online CPUs
// sharing the first CPU's L3 divided by the number in its NUMA node; any
// result other than 2, 3, 4 or 6 means no SNC (1).
unsigned snc_nodes_per_l3(const std::string& vendor, unsigned family, unsigned model,
                          const Topology& topo);

// Decodes the platform. `probe` (optional) is used only for the Haswell
// server quirk, whose L3 CAT is found by writing and reading back
// IA32_L3_MASK_0 rather than by CPUID. `options` are the rdt= boot
// parameter; on top of them the decoder applies Linux's model quirks (on
// Skylake/Cascade Lake servers, family 6 model 0x55, L3 CAT is off unless
// rdt=l3cat, and up to stepping 4 so are cmt, mbmtotal and mbmlocal).
X86Platform decode_platform(const CpuidSource& src, const Topology& topo,
                            MsrDevice* probe = nullptr, const RdtOptions& options = {});

// STLB QoS (ours in the tree; Intel RDT architecture specification,
// Appendix B): fills info's STLB resource when CPUID.7.0:EDX[30] is set and
// IA32_CORE_CAPABILITIES bit 0 says so, from STLB_QOS_INFO read on the first
// online CPU through `msr`: NCLOS + 1 CLOSIDs, a 4K_2M_CBM + 1 bit
// contiguous mask (at least one bit, no shareable bits, no CDP), one control
// domain per physical core (PlatformInfo::cpu_core). Leaves it absent when
// a read fails (a broker that does not allow it, a part without the
// registers) or the mask length exceeds the 8-bit mask field. Shown only
// with the `stlb` mount option. Enumeration reads registers, so it is a
// separate step from decode_platform(), for the callers that can reach them.
void decode_stlb(X86Platform& info, const CpuidSource& src, MsrDevice& msr);

// The non-enumerated L3 CAT of Intel TCC parts (Intel RDT architecture
// specification, Appendix B, Table B-8): CLOSIDs and mask length for a
// family-6 `model` whose CPUID brand string names a listed part, or
// nullopt. Table B-8 names parts by brand string only; the model numbers
// are those of the parts' product generations.
struct TccL3Part {
  const char* sku;  // as it appears in the brand string, e.g. "i7-1185GRE"
  unsigned model;
  unsigned num_closid;
  unsigned cbm_len;
};
std::optional<TccL3Part> tcc_l3_part(unsigned family, unsigned model, const std::string& brand);

// The CPUID brand string (leaves 0x80000002-0x80000004), leading and
// trailing blanks removed; empty when the CPU has none.
std::string cpuid_brand(const CpuidSource& src, unsigned cpu);

// The MBM errata correction (Intel SKX99 / BDF102): counts of RMIDs above
// `rmid_threshold` are multiplied by `factor`. Absent (factor 0) on
// unaffected parts.
struct MbmCorrection {
  uint32_t rmid_threshold = 0;
  double factor = 0;  // 0: no correction
};
MbmCorrection mbm_correction(const X86Platform& info);

// The MSR_MISC_FEATURE_CONTROL bits that turn the hardware prefetchers off
// on the models Linux validated for cache pseudo-locking (Broadwell server,
// Goldmont, Goldmont Plus), or 0: without them pseudo-locking is not
// offered. Decided from vendor/family/model alone, as Linux does.
uint64_t prefetch_disable_bits(const std::string& vendor, unsigned family, unsigned model);

// Hardware limits the MSR programming and the broker need beyond
// PlatformInfo (which speaks in user-visible units).
struct HwLimits {
  unsigned mba_max_delay = 0;   // Intel MBA: CPUID.0x10.3:EAX[11:0] + 1
  unsigned cba_max_level = 0;   // Intel CBA: CPUID.0x10.5:EAX[7:0] (0: no CBA)
  unsigned cba_num_closid = 0;  // Intel CBA: CPUID.0x10.5:EDX[15:0] + 1
  unsigned amd_bw_len = 0;      // AMD MB: CPUID.0x80000020.1:EAX
  unsigned amd_smba_len = 0;    // AMD SMBA: CPUID.0x80000020.2:EAX
  unsigned max_rmid_any = 0;    // CPUID.0xF.0:EBX (highest RMID of any resource)
  unsigned num_closid_any = 0;  // highest CLOSID count of any resource
  bool amd = false;
  // Intel non-CPU agent RDT (I/O RDT): L3 CAT (CPUID.0x10.1:ECX[1]) and
  // CMT/MBM (CPUID.0xF.1:EAX[9,10]) for devices; enabled through
  // IA32_L3_IO_RDT_CFG. resctrl has no interface for them yet.
  bool io_rdt_alloc = false;
  bool io_rdt_mon = false;
};
HwLimits decode_limits(const CpuidSource& src, unsigned cpu);

// CPUID is per logical processor. decode_platform() reads the first online
// CPU; this reads the RDT/PQoS leaves (vendor, family/model, the PQM/PQE
// bits of leaf 7, leaves 0xF and 0x10, AMD's 0x80000008 EBX and 0x80000020)
// on every online CPU and lists each register that differs from the first
// CPU's ("CPU 3 leaf 0x10.1: ..., CPU 0: ..."); empty when all agree.
std::vector<std::string> rdt_cpuid_differences(const CpuidSource& src, const Topology& topo);

// EINVAL naming the first difference (and how many there are) when the
// online CPUs do not enumerate the same RDT/PQoS leaves. We refuse rather
// than combine: resctrl has one set of CLOSIDs, RMIDs, mask lengths and
// events for the whole machine and programs the same values on every CPU,
// while the SDM and the AMD64 PQoS specification describe these leaves per
// logical processor and give no rule to merge differing ones (a mask or
// CLOSID valid on one CPU would #GP on another; taking the smallest of each
// field would still pair, say, one CPU's mask length with another's
// shareable bits). Linux itself reads them on the boot CPU only.
Result<void> check_rdt_cpuid_uniform(const CpuidSource& src, const Topology& topo);

}  // namespace resctrlfs::hw::x86
