// Implements the CPUID decoder for Intel RDT and AMD PQoS (see
// cpuid_decode.h). The rules mirror what Linux's arch/x86 resctrl derives
// from the same leaves, so info/ shows the same numbers.
#include "hw/x86/cpuid_decode.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>

#include "base/suggest.h"
#include "hw/x86/aet.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::x86 {
namespace {

unsigned first_cpu(const Topology& topo) {
  unsigned c = topo.online.first();
  return c < topo.online.size() ? c : 0;
}

// Groups online CPUs by a per-CPU id; domains come out sorted by id.
std::vector<CtrlDomain> domains_by_id(const Topology& topo, const std::vector<int>& ids) {
  std::map<int, CpuMask> by_id;
  for (unsigned c = 0; c < topo.nr_cpus && c < ids.size(); ++c) {
    if (!topo.online.test(c) || ids[c] < 0) continue;
    auto [it, inserted] = by_id.try_emplace(ids[c], CpuMask(topo.nr_cpus));
    it->second.set(c);
  }
  std::vector<CtrlDomain> out;
  for (auto& [id, mask] : by_id) out.push_back(CtrlDomain{id, mask});
  return out;
}

void decode_cache(const CpuidRegs& r, bool amd, Resource& res) {
  res.alloc_capable = true;
  res.num_closid = (r.edx & CPUID_10_EDX_COS_MAX_MASK) + 1;
  res.cache.cbm_len = (r.eax & CPUID_10_CACHE_EAX_CBM_LEN_MASK) + 1;
  res.cache.shareable_bits = r.ebx & res.cache.full_mask();
  res.cache.cdp_capable = (r.ecx & CPUID_10_CACHE_ECX_CDP) != 0;
  // AMD allows any mask, including empty ones; Intel enumerates it.
  res.cache.sparse_masks = amd || (r.ecx & CPUID_10_CACHE_ECX_NONCONT) != 0;
  res.cache.min_cbm_bits = amd ? 0 : 1;
}

// The feature names of the kernel's rdt= boot parameter.
constexpr const char* kKernelRdtNames[] = {"cmt",   "mbmtotal", "mbmlocal", "l3cat",
                                           "l3cdp", "l2cat",    "l2cdp",    "mba",
                                           "smba",  "bmec",     "abmc",     "sdciae"};

// Correction factors of the SKX99 / BDF102 errata, indexed by
// (number of RMIDs / 8) - 1, as published in the resctrl documentation.
// That table skips the 5-core row (40 RMIDs); the errata and Linux have it
// (threshold 31, factor 1.066667). Rows with factor 1 change nothing.
struct CfRow {
  uint32_t rmid_threshold;
  double factor;
};
constexpr CfRow kMbmCfTable[] = {
    {0, 1.000000},   {0, 1.000000},   {15, 0.969650},  {0, 1.000000},   {31, 1.066667},
    {31, 0.969650},  {47, 1.142857},  {0, 1.000000},   {63, 1.185115},  {63, 1.066553},
    {79, 1.454545},  {0, 1.000000},   {95, 1.230769},  {95, 1.142857},  {95, 1.066667},
    {0, 1.000000},   {127, 1.254863}, {127, 1.185255}, {0, 1.000000},   {127, 1.066667},
    {0, 1.000000},   {159, 1.454334}, {0, 1.000000},   {127, 0.969744}, {191, 1.280246},
    {191, 1.230921}, {0, 1.000000},   {191, 1.143118},
};
static_assert(std::size(kMbmCfTable) == 28);

}  // namespace

RdtOptions RdtOptions::parse(std::string_view list) {
  RdtOptions o;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view tok = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    bool off = !tok.empty() && tok.front() == '!';
    if (off) tok.remove_prefix(1);
    if (tok.empty()) continue;
    (off ? o.force_off : o.force_on).emplace_back(tok);
  }
  return o;
}

Result<void> RdtOptions::check(std::string_view list) {
  const std::vector<std::string> kernel(std::begin(kKernelRdtNames), std::end(kKernelRdtNames));
  const std::vector<std::string> ours = {"cba", "energy", "perf"};
  std::vector<std::string> all = kernel;
  all.insert(all.end(), ours.begin(), ours.end());
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view tok = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (tok.empty()) continue;
    std::string_view name = tok.front() == '!' ? tok.substr(1) : tok;
    const size_t colon = name.find(':');
    bool ok = std::find(all.begin(), all.end(), name) != all.end();
    if (!ok && colon != std::string_view::npos && name.substr(0, colon) == "perf")
      ok = parse_aet_guid(name.substr(colon + 1)).has_value();
    if (ok) continue;
    return Error::make(
        EINVAL, "unknown feature \"" + std::string(name) + "\"" + did_you_mean(name, all) +
                    "; the kernel's rdt= names: " + join_names(kernel) +
                    "; ours: cba, energy, perf, perf:<guid>" + " (a leading ! turns one off)");
  }
  return Ok();
}

RdtOptions RdtOptions::all() {
  RdtOptions o;
  o.force_on.assign(std::begin(kKernelRdtNames), std::end(kKernelRdtNames));
  return o;
}

bool RdtOptions::forced_on(std::string_view name) const {
  return std::find(force_on.begin(), force_on.end(), name) != force_on.end();
}

bool RdtOptions::forced_off(std::string_view name) const {
  return std::find(force_off.begin(), force_off.end(), name) != force_off.end();
}

unsigned snc_nodes_per_l3(const std::string& vendor, unsigned family, unsigned model,
                          const Topology& topo) {
  if (vendor != "GenuineIntel" || family != 6) return 1;
  if (std::find(std::begin(kSncModels), std::end(kSncModels), model) == std::end(kSncModels))
    return 1;
  const unsigned c0 = first_cpu(topo);
  if (c0 >= topo.l3_id.size() || c0 >= topo.node.size()) return 1;
  const int l3 = topo.l3_id[c0], node = topo.node[c0];
  if (l3 < 0 || node < 0) return 1;
  unsigned per_l3 = 0, per_node = 0;
  for (unsigned c = 0; c < topo.nr_cpus; ++c) {
    if (!topo.online.test(c)) continue;
    if (c < topo.l3_id.size() && topo.l3_id[c] == l3) ++per_l3;
    if (c < topo.node.size() && topo.node[c] == node) ++per_node;
  }
  if (per_node == 0) return 1;
  const unsigned ways = per_l3 / per_node;
  switch (ways) {
    case 2:
    case 3:
    case 4:
    case 6:
      return ways;
    default:
      return 1;  // 1, or a ratio no SNC configuration produces
  }
}

