// Defines platform profiles: the description of a simulated machine (vendor,
// topology, cache sizes, RDT/PQoS capabilities as raw CPUID leaves, and the
// workload model's physical parameters), the built-in profiles, the JSON
// format, and the `host` profile that mirrors this machine's topology.
//
// JSON format (every key optional unless stated):
//   {
//     "vendor": "GenuineIntel" | "AuthenticAMD",             (required)
//     "family": 6, "model": 106, "stepping": 6,
//     "cpus": [{"cpu": 0, "package": 0, "core": 0, "l2": 0, "l3": 0,
//               "node": 0}, ...],
//             (required; "node" is the NUMA node, default the package: CPUs
//             of one L3 split over several nodes is Sub-NUMA Clustering on
//             the Intel models Linux checks for it; "core" is the physical
//             core within the package, default the L2 id: CPUs with the same
//             package and core are SMT siblings)
//     "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
//     // The kernel's rdt= boot parameter the simulated machine was booted
//     // with, e.g. "l3cat" on a Cascade Lake, "!mba" (see x86::RdtOptions).
//     "rdt": "l3cat,!l3cdp",
//     // High-level capabilities; the simulator synthesises the CPUID leaves.
//     "l3_cat": {"cbm_len": 11, "num_closid": 16, "shareable_bits": 0,
//                "sparse": false, "cdp": true,
//                "io_alloc": false},                        (AMD SDCIAE)
//     "l2_cat": {... same keys ...},
//     "mba":    {"num_closid": 8, "max_delay": 90, "linear": true,
//                "per_thread": false},                        (Intel)
//     "cba":    {"num_closid": 15, "max_level": 9, "linear": true,
//                "scope": 0},          (Intel Cache Bandwidth Allocation, ours)
//     "mb":     {"num_closid": 16, "bw_len": 11},             (AMD)
//     "smba":   {"num_closid": 16, "bw_len": 11},             (AMD)
//     "l3_mon": {"num_rmids": 224, "scale": 65536, "counter_width": 24,
//                "events": ["llc_occupancy", "mbm_total_bytes",
//                           "mbm_local_bytes"],
//                "bmec_mask": 127, "abmc_counters": 32,          (AMD)
//                "overflow_bit": false},                         (Intel)
//     // Raw leaves, as copied from a real machine. They override whatever
//     // was synthesised for the same (leaf, subleaf); absent leaves read 0.
//     "cpuid": {"0x10.1": ["0x0000000a", "0x00000600", "0x00000004",
//                          "0x0000000f"], ...},
//     // Per logical processor: leaves CPU N answers differently, over the
//     // table above (the same syntax). resctrlfsd refuses a machine whose
//     // CPUs differ in an RDT/PQoS leaf (x86::check_rdt_cpuid_uniform).
//     "cpuid_per_cpu": {"3": {"0x10.1": [...]}},
//     // Intel telemetry (AET): the per-RMID PMT aggregators, by GUID (the
//     // layouts in hw/x86/aet.h), one entry per aggregator. num_rmids
//     // defaults to the layout's; size to the layout's MMIO size.
//     "telemetry": [{"guid": "0x26696143", "package": 0, "num_rmids": 576,
//                    "size": 9240}, ...],
//     // Intel I/O RDT (ours; RDT for non-CPU agents): the CPUID bits, the
//     // ACPI IRDT table and the MMIO tagging registers of the machine's
//     // I/O blocks. "cat" needs "l3_cat", "cmt"/"mbm" need "l3_mon" (the
//     // CPU-agent features are prerequisites). wide_reg_bytes: the width of
//     // a register whose link has "regw" false (the specification says 8 in
//     // one place and 4 in another; the platform decides). Each block is an
//     // RMUD; its I/O fills go to the L3 of "package". A device lists, per
//     // link it uses, the channel of each of its virtual channels (VC0
//     // first; -1: not mapped).
//     "io_rdt": {"cat": true, "cmt": true, "mbm": true, "wide_reg_bytes": 8,
//                "blocks": [{"segment": 0, "package": 0,
//                  "links": [{"id": 1, "type": "pcie" | "cxl.cache",
//                             "channels": 8, "regw": true, "rmid_tagging": true,
//                             "clos_tagging": true, "mmio": "0xfed10000",
//                             "clos_offset": 0, "rmid_offset": 256}],
//                  "devices": [{"bdf": "16:00.0", "type": "root-port" | "rceip",
//                               "chms": [{"link": 1, "vcs": [2, 3],
//                                         "shared": false}]}]}]},
//     // STLB QoS (Intel, model specific; ours in the tree): CPUID.7.0:EDX[30],
//     // IA32_CORE_CAPABILITIES bit 0 and the core-scope STLB_QOS_INFO /
//     // STLB_QOS_MASK_n registers. num_closid 1..64, cbm_len 1..8; "fill":
//     // STLB_FILL_TRANSLATION exists; "alias": 4K and 2M pages share the
//     // STLB (STLB_QOS_INFO bit 30).
//     "stlb": {"num_closid": 8, "cbm_len": 8, "fill": false, "alias": true},
//     // AMD Lightweight Profiling (ours: an instrument of the simulator):
//     // CPUID 8000_0001h ECX[15] and leaf 8000_001Ch in the layout of the
//     // generation (hw/x86/lwp_cpuid.h): "shipped" (AMD pub. 43724, the
//     // family-15h parts) or "proposal" (the 2007 proposal); the events
//     // offered (default all: value (LWPVAL, shipped only), instructions,
//     // branches, dcache) and the threshold interrupt (default true).
//     // Raw "cpuid" leaves may give the same instead.
//     "lwp": {"generation": "shipped", "events": ["instructions", "dcache"],
//             "interrupt": true},
//     // The CPUID brand string (leaves 0x80000002-4, at most 48 characters).
//     // On the Intel TCC parts of the RDT specification's Table B-8 it is
//     // what finds their non-enumerated L3 CAT (with family and model).
//     "brand": "11th Gen Intel(R) Core(TM) i7-1185GRE @ 2.80GHz",
//     // Workload model.
//     "sim": {"mem_bandwidth_mbps": 20000, "mbm_hw_counters": 0,
//             "occupancy_fill_ms": 50, "occupancy_decay_ms": 1000}
//   }
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/device.h"
#include "hw/x86/irdt.h"

