// Implements the register file of the simulated machine: CPUID answers,
// MSR reads and writes with the #GP rules of the hardware, fault injection
// and the register dump. The workload model lives in model.cc.
#include "hw/sim/machine.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <map>
#include <string>

#include "hw/x86/registers.h"

namespace resctrlfs::hw::sim {

using namespace resctrlfs::hw::x86;  // NOLINT: register names

namespace {

bool in_bank(uint32_t msr, uint32_t base, size_t n) { return msr >= base && msr - base < n; }

}  // namespace

SimMachine::SimMachine(Profile profile) : profile_(std::move(profile)) {
  const x86::Topology topo = profile_.topology();
  info_ = x86::decode_platform(*this, topo, nullptr, x86::RdtOptions::all());
  os_info_ = x86::decode_platform(*this, topo, nullptr, profile_.rdt);
  unsigned first = topo.online.first();
  if (first >= topo.nr_cpus) first = 0;
  limits_ = x86::decode_limits(*this, first);
  num_closid_any_ = std::max(1U, limits_.num_closid_any);
  // The model-specific L3 CAT of the TCC parts has its CLOS count in the
  // RDT specification's Table B-8, not in CPUID, and its PQR_ASSOC takes
  // every one of them (Appendix B, "PQR_ASSOC").
  if (info_.res(ResourceId::L3).alloc_capable)
    num_closid_any_ = std::max(num_closid_any_, info_.res(ResourceId::L3).num_closid);
  num_rmid_any_ = limits_.max_rmid_any + 1;
  {
    // The CPU agents' L3 CAT and L3 monitoring as CPUID enumerates them
    // (the prerequisites of IRAE and IRME).
    const CpuidRegs f7 = cpuid(first, CPUID_LEAF_EXT_FEATURES, 0);
    const CpuidRegs pqe0 = cpuid(first, CPUID_LEAF_PQE, 0);
    const CpuidRegs pqm0 = cpuid(first, CPUID_LEAF_PQM, 0);
    cpu_l3_cat_ = (f7.ebx & CPUID_7_EBX_PQE) != 0 && (pqe0.ebx & CPUID_10_0_EBX_L3) != 0;
    cpu_l3_mon_ = (f7.ebx & CPUID_7_EBX_PQM) != 0 && (pqm0.edx & CPUID_F_0_EDX_L3) != 0;
  }
  l3_size_bytes_ = x86::cpuid_cache_size(*this, first, profile_.amd(), 3);
  if (l3_size_bytes_ == 0) l3_size_bytes_ = profile_.l3_size_bytes;
  // The hardware's own RMID count and unit, whatever Linux makes of SNC.
  const CpuidRegs pqm1 = cpuid(first, CPUID_LEAF_PQM, 1);
  phys_rmids_ = info_.res(ResourceId::L3).mon.capable ? pqm1.ecx + 1 : 1;
  overflow_bit_ = info_.res(ResourceId::L3).mon.capable && !profile_.amd() &&
                  (pqm1.eax & CPUID_F_1_EAX_OVERFLOW) != 0;

  cpus_.resize(topo.nr_cpus);
  std::map<int, size_t> l3_index, l2_index;
  std::map<std::pair<int, int>, size_t> core_index;  // (package, core)
  for (unsigned c = 0; c < topo.nr_cpus; ++c) {
    if (!topo.online.test(c)) continue;
    cpus_[c].present = true;
    cpus_[c].online = true;
    if (topo.l3_id[c] >= 0) {
      auto [it, added] = l3_index.try_emplace(topo.l3_id[c], l3_index.size());
      if (added) {
        l3_.emplace_back();
        l3_.back().id = topo.l3_id[c];
      }
    }
    if (topo.l2_id[c] >= 0) {
      auto [it, added] = l2_index.try_emplace(topo.l2_id[c], l2_index.size());
      if (added) {
        l2_.emplace_back();
        l2_.back().id = topo.l2_id[c];
      }
    }
  }
  for (unsigned c = 0; c < topo.nr_cpus; ++c) {
    if (!cpus_[c].online) continue;
    if (topo.l3_id[c] >= 0) {
      cpus_[c].l3 = static_cast<int>(l3_index[topo.l3_id[c]]);
      l3_[cpus_[c].l3].cpus.push_back(c);
    }
    if (topo.l2_id[c] >= 0) {
      cpus_[c].l2 = static_cast<int>(l2_index[topo.l2_id[c]]);
      l2_[cpus_[c].l2].cpus.push_back(c);
    }
    const CpuPlacement& pl = profile_.cpus[c];
    auto [it, added] = core_index.try_emplace({pl.package, pl.core}, cores_.size());
    if (added) cores_.emplace_back();
    cpus_[c].core = static_cast<int>(it->second);
    cores_[it->second].cpus.push_back(c);
  }
  // STLB QoS: the core-scope registers, then the STLB resource as the
  // machine's own registers enumerate it (decode_stlb reads them).
  core_caps_ = !profile_.amd() &&
               (cpuid(first, CPUID_LEAF_EXT_FEATURES, 0).edx & CPUID_7_EDX_CORE_CAPABILITIES) != 0;
  if (core_caps_) stlb_ = profile_.stlb;
  for (Core& k : cores_) power_on_core(k);
  if (stlb_) {
    x86::decode_stlb(info_, *this, *this);
    x86::decode_stlb(os_info_, *this, *this);
    num_closid_any_ = std::max(num_closid_any_, stlb_->num_closid);
  }
  // MBA generations. Per-thread MBA (3.0) is what CPUID.0x10.3:ECX[0]
  // enumerates; without it the core resolves its threads' delays (1.0,
  // 2.0). MBA_CFG exists only on the model lists of registers.h.
  const Resource& mbr = info_.res(ResourceId::MB);
  if (!profile_.amd() && mbr.alloc_capable) {
    const bool per_thread = mbr.membw.throttle_mode == ThrottleMode::PER_THREAD;
    mba_per_core_ = !per_thread;
    auto listed = [&](const auto& models) {
      return info_.family == 6 &&
             std::find(std::begin(models), std::end(models), info_.model) != std::end(models);
    };
    if (!per_thread && listed(kMbaMinMaxModels)) mba_cfg_bits_ |= MBA_CFG_MIN;
    if (listed(kRaMbaModels)) mba_cfg_bits_ |= MBA_CFG_RAMBAE;
  }
  // CBA: per-CPU registers, a byte per CLOSID (limits_ from CPUID.0x10.5).
  if (!profile_.amd() && limits_.cba_max_level > 0)
    cba_regs_ = (limits_.cba_num_closid + CBA_CLOS_PER_MSR - 1) / CBA_CLOS_PER_MSR;
  for (Cpu& c : cpus_) c.cba_thrtl.assign(cba_regs_, 0);
  // LWP: what this machine's CPUID enumerates; LWP_CFG as the simulated OS
  // loads it at boot (CPUID 8000_001Ch EAX then reads its low half).
  lwp_caps_ = x86::decode_lwp(*this, first);
  lwp_eax_ = std::make_unique<std::atomic<uint32_t>[]>(cpus_.size());
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    cpus_[c].lwp_cfg = lwp_caps_.present ? lwp_boot_cfg(c) : 0;
    lwp_eax_[c].store(static_cast<uint32_t>(cpus_[c].lwp_cfg));
  }
  // SNC: the NUMA nodes of each L3, in id order, and each CPU's index. Only
  // Intel parts split an L3 between nodes (AMD nodes hold whole L3s).
  const bool intel = info_.vendor == "GenuineIntel";
  for (unsigned c = 0; c < cpus_.size(); ++c)
    cpus_[c].node = intel && c < topo.node.size() ? topo.node[c] : -1;
  for (auto& d : l3_) {
    std::vector<int> nodes;
    for (unsigned c : d.cpus) {
      const int n = cpus_[c].node;
      if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
    }
    std::sort(nodes.begin(), nodes.end());
    d.snc_ways = std::max<unsigned>(1, static_cast<unsigned>(nodes.size()));
    for (unsigned c : d.cpus) {
      const int n = cpus_[c].node;
      cpus_[c].snc = static_cast<int>(std::find(nodes.begin(), nodes.end(), n) - nodes.begin());
    }
    const unsigned unit = pqm1.ebx / d.snc_ways;
    d.unit = unit == 0 ? 1.0 : static_cast<double>(unit);
  }
  // MSR_RMID_SNC_CONFIG is modelled on the listed models with SNC enabled
  // (some L3 split between nodes). Without SNC nothing uses it, and 0xCA0
  // would alias L3 mask 16, which the existing parts' CLOSID limit refuses.
  const bool snc_model =
      intel && info_.family == 6 &&
      std::find(std::begin(kSncModels), std::end(kSncModels), info_.model) != std::end(kSncModels);
  snc_msr_ = snc_model &&
             std::any_of(l3_.begin(), l3_.end(), [](const L3Dom& d) { return d.snc_ways > 1; });
  for (auto& d : l3_) power_on_l3(d);
  for (auto& d : l2_) power_on_l2(d);
  init_telemetry();
  init_io_rdt();
  start_ = std::chrono::steady_clock::now();
}