std::string cpuid_vendor(const CpuidSource& src, unsigned cpu) {
  CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_VENDOR, 0);
  char buf[13];
  std::memcpy(buf, &r.ebx, 4);
  std::memcpy(buf + 4, &r.edx, 4);
  std::memcpy(buf + 8, &r.ecx, 4);
  buf[12] = 0;
  return std::string(buf);
}

uint64_t cpuid_cache_size(const CpuidSource& src, unsigned cpu, bool amd, unsigned level) {
  uint32_t leaf = amd ? CPUID_LEAF_AMD_CACHE_TOPO : CPUID_LEAF_CACHE_PARAMS;
  if (amd && src.cpuid(cpu, CPUID_LEAF_EXT_MAX, 0).eax < leaf) return 0;
  if (!amd && src.cpuid(cpu, CPUID_LEAF_VENDOR, 0).eax < leaf) return 0;
  for (uint32_t sub = 0; sub < 16; ++sub) {
    CpuidRegs r = src.cpuid(cpu, leaf, sub);
    unsigned type = r.eax & 0x1F;
    if (type == 0) break;
    if (((r.eax >> 5) & 0x7) != level || type == 2 /* instruction cache */) continue;
    uint64_t ways = ((r.ebx >> 22) & 0x3FF) + 1;
    uint64_t partitions = ((r.ebx >> 12) & 0x3FF) + 1;
    uint64_t line = (r.ebx & 0xFFF) + 1;
    uint64_t sets = uint64_t{r.ecx} + 1;
    return ways * partitions * line * sets;
  }
  return 0;
}

HwLimits decode_limits(const CpuidSource& src, unsigned cpu) {
  HwLimits lim;
  lim.amd = cpuid_vendor(src, cpu) == "AuthenticAMD";
  uint32_t max_leaf = src.cpuid(cpu, CPUID_LEAF_VENDOR, 0).eax;
  uint32_t max_ext = src.cpuid(cpu, CPUID_LEAF_EXT_MAX, 0).eax;
  if (max_leaf >= CPUID_LEAF_PQE) {
    for (uint32_t sub = 1; sub <= 3; ++sub) {
      CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_PQE, sub);
      if (r.eax == 0 && r.edx == 0) continue;
      lim.num_closid_any = std::max(lim.num_closid_any, (r.edx & CPUID_10_EDX_COS_MAX_MASK) + 1);
      if (sub == 3) lim.mba_max_delay = (r.eax & CPUID_10_3_EAX_MAX_DELAY_MASK) + 1;
      if (sub == 1 && !lim.amd) lim.io_rdt_alloc = (r.ecx & CPUID_10_CACHE_ECX_IO) != 0;
    }
    if (!lim.amd && (src.cpuid(cpu, CPUID_LEAF_PQE, 0).ebx & CPUID_10_0_EBX_CBA) != 0) {
      CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_PQE, 5);
      lim.cba_max_level = r.eax & CPUID_10_5_EAX_MAX_LEVEL_MASK;
      lim.cba_num_closid = (r.edx & CPUID_10_EDX_COS_MAX_MASK) + 1;
      lim.num_closid_any = std::max(lim.num_closid_any, lim.cba_num_closid);
    }
  }
  if (max_leaf >= CPUID_LEAF_PQM) {
    lim.max_rmid_any = src.cpuid(cpu, CPUID_LEAF_PQM, 0).ebx;
    uint32_t eax = src.cpuid(cpu, CPUID_LEAF_PQM, 1).eax;
    lim.io_rdt_mon = !lim.amd && (eax & (CPUID_F_1_EAX_IO_CMT | CPUID_F_1_EAX_IO_MBM)) != 0;
  }
  if (lim.amd && max_ext >= CPUID_LEAF_AMD_PQE_EXT) {
    CpuidRegs mb = src.cpuid(cpu, CPUID_LEAF_AMD_PQE_EXT, 1);
    CpuidRegs smba = src.cpuid(cpu, CPUID_LEAF_AMD_PQE_EXT, 2);
    lim.amd_bw_len = mb.eax;
    lim.amd_smba_len = smba.eax;
    if (mb.eax != 0) lim.num_closid_any = std::max(lim.num_closid_any, mb.edx + 1);
    if (smba.eax != 0) lim.num_closid_any = std::max(lim.num_closid_any, smba.edx + 1);
  }
  return lim;
}

