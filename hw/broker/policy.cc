// Implements the MSR broker's policy (see policy.h).
#include "hw/broker/policy.h"

#include <algorithm>
#include <cstdio>

#include "hw/x86/aet.h"
#include "hw/x86/registers.h"

namespace resctrlfs::hw::broker {

using namespace resctrlfs::hw::x86;  // NOLINT: register names

namespace {

Error refuse(const char* fmt, uint64_t a = 0, uint64_t b = 0) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), fmt, static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return Error::make(EPERM, buf);
}

bool in_bank(uint32_t msr, uint32_t base, unsigned n) { return msr >= base && msr - base < n; }

}  // namespace

Policy::Policy(X86Platform info, HwLimits limits) : info_(std::move(info)), limits_(limits) {
  for (const auto& r : info_.resources)
    if (r.alloc_capable) num_closid_any_ = std::max(num_closid_any_, r.num_closid);
  num_rmid_any_ =
      info_.res(ResourceId::L3).mon.capable ? info_.res(ResourceId::L3).mon.num_rmids : 1;
  prefetch_bits_ = prefetch_disable_bits(info_.vendor, info_.family, info_.model);
}

Result<void> Policy::check_mmio(uint64_t addr, unsigned width) const {
  for (const IrdtRegisterBlock& b : mmio_blocks_) {
    if (addr < b.base || addr >= b.end()) continue;
    if (width != b.reg_bytes || (addr - b.base) % b.reg_bytes != 0)
      return refuse("MMIO access of %llu bytes at 0x%llx is not one whole I/O RDT register", width,
                    addr);
    return Ok();
  }
  return refuse("MMIO address 0x%llx is not an I/O RDT register the IRDT table names", addr);
}

void Policy::set_pmt(const std::vector<PmtAggregator>& aggregators) {
  pmt_.clear();
  for (const PmtAggregator& a : aggregators)
    pmt_.push_back(PmtAllowed{a.telem, a.region.guid, a.region.size});
}

Result<size_t> Policy::check_pmt(unsigned telem, uint64_t offset, unsigned width) const {
  for (size_t i = 0; i < pmt_.size(); ++i) {
    const PmtAllowed& a = pmt_[i];
    if (a.telem != telem) continue;
    const AetEventGroup* layout = aet_event_group(a.guid);
    if (layout == nullptr || layout->mmio_size() != a.size)
      return refuse("telem%llu is not a known per-RMID telemetry layout", telem);
    if (width != sizeof(uint64_t) || offset % sizeof(uint64_t) != 0)
      return refuse("PMT read of %llu bytes at offset 0x%llx is not one aligned counter word",
                    width, offset);
    if (offset >= a.size || a.size - offset < sizeof(uint64_t))
      return refuse("PMT offset 0x%llx is beyond the aggregator's %llu bytes", offset, a.size);
    return i;
  }
  return refuse("telem%llu is not a per-RMID telemetry aggregator this broker serves", telem);
}

Result<void> Policy::check(unsigned cpu, uint32_t msr, uint64_t value, OpKind kind) const {
  if (cpu >= info_.nr_cpus || !info_.online.test(cpu)) return refuse("CPU %llu is not online", cpu);
  // Named for the log: AMD Lightweight Profiling is per-thread state that
  // the owning thread programs itself; no client may touch it through us.
  if (msr == MSR_AMD64_LWP_CFG || msr == MSR_AMD64_LWP_CBADDR)
    return refuse("MSR 0x%llx is an AMD LWP register, never accessed through the broker", msr);
  const Resource& l3 = info_.res(ResourceId::L3);
  const Resource& l2 = info_.res(ResourceId::L2);
  const Resource& mb = info_.res(ResourceId::MB);
  const Resource& smba = info_.res(ResourceId::SMBA);
  const Resource& cb = info_.res(ResourceId::CB);
  const Resource& stlb = info_.res(ResourceId::STLB);
  const MonCaps& mon = info_.res(ResourceId::L3).mon;
  bool known =
      msr == IA32_PQR_ASSOC || (mon.capable && (msr == IA32_QM_EVTSEL || msr == IA32_QM_CTR)) ||
      (l3.alloc_capable && l3.cache.cdp_capable && msr == IA32_L3_QOS_CFG) ||
      (l2.alloc_capable && l2.cache.cdp_capable && msr == IA32_L2_QOS_CFG) ||
      (l3.alloc_capable && in_bank(msr, IA32_L3_MASK_0, l3.num_closid)) ||
      (l2.alloc_capable && in_bank(msr, IA32_L2_MASK_0, l2.num_closid)) ||
      (mb.alloc_capable && !limits_.amd &&
       (in_bank(msr, IA32_L2_QOS_EXT_BW_THRTL_0, mb.num_closid) || msr == MBA_CFG)) ||
      (mb.alloc_capable && limits_.amd && in_bank(msr, L3QOS_BW_CONTROL_0, mb.num_closid)) ||
      (smba.alloc_capable && in_bank(msr, L3QOS_SLOW_BW_CONTROL_0, smba.num_closid)) ||
      (cb.alloc_capable && in_bank(msr, IA32_QOS_CORE_BW_THRTL_0,
                                   (cb.num_closid + CBA_CLOS_PER_MSR - 1) / CBA_CLOS_PER_MSR)) ||
      (mon.evt_cfg.capable && in_bank(msr, QOS_EVT_CFG_0, 2)) ||
      (mon.cntr_assign.capable && (msr == L3_QOS_ABMC_CFG || msr == L3_QOS_ABMC_DSC)) ||
      ((mon.cntr_assign.capable || l3.cache.io_alloc_capable) && msr == L3_QOS_EXT_CFG) ||
      ((limits_.io_rdt_alloc || limits_.io_rdt_mon) && msr == IA32_L3_IO_RDT_CFG) ||
      (mon.capable && mon.snc_ways > 1 && msr == MSR_RMID_SNC_CONFIG) ||
      (prefetch_bits_ != 0 && msr == MSR_MISC_FEATURE_CONTROL) ||
      (stlb.alloc_capable && (msr == IA32_CORE_CAPABILITIES || msr == STLB_QOS_INFO ||
                              in_bank(msr, STLB_QOS_MASK_0, stlb.num_closid)));
  if (!known) return refuse("MSR 0x%llx is not an RDT register this CPU enumerates", msr);
  if (kind == OpKind::kRead) return Ok();
  if (kind != OpKind::kWrite) return refuse("unknown operation %llu", static_cast<uint64_t>(kind));
  return check_write(msr, value);
}