void SimMachine::power_on_core(Core& k) {
  k.mba_cfg = 0;
  k.stlb_mask.clear();
  if (stlb_) k.stlb_mask.assign(stlb_->num_closid, (uint64_t{1} << stlb_->cbm_len) - 1);
}

void SimMachine::power_on_l3(L3Dom& d) {
  const Resource& l3r = info_.res(ResourceId::L3);
  const Resource& mbr = info_.res(ResourceId::MB);
  const Resource& smr = info_.res(ResourceId::SMBA);
  const unsigned nrmid = phys_rmids_;
  d.l3_mask.clear();
  d.mba_thrtl.clear();
  d.amd_bw.clear();
  d.smba_bw.clear();
  if (l3r.alloc_capable) d.l3_mask.assign(l3r.num_closid, l3r.cache.full_mask());
  if (mbr.alloc_capable) {
    if (profile_.amd()) {
      d.amd_bw.assign(mbr.num_closid, uint64_t{1} << limits_.amd_bw_len);
    } else {
      d.mba_thrtl.assign(mbr.num_closid, 0);
    }
  }
  if (smr.alloc_capable) d.smba_bw.assign(smr.num_closid, uint64_t{1} << limits_.amd_smba_len);
  d.l3_qos_cfg = 0;
  d.evt_cfg[0] = info_.res(ResourceId::L3).mon.evt_cfg.default_total;
  d.evt_cfg[1] = info_.res(ResourceId::L3).mon.evt_cfg.default_local;
  d.ext_cfg = 0;
  d.io_rdt_cfg = 0;
  d.abmc_cfg_last = 0;
  d.rmid_snc_cfg = RMID_SNC_CONFIG_LOCALIZED;
  d.rambae = 0;
  d.qm_evtsel = 0;
  d.cntrs.assign(info_.res(ResourceId::L3).mon.cntr_assign.num_cntrs, AbmcCounter{});
  d.occ.assign(nrmid, 0);
  {
    const Resource& l3r = info_.res(ResourceId::L3);
    d.ways = l3r.alloc_capable && l3r.cache.cbm_len > 0 ? std::min(64u, l3r.cache.cbm_len) : 1;
    d.occ_way.assign(nrmid * d.ways, 0);
  }
  for (int e = 0; e < 2; ++e) {
    d.mbm[e].assign(nrmid, 0);
    d.unavail_once[e].assign(nrmid, 0);
    d.wraps_read[e].assign(nrmid, 0);
  }
  d.tracked.assign(nrmid, 0);
  d.last_active_us.assign(nrmid, 0);
  d.n_tracked = 0;
}