namespace {

// The RDT flags of /proc/cpuinfo, in the kernel's feature order: the
// kernel's feature table reads them from CPUID, whatever rdt= and the
// model quirks later leave to resctrl (a Cascade Lake shows cat_l3 with no
// info/L3), and the Haswell probe sets none.
std::vector<std::string> cpuid_rdt_flags(const CpuidSource& src, unsigned cpu, bool amd,
                                         uint32_t max_leaf, uint32_t max_ext,
                                         const CpuidRegs& leaf7) {
  std::vector<std::string> out;
  CpuidRegs pqe0{}, pqe1{}, pqe2{}, pqm0{}, pqm1{};
  if (max_leaf >= CPUID_LEAF_PQE) {
    pqe0 = src.cpuid(cpu, CPUID_LEAF_PQE, 0);
    pqe1 = src.cpuid(cpu, CPUID_LEAF_PQE, 1);
    pqe2 = src.cpuid(cpu, CPUID_LEAF_PQE, 2);
  }
  if (max_leaf >= CPUID_LEAF_PQM) {
    pqm0 = src.cpuid(cpu, CPUID_LEAF_PQM, 0);
    if ((pqm0.edx & CPUID_F_0_EDX_L3) != 0) pqm1 = src.cpuid(cpu, CPUID_LEAF_PQM, 1);
  }
  const bool amd_mba = amd && max_ext >= CPUID_LEAF_AMD_EXT_IDS &&
                       (src.cpuid(cpu, CPUID_LEAF_AMD_EXT_IDS, 0).ebx & CPUID_80000008_EBX_BE) != 0;
  // Not RDT, but a flag the simulated and sandboxed machines must show as
  // the kernel does (feature word 6, so before the RDT words): AMD
  // Lightweight Profiling, which Linux names and never enables.
  if (amd && max_ext >= CPUID_LEAF_AMD_EXT_FEATURES &&
      (src.cpuid(cpu, CPUID_LEAF_AMD_EXT_FEATURES, 0).ecx & CPUID_80000001_ECX_LWP) != 0)
    out.emplace_back("lwp");
  if ((pqe0.ebx & CPUID_10_0_EBX_L3) != 0) out.emplace_back("cat_l3");
  if ((pqe0.ebx & CPUID_10_0_EBX_L2) != 0) out.emplace_back("cat_l2");
  if ((pqe1.ecx & CPUID_10_CACHE_ECX_CDP) != 0) out.emplace_back("cdp_l3");
  if ((pqe2.ecx & CPUID_10_CACHE_ECX_CDP) != 0) out.emplace_back("cdp_l2");
  if ((!amd && (pqe0.ebx & CPUID_10_0_EBX_MBA) != 0) || amd_mba) out.emplace_back("mba");
  if ((leaf7.ebx & CPUID_7_EBX_PQM) != 0) out.emplace_back("cqm");
  if ((leaf7.ebx & CPUID_7_EBX_PQE) != 0) out.emplace_back("rdt_a");
  if ((pqm0.edx & CPUID_F_0_EDX_L3) != 0) {
    out.emplace_back("cqm_llc");
    if ((pqm1.edx & CPUID_F_1_EDX_OCCUP) != 0) out.emplace_back("cqm_occup_llc");
    if ((pqm1.edx & CPUID_F_1_EDX_MBM_TOTAL) != 0) out.emplace_back("cqm_mbm_total");
    if ((pqm1.edx & CPUID_F_1_EDX_MBM_LOCAL) != 0) out.emplace_back("cqm_mbm_local");
  }
  return out;
}

}  // namespace