namespace resctrlfs::hw::sim {

struct CpuPlacement {
  int cpu = 0;
  int package = 0;
  int l2 = -1;
  int l3 = -1;
  int node = -1;  // NUMA node
  int core = -1;  // physical core (SMT siblings share it within a package)
};

// Physical parameters of the workload model.
struct SimParams {
  double mem_bandwidth_mbps = 20000;  // peak memory bandwidth per L3 domain
  // RMIDs an AMD-style L3 domain can count at once (0: unlimited). An RMID
  // that is not being counted reads Unavailable; see machine.h.
  unsigned mbm_hw_counters = 0;
  double occupancy_fill_ms = 50;  // time constant of cache filling
  // Accepted for old profiles, unused: occupancy falls only by replacement
  // (hw/sim/machine.h), never with time.
  double occupancy_decay_ms = 1000;
};

using CpuidKey = std::pair<uint32_t, uint32_t>;  // (leaf, subleaf)

// One simulated PMT telemetry aggregator.
struct TelemetryAggregator {
  uint32_t guid = 0;
  int package = 0;
  unsigned num_rmids = 0;
  uint64_t size = 0;
};

// The machine's I/O RDT: its IRDT table (description) and, per RMUD, the
// package whose L3 its devices fill.
struct IoRdtProfile {
  x86::IrdtDesc irdt;
  std::vector<int> block_package;  // parallel to irdt.rmuds
  unsigned wide_reg_bytes = 8;
  bool cat = false, cmt = false, mbm = false;
};

// STLB QoS as the profile describes it (see "stlb" above).
struct StlbProfile {
  unsigned num_closid = 8;
  unsigned cbm_len = 8;
  bool fill = false;
  bool alias = true;
};

struct Profile {
  std::string name;
  std::string vendor;
  unsigned family = 6, model = 0, stepping = 0;
  std::vector<CpuPlacement> cpus;  // index = CPU number
  unsigned nr_cpus = 0;            // bitmap width (possible CPUs)
  uint64_t l2_size_bytes = 0;
  uint64_t l3_size_bytes = 0;
  std::map<CpuidKey, CpuidRegs> cpuid;  // the complete CPUID table
  // Leaves that one logical processor answers differently (CPUID is per
  // logical processor): CPU -> (leaf, subleaf) -> registers, over `cpuid`.
  std::map<unsigned, std::map<CpuidKey, CpuidRegs>> cpuid_per_cpu;
  x86::RdtOptions rdt;  // the rdt= boot parameter
  std::vector<TelemetryAggregator> telemetry;
  std::optional<IoRdtProfile> io_rdt;
  std::optional<StlbProfile> stlb;
  SimParams sim;

  bool amd() const { return vendor == "AuthenticAMD" || vendor == "HygonGenuine"; }
  x86::Topology topology() const;
};

// Names of the built-in profiles.
std::vector<std::string> builtin_profile_names();

// A built-in profile by name, or a JSON file by path. ENOENT for an unknown
// name / unreadable file, EINVAL (with a message) for a malformed profile.
Result<Profile> load_profile(const std::string& name_or_path);

// A built-in profile fitted to this machine: "intel-2s@host" is intel-2s
// (features, domains, limits, cache sizes) with this machine's online CPUs
// spread over its domains by fit_profile_to_topology(). Ours, for the
// sandbox, which must show the platform on the host's real CPUs.
inline constexpr const char* kFitToHostSuffix = "@host";

// Gives `p` the online CPUs of `host` in place of its own: host CPU number
// i of N (in ascending order) takes the package, L2, L3 and NUMA node of
// the profile's CPU number floor(i * M / N) of M (in ascending order). With
// N == M the layout is the profile's own; with fewer host CPUs each domain
// keeps at least one CPU; with more, the extra CPUs share the L2s of the
// profile's CPUs as SMT siblings would. Fails with ENODEV (and a message
// naming the minimum) when the host has fewer CPUs than the profile has
// domains (distinct package, L3 and node), or when a domain would be left
// without a CPU.
Result<void> fit_profile_to_topology(Profile& p, const x86::Topology& host);

// The size in bytes of the profile's cache at `level` (2 or 3) as its CPUID
// describes it (the *_size_bytes fields when CPUID does not), 0 if none.
uint64_t cache_size_bytes(const Profile& p, unsigned level);

// Parses a profile from JSON text.
Result<Profile> parse_profile(const std::string& json_text, const std::string& name);

// The `host` profile: this machine's CPUs, package and cache ids from sysfs
// (rooted at `sysfs_cpu_dir`, normally /sys/devices/system/cpu), its CPUID
// vendor, and intel-2s / amd-2s style capabilities.
Result<Profile> host_profile(const std::string& sysfs_cpu_dir = "/sys/devices/system/cpu");

// This machine's CPUID vendor string (/dev/cpu/0/cpuid, else the CPUID
// instruction; "GenuineIntel" on non-x86 builds).
std::string host_cpuid_vendor();

}  // namespace resctrlfs::hw::sim