void SimMachine::power_on_l2(L2Dom& d) {
  const Resource& l2r = info_.res(ResourceId::L2);
  d.l2_mask.clear();
  if (l2r.alloc_capable) d.l2_mask.assign(l2r.num_closid, l2r.cache.full_mask());
  d.l2_qos_cfg = 0;
}

bool SimMachine::any_online(const std::vector<unsigned>& cpus) const {
  return first_online(cpus) >= 0;
}

int SimMachine::first_online(const std::vector<unsigned>& cpus) const {
  for (unsigned c : cpus)
    if (cpus_[c].online) return static_cast<int>(c);
  return -1;
}

bool SimMachine::cpu_online(unsigned cpu) const {
  std::lock_guard lock(mu_);
  return cpu < cpus_.size() && cpus_[cpu].online;
}

Result<void> SimMachine::set_cpu_online(unsigned cpu, bool online) {
  std::lock_guard lock(mu_);
  if (cpu >= cpus_.size() || !cpus_[cpu].present)
    return Error::make(EINVAL, "no CPU " + std::to_string(cpu) + " on this platform");
  Cpu& c = cpus_[cpu];
  if (c.online == online) return Ok();
  // Account the traffic up to now with the old set of running CPUs.
  const uint64_t now = now_us_locked();
  settle_locked(now);
  L3Dom* d3 = c.l3 >= 0 ? &l3_[c.l3] : nullptr;
  L2Dom* d2 = c.l2 >= 0 ? &l2_[c.l2] : nullptr;
  if (online) {
    // The first CPU of a powered-down domain brings it up from reset.
    if (d3 != nullptr && !any_online(d3->cpus)) {
      power_on_l3(*d3);
      d3->last_us = now;
      keep_l3_locked(*d3);
    }
    if (d2 != nullptr && !any_online(d2->cpus)) power_on_l2(*d2);
    if (c.core >= 0 && !any_online(cores_[c.core].cpus)) power_on_core(cores_[c.core]);
    c.online = true;
  } else {
    c.online = false;
    cpu_work_.erase(cpu);
  }
  c.pqr_assoc = 0;
  c.qm_evtsel = 0;
  c.l3_qos_cfg = 0;
  c.cba_thrtl.assign(cba_regs_, 0);  // the logical processor's own registers
  tracking_dirty_ = true;
  return Ok();
}

CpuidRegs SimMachine::cpuid(unsigned cpu, uint32_t leaf, uint32_t subleaf) const {
  // CPUID 8000_001Ch EAX is the copy of LWP_CFG[31:0] (the proposal:
  // "copied from LWPMSR0"; shipped: the enabled features).
  if (leaf == CPUID_LEAF_AMD_LWP && subleaf == 0 && lwp_caps_.present && lwp_eax_ &&
      cpu < cpus_.size()) {
    CpuidRegs r = lwp_caps_.raw;
    r.eax = lwp_eax_[cpu].load();
    return r;
  }
  if (auto c = profile_.cpuid_per_cpu.find(cpu); c != profile_.cpuid_per_cpu.end()) {
    auto o = c->second.find({leaf, subleaf});
    if (o != c->second.end()) return o->second;
  }
  auto it = profile_.cpuid.find({leaf, subleaf});
  return it == profile_.cpuid.end() ? CpuidRegs{} : it->second;
}

uint64_t& SimMachine::qm_evtsel_of(Cpu& c) {
  if (profile_.amd() && c.l3 >= 0) return l3_[c.l3].qm_evtsel;
  return c.qm_evtsel;
}

bool SimMachine::cdp_on(const L3Dom& d, int cpu) const {
  if (!profile_.amd()) return (d.l3_qos_cfg & QOS_CFG_CDP_ENABLE) != 0;
  if (cpu < 0) cpu = first_online(d.cpus);
  return cpu >= 0 && (cpus_[cpu].l3_qos_cfg & QOS_CFG_CDP_ENABLE) != 0;
}

// The texts of a failed access are for the log (Error::log_only): the
// kernel's resctrl has no text of its own for a faulting MSR access, and
// X86Arch answers fs/ with its own.
Result<void> SimMachine::gp(unsigned cpu, uint32_t msr, const char* why) const {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "simulated #GP on CPU %u, MSR 0x%x: %s", cpu, msr, why);
  return Error::log_only(EIO, buf);
}