X86Platform decode_platform(const CpuidSource& src, const Topology& topo, MsrDevice* probe,
                            const RdtOptions& options) {
  X86Platform info;
  const unsigned cpu = first_cpu(topo);
  info.vendor = cpuid_vendor(src, cpu);
  const bool amd = info.amd();
  const bool intel = info.vendor == "GenuineIntel";
  const uint32_t max_leaf = src.cpuid(cpu, CPUID_LEAF_VENDOR, 0).eax;
  const uint32_t max_ext = src.cpuid(cpu, CPUID_LEAF_EXT_MAX, 0).eax;

  if (max_leaf >= CPUID_LEAF_FMS) {
    uint32_t sig = src.cpuid(cpu, CPUID_LEAF_FMS, 0).eax;
    info.family = (sig >> 8) & 0xF;
    if (info.family == 0xF) info.family += (sig >> 20) & 0xFF;
    info.model = (sig >> 4) & 0xF;
    if (info.family >= 0x6) info.model += ((sig >> 16) & 0xF) << 4;
    info.stepping = sig & 0xF;
  }

  // Linux's boot-time quirk for Skylake-SP and its successors on the same
  // model number (Cascade/Cooper Lake): their L3 CAT misbehaves (and, up to
  // stepping 4, CMT and MBM too), so those features start forced off; an
  // explicit rdt= entry still turns them on.
  RdtOptions opts = options;
  if (intel && info.family == 6 && info.model == INTEL_FAM6_SKYLAKE_X) {
    if (info.stepping <= 4) {
      for (const char* f : {"cmt", "mbmtotal", "mbmlocal"}) opts.force_off.emplace_back(f);
    }
    opts.force_off.emplace_back("l3cat");
  }

  info.nr_cpus = topo.nr_cpus;
  info.online = topo.online;
  info.cpu_ids(Scope::PACKAGE) = topo.package;
  info.cpu_ids(Scope::L2_CACHE) = topo.l2_id;
  info.cpu_ids(Scope::L3_CACHE) = topo.l3_id;
  info.cpu_ids(Scope::NODE) = topo.node;
  info.cpu_ids(Scope::NODE).resize(topo.nr_cpus, -1);
  info.cpu_ids(Scope::CORE) = topo.core;
  info.cpu_ids(Scope::CORE).resize(topo.nr_cpus, -1);
  for (unsigned c = 0; c < topo.nr_cpus; ++c) {
    if (info.cpu_ids(Scope::CORE)[c] < 0 && c < topo.l2_id.size())
      info.cpu_ids(Scope::CORE)[c] = topo.l2_id[c];
  }
  info.cpu_ids(Scope::PACKAGE).resize(topo.nr_cpus, 0);
  info.cpu_ids(Scope::L2_CACHE).resize(topo.nr_cpus, -1);
  info.cpu_ids(Scope::L3_CACHE).resize(topo.nr_cpus, -1);
  for (int r = 0; r < kNumResources; ++r) info.resources[r].rid = static_cast<ResourceId>(r);
  // The x86 resources' control scopes and schemata formats (Linux's
  // rdt_resources_all): caches per cache instance; the bandwidth controls
  // per L3, a percentage on Intel and an absolute rate on AMD (SMBA is
  // AMD's only). The STLB is decode_stlb()'s, per core.
  info.res(ResourceId::L3).ctrl_scope = Scope::L3_CACHE;
  info.res(ResourceId::L2).ctrl_scope = Scope::L2_CACHE;
  for (ResourceId bw : {ResourceId::MB, ResourceId::SMBA, ResourceId::CB}) {
    info.res(bw).ctrl_scope = Scope::L3_CACHE;
    info.res(bw).schema_fmt = amd ? SchemaFormat::RATE : SchemaFormat::PERCENT;
  }

  uint64_t l3_size = cpuid_cache_size(src, cpu, amd, 3);
  if (l3_size == 0) l3_size = topo.l3_size_bytes;
  uint64_t l2_size = cpuid_cache_size(src, cpu, amd, 2);
  if (l2_size == 0) l2_size = topo.l2_size_bytes;

  CpuidRegs leaf7 = max_leaf >= CPUID_LEAF_EXT_FEATURES ? src.cpuid(cpu, CPUID_LEAF_EXT_FEATURES, 0)
                                                        : CpuidRegs{};
  const bool rdt_a = (leaf7.ebx & CPUID_7_EBX_PQE) != 0;
  const bool cqm = (leaf7.ebx & CPUID_7_EBX_PQM) != 0;
  info.cpuinfo_flags = cpuid_rdt_flags(src, cpu, amd, max_leaf, max_ext, leaf7);
  CpuidRegs amd20{};
  if (amd && max_ext >= CPUID_LEAF_AMD_PQE_EXT) amd20 = src.cpuid(cpu, CPUID_LEAF_AMD_PQE_EXT, 0);

  const auto l3_domains = domains_by_id(topo, info.cpu_ids(Scope::L3_CACHE));
  const auto l2_domains = domains_by_id(topo, info.cpu_ids(Scope::L2_CACHE));

  // ---- Allocation.
  Resource& l3 = info.resources[static_cast<int>(ResourceId::L3)];
  Resource& l2 = info.resources[static_cast<int>(ResourceId::L2)];
  Resource& mb = info.resources[static_cast<int>(ResourceId::MB)];
  Resource& smba = info.resources[static_cast<int>(ResourceId::SMBA)];
  Resource& cb = info.resources[static_cast<int>(ResourceId::CB)];
  if (rdt_a && max_leaf >= CPUID_LEAF_PQE) {
    CpuidRegs pqe0 = src.cpuid(cpu, CPUID_LEAF_PQE, 0);
    if ((pqe0.ebx & CPUID_10_0_EBX_L3) && opts.enabled("l3cat")) {
      decode_cache(src.cpuid(cpu, CPUID_LEAF_PQE, 1), amd, l3);
      l3.cache.cdp_capable = l3.cache.cdp_capable && opts.enabled("l3cdp");
    }
    if ((pqe0.ebx & CPUID_10_0_EBX_L2) && opts.enabled("l2cat")) {
      decode_cache(src.cpuid(cpu, CPUID_LEAF_PQE, 2), amd, l2);
      l2.cache.cdp_capable = l2.cache.cdp_capable && opts.enabled("l2cdp");
    }
    if (intel && (pqe0.ebx & CPUID_10_0_EBX_MBA) && opts.enabled("mba")) {
      CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_PQE, 3);
      unsigned max_delay = (r.eax & CPUID_10_3_EAX_MAX_DELAY_MASK) + 1;
      // Linux refuses non-linear Intel MBA (arch_needs_linear), and a
      // delay range beyond 100% would make min_bandwidth negative.
      if ((r.ecx & CPUID_10_3_ECX_LINEAR) != 0 && max_delay < MAX_MBA_BW) {
        mb.alloc_capable = true;
        mb.num_closid = (r.edx & CPUID_10_EDX_COS_MAX_MASK) + 1;
        mb.membw.delay_linear = true;
        mb.membw.arch_needs_linear = true;
        mb.membw.min_bw = MAX_MBA_BW - max_delay;
        mb.membw.bw_gran = MAX_MBA_BW - max_delay;
        mb.membw.max_bw = MAX_MBA_BW;
        mb.membw.throttle_mode =
            (r.ecx & CPUID_10_3_ECX_PER_THREAD) ? ThrottleMode::PER_THREAD : ThrottleMode::MAX;
      }
    }
    // Cache Bandwidth Allocation (ours: Linux has no interface for it; the
    // rdt= name "cba" is ours too). Shown as MB shows its delays: a
    // percentage of the unthrottled bandwidth, level L of 0..max being
    // 100 - L x bandwidth_gran with bandwidth_gran = 100 / (max + 1), so the
    // highest level is min_bandwidth. Like Linux for Intel MBA we take only
    // a linear response (CPUID.0x10.5:ECX[3]): a percentage means nothing
    // on a non-linear scale.
    if (intel && (pqe0.ebx & CPUID_10_0_EBX_CBA) && opts.enabled("cba")) {
      CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_PQE, 5);
      const unsigned max_level = r.eax & CPUID_10_5_EAX_MAX_LEVEL_MASK;
      if ((r.ecx & CPUID_10_5_ECX_LINEAR) != 0 && max_level >= 1 && max_level < MAX_MBA_BW) {
        const unsigned gran = MAX_MBA_BW / (max_level + 1);
        cb.alloc_capable = true;
        cb.mount_option = "cba";
        cb.num_closid = (r.edx & CPUID_10_EDX_COS_MAX_MASK) + 1;
        cb.membw.delay_linear = true;
        cb.membw.arch_needs_linear = true;
        cb.membw.bw_gran = gran;
        cb.membw.min_bw = MAX_MBA_BW - max_level * gran;
        cb.membw.max_bw = MAX_MBA_BW;
        // The resource management domain is the logical processor.
        cb.membw.throttle_mode = ThrottleMode::PER_THREAD;
      }
    }
  }
  if (rdt_a && amd && max_ext >= CPUID_LEAF_AMD_PQE_EXT) {
    auto amd_bw = [&](Resource& res, uint32_t sub) {
      CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_AMD_PQE_EXT, sub);
      if (r.eax == 0 || r.eax > 31) return;
      res.alloc_capable = true;
      res.num_closid = r.edx + 1;
      res.membw.min_bw = 0;
      res.membw.bw_gran = 1;
      res.membw.max_bw = 1U << r.eax;
      res.membw.delay_linear = false;
      res.membw.arch_needs_linear = false;
      res.membw.throttle_mode = ThrottleMode::UNDEFINED;
    };
    bool amd_mba = max_ext >= CPUID_LEAF_AMD_EXT_IDS &&
                   (src.cpuid(cpu, CPUID_LEAF_AMD_EXT_IDS, 0).ebx & CPUID_80000008_EBX_BE) != 0;
    if (amd_mba && opts.enabled("mba")) amd_bw(mb, 1);
    if ((amd20.ebx & CPUID_80000020_0_EBX_SMBA) && opts.enabled("smba")) amd_bw(smba, 2);
  }
  // Haswell server: CAT exists but CPUID does not say so. Probe the first
  // mask register as Linux does; the part has 4 CLOSIDs and a 20-bit mask.
  // Only an explicit rdt=!l3cat skips it (a force-on does not undo that).
  if (intel && info.family == 6 && info.model == INTEL_FAM6_HASWELL_X && !l3.alloc_capable &&
      probe != nullptr && !opts.forced_off("l3cat")) {
    constexpr uint64_t kHswMask = 0xFFFFF;
    if (probe->write(cpu, IA32_L3_MASK_0, kHswMask).ok()) {
      auto back = probe->read(cpu, IA32_L3_MASK_0);
      if (back.ok() && *back == kHswMask) {
        l3.alloc_capable = true;
        l3.num_closid = 4;
        l3.cache.cbm_len = 20;
        l3.cache.shareable_bits = 0xC0000;
        l3.cache.min_cbm_bits = 2;
      }
    }
  }
  // Intel TCC parts: L3 CAT at the architectural registers with neither
  // CPUID enumeration nor the kernel's support (the kernel probes only the
  // Haswell server), so the L3 is ours, shown with the `tccl3` mount option.
  // The parameters are Table B-8's; no CDP; and, because an integrated GPU
  // may fill every way whatever the masks say (the specification: consider
  // every way shared with the GPU), every way is a shareable bit: bit_usage
  // shows each way as used by hardware ('H', or 'X' where a group's mask
  // also covers it) and, as for any shareable bit, no group can make a way
  // exclusive.
  if (intel && !l3.alloc_capable && !opts.forced_off("l3cat") && max_ext >= CPUID_LEAF_BRAND_LAST) {
    if (auto part = tcc_l3_part(info.family, info.model, cpuid_brand(src, cpu))) {
      l3.alloc_capable = true;
      l3.num_closid = part->num_closid;
      l3.cache.cbm_len = part->cbm_len;
      l3.cache.shareable_bits = l3.cache.full_mask();
      l3.cache.min_cbm_bits = 1;
      l3.cache.cdp_capable = false;
      l3.cache.sparse_masks = false;
      l3.mount_option = "tccl3";
    }
  }
  if (l3.alloc_capable) {
    l3.cache.cache_size_bytes = l3_size;
    l3.ctrl_domains = l3_domains;
    // SDCIAE acts on the L3 mask registers, so it needs L3 CAT (as in Linux).
    l3.cache.io_alloc_capable =
        amd && (amd20.ebx & CPUID_80000020_0_EBX_SDCIAE) != 0 && opts.enabled("sdciae");
  }
  if (l2.alloc_capable) {
    l2.cache.cache_size_bytes = l2_size;
    l2.ctrl_domains = l2_domains;
  }
  if (mb.alloc_capable) mb.ctrl_domains = l3_domains;
  if (smba.alloc_capable) smba.ctrl_domains = l3_domains;
  // CBA's registers are per logical processor; we group them by L3 as MB
  // is grouped (one value per CLOSID and L3, written on each of its CPUs),
  // so that a group's CB and MB lines name the same domains.
  if (cb.alloc_capable) cb.ctrl_domains = l3_domains;

  // ---- Monitoring.
  MonCaps& mon = info.res(ResourceId::L3).mon;
  const bool abmc = (amd20.ebx & CPUID_80000020_0_EBX_ABMC) != 0 && opts.enabled("abmc");
  if (cqm && max_leaf >= CPUID_LEAF_PQM &&
      (src.cpuid(cpu, CPUID_LEAF_PQM, 0).edx & CPUID_F_0_EDX_L3) != 0) {
    CpuidRegs r = src.cpuid(cpu, CPUID_LEAF_PQM, 1);
    unsigned offset = r.eax & CPUID_F_1_EAX_WIDTH_MASK;
    if (amd && offset == 0) offset = MBM_CNTR_WIDTH_OFFSET_AMD;
    // Linux ignores an offset it cannot represent and keeps the base width.
    mon.counter_width = MBM_CNTR_WIDTH_BASE + (offset <= MBM_CNTR_WIDTH_OFFSET_MAX ? offset : 0);
    // Under SNC the physical RMIDs are shared out between the nodes of an
    // L3 and each counter unit covers a node's share of the scale.
    mon.snc_ways = snc_nodes_per_l3(info.vendor, info.family, info.model, topo);
    mon.scope = mon.snc_ways > 1 ? Scope::NODE : Scope::L3_CACHE;
    mon.occupancy_scale = r.ebx / mon.snc_ways;
    mon.num_rmids = (r.ecx + 1) / mon.snc_ways;
    if ((r.edx & CPUID_F_1_EDX_OCCUP) && opts.enabled("cmt")) {
      mon.events.push_back(EventId::LLC_OCCUPANCY);
    }
    if (((r.edx & CPUID_F_1_EDX_MBM_TOTAL) || abmc) && opts.enabled("mbmtotal")) {
      mon.events.push_back(EventId::MBM_TOTAL);
    }
    if (((r.edx & CPUID_F_1_EDX_MBM_LOCAL) || abmc) && opts.enabled("mbmlocal")) {
      mon.events.push_back(EventId::MBM_LOCAL);
    }
  }
  if (!mon.events.empty() && mon.occupancy_scale != 0 && mon.num_rmids != 0) {
    mon.capable = true;
    // Linux bounds max_threshold_occupancy by boot_cpu_data.x86_cache_size:
    // the L3 on Intel (leaf 4), but the L2 on AMD (CPUID 0x80000006
    // ECX[31:16] in KiB), so AMD defaults are L2-sized.
    uint64_t limit = l3_size;
    if (amd) {
      uint32_t kib =
          max_ext >= CPUID_LEAF_AMD_L2_L3 ? src.cpuid(cpu, CPUID_LEAF_AMD_L2_L3, 0).ecx >> 16 : 0;
      limit = kib != 0 ? uint64_t{kib} * 1024 : l2_size;
    }
    mon.realloc_limit_bytes = limit;
    uint64_t threshold = limit / mon.num_rmids;
    mon.default_threshold =
        static_cast<unsigned>(threshold / mon.occupancy_scale * mon.occupancy_scale);
    bool has_mbm =
        std::find(mon.events.begin(), mon.events.end(), EventId::MBM_TOTAL) != mon.events.end() ||
        std::find(mon.events.begin(), mon.events.end(), EventId::MBM_LOCAL) != mon.events.end();
    if ((amd20.ebx & CPUID_80000020_0_EBX_BMEC) && has_mbm && opts.enabled("bmec")) {
      mon.evt_cfg.capable = true;
      mon.evt_cfg.supported_mask =
          src.cpuid(cpu, CPUID_LEAF_AMD_PQE_EXT, 3).ecx & BMEC_MAX_EVT_CONFIG_BITS;
      mon.evt_cfg.default_total = BMEC_DEFAULT_TOTAL & mon.evt_cfg.supported_mask;
      mon.evt_cfg.default_local = BMEC_DEFAULT_LOCAL & mon.evt_cfg.supported_mask;
    }
    if (abmc) {
      mon.cntr_assign.capable = true;
      mon.cntr_assign.num_cntrs =
          (src.cpuid(cpu, CPUID_LEAF_AMD_PQE_EXT, 5).ebx & CPUID_80000020_5_EBX_CNTRS_MASK) + 1;
      // An ABMC counter's configuration register carries the BwType
      // transaction mask, so every assignable counter is configurable: Linux's
      // arch/x86/kernel/cpu/resctrl/monitor.c (rdt_get_mon_l3_config) sets
      // mbm_cntr_configurable whenever ABMC is present.
      mon.cntr_assign.configurable = true;
    }
    if (mon.snc_ways > 1) {
      // One domain per NUMA node, under the L3 its CPUs share.
      for (const auto& n : domains_by_id(topo, info.cpu_ids(Scope::NODE))) {
        const int l3_id = info.cpu_ids(Scope::L3_CACHE)[n.cpus.first()];
        mon.mon_domains.push_back(MonDomain{n.id, n.cpus, l3_id});
      }
    } else {
      for (const auto& d : l3_domains) mon.mon_domains.push_back(MonDomain{d.id, d.cpus, d.id});
    }
  } else {
    mon.snc_ways = 1;
  }
  info.pseudo_lock_capable = prefetch_disable_bits(info.vendor, info.family, info.model) != 0;
  return info;
}