Result<void> Policy::check_write(uint32_t msr, uint64_t v) const {
  const Resource& l3 = info_.res(ResourceId::L3);
  const Resource& l2 = info_.res(ResourceId::L2);
  const MonCaps& mon = info_.res(ResourceId::L3).mon;
  if (msr == IA32_QM_CTR || msr == L3_QOS_ABMC_DSC || msr == IA32_CORE_CAPABILITIES ||
      msr == STLB_QOS_INFO)
    return refuse("MSR 0x%llx is read-only", msr);
  if (const Resource& stlb = info_.res(ResourceId::STLB);
      stlb.alloc_capable && in_bank(msr, STLB_QOS_MASK_0, stlb.num_closid)) {
    if ((v & ~uint64_t{stlb.cache.full_mask()}) != 0) return refuse("STLB mask 0x%llx too wide", v);
    return Ok();
  }
  if (msr == IA32_PQR_ASSOC) {
    if ((v >> PQR_ASSOC_CLOS_SHIFT) >= num_closid_any_)
      return refuse("PQR_ASSOC CLOSID %llu beyond %llu", v >> 32, num_closid_any_);
    if ((v & PQR_ASSOC_RMID_MASK) >= num_rmid_any_)
      return refuse("PQR_ASSOC RMID %llu beyond %llu", v & PQR_ASSOC_RMID_MASK, num_rmid_any_);
    return Ok();
  }
  if (msr == IA32_QM_EVTSEL) {
    if ((v & 0x7FFFFF00ULL) != 0) return refuse("QM_EVTSEL reserved bits in 0x%llx", v);
    uint64_t evt = v & QM_EVTSEL_EVTID_MASK, id = v >> QM_EVTSEL_RMID_SHIFT;
    if (v & QM_EVTSEL_EXTENDED_EVTID) {
      if (!mon.cntr_assign.capable || evt != ABMC_EVT_ID || id >= mon.cntr_assign.num_cntrs)
        return refuse("QM_EVTSEL extended event 0x%llx not allowed", v);
      return Ok();
    }
    if (evt < QOS_L3_OCCUP_EVENT_ID || evt > QOS_L3_MBM_LOCAL_EVENT_ID)
      return refuse("QM_EVTSEL event id %llu unknown", evt);
    // Under SNC the counters are read by physical RMID: every node's slice.
    const uint64_t phys = uint64_t{mon.num_rmids} * mon.snc_ways;
    if (id >= phys) return refuse("QM_EVTSEL RMID %llu beyond %llu", id, phys);
    return Ok();
  }
  if (msr == IA32_L3_QOS_CFG || msr == IA32_L2_QOS_CFG || msr == MBA_CFG ||
      msr == MSR_RMID_SNC_CONFIG) {
    if (v > 1) return refuse("MSR 0x%llx reserved bits in 0x%llx", msr, v);
    return Ok();
  }
  if (msr == L3_QOS_EXT_CFG) {
    const uint64_t ok = (mon.cntr_assign.capable ? L3_QOS_EXT_CFG_ABMC_EN : 0) |
                        (l3.cache.io_alloc_capable ? L3_QOS_EXT_CFG_SDCIAE_EN : 0);
    if ((v & ~ok) != 0) return refuse("L3_QOS_EXT_CFG bits 0x%llx not enumerated", v);
    return Ok();
  }
  if (msr == IA32_L3_IO_RDT_CFG) {
    uint64_t ok = (limits_.io_rdt_alloc ? L3_IO_RDT_CFG_IRAE : 0) |
                  (limits_.io_rdt_mon ? L3_IO_RDT_CFG_IRME : 0);
    if ((v & ~ok) != 0) return refuse("L3_IO_RDT_CFG bits 0x%llx not enumerated", v);
    return Ok();
  }
  if (msr == MSR_MISC_FEATURE_CONTROL) {
    // Pseudo-locking turns the prefetchers off and restores them: only the
    // model's prefetcher bits, nothing else of the register.
    if ((v & ~prefetch_bits_) != 0) return refuse("MISC_FEATURE_CONTROL bits 0x%llx refused", v);
    return Ok();
  }
  if (in_bank(msr, IA32_L3_MASK_0, l3.num_closid)) {
    if ((v & ~uint64_t{l3.cache.full_mask()}) != 0) return refuse("L3 mask 0x%llx too wide", v);
    return Ok();
  }
  if (in_bank(msr, IA32_L2_MASK_0, l2.num_closid)) {
    if ((v & ~uint64_t{l2.cache.full_mask()}) != 0) return refuse("L2 mask 0x%llx too wide", v);
    return Ok();
  }
  if (in_bank(msr, IA32_L2_QOS_EXT_BW_THRTL_0,
              IA32_L2_QOS_EXT_BW_THRTL_LAST + 1 - IA32_L2_QOS_EXT_BW_THRTL_0)) {
    if (v > limits_.mba_max_delay)
      return refuse("MBA delay %llu beyond %llu", v, limits_.mba_max_delay);
    return Ok();
  }
  if (in_bank(msr, IA32_QOS_CORE_BW_THRTL_0,
              IA32_QOS_CORE_BW_THRTL_LAST + 1 - IA32_QOS_CORE_BW_THRTL_0)) {
    // A byte per CLOSID, each at most the enumerated maximum level; the
    // bytes of CLOSIDs beyond the enumerated count stay 0.
    const Resource& cb = info_.res(ResourceId::CB);
    const uint32_t first = (msr - IA32_QOS_CORE_BW_THRTL_0) * CBA_CLOS_PER_MSR;
    for (uint32_t k = 0; k < CBA_CLOS_PER_MSR; ++k) {
      const uint64_t level = (v >> (8 * k)) & 0xFF;
      if (first + k >= cb.num_closid && level != 0)
        return refuse("CBA level for CLOSID %llu beyond the enumerated CLOSIDs", first + k);
      if (level > limits_.cba_max_level)
        return refuse("CBA level %llu beyond %llu", level, limits_.cba_max_level);
    }
    return Ok();
  }
  if (msr >= L3QOS_BW_CONTROL_0 && msr < L3QOS_SLOW_BW_CONTROL_0) {
    if ((v >> (limits_.amd_bw_len + 1)) != 0) return refuse("bandwidth 0x%llx too wide", v);
    return Ok();
  }
  if (msr >= L3QOS_SLOW_BW_CONTROL_0 && msr < L3QOS_SLOW_BW_CONTROL_0 + 0x80) {
    if ((v >> (limits_.amd_smba_len + 1)) != 0) return refuse("slow bandwidth 0x%llx too wide", v);
    return Ok();
  }
  if (in_bank(msr, QOS_EVT_CFG_0, 2)) {
    if ((v & ~uint64_t{mon.evt_cfg.supported_mask}) != 0)
      return refuse("BMEC bits 0x%llx unsupported", v);
    return Ok();
  }
  if (msr == L3_QOS_ABMC_CFG) {
    constexpr uint64_t kReserved = (0x7ULL << 44) | (0x1FFULL << 53);
    if ((v & kReserved) != 0) return refuse("ABMC_CFG reserved bits in 0x%llx", v);
    if (((v >> ABMC_CFG_CTR_ID_SHIFT) & ABMC_CFG_CTR_ID_MASK) >= mon.cntr_assign.num_cntrs)
      return refuse("ABMC counter beyond %llu", mon.cntr_assign.num_cntrs);
    uint64_t src = (v >> ABMC_CFG_BW_SRC_SHIFT) & ABMC_CFG_BW_SRC_MASK;
    if ((v & ABMC_CFG_IS_CLOS) ? src >= num_closid_any_ : src >= mon.num_rmids)
      return refuse("ABMC source %llu beyond the enumerated maximum", src);
    if ((v & ABMC_CFG_BW_TYPE_MASK & ~uint64_t{BMEC_MAX_EVT_CONFIG_BITS}) != 0)
      return refuse("ABMC BwType reserved bits in 0x%llx", v);
    return Ok();
  }
  return refuse("MSR 0x%llx not writable", msr);
}

}  // namespace resctrlfs::hw::broker