uint64_t SimMachine::ext_cfg_bits() const {
  return (info_.res(ResourceId::L3).mon.cntr_assign.capable ? L3_QOS_EXT_CFG_ABMC_EN : 0) |
         (info_.res(ResourceId::L3).cache.io_alloc_capable ? L3_QOS_EXT_CFG_SDCIAE_EN : 0);
}

bool SimMachine::mask_ok(const Resource& r, uint64_t v) const {
  if ((v & ~uint64_t{r.cache.full_mask()}) != 0) return false;
  if (profile_.amd()) return true;  // AMD accepts any mask, even empty
  if (v == 0) return false;
  if (r.cache.sparse_masks) return true;
  // Contiguous: adding the lowest set bit carries through one run of ones.
  uint64_t lowest = v & (~v + 1);
  uint64_t sum = v + lowest;
  return (sum & v) == 0;
}

Result<uint64_t> SimMachine::read(unsigned cpu, uint32_t msr) {
  std::lock_guard lock(mu_);
  if (cpu >= cpus_.size() || !cpus_[cpu].online) return Error::log_only(EIO, "CPU is offline");
  Cpu& c = cpus_[cpu];
  const Resource& l3r = info_.res(ResourceId::L3);
  const Resource& l2r = info_.res(ResourceId::L2);
  const bool cqm = (cpuid(cpu, CPUID_LEAF_EXT_FEATURES, 0).ebx & CPUID_7_EBX_PQM) != 0;
  L3Dom* d = c.l3 >= 0 ? &l3_[c.l3] : nullptr;
  L2Dom* d2 = c.l2 >= 0 ? &l2_[c.l2] : nullptr;

  if (msr == IA32_PQR_ASSOC) return c.pqr_assoc;
  if (in_bank(msr, IA32_QOS_CORE_BW_THRTL_0, cba_regs_))
    return c.cba_thrtl[msr - IA32_QOS_CORE_BW_THRTL_0];
  if (msr == IA32_QM_EVTSEL && cqm) return qm_evtsel_of(c);
  if (msr == IA32_QM_CTR && cqm) return read_qm_ctr_locked(c);
  if (d != nullptr) {
    if (msr == IA32_L3_QOS_CFG && l3r.cache.cdp_capable)
      return profile_.amd() ? c.l3_qos_cfg : d->l3_qos_cfg;
    if (in_bank(msr, IA32_L3_MASK_0, d->l3_mask.size())) return d->l3_mask[msr - IA32_L3_MASK_0];
    if (in_bank(msr, IA32_L2_QOS_EXT_BW_THRTL_0, d->mba_thrtl.size()))
      return d->mba_thrtl[msr - IA32_L2_QOS_EXT_BW_THRTL_0];
    if (in_bank(msr, L3QOS_BW_CONTROL_0, d->amd_bw.size()))
      return d->amd_bw[msr - L3QOS_BW_CONTROL_0];
    if (in_bank(msr, L3QOS_SLOW_BW_CONTROL_0, d->smba_bw.size()))
      return d->smba_bw[msr - L3QOS_SLOW_BW_CONTROL_0];
    if (in_bank(msr, QOS_EVT_CFG_0, 2) && info_.res(ResourceId::L3).mon.evt_cfg.capable)
      return d->evt_cfg[msr - QOS_EVT_CFG_0];
    if (msr == L3_QOS_EXT_CFG && ext_cfg_bits() != 0) return d->ext_cfg;
    if (msr == MSR_RMID_SNC_CONFIG && snc_msr_) return d->rmid_snc_cfg;
    if (msr == IA32_L3_IO_RDT_CFG && (limits_.io_rdt_alloc || limits_.io_rdt_mon))
      return d->io_rdt_cfg;
    if (msr == L3_QOS_ABMC_CFG && info_.res(ResourceId::L3).mon.cntr_assign.capable)
      return d->abmc_cfg_last;
    if (msr == L3_QOS_ABMC_DSC && info_.res(ResourceId::L3).mon.cntr_assign.capable) {
      unsigned id = (d->abmc_cfg_last >> ABMC_CFG_CTR_ID_SHIFT) & ABMC_CFG_CTR_ID_MASK;
      if (id >= d->cntrs.size()) return uint64_t{0};
      const AbmcCounter& k = d->cntrs[id];
      return (k.enabled ? ABMC_CFG_CTR_EN : 0) | (uint64_t{id} << ABMC_CFG_CTR_ID_SHIFT) |
             (uint64_t{k.rmid} << ABMC_CFG_BW_SRC_SHIFT) | k.bw_type;
    }
  }
  if (msr == MBA_CFG && mba_cfg_bits_ != 0 && d != nullptr)
    return (c.core >= 0 ? cores_[c.core].mba_cfg : 0) | d->rambae;
  if (msr == MSR_MISC_FEATURE_CONTROL && !profile_.amd()) return c.misc_feature_control;
  if (msr == MSR_AMD64_LWP_CFG && lwp_caps_.present) return c.lwp_cfg;
  if (msr == MSR_AMD64_LWP_CBADDR && lwp_caps_.present) return lwp_cbaddr_locked(cpu);
  if (msr == IA32_CORE_CAPABILITIES && core_caps_)
    return stlb_ ? CORE_CAPABILITIES_STLB_QOS : uint64_t{0};
  if (stlb_ && c.core >= 0) {
    if (msr == STLB_QOS_INFO) {
      return uint64_t{stlb_->num_closid - 1} |
             (uint64_t{stlb_->cbm_len - 1} << STLB_QOS_INFO_CBM_SHIFT) |
             (stlb_->fill ? STLB_QOS_INFO_TRANSLATION_MSR : 0) |
             (stlb_->alias ? STLB_QOS_INFO_4K_2M_ALIAS : 0);
    }
    const Core& k = cores_[c.core];
    if (in_bank(msr, STLB_QOS_MASK_0, k.stlb_mask.size()))
      return k.stlb_mask[msr - STLB_QOS_MASK_0];
    if (msr == STLB_FILL_TRANSLATION && stlb_->fill) {
      auto e = gp(cpu, msr, "write-only register");
      return std::move(e).error();
    }
  }
  if (d2 != nullptr) {
    if (msr == IA32_L2_QOS_CFG && l2r.cache.cdp_capable) return d2->l2_qos_cfg;
    if (in_bank(msr, IA32_L2_MASK_0, d2->l2_mask.size())) return d2->l2_mask[msr - IA32_L2_MASK_0];
  }
  auto e = gp(cpu, msr, "unknown or absent register");
  return std::move(e).error();
}