std::string cpuid_brand(const CpuidSource& src, unsigned cpu) {
  if (src.cpuid(cpu, CPUID_LEAF_EXT_MAX, 0).eax < CPUID_LEAF_BRAND_LAST) return "";
  std::string out;
  for (uint32_t leaf = CPUID_LEAF_BRAND_FIRST; leaf <= CPUID_LEAF_BRAND_LAST; ++leaf) {
    const CpuidRegs r = src.cpuid(cpu, leaf, 0);
    for (uint32_t v : {r.eax, r.ebx, r.ecx, r.edx})
      for (int b = 0; b < 4; ++b) out += static_cast<char>((v >> (8 * b)) & 0xFF);
  }
  out = out.substr(0, out.find('\0'));
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(' ') + 1 - first);
}

namespace {

// Table B-8 of the Intel RDT architecture specification (Appendix B), per
// part: its brand-string name, the family-6 model of its product generation,
// CLOSIDs, mask length. The scanned table's columns are misaligned in
// places; the CLOS count is given once per product generation and applies
// to each of its parts, the mask length per part as the rows read.
constexpr TccL3Part kTccL3Parts[] = {
    // Intel Atom x6000E (Elkhart Lake): 4 CLOS.
    {"x6427FE", INTEL_FAM6_ATOM_TREMONT, 4, 16},
    {"x6425RE", INTEL_FAM6_ATOM_TREMONT, 4, 16},
    {"x6414RE", INTEL_FAM6_ATOM_TREMONT, 4, 16},
    {"x6212RE", INTEL_FAM6_ATOM_TREMONT, 4, 16},
    {"x6200FE", INTEL_FAM6_ATOM_TREMONT, 4, 8},
    {"X6416RE", INTEL_FAM6_ATOM_TREMONT, 4, 16},
    {"X6214RE", INTEL_FAM6_ATOM_TREMONT, 4, 16},
    // Intel Atom x7000E (Alder Lake-N): 16 CLOS.
    {"x7211E", INTEL_FAM6_ATOM_GRACEMONT, 16, 12},
    {"x7425E", INTEL_FAM6_ATOM_GRACEMONT, 16, 12},
    {"x7213E", INTEL_FAM6_ATOM_GRACEMONT, 16, 12},
    // 11th Gen Intel Core (UP3-Series): 4 CLOS.
    {"i7-1185GRE", INTEL_FAM6_TIGERLAKE_L, 4, 12},
    {"i5-1145GRE", INTEL_FAM6_TIGERLAKE_L, 4, 8},
    {"i3-1115GRE", INTEL_FAM6_TIGERLAKE_L, 4, 12},
    // Intel Xeon W (TGL-H): 4 CLOS.
    {"W-11865MRE", INTEL_FAM6_TIGERLAKE, 4, 12},
    {"W-11865MLE", INTEL_FAM6_TIGERLAKE, 4, 12},
    {"W-11555MRE", INTEL_FAM6_TIGERLAKE, 4, 8},
    {"W-11555MLE", INTEL_FAM6_TIGERLAKE, 4, 8},
    {"W-11155MRE", INTEL_FAM6_TIGERLAKE, 4, 8},
    {"W-11155MLE", INTEL_FAM6_TIGERLAKE, 4, 8},
    // 12th Gen Intel Core (S-Series): 16 CLOS.
    {"i9-12900E", INTEL_FAM6_ALDERLAKE, 16, 12},
    {"i7-12700E", INTEL_FAM6_ALDERLAKE, 16, 10},
    {"i5-12500E", INTEL_FAM6_ALDERLAKE, 16, 12},
    {"i3-12100E", INTEL_FAM6_ALDERLAKE, 16, 12},
    // 13th Gen Intel Core (P-Series, with its U and H parts): 16 CLOS.
    {"i7-1365UE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i7-1365URE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i5-1345UE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i5-1345URE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i3-1335UE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i3-1315UE", INTEL_FAM6_RAPTORLAKE_P, 16, 10},
    {"i3-1315URE", INTEL_FAM6_RAPTORLAKE_P, 16, 10},
    {"i7-1370PE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i7-1370PRE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i5-1350PE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    {"i5-1350PRE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    {"i3-1340PE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    {"i3-1320PE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    {"i3-1320PRE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    {"i7-13800HE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i7-13800HRE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i5-13600HE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i5-13600HRE", INTEL_FAM6_RAPTORLAKE_P, 16, 12},
    {"i3-13300HE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    {"i3-13300HRE", INTEL_FAM6_RAPTORLAKE_P, 16, 8},
    // 13th Gen Intel Core (S-Series): 16 CLOS.
    {"i9-13900E", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i9-13900TE", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i7-13700E", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i7-13700TE", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i5-13500E", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i5-13500TE", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i5-13400E", INTEL_FAM6_RAPTORLAKE, 16, 10},
    {"i3-13100E", INTEL_FAM6_RAPTORLAKE, 16, 12},
    {"i3-13100TE", INTEL_FAM6_RAPTORLAKE, 16, 12},
};

// Whether `brand` names `sku` as a whole word ("i5-13500E" is not
// "i5-13500TE", nor "i5-13500E" inside a longer name).
bool names_sku(const std::string& brand, const char* sku) {
  const size_t n = std::strlen(sku);
  for (size_t pos = brand.find(sku); pos != std::string::npos; pos = brand.find(sku, pos + 1)) {
    const bool start = pos == 0 || brand[pos - 1] == ' ';
    const bool end = pos + n == brand.size() || brand[pos + n] == ' ';
    if (start && end) return true;
  }
  return false;
}

}  // namespace

std::optional<TccL3Part> tcc_l3_part(unsigned family, unsigned model, const std::string& brand) {
  if (family != 6) return std::nullopt;
  for (const TccL3Part& p : kTccL3Parts) {
    // Some 13th Gen S-Series parts are built on the 12th Gen die (its model
    // number): the brand decides there.
    const bool model_ok =
        p.model == model || (p.model == INTEL_FAM6_RAPTORLAKE && model == INTEL_FAM6_ALDERLAKE);
    if (model_ok && names_sku(brand, p.sku)) return p;
  }
  return std::nullopt;
}

void decode_stlb(X86Platform& info, const CpuidSource& src, MsrDevice& msr) {
  Resource& r = info.resources[static_cast<int>(ResourceId::STLB)];
  r = Resource{};
  r.rid = ResourceId::STLB;
  r.ctrl_scope = Scope::CORE;
  const unsigned cpu = info.online.first();
  if (info.vendor != "GenuineIntel" || cpu >= info.nr_cpus) return;
  if (src.cpuid(cpu, CPUID_LEAF_VENDOR, 0).eax < CPUID_LEAF_EXT_FEATURES) return;
  if ((src.cpuid(cpu, CPUID_LEAF_EXT_FEATURES, 0).edx & CPUID_7_EDX_CORE_CAPABILITIES) == 0) return;
  auto caps = msr.read(cpu, IA32_CORE_CAPABILITIES);
  if (!caps.ok() || (*caps & CORE_CAPABILITIES_STLB_QOS) == 0) return;
  auto qi = msr.read(cpu, STLB_QOS_INFO);
  if (!qi.ok()) return;
  const unsigned len =
      static_cast<unsigned>((*qi >> STLB_QOS_INFO_CBM_SHIFT) & STLB_QOS_INFO_CBM_MASK) + 1;
  if (len > STLB_QOS_MAX_CBM_LEN) return;
  r.alloc_capable = true;
  r.num_closid = static_cast<unsigned>(*qi & STLB_QOS_INFO_NCLOS_MASK) + 1;
  r.cache.cbm_len = len;
  r.cache.min_cbm_bits = 1;
  r.mount_option = "stlb";
  std::map<int, CpuMask> by_core;
  for (unsigned c = 0; c < info.nr_cpus && c < info.cpu_ids(Scope::CORE).size(); ++c) {
    if (!info.online.test(c) || info.cpu_ids(Scope::CORE)[c] < 0) continue;
    by_core.try_emplace(info.cpu_ids(Scope::CORE)[c], CpuMask(info.nr_cpus)).first->second.set(c);
  }
  for (auto& [id, mask] : by_core) r.ctrl_domains.push_back(CtrlDomain{id, mask});
}

uint64_t prefetch_disable_bits(const std::string& vendor, unsigned family, unsigned model) {
  if (vendor != "GenuineIntel" || family != 6) return 0;
  switch (model) {
    case INTEL_FAM6_BROADWELL_X:
      return MISC_FEATURE_PREFETCH_DISABLE_BDX;
    case INTEL_FAM6_ATOM_GOLDMONT:
    case INTEL_FAM6_ATOM_GOLDMONT_PLUS:
      return MISC_FEATURE_PREFETCH_DISABLE_GLM;
    default:
      return 0;
  }
}

MbmCorrection mbm_correction(const X86Platform& info) {
  MbmCorrection c;
  if (info.vendor != "GenuineIntel" || info.family != 6) return c;
  if (info.model != INTEL_FAM6_BROADWELL_X && info.model != INTEL_FAM6_SKYLAKE_X) return c;
  int index = static_cast<int>(info.res(ResourceId::L3).mon.num_rmids / 8) - 1;
  if (index < 0 || index >= static_cast<int>(std::size(kMbmCfTable))) return c;
  c.rmid_threshold = kMbmCfTable[index].rmid_threshold;
  c.factor = kMbmCfTable[index].factor;
  return c;
}

std::vector<std::string> cpuinfo_rdt_flags(const X86Platform& info) {
  if (info.cpuinfo_flags) return *info.cpuinfo_flags;
  // Ordered by the kernel's feature numbers: word 7 (cat_l3 .. mba), word 9
  // (cqm, rdt_a), word 11 (cqm_llc ..). SMBA/BMEC/ABMC are hidden flags.
  std::vector<std::string> out;
  const Resource& l3 = info.res(ResourceId::L3);
  const Resource& l2 = info.res(ResourceId::L2);
  const bool any_alloc = l3.alloc_capable || l2.alloc_capable ||
                         info.res(ResourceId::MB).alloc_capable ||
                         info.res(ResourceId::SMBA).alloc_capable;
  auto has = [&](EventId e) {
    return std::find(info.res(ResourceId::L3).mon.events.begin(),
                     info.res(ResourceId::L3).mon.events.end(),
                     e) != info.res(ResourceId::L3).mon.events.end();
  };
  if (l3.alloc_capable) out.push_back("cat_l3");
  if (l2.alloc_capable) out.push_back("cat_l2");
  if (l3.alloc_capable && l3.cache.cdp_capable) out.push_back("cdp_l3");
  if (l2.alloc_capable && l2.cache.cdp_capable) out.push_back("cdp_l2");
  if (info.res(ResourceId::MB).alloc_capable) out.push_back("mba");
  if (info.res(ResourceId::L3).mon.capable) out.push_back("cqm");
  if (any_alloc) out.push_back("rdt_a");
  if (info.res(ResourceId::L3).mon.capable) {
    out.push_back("cqm_llc");
    if (has(EventId::LLC_OCCUPANCY)) out.push_back("cqm_occup_llc");
    if (has(EventId::MBM_TOTAL)) out.push_back("cqm_mbm_total");
    if (has(EventId::MBM_LOCAL)) out.push_back("cqm_mbm_local");
  }
  return out;
}

namespace {

// The RDT/PQoS leaves compared across CPUs, with the bits that matter.
struct RdtLeaf {
  uint32_t leaf, subleaf;
  CpuidRegs mask;
};
constexpr uint32_t kAllBits = 0xffffffffU;
constexpr RdtLeaf kRdtLeaves[] = {
    {CPUID_LEAF_VENDOR, 0, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_FMS, 0, {0x0fff3ff0U, 0, 0, 0}},  // family and model (not the stepping)
    {CPUID_LEAF_EXT_FEATURES, 0, {0, (1U << 12) | (1U << 15), 0, 0}},  // PQM, PQE
    {CPUID_LEAF_PQM, 0, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_PQM, 1, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_PQE, 0, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_PQE, 1, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_PQE, 2, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_PQE, 3, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_PQE, 5, {kAllBits, kAllBits, kAllBits, kAllBits}},  // CBA
    {CPUID_LEAF_AMD_EXT_IDS, 0, {0, kAllBits, 0, 0}},
    {CPUID_LEAF_AMD_PQE_EXT, 0, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_AMD_PQE_EXT, 1, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_AMD_PQE_EXT, 2, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_AMD_PQE_EXT, 3, {kAllBits, kAllBits, kAllBits, kAllBits}},
    {CPUID_LEAF_AMD_PQE_EXT, 5, {kAllBits, kAllBits, kAllBits, kAllBits}},
};

CpuidRegs masked_regs(CpuidRegs r, const CpuidRegs& m) {
  r.eax &= m.eax;
  r.ebx &= m.ebx;
  r.ecx &= m.ecx;
  r.edx &= m.edx;
  return r;
}

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%x", v);
  return b;
}

std::string regs_text(const CpuidRegs& r) {
  return "eax=" + hex32(r.eax) + " ebx=" + hex32(r.ebx) + " ecx=" + hex32(r.ecx) +
         " edx=" + hex32(r.edx);
}

}  // namespace

std::vector<std::string> rdt_cpuid_differences(const CpuidSource& src, const Topology& topo) {
  std::vector<std::string> out;
  const unsigned first = topo.online.first();
  if (first >= topo.online.size()) return out;
  std::vector<CpuidRegs> ref;
  for (const RdtLeaf& l : kRdtLeaves)
    ref.push_back(masked_regs(src.cpuid(first, l.leaf, l.subleaf), l.mask));
  for (unsigned cpu = first + 1; cpu < topo.nr_cpus; ++cpu) {
    if (!topo.online.test(cpu)) continue;
    for (size_t i = 0; i < std::size(kRdtLeaves); ++i) {
      const RdtLeaf& l = kRdtLeaves[i];
      const CpuidRegs r = masked_regs(src.cpuid(cpu, l.leaf, l.subleaf), l.mask);
      if (r == ref[i]) continue;
      out.push_back("CPU " + std::to_string(cpu) + " leaf " + hex32(l.leaf) + "." +
                    std::to_string(l.subleaf) + ": " + regs_text(r) + ", CPU " +
                    std::to_string(first) + ": " + regs_text(ref[i]));
    }
  }
  return out;
}

Result<void> check_rdt_cpuid_uniform(const CpuidSource& src, const Topology& topo) {
  const std::vector<std::string> d = rdt_cpuid_differences(src, topo);
  if (d.empty()) return Ok();
  std::string msg = "the CPUs do not enumerate the same RDT/PQoS features in CPUID (" + d[0];
  if (d.size() > 1) msg += "; " + std::to_string(d.size() - 1) + " more difference(s)";
  msg += "); resctrl needs one set for the whole machine";
  return Error::make(EINVAL, msg);
}

}  // namespace resctrlfs::hw::x86