Result<void> SimMachine::write(unsigned cpu, uint32_t msr, uint64_t v) {
  std::lock_guard lock(mu_);
  if (cpu >= cpus_.size() || !cpus_[cpu].online) return Error::log_only(EIO, "CPU is offline");
  // An injected fault takes the next configuration writes (masks,
  // bandwidth, association, QoS configuration), never one of the event
  // select that every counter read goes through: the monitoring worker
  // reads counters every second, and would take a fault meant for a user's
  // command.
  if (fail_writes_ > 0 && msr != IA32_QM_EVTSEL && (!fail_cpu_ || *fail_cpu_ == cpu)) {
    --fail_writes_;
    return gp(cpu, msr, "injected fault");
  }
  Cpu& c = cpus_[cpu];
  const Resource& l3r = info_.res(ResourceId::L3);
  const Resource& l2r = info_.res(ResourceId::L2);
  const bool cqm = (cpuid(cpu, CPUID_LEAF_EXT_FEATURES, 0).ebx & CPUID_7_EBX_PQM) != 0;
  L3Dom* d = c.l3 >= 0 ? &l3_[c.l3] : nullptr;
  L2Dom* d2 = c.l2 >= 0 ? &l2_[c.l2] : nullptr;
  const uint64_t now = now_us_locked();

  if (msr == MSR_AMD64_LWP_CFG && lwp_caps_.present) return lwp_write_cfg_locked(cpu, v);
  if (msr == MSR_AMD64_LWP_CBADDR && lwp_caps_.present) return lwp_write_cbaddr_locked(cpu, v);
  if (msr == IA32_PQR_ASSOC) {
    uint64_t closid = v >> PQR_ASSOC_CLOS_SHIFT;
    uint64_t rmid = v & PQR_ASSOC_RMID_MASK;
    if (closid >= num_closid_any_) return gp(cpu, msr, "CLOS beyond the enumerated maximum");
    if (rmid >= num_rmid_any_) return gp(cpu, msr, "RMID beyond the enumerated maximum");
    settle_locked(now);
    c.pqr_assoc = v;
    tracking_dirty_ = true;
    return Ok();
  }
  if (msr == IA32_QM_EVTSEL && cqm) {
    if ((v & 0x7FFFFF00ULL) != 0) return gp(cpu, msr, "reserved bits set");
    if (v & QM_EVTSEL_EXTENDED_EVTID) {
      if (!info_.res(ResourceId::L3).mon.cntr_assign.capable)
        return gp(cpu, msr, "extended event id without ABMC");
    } else if ((v >> QM_EVTSEL_RMID_SHIFT) >= num_rmid_any_ && profile_.amd()) {
      // AMD #GPs; Intel takes it and QM_CTR reads Error.
      return gp(cpu, msr, "RMID beyond CPUID.0xF.0:EBX");
    }
    qm_evtsel_of(c) = v;
    return Ok();
  }
  if (msr == IA32_QM_CTR && cqm) return gp(cpu, msr, "read-only register");
  if (in_bank(msr, IA32_QOS_CORE_BW_THRTL_0, cba_regs_)) {
    const uint32_t first = (msr - IA32_QOS_CORE_BW_THRTL_0) * CBA_CLOS_PER_MSR;
    for (uint32_t k = 0; k < CBA_CLOS_PER_MSR; ++k) {
      const uint64_t level = (v >> (8 * k)) & 0xFF;
      if (level > limits_.cba_max_level) return gp(cpu, msr, "CBA level above the maximum");
      if (level != 0 && first + k >= limits_.cba_num_closid)
        return gp(cpu, msr, "CBA level for a CLOS beyond the enumerated count");
    }
    settle_locked(now);
    c.cba_thrtl[msr - IA32_QOS_CORE_BW_THRTL_0] = v;
    return Ok();
  }
  if (d != nullptr) {
    if (msr == IA32_L3_QOS_CFG && l3r.cache.cdp_capable) {
      if ((v & ~QOS_CFG_CDP_ENABLE) != 0) return gp(cpu, msr, "reserved bits set");
      settle_locked(now);
      (profile_.amd() ? c.l3_qos_cfg : d->l3_qos_cfg) = v;
      return Ok();
    }
    if (in_bank(msr, IA32_L3_MASK_0, d->l3_mask.size())) {
      if (!mask_ok(l3r, v)) return gp(cpu, msr, "invalid capacity bitmask");
      settle_locked(now);
      d->l3_mask[msr - IA32_L3_MASK_0] = v;
      return Ok();
    }
    if (in_bank(msr, IA32_L2_QOS_EXT_BW_THRTL_0, d->mba_thrtl.size())) {
      if ((v & ~0xFFFFULL) != 0) return gp(cpu, msr, "reserved bits set");
      settle_locked(now);
      d->mba_thrtl[msr - IA32_L2_QOS_EXT_BW_THRTL_0] = v;
      return Ok();
    }
    if (in_bank(msr, L3QOS_BW_CONTROL_0, d->amd_bw.size())) {
      if ((v >> (limits_.amd_bw_len + 1)) != 0) return gp(cpu, msr, "reserved bits set");
      settle_locked(now);
      d->amd_bw[msr - L3QOS_BW_CONTROL_0] = v;
      return Ok();
    }
    if (in_bank(msr, L3QOS_SLOW_BW_CONTROL_0, d->smba_bw.size())) {
      if ((v >> (limits_.amd_smba_len + 1)) != 0) return gp(cpu, msr, "reserved bits set");
      d->smba_bw[msr - L3QOS_SLOW_BW_CONTROL_0] = v;
      return Ok();
    }
    if (in_bank(msr, QOS_EVT_CFG_0, 2) && info_.res(ResourceId::L3).mon.evt_cfg.capable) {
      if ((v & ~uint64_t{info_.res(ResourceId::L3).mon.evt_cfg.supported_mask}) != 0)
        return gp(cpu, msr, "unsupported transaction bits");
      settle_locked(now);
      const size_t e = msr - QOS_EVT_CFG_0;
      d->evt_cfg[e] = v;
      // Any configuration change clears every bandwidth counter of the
      // domain, both events of every RMID, and the next read of each says
      // Unavailable (AMD64 PQoS: "Bandwidth Monitoring Event Configuration").
      for (int k = 0; k < 2; ++k) {
        std::fill(d->mbm[k].begin(), d->mbm[k].end(), 0.0);
        std::fill(d->unavail_once[k].begin(), d->unavail_once[k].end(), 1);
      }
      keep_l3_locked(*d);
      return Ok();
    }
    if (msr == MSR_RMID_SNC_CONFIG && snc_msr_) {
      if ((v & ~RMID_SNC_CONFIG_LOCALIZED) != 0) return gp(cpu, msr, "reserved bits set");
      settle_locked(now);
      d->rmid_snc_cfg = v;
      return Ok();
    }
    if (msr == IA32_L3_IO_RDT_CFG && (limits_.io_rdt_alloc || limits_.io_rdt_mon)) {
      // A bit is supported when CPUID enumerates an I/O feature of its kind
      // and the CPU agents' equivalent: without that prerequisite, using
      // the I/O feature through the MSR faults (RDT architecture
      // specification, 4.3).
      uint64_t ok = (limits_.io_rdt_alloc && cpu_l3_cat_ ? L3_IO_RDT_CFG_IRAE : 0) |
                    (limits_.io_rdt_mon && cpu_l3_mon_ ? L3_IO_RDT_CFG_IRME : 0);
      if ((v & ~ok) != 0) return gp(cpu, msr, "reserved or unsupported bits set");
      settle_locked(now);  // device traffic changes tags from now on
      d->io_rdt_cfg = v;
      tracking_dirty_ = true;
      return Ok();
    }
    if (msr == L3_QOS_EXT_CFG && ext_cfg_bits() != 0) {
      if ((v & ~ext_cfg_bits()) != 0) return gp(cpu, msr, "reserved or unsupported bits set");
      settle_locked(now);
      // Switching counter assignment on or off restarts the RMID-based
      // bandwidth counters from 0.
      if (((d->ext_cfg ^ v) & L3_QOS_EXT_CFG_ABMC_EN) != 0) {
        for (auto& m : d->mbm) std::fill(m.begin(), m.end(), 0.0);
        keep_l3_locked(*d);
      }
      d->ext_cfg = v;
      keep_l3_locked(*d);
      return Ok();
    }
    if (msr == L3_QOS_ABMC_CFG && info_.res(ResourceId::L3).mon.cntr_assign.capable) {
      constexpr uint64_t kReserved = (0x7ULL << 44) | (0x1FFULL << 53);
      if ((v & kReserved) != 0) return gp(cpu, msr, "reserved bits set");
      unsigned id = (v >> ABMC_CFG_CTR_ID_SHIFT) & ABMC_CFG_CTR_ID_MASK;
      uint32_t bw_type = static_cast<uint32_t>(v & ABMC_CFG_BW_TYPE_MASK);
      uint32_t src = static_cast<uint32_t>((v >> ABMC_CFG_BW_SRC_SHIFT) & ABMC_CFG_BW_SRC_MASK);
      if (id >= d->cntrs.size()) return gp(cpu, msr, "counter id beyond the enumerated count");
      if ((bw_type & ~BMEC_MAX_EVT_CONFIG_BITS) != 0) return gp(cpu, msr, "reserved BwType bits");
      if ((v & ABMC_CFG_IS_CLOS) ? src >= num_closid_any_ : src >= num_rmid_any_)
        return gp(cpu, msr, "BwSrc beyond the enumerated maximum");
      settle_locked(now);
      d->abmc_cfg_last = v;
      if (v & ABMC_CFG_CFG_EN) {
        AbmcCounter& k = d->cntrs[id];
        k.enabled = (v & ABMC_CFG_CTR_EN) != 0;
        k.is_clos = (v & ABMC_CFG_IS_CLOS) != 0;
        k.rmid = src;
        k.bw_type = bw_type;
        k.bytes = 0;  // applying a configuration resets the counter
        keep_l3_locked(*d);
      }
      return Ok();
    }
    if (msr == L3_QOS_ABMC_DSC && info_.res(ResourceId::L3).mon.cntr_assign.capable)
      return gp(cpu, msr, "read-only register");
    if (msr == MBA_CFG && mba_cfg_bits_ != 0) {
      // Bit 0 is reserved on a part with per-thread MBA (third generation
      // removed it), bit 2 everywhere but the Resource-Aware MBA parts.
      if ((v & ~mba_cfg_bits_) != 0) return gp(cpu, msr, "reserved bits set");
      settle_locked(now);
      if (c.core >= 0) cores_[c.core].mba_cfg = v & MBA_CFG_MIN;
      d->rambae = v & MBA_CFG_RAMBAE;
      return Ok();
    }
  }
  if (msr == IA32_CORE_CAPABILITIES && core_caps_) return gp(cpu, msr, "read-only register");
  if (stlb_ && c.core >= 0) {
    if (msr == STLB_QOS_INFO) return gp(cpu, msr, "read-only register");
    Core& k = cores_[c.core];
    if (in_bank(msr, STLB_QOS_MASK_0, k.stlb_mask.size())) {
      const uint64_t full = (uint64_t{1} << stlb_->cbm_len) - 1;
      // Contiguous ones only (adding the lowest set bit carries through one
      // run), within the enumerated length; bits 63:8 are reserved.
      const uint64_t lowest = v & (~v + 1);
      if (v == 0 || (v & ~full) != 0 || ((v + lowest) & v) != 0)
        return gp(cpu, msr, "invalid STLB way mask");
      k.stlb_mask[msr - STLB_QOS_MASK_0] = v;
      return Ok();
    }
    if (msr == STLB_FILL_TRANSLATION && stlb_->fill) {
      if ((v & STLB_FILL_RESERVED) != 0) return gp(cpu, msr, "reserved bits set");
      if ((v & STLB_FILL_CLOS_MASK) >= stlb_->num_closid)
        return gp(cpu, msr, "CLOS beyond STLB_QOS_INFO[NCLOS]");
      ++k.stlb_fills;
      return Ok();
    }
  }
  if (msr == MSR_MISC_FEATURE_CONTROL && !profile_.amd()) {
    // The simulated cores have the four Broadwell-server prefetcher bits.
    if ((v & ~MISC_FEATURE_PREFETCH_DISABLE_BDX) != 0) return gp(cpu, msr, "reserved bits set");
    c.misc_feature_control = v;
    return Ok();
  }
  if (d2 != nullptr) {
    if (msr == IA32_L2_QOS_CFG && l2r.cache.cdp_capable) {
      if ((v & ~QOS_CFG_CDP_ENABLE) != 0) return gp(cpu, msr, "reserved bits set");
      d2->l2_qos_cfg = v;
      return Ok();
    }
    if (in_bank(msr, IA32_L2_MASK_0, d2->l2_mask.size())) {
      if (!mask_ok(l2r, v)) return gp(cpu, msr, "invalid capacity bitmask");
      d2->l2_mask[msr - IA32_L2_MASK_0] = v;
      return Ok();
    }
  }
  return gp(cpu, msr, "unknown or absent register");
}

void SimMachine::fail_next_writes(unsigned count, std::optional<unsigned> cpu) {
  std::lock_guard lock(mu_);
  fail_writes_ = count;
  fail_cpu_ = cpu;
}

std::vector<RegisterValue> SimMachine::dump_registers() const { return dump(false); }

std::vector<RegisterValue> SimMachine::dump_all_registers() const { return dump(true); }

// `all`: also the registers dump_registers() has always left out (see
// SimControl::dump_all_registers).
std::vector<RegisterValue> SimMachine::dump(bool all) const {
  std::lock_guard lock(mu_);
  std::vector<RegisterValue> out;
  auto one = [&](unsigned cpu, uint32_t msr, uint64_t v, const char* group) {
    out.push_back({cpu, msr, v, group});
  };
  auto bank = [&](unsigned cpu, uint32_t base, const std::vector<uint64_t>& regs,
                  const char* group) {
    for (size_t i = 0; i < regs.size(); ++i)
      one(cpu, base + static_cast<uint32_t>(i), regs[i], group);
  };
  const bool cqm =
      !cpus_.empty() && (cpuid(0, CPUID_LEAF_EXT_FEATURES, 0).ebx & CPUID_7_EBX_PQM) != 0;
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    if (cpus_[c].online) one(c, IA32_PQR_ASSOC, cpus_[c].pqr_assoc, "pqr");
  }
  for (unsigned c = 0; c < cpus_.size(); ++c) {
    if (!cpus_[c].online) continue;
    for (uint32_t i = 0; i < cpus_[c].cba_thrtl.size(); ++i)
      one(c, IA32_QOS_CORE_BW_THRTL_0 + i, cpus_[c].cba_thrtl[i], "cba");
  }
  // The monitoring event select: per CPU on Intel (per L3 domain on AMD,
  // below).
  if (all && cqm && !profile_.amd()) {
    for (unsigned c = 0; c < cpus_.size(); ++c)
      if (cpus_[c].online) one(c, IA32_QM_EVTSEL, cpus_[c].qm_evtsel, "monitoring");
  }
  // Shown where resctrl uses it (pseudo-locking), so that the prefetchers
  // can be seen back on after a locking sequence.
  if (info_.pseudo_lock_capable) {
    for (unsigned c = 0; c < cpus_.size(); ++c)
      if (cpus_[c].online)
        one(c, MSR_MISC_FEATURE_CONTROL, cpus_[c].misc_feature_control, "pseudo_lock");
  }
  const bool io_cfg = limits_.io_rdt_alloc || limits_.io_rdt_mon;
  for (const auto& d : l3_) {
    const int first = first_online(d.cpus);
    if (first < 0) continue;
    const unsigned cpu = static_cast<unsigned>(first);
    if (all && cqm && profile_.amd()) one(cpu, IA32_QM_EVTSEL, d.qm_evtsel, "monitoring");
    if (info_.res(ResourceId::L3).cache.cdp_capable)
      one(cpu, IA32_L3_QOS_CFG, profile_.amd() ? cpus_[cpu].l3_qos_cfg : d.l3_qos_cfg, "l3_cat");
    bank(cpu, IA32_L3_MASK_0, d.l3_mask, "l3_cat");
    bank(cpu, IA32_L2_QOS_EXT_BW_THRTL_0, d.mba_thrtl, "mba");
    bank(cpu, L3QOS_BW_CONTROL_0, d.amd_bw, "mba");
    bank(cpu, L3QOS_SLOW_BW_CONTROL_0, d.smba_bw, "smba");
    if (info_.res(ResourceId::L3).mon.evt_cfg.capable) {
      one(cpu, QOS_EVT_CFG_0, d.evt_cfg[0], "bmec");
      one(cpu, QOS_EVT_CFG_0 + 1, d.evt_cfg[1], "bmec");
    }
    if (ext_cfg_bits() != 0) one(cpu, L3_QOS_EXT_CFG, d.ext_cfg, "abmc");
    if (all && info_.res(ResourceId::L3).mon.cntr_assign.capable)
      one(cpu, L3_QOS_ABMC_CFG, d.abmc_cfg_last, "abmc");
    // Listed where it matters: on an L3 split into SNC nodes.
    if (snc_msr_ && d.snc_ways > 1) one(cpu, MSR_RMID_SNC_CONFIG, d.rmid_snc_cfg, "snc");
    if (all && io_cfg) one(cpu, IA32_L3_IO_RDT_CFG, d.io_rdt_cfg, "io_rdt");
  }
  for (const auto& d : l2_) {
    const int first = first_online(d.cpus);
    if (first < 0) continue;
    const unsigned cpu = static_cast<unsigned>(first);
    if (info_.res(ResourceId::L2).cache.cdp_capable)
      one(cpu, IA32_L2_QOS_CFG, d.l2_qos_cfg, "l2_cat");
    bank(cpu, IA32_L2_MASK_0, d.l2_mask, "l2_cat");
  }
  // Per physical core: MBA_CFG (read as its threads read it) and STLB QoS.
  for (const auto& k : cores_) {
    const int first = first_online(k.cpus);
    if (first < 0) continue;
    const unsigned cpu = static_cast<unsigned>(first);
    const Cpu& c = cpus_[cpu];
    if (all && mba_cfg_bits_ != 0 && c.l3 >= 0)
      one(cpu, MBA_CFG, k.mba_cfg | l3_[c.l3].rambae, "mba");
    if (all && core_caps_)
      one(cpu, IA32_CORE_CAPABILITIES, stlb_ ? CORE_CAPABILITIES_STLB_QOS : uint64_t{0}, "stlb");
    if (stlb_) {
      if (all)
        one(cpu, STLB_QOS_INFO,
            uint64_t{stlb_->num_closid - 1} |
                (uint64_t{stlb_->cbm_len - 1} << STLB_QOS_INFO_CBM_SHIFT) |
                (stlb_->fill ? STLB_QOS_INFO_TRANSLATION_MSR : 0) |
                (stlb_->alias ? STLB_QOS_INFO_4K_2M_ALIAS : 0),
            "stlb");
      bank(cpu, STLB_QOS_MASK_0, k.stlb_mask, "stlb");
    }
  }
  // LWP: per CPU, LWP_CFG and LWP_CBADDR.
  if (all && lwp_caps_.present) {
    for (unsigned c = 0; c < cpus_.size(); ++c) {
      if (!cpus_[c].online) continue;
      one(c, MSR_AMD64_LWP_CFG, cpus_[c].lwp_cfg, "lwp");
      one(c, MSR_AMD64_LWP_CBADDR, lwp_cbaddr_locked(c), "lwp");
    }
  }
  // I/O RDT: every link's tagging registers, by address.
  for (const auto& [addr, r] : io_regs_) {
    if (!all) break;
    RegisterValue v;
    v.value = r.value;
    v.group = "io_rdt";
    v.mmio_addr = addr;
    v.mmio_bytes = r.bytes;
    out.push_back(v);
  }
  return out;
}

}  // namespace resctrlfs::hw::sim
